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
from ..mem.warp_coalesce import SECTOR_BYTES
from ..report import AccessCounts


class TrafficCounter:
    """Accumulates the accesses of one launch for one architecture's coalescing rule.

    Counts are kept per (IR node, kind) as plain integers while the launch runs
    (the hot path of every engine) and turned into :class:`AccessCounts` totals
    and per-line counts when read.
    """

    def __init__(self, arch: str, aggregate_uniform: bool = False, word_rounds: bool = False):
        self.arch = arch
        self.coalescer = Coalescer(arch)
        # Atomics (config [atomics]): the compiler does a warp-uniform one from one lane
        # (compiler_aggregates_uniform), and the hardware does a warp's lanes on one word
        # one per round, each round's sectors transactions of their own
        # (same_address_lanes_merged; docs/calibration/atomic-sectors-h100.md).
        self.aggregate_uniform = aggregate_uniform
        self.word_rounds = word_rounds
        self.cc = self.coalescer.cc
        self.shared = {"load": 0, "store": 0, "atomic": 0}
        self._nodes: dict = {}      # (id(node), kind) -> [line key, kind, 6 counts, sample warp]
        self.samples: dict = {}

    # --- reading the counts ------------------------------------------------------

    @property
    def totals(self) -> dict:
        out = {"load": AccessCounts(), "store": AccessCounts(), "atomic": AccessCounts()}
        for _, kind, counts, _ in self._nodes.values():
            out[kind].add(AccessCounts(*counts))
        return out

    @property
    def by_line(self) -> dict:
        out: dict = {}
        for line, kind, counts, _ in self._nodes.values():
            out.setdefault(line, {}).setdefault(kind + "s", AccessCounts()).add(AccessCounts(*counts))
        return out

    # --- counting -------------------------------------------------------------------

    def _record(self, acc: MemoryAccess) -> list:
        """The running counts of ``acc``'s instruction (created once); its sample is the
        lowest-numbered warp's (kept as lower warps come)."""
        key = (id(acc.node), acc.kind)
        rec = self._nodes.get(key)
        if rec is None:
            loc = acc.node.loc
            rec = self._nodes[key] = [f"{os.path.basename(loc.file)}:{loc.line}", acc.kind,
                                      [0, 0, 0, 0, 0, 0], int(acc.warp[0])]
            self.keep_sample(acc)
        elif acc.warp[0] < rec[3]:
            rec[3] = int(acc.warp[0])
            self.keep_sample(acc)
        return rec[2]

    def add(self, acc: MemoryAccess):
        """Count one access; returns its coalescing Batch (None for shared memory)."""
        if acc.space == "shared":
            self.shared[acc.kind] += _warps(acc)
            return None
        if acc.kind == "atomic":
            acc = self.issued(acc)
            rounds = self._rounds(acc) if self.word_rounds else None
            if rounds is not None:
                batch = self.coalesce(rounds)
                self._count(acc, _warps(acc), self.coalesce(acc).requests, batch.transactions,
                            batch.bytes)
                return batch
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
        if acc.kind == "atomic":
            acc = self.issued(acc)
            rounds = self._rounds(acc) if self.word_rounds else None
            if rounds is not None:
                return self._timed_rounds(acc, rounds)
        warps = self.coalescer.per_warp(acc)
        if not warps:
            self._count(acc, 0, 0, 0, 0)
            return [([], [])]
        self._count(acc, len(warps), sum(w.requests for w in warps),
                    sum(len(w.sizes) for w in warps), sum(w.bytes for w in warps))
        return [(w.addresses, w.sizes) for w in warps]

    def add_packed(self, acc: MemoryAccess):
        """:meth:`add_timed` of a global load or store for the compiled memory core: the
        same counts, the transactions already packed as the core reads them
        (:func:`simgpu.mem.fast_coalesce.packed_warps`); None where the coalescer's own
        path must take it (then call add_timed)."""
        from ..mem.fast_coalesce import packed_warps     # (numba: imported once the core runs)
        found = packed_warps(acc, self.cc)
        if found is None:
            return None
        packed, warps, requests, transactions, moved = found
        self._count(acc, warps, requests, transactions, moved)
        return packed

    def add_traced(self, acc: MemoryAccess):
        """:meth:`add_timed` for the trace recorder: the same counts, and the same
        transactions, but as a :class:`~simgpu.mem.coalescer.FlatWarps` (arrays, cut per
        warp by its ``warps(lo, hi)``) where the coalescer has them as arrays (several
        warps of scattered lanes or of one contiguous run), else add_timed's list."""
        if acc.kind != "atomic":
            found = self.coalescer.flat(acc)
            if found is not None:
                requests, flat = found
                sizes = flat.sizes
                n = flat.addresses.size
                moved = SECTOR_BYTES * n if sizes is None else int(sizes.sum())
                self._count(acc, flat.cuts.size - 1, requests, n, moved)
                return flat
        return self.add_timed(acc)

    # --- atomics: what the compiler and the hardware make of the lanes ----------------

    def issued(self, acc: MemoryAccess) -> MemoryAccess:
        """The record as the memory system gets it: a warp-uniform atomic
        (simgpu.ir.uniform) that the compiler aggregates comes from one lane per warp,
        the first active one. The record itself is narrowed (the engines read its lanes
        after counting); the values were computed for every lane, and are the same."""
        if not (self.aggregate_uniform and acc.node.uniform) or acc.warp.size < 2:
            return acc
        w = acc.warp
        first = np.empty(w.size, dtype=bool)
        first[0] = True
        np.not_equal(w[1:], w[:-1], out=first[1:])
        if not first.all():
            acc.__dict__.update(warp=w[first], lane=acc.lane[first], address=acc.address[first])
        return acc

    @staticmethod
    def _rounds(acc: MemoryAccess):
        """Where a warp has lanes on one word: the record regrouped by round (round r of
        warp w holds each word's r-th lane) as warps ``32 w + r``, the hardware's
        requests to the L2; None when no warp has a word twice."""
        if _no_warp_has_a_word_twice(acc.warp, acc.address):
            return None
        w, a = acc.warp.astype(np.int64), acc.address
        order = np.lexsort((acc.lane, a, w))
        ws, as_ = w[order], a[order]
        same = (ws[1:] == ws[:-1]) & (as_[1:] == as_[:-1])
        if not same.any():
            return None
        # each lane's rank among the lanes of its (warp, word), in lane order
        start = np.flatnonzero(np.r_[True, ~same])
        run = np.repeat(start, np.diff(np.r_[start, order.size]))
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size) - run
        key = w * 32 + rank
        regroup = np.lexsort((acc.lane, key))
        out = object.__new__(MemoryAccess)
        out.__dict__.update(acc.__dict__, warp=key[regroup], lane=acc.lane[regroup],
                            address=a[regroup])
        return out

    def _timed_rounds(self, acc: MemoryAccess, rounds: MemoryAccess) -> list:
        """add_timed for an atomic with rounds: each warp's transactions are its rounds'
        in turn (a sector once per round it is in); its requests are the warp's."""
        whole = self.coalescer.per_warp(acc)
        parts = self.coalescer.per_warp(rounds)
        warp_of = rounds.warp[np.r_[0, np.flatnonzero(np.diff(rounds.warp)) + 1]] // 32
        out: dict = {}
        for w, part in zip(warp_of.tolist(), parts):
            addresses, sizes = out.setdefault(w, ([], []))
            addresses += part.addresses
            sizes += part.sizes
        self._count(acc, len(whole), sum(w.requests for w in whole),
                    sum(len(s) for _, s in out.values()), sum(sum(s) for _, s in out.values()))
        return list(out.values())

    def keep_sample(self, acc: MemoryAccess):
        """The first warp's addresses of each memory instruction, for the teaching view:
        the lowest-numbered warp that runs it (``acc.warp`` ascends), whatever order the
        engine meets the warps in (the first to issue in simulated time could differ
        between engines by the last bit of a time)."""
        key = (acc.node.loc.line, acc.kind)
        old = self.samples.get(key)
        if old is not None and old["warp"] <= acc.warp[0]:
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


def _no_warp_has_a_word_twice(w: np.ndarray, a: np.ndarray) -> bool:
    """An O(n) test without a sort, for the common shapes: True when each warp's
    addresses strictly rise from one entry to the next and the warps come in order (a
    thread-indexed atomic; an aggregated uniform one, one lane per warp), or when the
    addresses strictly rise through the whole record.  False proves nothing: the
    caller's sort decides.  A few numpy calls: cheap next to the sort where it fails."""
    if w.size < 2:
        return True
    rise = a[1:] > a[:-1]
    if rise.all():
        return True
    if not (rise | (w[1:] != w[:-1])).all():  # a warp's address repeats or falls
        return False
    return bool((w[1:] >= w[:-1]).all())      # else a warp could come back later


def _warps(acc: MemoryAccess) -> int:
    w = acc.warp
    return 0 if w.size == 0 else 1 + int((w[1:] != w[:-1]).sum())


