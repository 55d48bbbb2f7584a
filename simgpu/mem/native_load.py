"""Loading the compiled memory units, where ``python -m simgpu.native build`` made them.

:func:`install` (called when ``simgpu.mem`` is imported) puts the build of this
exact source first on the package's search path, so the compiled modules of
:data:`MODULES` load in place of the source ones; the source is the reference
and runs wherever nothing was built for it, or with ``SIMGPU_NATIVE=0``.  A build
is keyed by :func:`digest` (the interpreter and every compiled module's source),
so a stale build is never loaded.  See :mod:`simgpu.native`.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import warnings
from pathlib import Path

__all__ = ["MODULES", "install", "loaded", "digest", "build_dir", "source_module"]

#: The modules compiled, in package order (each is plain Python that mypyc accepts).
MODULES = ("simgpu.mem.dram_refresh", "simgpu.mem.dram_params", "simgpu.mem.dram_timing",
           "simgpu.mem.dram", "simgpu.mem.interconnect", "simgpu.mem.uncached",
           "simgpu.mem.warp_coalesce")

_ROOT = Path(__file__).resolve().parents[2]          # the directory holding simgpu/
_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
_loaded: list = []


def _source(module: str) -> Path:
    return _ROOT.joinpath(*module.split(".")).with_suffix(".py")


def digest() -> str:
    """The build key: the interpreter and the source of every compiled module."""
    h = hashlib.sha256(f"{sys.implementation.cache_tag} {_SUFFIX}".encode())
    for m in MODULES:
        h.update(m.encode())
        h.update(_source(m).read_bytes())
    return h.hexdigest()[:16]


def build_dir(key: str | None = None) -> Path:
    base = os.environ.get("SIMGPU_NATIVE_DIR") or Path.home() / ".cache" / "simgpu" / "native"
    return Path(base) / (key or digest())


def loaded() -> list:
    """The compiled modules this process runs (empty: the pure-Python source)."""
    return list(_loaded)


def install(mem_path: list) -> None:
    """Called by simgpu/mem/__init__.py: where a build of this exact source exists (and
    SIMGPU_NATIVE is not "0"), put its directory first on the package's search path,
    so that importing one of :data:`MODULES` finds the compiled module."""
    if os.environ.get("SIMGPU_NATIVE", "1") == "0":
        return
    try:
        where = build_dir()
    except OSError:                        # a source file unreadable: stay pure Python
        return
    if not (where / "complete").is_file():
        return
    # the modules' shared runtime (mypyc names it from a hash), imported by each module
    added: list = []
    try:
        for lib in where.glob(f"*__mypyc{_SUFFIX}"):
            name = lib.name[:-len(_SUFFIX)]
            if name not in sys.modules:
                spec = importlib.util.spec_from_file_location(name, lib)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules[name] = module
                added.append(name)
        mem_path.insert(0, str(where / "simgpu" / "mem"))
        for m in MODULES:                  # load them now: a broken build fails here
            importlib.import_module(m)
    except (ImportError, OSError) as e:    # (another mypyc, a damaged file): the source
        warnings.warn(f"simgpu: the compiled memory units in {where} do not load ({e}); "
                      "running the Python source. Rebuild with: python -m simgpu.native build",
                      RuntimeWarning, stacklevel=2)
        if str(where / "simgpu" / "mem") in mem_path:
            mem_path.remove(str(where / "simgpu" / "mem"))
        for name in [*added, *MODULES]:
            sys.modules.pop(name, None)
        return
    _loaded[:] = [m for m in MODULES if (where / Path(*m.split("."))).with_suffix(_SUFFIX).is_file()]


def source_module(module: str):
    """``module`` run from its source whether or not a build is loaded, under a name of
    its own (for tests that replace a method, which a compiled class does not allow).
    Only for modules that import nothing of simgpu's, as simgpu.mem.dram_timing."""
    spec = importlib.util.spec_from_file_location(f"{module}__source", _source(module))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
