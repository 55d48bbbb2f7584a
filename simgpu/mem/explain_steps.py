"""Step by step: how one warp's request becomes memory transactions.

:func:`steps` tells the coalescing rule of ``arch`` as the CUDA C Programming
Guide states it (the rules of :mod:`simgpu.mem.coalesce`), one decision per
line, for one warp's addresses: which lane starts a transaction, which lanes
join it, how a CC 1.2/1.3 segment shrinks, why a CC 1.0/1.1 half-warp does
or does not coalesce, which sectors a CC 2.0+ warp touches.  It is written
apart from the coalescer, and the tests hold its transactions against
:func:`simgpu.mem.coalesce.transactions` for random patterns.

    simgpu coalesce --stride 1 --offset 1 --steps
"""
from __future__ import annotations

import numpy as np

from .coalesce import HALF_WARP, SECTOR_BYTES, parse_arch

__all__ = ["steps", "step_transactions"]


def _lanes(lanes) -> str:
    """'0-15' / '0, 2, 4' / '3' for a list of lane numbers."""
    lanes = list(lanes)
    if len(lanes) > 2 and lanes == list(range(lanes[0], lanes[-1] + 1)):
        return f"{lanes[0]}-{lanes[-1]}"
    return ", ".join(map(str, lanes))


def step_transactions(addresses, word_size: int, arch: str, active=None):
    """(lines of the narration, [(address, size), ...] in issue order)."""
    addresses = [int(a) for a in np.asarray(addresses, dtype=np.int64)]
    active = [True] * len(addresses) if active is None else [bool(x) for x in active]
    cc = parse_arch(arch)
    lanes = [k for k in range(len(addresses)) if active[k]]
    if cc >= 20:
        return _sectors(addresses, lanes, arch)
    out, txns = [], []
    for h in range(2):
        half = [k for k in lanes if k // HALF_WARP == h]
        if not half:
            continue
        out.append(f"half-warp {h} (lanes {16 * h}-{16 * h + 15}): "
                   f"{len(half)} active lane{'s' * (len(half) != 1)}")
        rule = _strict if cc < 12 else _relaxed
        lines, t = rule(addresses, half, word_size)
        out += ["  " + line for line in lines]
        txns += t
    out.append(f"result: {len(txns)} transaction{'s' * (len(txns) != 1)}, "
               f"{sum(s for _, s in txns)} bytes")
    return out, txns


def steps(addresses, word_size: int, arch: str, active=None) -> str:
    return "\n".join(step_transactions(addresses, word_size, arch, active)[0])


def _sectors(addresses, lanes, arch):
    out = [f"{arch}: one request for the whole warp; it moves every 32-byte sector "
           "that an active lane touches, nothing else"]
    by_sector: dict = {}
    for k in lanes:
        by_sector.setdefault(addresses[k] // SECTOR_BYTES, []).append(k)
    for n, (sector, who) in enumerate(sorted(by_sector.items()), 1):
        out.append(f"  sector {n}: bytes {sector * 32:#x}-{sector * 32 + 31:#x}, "
                   f"wanted by lane{'s' * (len(who) != 1)} {_lanes(who)}")
    lines = len({s // 4 for s in by_sector})
    txns = [(s * SECTOR_BYTES, SECTOR_BYTES) for s in sorted(by_sector)]
    out.append(f"result: {len(txns)} sector{'s' * (len(txns) != 1)} "
               f"({len(txns) * SECTOR_BYTES} bytes) in {lines} 128-byte line{'s' * (lines != 1)}")
    return out, txns


def _strict(addresses, half, ws):
    """CC 1.0/1.1: lane k must read word k of one segment aligned to 16 words."""
    first = half[0]
    base = addresses[first] - (first % HALF_WARP) * ws
    if ws < 4:
        why = f"{ws}-byte words never coalesce on CC 1.0/1.1"
    elif base % (HALF_WARP * ws):
        why = (f"lane {first} would put word 0 of the segment at {base:#x}, which is not "
               f"aligned to 16 words ({HALF_WARP * ws} bytes)")
    else:
        bad = [k for k in half if addresses[k] != base + (k % HALF_WARP) * ws]
        why = None if not bad else (
            f"lane {bad[0]} reads {addresses[bad[0]]:#x}, not word {bad[0] % HALF_WARP} of the "
            f"segment at {base:#x} ({base + (bad[0] % HALF_WARP) * ws:#x})")
    if why is None:
        sizes = [(base, 128), (base + 128, 128)] if ws == 16 else [(base, 64 if ws == 4 else 128)]
        return ([f"every active lane k reads word k of the segment at {base:#x}: coalesced",
                 "issue " + " + ".join(f"{s} B at {a:#x}" for a, s in sizes)], sizes)
    lines = [f"not coalesced: {why}",
             f"so every active lane gets its own transaction: the aligned 32 B holding its word"]
    txns = [(addresses[k] // SECTOR_BYTES * SECTOR_BYTES, SECTOR_BYTES) for k in half]
    lines.append(f"issue {len(txns)} x 32 B")
    return lines, txns


def _relaxed(addresses, half, ws):
    """CC 1.2/1.3: segments from the lowest unserved lane, shrunk to the half used."""
    seg = {1: 32, 2: 64}.get(ws, 128)
    left = list(half)
    lines, txns = [], []
    while left:
        k = left[0]
        start = addresses[k] // seg * seg
        who = [j for j in left if start <= addresses[j] < start + seg]
        lo = min(addresses[j] for j in who)
        hi = max(addresses[j] for j in who) + ws
        lines.append(f"lowest unserved lane {k}: its {seg} B segment starts at {start:#x}; "
                     f"lane{'s' * (len(who) != 1)} {_lanes(who)} read in it "
                     f"(bytes {lo:#x}-{hi - 1:#x})")
        size = seg
        for big in (128, 64):
            if size == big:
                half_size = big // 2
                if hi <= start + half_size:
                    lines.append(f"  only the lower half is used: {big} B -> {half_size} B")
                    size = half_size
                elif lo >= start + half_size:
                    lines.append(f"  only the upper half is used: {big} B -> {half_size} B "
                                 f"at {start + half_size:#x}")
                    start, size = start + half_size, half_size
        lines.append(f"  issue {size} B at {start:#x}")
        txns.append((start, size))
        left = [j for j in left if j not in who]
    return lines, txns
