"""Lanes: the threads a piece of the simulator executes together.

A :class:`LaneGroup` is a set of threads with their built-in indices, warp
ids and shared-memory rows — the whole of a wave of blocks for the lockstep
engine, or one warp for the per-warp engines.  The interpreter works on any
group the same way; only the engines decide how groups are cut (the timed engines: a
warp, a block, or a block's warps on one scheduler; :class:`WarpGroups` builds a block's
warps from templates).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WARP_SIZE = 32


@dataclass(frozen=True)
class Geometry:
    """A launch's shape: grid and block as (x, y, z)."""

    grid: tuple
    block: tuple

    @property
    def threads_per_block(self) -> int:
        x, y, z = self.block
        return x * y * z

    @property
    def blocks(self) -> int:
        x, y, z = self.grid
        return x * y * z

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // WARP_SIZE)

    @property
    def threads(self) -> int:
        return self.blocks * self.threads_per_block

    def block_index(self, linear):
        """(x, y, z) of a linear block id: x varies fastest, as CUDA numbers them."""
        gx, gy, _ = self.grid
        return linear % gx, (linear // gx) % gy, linear // (gx * gy)

    def thread_index(self, linear):
        bx, by, _ = self.block
        return linear % bx, (linear // bx) % by, linear // (bx * by)


class LaneGroup:
    """Threads given by (linear block id, linear thread id in block), in warp order."""

    def __init__(self, geom: Geometry, block_lin: np.ndarray, tid: np.ndarray,
                 block_row: np.ndarray, shared_rows: int):
        self.geom = geom
        self.n = len(tid)
        self.block_lin = block_lin
        self.tid = tid
        self.block_row = block_row            # row of this lane's block in shared storage
        self.shared_rows = shared_rows
        self.warp = block_lin.astype(np.int64) * geom.warps_per_block + tid // WARP_SIZE
        self.lane = (tid % WARP_SIZE).astype(np.int64)
        tx, ty, tz = geom.thread_index(tid)
        bx, by, bz = geom.block_index(block_lin)
        self.index = {
            ("threadIdx", "x"): tx.astype(np.int32), ("threadIdx", "y"): ty.astype(np.int32),
            ("threadIdx", "z"): tz.astype(np.int32), ("blockIdx", "x"): bx.astype(np.int32),
            ("blockIdx", "y"): by.astype(np.int32), ("blockIdx", "z"): bz.astype(np.int32),
        }
        self.exited = np.zeros(self.n, dtype=bool)
        self.single_warp = bool(self.n) and bool(self.warp[0] == self.warp[-1])

    @classmethod
    def blocks(cls, geom: Geometry, first: int, count: int) -> "LaneGroup":
        """Blocks ``first .. first+count-1``, each with its own shared-memory row."""
        tpb = geom.threads_per_block
        rows = np.repeat(np.arange(count, dtype=np.int64), tpb)
        tid = np.tile(np.arange(tpb, dtype=np.int64), count)
        return cls(geom, rows + first, tid, rows, count)

    @classmethod
    def warp(cls, geom: Geometry, block: int, warp_in_block: int, block_row: int,
             shared_rows: int) -> "LaneGroup":
        """One warp (the last of a block may be partial)."""
        lo = warp_in_block * WARP_SIZE
        tid = np.arange(lo, min(lo + WARP_SIZE, geom.threads_per_block), dtype=np.int64)
        n = len(tid)
        return cls(geom, np.full(n, block, np.int64), tid, np.full(n, block_row, np.int64),
                   shared_rows)

    @classmethod
    def warps(cls, geom: Geometry, block: int, warps_in_block) -> "LaneGroup":
        """Some warps of one block (ascending numbers), with the block's shared row."""
        tpb = geom.threads_per_block
        tid = np.concatenate([np.arange(w * WARP_SIZE, min((w + 1) * WARP_SIZE, tpb),
                                        dtype=np.int64) for w in warps_in_block])
        n = len(tid)
        return cls(geom, np.full(n, block, np.int64), tid, np.zeros(n, np.int64), 1)

    def describe_lane(self, lane: int) -> str:
        """'block (3, 0, 0), thread (17, 0, 0)' for one lane of the group."""
        b = tuple(int(v) for v in self.geom.block_index(int(self.block_lin[lane])))
        t = tuple(int(v) for v in self.geom.thread_index(int(self.tid[lane])))
        return f"block {b}, thread {t}"

    def count_warps(self, idx: np.ndarray) -> int:
        """How many distinct warps the (sorted) lanes ``idx`` belong to."""
        if idx.size == 0:
            return 0
        if self.single_warp:
            return 1
        w = self.warp[idx]
        return 1 + int(np.count_nonzero(w[1:] != w[:-1]))

    def split_warps(self, idx: np.ndarray, cond: np.ndarray) -> int:
        """How many warps of ``idx`` have lanes on both sides of ``cond`` (divergent)."""
        if idx.size == 0:
            return 0
        if self.single_warp:
            taken = int(np.count_nonzero(cond))
            return int(0 < taken < idx.size)
        w = self.warp[idx]
        starts = np.flatnonzero(np.concatenate(([True], w[1:] != w[:-1])))
        taken = np.add.reduceat(cond.astype(np.int64), starts)
        sizes = np.diff(np.append(starts, len(w)))
        return int(np.count_nonzero((taken > 0) & (taken < sizes)))


class WarpGroups:
    """``LaneGroup.warp(geom, block, w, 0, 1)`` for every warp of a block, built from
    per-launch templates: the thread-dependent arrays are the same in every block
    (shared, read-only), the block-dependent ones are constants."""

    def __init__(self, geom: Geometry):
        self.geom = geom
        self.templates = [LaneGroup.warp(geom, 0, w, 0, 1) for w in range(geom.warps_per_block)]
        for t in self.templates:
            for a in (t.tid, t.lane, *(t.index[("threadIdx", d)] for d in "xyz")):
                a.setflags(write=False)

    def block(self, block: int) -> list:
        geom = self.geom
        bx, by, bz = (np.int32(v) for v in geom.block_index(block))
        first_warp = block * geom.warps_per_block
        out = []
        for w, t in enumerate(self.templates):
            n = t.n
            g = object.__new__(LaneGroup)
            g.__dict__.update(t.__dict__)
            g.block_lin = np.full(n, block, np.int64)
            g.warp = np.full(n, first_warp + w, np.int64)
            g.index = {**t.index, ("blockIdx", "x"): np.full(n, bx, np.int32),
                       ("blockIdx", "y"): np.full(n, by, np.int32),
                       ("blockIdx", "z"): np.full(n, bz, np.int32)}
            g.exited = np.zeros(n, dtype=bool)
            out.append(g)
        return out


def union(parts, n: int) -> np.ndarray:
    """The sorted union of disjoint sorted lane-index arrays."""
    parts = [p for p in parts if p.size]
    if not parts:
        return np.empty(0, dtype=np.int64)
    if len(parts) == 1:
        return parts[0]
    total = sum(p.size for p in parts)
    if total * 8 > n:                         # dense: a mask pass is cheaper than sorting
        mask = np.zeros(n, dtype=bool)
        for p in parts:
            mask[p] = True
        return np.flatnonzero(mask)
    return np.sort(np.concatenate(parts))
