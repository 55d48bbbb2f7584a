"""Counting memory traffic: MemoryAccess records in, per-kind and per-line counts out."""
from __future__ import annotations

from ..mem.access import MemoryAccess
from ..mem.coalesce import coalesce_batch
from ..report import AccessCounts


class TrafficCounter:
    """Accumulates the accesses of one launch for one architecture's coalescing rule."""

    def __init__(self, arch: str):
        self.arch = arch
        self.totals = {"load": AccessCounts(), "store": AccessCounts(), "atomic": AccessCounts()}
        self.shared = {"load": 0, "store": 0, "atomic": 0}
        self.by_line: dict = {}

    def add(self, acc: MemoryAccess):
        """Count one access; returns its coalescing Batch (None for shared memory)."""
        if acc.space == "shared":
            self.shared[acc.kind] += _warps(acc)
            return None
        batch = coalesce_batch(acc.warp, acc.lane, acc.address, acc.word_size, self.arch)
        c = AccessCounts(instructions=_warps(acc), requests=batch.requests,
                         transactions=batch.transactions,
                         bytes_requested=acc.lanes * acc.word_size, bytes=batch.bytes)
        self.totals[acc.kind].add(c)
        line = self.by_line.setdefault(acc.node.loc.line, {})
        line.setdefault(acc.kind + "s", AccessCounts()).add(c)
        return batch


def _warps(acc: MemoryAccess) -> int:
    w = acc.warp
    return 0 if w.size == 0 else 1 + int((w[1:] != w[:-1]).sum())
