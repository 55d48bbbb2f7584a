"""Counting memory traffic: MemoryAccess records in, per-kind and per-line counts out."""
from __future__ import annotations

from ..mem.access import MemoryAccess
import os

import numpy as np

from ..mem.coalesce import Batch, coalesce_batch
from ..report import AccessCounts


class TrafficCounter:
    """Accumulates the accesses of one launch for one architecture's coalescing rule."""

    def __init__(self, arch: str):
        self.arch = arch
        self.totals = {"load": AccessCounts(), "store": AccessCounts(), "atomic": AccessCounts()}
        self.shared = {"load": 0, "store": 0, "atomic": 0}
        self.by_line: dict = {}
        self._patterns: dict = {}
        self.samples: dict = {}

    def add(self, acc: MemoryAccess):
        """Count one access; returns its coalescing Batch (None for shared memory)."""
        if acc.space == "shared":
            self.shared[acc.kind] += _warps(acc)
            return None
        batch = self.coalesce(acc)
        c = AccessCounts(instructions=_warps(acc), lanes=acc.lanes, requests=batch.requests,
                         transactions=batch.transactions,
                         bytes_requested=acc.lanes * acc.word_size, bytes=batch.bytes)
        self.totals[acc.kind].add(c)
        self.keep_sample(acc)
        loc = acc.node.loc
        line = self.by_line.setdefault(f"{os.path.basename(loc.file)}:{loc.line}", {})
        line.setdefault(acc.kind + "s", AccessCounts()).add(c)
        return batch


    def keep_sample(self, acc: MemoryAccess):
        """The first warp's addresses of each memory instruction, for the teaching view."""
        key = (acc.node.loc.line, acc.kind)
        if key in self.samples:
            return
        first = acc.warp == acc.warp[0]
        lanes = acc.lane[first]
        address = np.zeros(32, dtype=np.int64)
        active = np.zeros(32, dtype=bool)
        address[lanes], active[lanes] = acc.address[first], True
        self.samples[key] = {"kind": acc.kind, "array": acc.array, "line": key[0],
                             "source": acc.node.loc.source.strip(), "warp": int(acc.warp[0]),
                             "address": address, "active": active, "word_size": acc.word_size}

    def coalesce(self, acc: MemoryAccess):
        """The coalescer's Batch; one-warp patterns are remembered relative to a 512 B base.

        Coalescing depends only on addresses modulo whole segments (at most 256 B), so a
        warp repeating a pattern (every warp of a coalesced loop) is looked up,
        not recomputed: the per-warp engines issue one access per warp.
        """
        if acc.warp.size == 0 or acc.warp[0] != acc.warp[-1]:
            return self._contiguous(acc) or coalesce_batch(acc.warp, acc.lane, acc.address,
                                                           acc.word_size, self.arch)
        return self._one_warp(acc.warp, acc.lane, acc.address, acc.word_size)

    def _one_warp(self, warp, lane, address, ws):
        base = int(address.min()) & ~511         # coarser than any segment rule (256 B max)
        rel = address - base
        key = (ws, rel.tobytes(), lane.tobytes())
        hit = self._patterns.get(key)
        if hit is None:
            if len(self._patterns) > 50_000:
                self._patterns.clear()
            hit = self._patterns[key] = coalesce_batch(np.zeros_like(warp), lane, rel, ws, self.arch)
        return Batch(np.full(hit.txn_size.size, warp[0]), hit.txn_address + base,
                     hit.txn_size, hit.requests)

    def _contiguous(self, acc: MemoryAccess):
        """Many warps reading one contiguous run (lane k of warp w -> the next word): the
        full warps in the middle all repeat one pattern 32 words apart, so coalesce the
        first, one middle and the last warp and repeat the middle one.  This is the hot
        case of striding loops in the lockstep engine."""
        ws, a, lane, warp = acc.word_size, acc.address, acc.lane, acc.warp
        if ws < 4 or a.size < 128:          # 32 words of >= 4 bytes are whole 128-byte segments
            return None
        step_lane = np.diff(lane)
        if not ((np.diff(a) == ws).all() and ((step_lane == 1) | (step_lane == -31)).all()):
            return None
        cut = np.flatnonzero(np.diff(warp)) + 1
        if not (step_lane[cut - 1] == -31).all():
            return None                         # a warp boundary without the lane wrapping
        first, last = slice(0, cut[0]), slice(cut[-1], a.size)
        middle = slice(cut[0], cut[0] + 32) if len(cut) > 1 else None
        parts = [self._one_warp(warp[s], lane[s], a[s], ws)
                 for s in (first, middle, last) if s is not None]
        if middle is None:
            head, tail = parts
            return Batch(*(np.concatenate((getattr(head, f), getattr(tail, f)))
                           for f in ("txn_warp", "txn_address", "txn_size")),
                         head.requests + tail.requests)
        head, mid, tail = parts
        reps = len(cut) - 1
        shift = np.arange(reps, dtype=np.int64)
        mid_warp = (mid.txn_warp[None, :] + shift[:, None]).ravel()
        mid_addr = (mid.txn_address[None, :] + shift[:, None] * (32 * ws)).ravel()
        mid_size = np.tile(mid.txn_size, reps)
        return Batch(np.concatenate((head.txn_warp, mid_warp, tail.txn_warp)),
                     np.concatenate((head.txn_address, mid_addr, tail.txn_address)),
                     np.concatenate((head.txn_size, mid_size, tail.txn_size)),
                     head.requests + mid.requests * reps + tail.requests)


def _warps(acc: MemoryAccess) -> int:
    w = acc.warp
    return 0 if w.size == 0 else 1 + int((w[1:] != w[:-1]).sum())
