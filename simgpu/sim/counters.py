"""Counting memory traffic: MemoryAccess records in, per-kind and per-line counts out.

The counter coalesces nothing itself: it records what the coalescer unit
(:class:`simgpu.mem.coalescer.Coalescer`) produced, the same transactions that
the timed engines hand to the memory pipeline.
"""
from __future__ import annotations

import os

import numpy as np

from ..mem.access import MemoryAccess
from ..mem.coalescer import Coalescer
from ..report import AccessCounts


class TrafficCounter:
    """Accumulates the accesses of one launch for one architecture's coalescing rule.

    Counts are kept per (IR node, kind) as plain integers while the launch runs
    (the hot path of every engine) and turned into :class:`AccessCounts` totals
    and per-line counts when read.
    """

    def __init__(self, arch: str):
        self.arch = arch
        self.coalescer = Coalescer(arch)
        self.cc = self.coalescer.cc
        self.shared = {"load": 0, "store": 0, "atomic": 0}
        self._nodes: dict = {}      # (id(node), kind) -> [line key, kind, 6 counts]
        self.samples: dict = {}

    # --- reading the counts ------------------------------------------------------

    @property
    def totals(self) -> dict:
        out = {"load": AccessCounts(), "store": AccessCounts(), "atomic": AccessCounts()}
        for _, kind, counts in self._nodes.values():
            out[kind].add(AccessCounts(*counts))
        return out

    @property
    def by_line(self) -> dict:
        out: dict = {}
        for line, kind, counts in self._nodes.values():
            out.setdefault(line, {}).setdefault(kind + "s", AccessCounts()).add(AccessCounts(*counts))
        return out

    # --- counting -------------------------------------------------------------------

    def _record(self, acc: MemoryAccess) -> list:
        """The running counts of ``acc``'s instruction (created, and its sample kept, once)."""
        key = (id(acc.node), acc.kind)
        rec = self._nodes.get(key)
        if rec is None:
            loc = acc.node.loc
            rec = self._nodes[key] = [f"{os.path.basename(loc.file)}:{loc.line}", acc.kind,
                                      [0, 0, 0, 0, 0, 0]]
            self.keep_sample(acc)
        return rec[2]

    def add(self, acc: MemoryAccess):
        """Count one access; returns its coalescing Batch (None for shared memory)."""
        if acc.space == "shared":
            self.shared[acc.kind] += _warps(acc)
            return None
        batch = self.coalesce(acc)
        self._count(acc, _warps(acc), batch.requests, batch.transactions, batch.bytes)
        return batch

    def _count(self, acc, warps, requests, transactions, moved):
        c = self._record(acc)
        lanes = len(acc.address)
        c[0] += warps
        c[1] += lanes
        c[2] += requests
        c[3] += transactions
        c[4] += lanes * acc.word_size
        c[5] += moved

    def add_timed(self, acc: MemoryAccess):
        """Count one global access for the timed engines; returns its transactions
        as ``[(addresses, sizes), ...]``, one pair of int lists per warp in warp
        order (each warp's transactions in issue order), as the coalescer gave them."""
        warps = self.coalescer.per_warp(acc)
        if not warps:
            self._count(acc, 0, 0, 0, 0)
            return [([], [])]
        self._count(acc, len(warps), sum(w.requests for w in warps),
                    sum(len(w.sizes) for w in warps), sum(w.bytes for w in warps))
        return [(w.addresses, w.sizes) for w in warps]

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
        """The coalescer's Batch for ``acc`` (:meth:`Coalescer.batch`)."""
        return self.coalescer.batch(acc)


def _warps(acc: MemoryAccess) -> int:
    w = acc.warp
    return 0 if w.size == 0 else 1 + int((w[1:] != w[:-1]).sum())


