"""The compiled memory core (numba) in place of the Python units, for GT200 configs.

For a GPU without an L2 (``sim:gtx260``, ``sim:gtx280``) whose DRAM reads are booked
at arrival (``[dram] read_scheduling = "at-arrival"``, the default), a warp memory
instruction's loads and stores -- address translation (TLBs, page walks that read
through the partitions), the SM's miss entries, the interconnect's ports, the DRAM
partitions (banks, open rows, timing rules, bounded queues) -- are booked by one call
of compiled code per instruction (:meth:`FastMemory.serve`), its state in flat numpy
arrays (:mod:`~simgpu.mem.fast_layout`).  The code is a transcription of the Python
units (:mod:`~simgpu.mem.fast_dram`, :mod:`~simgpu.mem.fast_partition`,
:mod:`~simgpu.mem.fast_net`, :mod:`~simgpu.mem.fast_path`) and gives the same times and counts, bit for bit
(tests/mem/test_fast_core.py, tests/sim/test_fast_core_runs.py).

**The Python units stay the reference.**  They run where numba is not installed (it is
the optional extra ``fast``: ``pip install simgpu[fast]``), with ``SIMGPU_NUMBA=0``,
for every other config (caches, H100/H200, fr-fcfs reads), and for the rest of a
launch once an atomic arrives: the core writes its state back into the units
(:func:`~simgpu.mem.fast_state.give_back`) and they go on from there, as they do for
the launch's end and its report.  :func:`attach` decides, per launch.
"""
from __future__ import annotations

import random
import warnings

import numpy as np

from .fast_jit import ENABLED
from .fast_layout import G_ACCEPTED

__all__ = ["supported", "attach", "FastMemory"]

_checked: list = []        # [bool]: _core_works's verdict, once per process


def supported(memory) -> str | None:
    """Why ``memory`` cannot run on the compiled core, or None where it can."""
    if not ENABLED:
        return "numba is not installed, or SIMGPU_NUMBA=0"
    c = memory.config
    d = c.dram
    if memory.l2 is not None or memory.slices is not None:
        return "the config has an L2"
    if memory.deferred is not None or d.read_scheduling != "at-arrival":
        return "DRAM reads are not booked at arrival"
    if not memory.net.modeled:
        return "the interconnect is a fixed latency"
    if d.subchannels != 1 or d.bank_groups != 1 or memory.amap.lanes != 1:
        return "the DRAM has several sub-channels or bank groups"
    if memory.amap.hashed is not None:
        return "the address map is hashed"
    if d.ranks != 1:
        return "the DRAM has several ranks (stack IDs)"
    tm = memory.dram.timing
    if tm.faw or tm.rrd != tm.rrd_l or tm.group_spacing:
        return "the DRAM has a four-activate window or bank-group timings"
    if memory.translator is None and getattr(c, "tlb", None) is not None:
        return "the TLBs are not attached"
    return None


def _core_works(memory) -> bool:
    """Once per process: the core's functions load (or compile) and run, on a copy of
    ``memory``'s state, and its emulation of CPython's set order (it translates a
    request's pages in the order the Python unit iterates their set) agrees with this
    interpreter.  Where either fails, a warning, and the Python units run."""
    if not _checked:
        try:
            from . import fast_path
            from .fast_layout import new_state
            from .fast_state import take
            rng = random.Random(19)
            ok = True
            for _ in range(200):
                keys = [rng.randrange(rng.choice((16, 64, 2048, 1 << 20)))
                        for _ in range(rng.randrange(1, 40))]
                got = fast_path.py_set_order(np.array(keys, np.int64), len(keys)).tolist()
                if got != list({k for k in keys}):
                    ok = False
                    break
            dry = new_state(take(memory))          # (a copy: memory is not touched)
            one = np.array([0, 32, 0, 1], np.int64)     # a warp's 32-B load of address 0
            fast_path.serve_packed(dry, False, one, 1, 0, 0, 0.0, 0.0, 0, 0.0, 64.0)
            fast_path.access(dry, np.zeros(1, np.int64), np.full(1, 32, np.int64), 0, 1, 0.0, 0,
                             True)
            why = "" if ok else "this Python's set order differs from the core's emulation"
        except Exception as e:                     # (numba failing to compile or load it)
            ok, why = False, f"{type(e).__name__}: {str(e)[:300]}"
        _checked.append(ok)
        if not ok:
            warnings.warn(f"simgpu: the compiled memory core does not run here ({why}); "
                          "running the Python memory units", RuntimeWarning, stacklevel=3)
    return _checked[0]


def attach(memory) -> "FastMemory | None":
    """The compiled core for ``memory`` (a fresh launch's MemorySystem), or None where
    the Python units must run (:func:`supported`)."""
    if supported(memory) is not None or not _core_works(memory):
        return None
    return FastMemory(memory)


class PackedWarps(list):
    """An instruction's per-warp transactions (the list the engine resumes with, as it
    is) with their packed array, so that a resumed instruction is not packed again."""

    def __init__(self, per_warp, packed, n: int):
        super().__init__(per_warp)
        self.packed, self.n = packed, n


def _pack(per_warp) -> tuple:
    """A memory instruction's per-warp transactions as one int64 array: the addresses,
    the sizes, the warps' offsets (fast_path.serve_packed); and the address count."""
    addrs: list = []
    sizes: list = []
    offs = [0]
    for a, s in per_warp:
        addrs += a
        sizes += s
        offs.append(len(addrs))
    n = len(addrs)
    addrs += sizes
    addrs += offs
    return np.fromiter(addrs, np.int64, len(addrs)), n


class FastMemory:
    """The compiled core's state for one launch, and the calls the engine makes."""

    def __init__(self, memory):
        from . import fast_path
        from .fast_state import take
        from .fast_layout import new_state
        self.memory = memory
        self.arrays = take(memory)               # numpy arrays, shared with ...
        self.state = new_state(self.arrays)      # ... the compiled functions' struct
        self._serve = fast_path.serve_packed
        self._access = fast_path.access
        self._drain = None

    def serve(self, kind: str, per_warp, i: int, first: int, back: float, at: float,
              sm: int, now: float, slack: float):
        """The timed engine's ``serve`` for a load's or store's warps from warp ``i``,
        transaction ``first``: (accepted, back, resume or None, when or None), resume
        being ``(per_warp, None, i, first, back)`` as the engine's own."""
        if isinstance(per_warp, PackedWarps):               # a resume: packed already
            packed, n = per_warp.packed, per_warp.n
        else:
            packed, n = _pack(per_warp)
        status, at, back, i, first, when = self._serve(
            self.state, kind == "store", packed, n, i, first, back, at, sm, now, slack)
        if status:
            if not isinstance(per_warp, PackedWarps):
                per_warp = PackedWarps(per_warp, packed, n)
            return at, back, (per_warp, None, i, first, back), when
        return at, back, None, None

    def access(self, kind: str, addresses, sizes, t: float, sm: int) -> float:
        """MemorySystem.access of one warp's load or store; sets ``memory.accepted``."""
        a = np.asarray(addresses, np.int64)
        done = self._access(self.state, a, np.asarray(sizes, np.int64), 0, len(a), t, sm,
                            kind == "store")
        self.memory.accepted = float(self.arrays.g[G_ACCEPTED])
        return done

    def give_back(self) -> None:
        """Write the state into the Python units (they go on from here)."""
        from .fast_state import give_back
        give_back(self.arrays, self.memory)
