"""Why spmv_csr and bfs_expand issue more requests on the H100 than their IR has.

    python -m validation.unroll_counts

nvcc unrolls the per-row loop ``for k in range(row_ptr[r], row_ptr[r + 1])`` by four
(`nvcc -arch=sm_90 -ptx` of the rendered kernels: a remainder loop of ``len & 3``
iterations, then a loop whose body holds four copies of the loads, and of the guarded
store in bfs_expand). A warp executes a load instruction once for every iteration that
any of its lanes runs, so its request count is, per warp,

    IR (what the simulator runs):  loads_per_iteration * max_lane(len)
    unrolled by four:              loads_per_iteration * (max_lane(len % 4) + 4 * max_lane(len // 4))

The SASS goes further for spmv_csr (validation/compiler_sass.py, nvcc 13.0: LDG x3 in
the remainder loop, then LDG x48, x24, x12): after the remainder loop, the loop over the
groups of four runs sixteen copies at a time, then eight, then four for the groups left
(``g = len // 4``: ``max_lane(g // 4)`` passes of 16, a pass of 8 where any lane has
``g % 4 >= 2``, a pass of 4 where any lane has ``g`` odd). bfs_expand, whose body
stores, keeps four. The "SASS" column counts that structure.

This script computes them from the held-out inputs (sizes "full") and prints them
beside the counts that ncu measured (validation/h100_heldout/gpu-h100-2026-11-25.json).
"""
from __future__ import annotations

import json

import numpy as np

from . import heldout
from .h100_compare import DEFAULT_GPU


def spmv_requests(lengths: np.ndarray) -> tuple:
    """(IR, unrolled) load requests: 2 row_ptr loads per warp, 3 loads per iteration."""
    L = lengths.reshape(-1, 32)
    base = 2 * L.shape[0]
    return (int(base + 3 * L.max(1).sum()),
            int(base + 3 * (L % 4).max(1).sum() + 12 * (L // 4).max(1).sum()))


def spmv_requests_sass(lengths: np.ndarray) -> int:
    """Load requests of the SASS's structure: the remainder loop, then passes of 16, 8
    and 4 copies over the groups of four (the module's docstring)."""
    L = lengths.reshape(-1, 32)
    g = L // 4
    return int(2 * L.shape[0] + 3 * (L % 4).max(1).sum() + 48 * (g // 4).max(1).sum()
               + 24 * ((g % 4) >= 2).any(1).sum() + 12 * (g % 2 == 1).any(1).sum())


def _distinct(sectors: np.ndarray) -> int:
    """Sum over rows of the number of distinct values >= 0 (negative: inactive lane)."""
    s = np.sort(sectors, axis=-1)
    new = np.concatenate([np.ones(s.shape[:-1] + (1,), bool), s[..., 1:] != s[..., :-1]], axis=-1)
    return int(((s >= 0) & new).sum())


def _spmv_rows(row_ptr: np.ndarray, col: np.ndarray):
    """(each lane's first k, its iterations, the two row_ptr loads' sectors, loop) per
    warp of spmv_csr; ``loop(ks, active)`` is the sectors of one executed iteration:
    col[k] and val[k] (sector k // 8 of 4-byte words in 32-byte sectors, arrays aligned)
    and x[col[k]], for the lanes in ``active``."""
    start = row_ptr[:-1].reshape(-1, 32).astype(np.int64)
    n = np.diff(row_ptr).reshape(-1, 32)
    r = np.arange(start.size).reshape(-1, 32)
    base = _distinct(r // 8) + _distinct((r + 1) // 8)

    def loop(ks, active):
        ks = np.where(active, ks, 0)
        own = np.where(active, ks // 8, -1)
        gathered = np.where(active, col[np.minimum(ks, len(col) - 1)] // 8, -1)
        return 2 * _distinct(own) + _distinct(gathered)
    return start, n, base, loop


def spmv_sectors(row_ptr: np.ndarray, col: np.ndarray) -> tuple:
    """(IR, unrolled) load sectors: which lanes' k share one instruction is what the
    unrolling changes."""
    start, n, base, loop = _spmv_rows(row_ptr, col)
    ir = sum(loop(start + j, n > j) for j in range(int(n.max())))
    rem, blocks = n % 4, n // 4
    unr = sum(loop(start + j, rem > j) for j in range(3))
    unr += sum(loop(start + rem + 4 * b + u, blocks > b)
               for b in range(int(blocks.max())) for u in range(4))
    return base + ir, base + unr


def spmv_sectors_sass(row_ptr: np.ndarray, col: np.ndarray) -> int:
    """Load sectors of the SASS's structure (as spmv_sectors, the copies regrouped)."""
    start, n, total, loop = _spmv_rows(row_ptr, col)
    rem, g = n % 4, n // 4
    total += sum(loop(start + j, rem > j) for j in range(3))
    k = start + rem                                  # each lane's first k of the groups
    passes = g // 4
    total += sum(loop(k + 16 * i + u, passes > i)
                 for i in range(int(passes.max())) for u in range(16))
    k = k + 16 * passes
    eight = (g % 4) >= 2
    total += sum(loop(k + u, eight) for u in range(8))
    k = k + 8 * eight
    four = g % 2 == 1
    return total + sum(loop(k + u, four) for u in range(4))


def bfs_requests(row_ptr, col, frontier, visited) -> dict:
    """(IR, unrolled) load and store requests of one bfs_expand step: 3 loads per warp
    before the loop (frontier, two row_ptr), 2 per iteration; a store request where any
    lane of the warp stores at that iteration."""
    v = frontier.reshape(-1, 32)
    out = {"loads": [3 * v.shape[0]] * 2, "stores": [0, 0]}
    for lanes in v:
        start, n = row_ptr[lanes], row_ptr[lanes + 1] - row_ptr[lanes]
        writes = np.zeros((32, max(int(n.max()), 1)), bool)
        for i in range(32):
            nb = col[start[i]:start[i] + n[i]]
            writes[i, :n[i]] = visited[nb] == 0
        rem, blocks = n % 4, n // 4
        out["loads"][0] += 2 * int(n.max())
        out["loads"][1] += 2 * int(rem.max()) + 8 * int(blocks.max())
        out["stores"][0] += int(writes.any(0).sum())
        unrolled = 0
        for j in range(int(rem.max())):                    # the remainder loop first
            unrolled += bool(np.any((rem > j) & writes[np.arange(32), np.minimum(j, writes.shape[1] - 1)]))
        for b in range(int(blocks.max())):                 # then the four copies of the body
            for u in range(4):
                at = np.minimum(rem + 4 * b + u, writes.shape[1] - 1)
                unrolled += bool(np.any((blocks > b) & writes[np.arange(32), at]))
        out["stores"][1] += unrolled
    return out


def main():
    gpu = {c["case"]: c for c in json.loads(DEFAULT_GPU.read_text())["cases"]}
    rows = []
    spmv = next(c for c in gpu if c.startswith("spmv_csr"))
    rng = heldout._rng(11)
    row_ptr, _ = heldout._random_csr(rng, 1 << 18, 1 << 18, 15)
    ir, unr = spmv_requests(np.diff(row_ptr))
    rows.append((spmv, "loads.requests", ir, unr, spmv_requests_sass(np.diff(row_ptr)),
                 gpu[spmv]["launches"][0]["counts"]["loads.requests"]))
    rng = heldout._rng(11)
    row_ptr, col = heldout._random_csr(rng, 1 << 18, 1 << 18, 15)
    ir, unr = spmv_sectors(row_ptr, col)
    rows.append((spmv, "loads.transactions", ir, unr, spmv_sectors_sass(row_ptr, col),
                 gpu[spmv]["launches"][0]["counts"]["loads.transactions"]))
    bfs = next(c for c in gpu if c.startswith("bfs_expand"))
    rng = heldout._rng(12)
    nv, nf = 1 << 20, 1 << 14
    row_ptr, col = heldout._random_csr(rng, nv, nv, 15)
    frontier = rng.choice(nv, nf, replace=False).astype(np.int32)
    visited = (rng.random(nv) < 0.3).astype(np.int32)
    visited[frontier] = 1
    got = bfs_requests(row_ptr, col, frontier, visited)
    for kind in ("loads", "stores"):
        ir, unr = got[kind]
        rows.append((bfs, f"{kind}.requests", ir, unr, unr,     # its SASS keeps four copies
                     gpu[bfs]["launches"][0]["counts"][f"{kind}.requests"]))
    print("| case | count | IR loop | unrolled by 4 (the simulator since 2026-11-27) "
          "| SASS's structure | GPU (ncu) |")
    print("|---|---|---:|---:|---:|---:|")
    for case, what, ir, unr, sass, g in rows:
        print(f"| {case} | {what} | {ir:,} | {unr:,} | {sass:,} | {g:,} |")


if __name__ == "__main__":
    main()
