"""One warp's coalescing in plain Python: the rules as the simulator's hot path applies them.

:mod:`simgpu.mem.coalesce` holds the rules as the CUDA guide states them (the
reference, one warp) and vectorized (many warps with numpy); this module holds
the per-warp form that the coalescer (:mod:`simgpu.mem.coalescer`) runs on
every pattern-cache miss, with the segment and halving rules it shares with
them.  It imports nothing of numpy's so that :mod:`simgpu.native` can compile
it; the source is the reference either way.
"""
from __future__ import annotations

__all__ = ["warp_transactions", "WARP_SIZE", "HALF_WARP", "SECTOR_BYTES"]

WARP_SIZE = 32
HALF_WARP = 16
SECTOR_BYTES = 32          # sm_20+: L2 sector; also the smallest CC 1.x transaction


def _segment_size_1x(word_size) -> int:
    """CC 1.2/1.3 segment size (guide G.3.2.2; paper Table 1)."""
    return {1: 32, 2: 64}.get(word_size, 128)


def _shrink(start, size, lo, hi):
    """The guide's reduction: a 128 B transaction becomes 64 B if the bytes
    [lo, hi) use only its lower or upper half; then a 64 B one (original or
    reduced) becomes 32 B likewise."""
    for big in (128, 64):
        if size == big:
            half = big // 2
            if hi <= start + half:
                size = half
            elif lo >= start + half:
                start, size = start + half, half
    return start, size


def _quarter_lists(seg_size: int) -> tuple[list, list]:
    """For each 4-bit mask of the 32 B quarters of a segment that a transaction must
    cover: the (offset, size) that the guide's halving ends at (lists by mask)."""
    off, size = [0] * 16, [0] * 16
    for m in range(1, 1 << (seg_size // 32)):
        used = [q for q in range(4) if m >> q & 1]
        off[m], size[m] = _shrink(0, seg_size, 32 * used[0], 32 * used[-1] + 32)
    return off, size


_QUARTER_LISTS = {s: _quarter_lists(s) for s in (32, 64, 128)}


def warp_transactions(addresses: list, lanes: list, ws: int, cc: int):
    """One warp's (requests, transaction addresses, sizes), as ``coalesce_batch`` gives
    them, in plain Python (a warp's 32 lanes are too few for numpy to pay off).

    ``lanes`` must be ascending lane numbers 0..31 and every address >= 0 and
    aligned to ``ws``; otherwise returns None (the caller then asks the
    reference, which also reports the errors).
    """
    if not addresses:
        return 0, [], []
    previous = -1
    if cc >= 20:                                   # distinct 32-byte sectors, ascending
        seen = set()
        for a, k in zip(addresses, lanes):
            if k <= previous or k > 31 or a < 0 or a % ws:
                return None
            previous = k
            seen.add(a >> 5)
        sectors = sorted(seen)
        return 1, [x << 5 for x in sectors], [SECTOR_BYTES] * len(sectors)
    out_a: list = []
    out_s: list = []
    if cc < 12:                                    # 1.0/1.1: all or nothing per half-warp
        by_half: dict = {}
        for a, k in zip(addresses, lanes):
            if k <= previous or k > 31 or a < 0 or a % ws:
                return None
            previous = k
            by_half.setdefault(k >> 4, []).append((a, k))
        for half in by_half.values():
            bases = {a - (k % HALF_WARP) * ws for a, k in half}
            if ws >= 4 and len(bases) == 1:
                base = bases.pop()
                if base % (HALF_WARP * ws) == 0:
                    if ws == 16:
                        out_a += [base, base + 128]
                        out_s += [128, 128]
                    else:
                        out_a.append(base)
                        out_s.append(64 if ws == 4 else 128)
                    continue
            for a, _ in half:
                out_a.append(a // SECTOR_BYTES * SECTOR_BYTES)
                out_s.append(SECTOR_BYTES)
        return len(by_half), out_a, out_s
    seg_size = _segment_size_1x(ws)                # 1.2/1.3: segments, then shrink
    off, size = _QUARTER_LISTS[seg_size]
    halves: tuple[dict, dict] = ({}, {})           # segment -> quarter mask, first-thread order
    for a, k in zip(addresses, lanes):
        if k <= previous or k > 31 or a < 0 or a % ws:
            return None
        previous = k
        quarters = halves[k >> 4]
        seg = a // seg_size
        quarters[seg] = quarters.get(seg, 0) | 1 << ((a % seg_size) >> 5)
    for quarters in halves:
        for seg, mask in quarters.items():
            out_a.append(seg * seg_size + off[mask])
            out_s.append(size[mask])
    return (len(halves[0]) > 0) + (len(halves[1]) > 0), out_a, out_s
