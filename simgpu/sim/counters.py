"""Counting memory traffic: MemoryAccess records in, per-kind and per-line counts out."""
from __future__ import annotations

from ..mem.access import MemoryAccess
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
        c = AccessCounts(instructions=_warps(acc), requests=batch.requests,
                         transactions=batch.transactions,
                         bytes_requested=acc.lanes * acc.word_size, bytes=batch.bytes)
        self.totals[acc.kind].add(c)
        self.keep_sample(acc)
        line = self.by_line.setdefault(acc.node.loc.line, {})
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
        """The coalescer's Batch; one-warp patterns are remembered relative to a 128 B base.

        Coalescing depends only on addresses modulo whole 128-byte segments, so a
        warp repeating a pattern (every warp of a coalesced loop) is looked up,
        not recomputed: the per-warp engines issue one access per warp.
        """
        if acc.warp.size == 0 or acc.warp[0] != acc.warp[-1]:
            return coalesce_batch(acc.warp, acc.lane, acc.address, acc.word_size, self.arch)
        base = int(acc.address.min()) & ~127
        rel = acc.address - base
        key = (acc.word_size, rel.tobytes(), acc.lane.tobytes())
        hit = self._patterns.get(key)
        if hit is None:
            if len(self._patterns) > 50_000:
                self._patterns.clear()
            hit = self._patterns[key] = coalesce_batch(np.zeros_like(acc.warp), acc.lane, rel,
                                                       acc.word_size, self.arch)
        return Batch(np.full(hit.txn_size.size, acc.warp[0]), hit.txn_address + base,
                     hit.txn_size, hit.requests)


def _warps(acc: MemoryAccess) -> int:
    w = acc.warp
    return 0 if w.size == 0 else 1 + int((w[1:] != w[:-1]).sum())
