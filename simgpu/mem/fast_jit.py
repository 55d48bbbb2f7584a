"""Whether the compiled memory core (numba) runs, and the decorator its functions use.

The core (:mod:`~simgpu.mem.fast_dram`, :mod:`~simgpu.mem.fast_path`) is array code
compiled with numba's ``@njit`` where numba is installed (the optional extra ``fast``)
and ``SIMGPU_NUMBA`` is not ``"0"``.  Elsewhere its functions stay plain Python, which
:mod:`~simgpu.mem.fast_memory` never runs on the engines' path (far too slow as
interpreted array code): the Python units are the reference and run instead.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["ENABLED", "njit", "numba_version", "unowned"]

try:
    if os.environ.get("SIMGPU_NUMBA", "1") == "0":
        raise ImportError("SIMGPU_NUMBA=0")
    import numba as _numba
except ImportError:
    _numba = None

#: True where the core is compiled (numba importable and not switched off).
ENABLED = _numba is not None


def numba_version() -> str | None:
    return _numba.__version__ if _numba is not None else None


#: The modules of compiled code: their cached machine code is keyed by all of them.
CORE_MODULES = ("fast_jit", "fast_layout", "fast_dram", "fast_partition", "fast_net",
                "fast_path", "fast_coalesce",
                # the compiled trace-block replay loop, which calls the core's functions,
                # and its trace log (njit functions: their cache is keyed by this list)
                "../sim/trace_loop", "../sim/trace_log", "../sim/timed_waits")
_stamp: list = []


def _core_stamp() -> tuple:
    """A digest of every core module's source.  numba keys a function's cached code by
    its own file only, though the code holds the functions it calls from the other
    modules: keyed by this instead, an edit to any of them recompiles them all."""
    if not _stamp:
        h = hashlib.sha256()
        for name in CORE_MODULES:
            h.update((Path(__file__).parent / f"{name}.py").read_bytes())
        _stamp.append(("simgpu.mem fast core", h.hexdigest()))
    return _stamp[0]


def njit(fn=None, *, inline: bool = False):
    """``numba.njit`` where numba runs (else ``fn`` itself), its machine code cached in the
    package's __pycache__ (saving the compile, some 20-60 s, in later processes) under
    :func:`_core_stamp`; uncached where this numba's cache does not have the fields
    that takes (a compile per process, never a stale one).  ``inline=True`` (as
    ``@njit(inline=True)``): numba inlines the function into its callers' IR, for the
    small helpers called per transaction (no call, no reference count of the state
    passed to them)."""
    if fn is None:
        return lambda f: njit(f, inline=inline)
    if _numba is None:
        return fn
    opts = {"inline": "always"} if inline else {}
    disp = _numba.njit(cache=True, **opts)(fn)
    index = getattr(getattr(disp, "_cache", None), "_cache_file", None)
    if index is None or not hasattr(index, "_source_stamp"):
        return _numba.njit(cache=False, **opts)(fn)
    index._source_stamp = _core_stamp()
    return disp


if _numba is not None:
    from numba.core import cgutils as _cgutils
    from numba.core import types as _types
    from numba.core.extending import intrinsic as _intrinsic

    @_intrinsic
    def unowned(typingctx, arr):
        """``arr`` as an array that owns nothing: the same data, shape and strides with
        no meminfo (as ``numba.carray`` makes), so that numba's reference counting of it,
        and of every view taken from it, is a null test instead of an atomic add
        (profiled: most of the core's time went to those atomics, one pair per array a
        function reads from the state or is passed).  Only for arrays that something
        else keeps alive for as long as the result is used: the core's state arrays,
        held by the FastState proxy (fast_layout.new_state), and a compiled loop's
        arguments, held by its Python caller during the call."""
        if not isinstance(arr, _types.Array):
            return None

        def codegen(context, builder, sig, args):
            ary = context.make_array(sig.args[0])(context, builder, value=args[0])
            out = context.make_array(sig.return_type)(context, builder)
            _cgutils.copy_struct(out, ary)
            out.meminfo = _cgutils.get_null_value(out.meminfo.type)
            out.parent = _cgutils.get_null_value(out.parent.type)
            return out._getvalue()

        return arr(arr), codegen
else:
    def unowned(arr):
        return arr
