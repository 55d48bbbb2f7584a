"""CC 1.2/1.3 coalescing compiled (numba), straight into the memory core's packed form.

With the compiled memory core on (:mod:`~simgpu.mem.fast_memory`: GT200 configs), a
timed engine's load or store went through the coalescer's per-warp lists
(:meth:`~simgpu.mem.coalescer.Coalescer.per_warp`: a numpy pass, then a Python loop
per warp and a list per warp), was counted from them, and was packed again into one
int64 array for the core (``fast_memory._pack``).  For a timed-block launch of SV's
edge kernels (256 scattered lanes an instruction) that was a quarter of the CPU time.
:func:`coalesce_packed` does the same rules in one compiled pass over the lanes and
writes the packed array the core reads; :func:`packed_warps` counts it.

**The Python coalescer stays the reference.**  The rules are
:func:`~simgpu.mem.warp_coalesce.warp_transactions`' (CC 1.2/1.3: per half-warp, one
transaction per distinct segment in the order of its first lane, shrunk by the 32-byte
quarters it uses), applied to each run of equal warp ids as ``per_warp`` cuts them;
wherever its preconditions fail (lanes not ascending 0..31 within a warp, a negative or
misaligned address, an unknown word size) the function says so and the caller takes
the reference path, which also reports what is wrong.  tests/mem/test_fast_coalesce.py
holds the two equal on random and adversarial accesses.
"""
from __future__ import annotations

import numpy as np

from .fast_jit import ENABLED, njit
from .fast_memory import PackedWarps
from .warp_coalesce import _QUARTER_LISTS, _segment_size_1x

__all__ = ["coalesce_packed", "packed_warps", "LazyPackedWarps", "unpack"]

#: Whether the timed engines coalesce this way where they can (tests switch it off to
#: compare a whole run with the reference path's).
USE = ENABLED
_WORD_SIZES = (1, 2, 4, 8, 16)
#: per segment size: the (offset, size) of a transaction by its mask of used quarters
#: per segment size (32, 64, 128 B: rows 0, 1, 2), the (offset, size) of a transaction
#: by its mask of used quarters (constants of the compiled code)
_OFFS = np.array([_QUARTER_LISTS[s][0] for s in (32, 64, 128)], np.int64)
_SIZES = np.array([_QUARTER_LISTS[s][1] for s in (32, 64, 128)], np.int64)
_MIX = -7046029254386353131        # 0x9E3779B97F4A7C15 (Fibonacci hashing) as an int64


@njit
def coalesce_packed(warp, lane, address, ws, seg_shift):
    """The transactions of one access of lanes in (warp, lane) order, CC 1.2/1.3, as
    ``(packed, n, warps, requests, moved)``: ``packed`` is fast_memory._pack's layout
    (n addresses, n sizes, the warps' n + 1 offsets), ``warps`` the runs of equal warp
    ids, ``requests`` their non-empty half-warps, ``moved`` the bytes of the
    transactions.  ``n`` is -1 where a lane breaks warp_transactions' preconditions
    (the caller then takes the reference path).  ``ws`` and the segment (``1 <<
    seg_shift`` bytes) are powers of two, so masks and shifts do the divisions of a
    non-negative address (a 64-bit division costs some 40 cycles a lane); a half-warp's
    segments are found by a 32-slot hash table (scattered lanes: 16 distinct ones)."""
    offs = _OFFS[seg_shift - 5]
    sizes = _SIZES[seg_shift - 5]
    word_mask = ws - 1
    seg_size = 1 << seg_shift
    seg_mask = seg_size - 1
    count = address.size
    runs = 1
    for x in range(1, count):
        if warp[x] != warp[x - 1]:
            runs += 1
    t_addr = np.empty(count, np.int64)
    t_size = np.empty(count, np.int64)
    cuts = np.empty(runs + 1, np.int64)
    segs = np.empty(32, np.int64)          # half 0: slots 0..15, half 1: 16..31
    masks = np.empty(32, np.int64)
    table = np.empty(64, np.int64)         # half 0: 0..31, half 1: 32..63 (slot + 1; 0: free)
    n = 0
    requests = 0
    moved = 0
    run = 0
    cuts[0] = 0
    x = 0
    empty = np.empty(0, np.int64)
    while x < count:
        w0 = warp[x]
        previous = -1
        used0 = 0
        used1 = 0
        table[:] = 0
        while x < count and warp[x] == w0:
            k = lane[x]
            a = address[x]
            if k <= previous or k > 31 or a < 0 or a & word_mask:
                return empty, -1, 0, 0, 0
            previous = k
            seg = a >> seg_shift
            bit = 1 << ((a & seg_mask) >> 5)
            if k < 16:
                lo = 0
                used = used0
            else:
                lo = 16
                used = used1
            if used and segs[lo + used - 1] == seg:    # (a run of lanes: its last segment)
                masks[lo + used - 1] |= bit
            else:
                h = 2 * lo + (((seg * _MIX) >> 59) & 31)
                while table[h] and segs[table[h] - 1] != seg:
                    h = 2 * lo + ((h + 1) & 31)
                if table[h]:
                    masks[table[h] - 1] |= bit
                else:
                    table[h] = lo + used + 1
                    segs[lo + used] = seg
                    masks[lo + used] = bit
                    if k < 16:
                        used0 += 1
                    else:
                        used1 += 1
            x += 1
        for y in range(used0):
            t_addr[n] = segs[y] * seg_size + offs[masks[y]]
            t_size[n] = sizes[masks[y]]
            moved += t_size[n]
            n += 1
        for y in range(16, 16 + used1):
            t_addr[n] = segs[y] * seg_size + offs[masks[y]]
            t_size[n] = sizes[masks[y]]
            moved += t_size[n]
            n += 1
        requests += (used0 > 0) + (used1 > 0)
        run += 1
        cuts[run] = n
    packed = np.empty(2 * n + runs + 1, np.int64)
    packed[:n] = t_addr[:n]
    packed[n:2 * n] = t_size[:n]
    packed[2 * n:] = cuts
    return packed, n, runs, requests, moved


class LazyPackedWarps(PackedWarps):
    """An instruction's transactions in packed form only (no per-warp lists): what the
    compiled core reads, resumed as it is.  :meth:`lists` gives the engine's per-warp
    lists, for the Python units (after an atomic has switched the core off mid-launch)."""

    def __init__(self, packed, n: int):
        super().__init__((), packed, n)

    def lists(self) -> list:
        return unpack(self.packed, self.n)


def unpack(packed, n: int) -> list:
    """fast_memory._pack's array back into ``[(addresses, sizes), ...]`` per warp."""
    values = packed.tolist()
    cuts = values[2 * n:]
    return [(values[lo:hi], values[n + lo:n + hi]) for lo, hi in zip(cuts, cuts[1:])]


def packed_warps(acc, cc: int):
    """``(LazyPackedWarps, warps, requests, transactions, bytes)`` of a global load or
    store ``acc`` on a CC 1.2/1.3 device, or None where the reference path must take it
    (numba off, another CC, an empty or unusual access)."""
    ws = acc.word_size
    address, lane, warp = acc.address, acc.lane, acc.warp
    if not USE or not 12 <= cc < 20 or ws not in _WORD_SIZES or address.size == 0 \
            or address.dtype != np.int64 or lane.dtype.kind != "i" or warp.dtype.kind != "i":
        return None
    packed, n, runs, requests, moved = coalesce_packed(warp, lane, address, ws,
                                                       _segment_size_1x(ws).bit_length() - 1)
    if n < 0:
        return None
    return LazyPackedWarps(packed, n), runs, requests, n, moved
