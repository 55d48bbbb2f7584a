"""Counting memory traffic: MemoryAccess records in, per-kind and per-line counts out."""
from __future__ import annotations

from ..mem.access import MemoryAccess
import os

import numpy as np

from ..mem.coalesce import (_QUARTER_TABLES, HALF_WARP, SECTOR_BYTES, Batch, _parse_arch,
                             _segment_size_1x, coalesce_batch)
from ..report import AccessCounts


class TrafficCounter:
    """Accumulates the accesses of one launch for one architecture's coalescing rule.

    Counts are kept per (IR node, kind) as plain integers while the launch runs
    (the hot path of every engine) and turned into :class:`AccessCounts` totals
    and per-line counts when read.
    """

    def __init__(self, arch: str):
        self.arch = arch
        self.cc = _parse_arch(arch)
        self.shared = {"load": 0, "store": 0, "atomic": 0}
        self._patterns: dict = {}
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
        order (each warp's transactions in issue order)."""
        w, address, lane, ws = acc.warp, acc.address, acc.lane, acc.word_size
        if w.size and w[0] == w[-1]:               # one warp: the pattern cache
            base = int(address[0]) & ~511
            hit = self._pattern(w, lane, address, ws, base)
            self._count(acc, 1, hit[0], len(hit[2]), hit[1])
            return [([base + a for a in hit[2]], hit[3])]
        if w.size == 0:
            self._count(acc, 0, 0, 0, 0)
            return [([], [])]
        # A block's warps (the timed-block engine): warp by warp through the pattern
        # cache, which is much cheaper than the batch coalescer for a few warps.
        cuts = [0, *(np.flatnonzero(w[1:] != w[:-1]) + 1).tolist(), w.size]
        out = []
        requests = transactions = moved = 0
        for lo, hi in zip(cuts, cuts[1:]):
            a = address[lo:hi]
            base = int(a[0]) & ~511
            hit = self._pattern(w[lo:hi], lane[lo:hi], a, ws, base)
            requests += hit[0]
            transactions += len(hit[2])
            moved += hit[1]
            out.append(([base + x for x in hit[2]], hit[3]))
        self._count(acc, len(out), requests, transactions, moved)
        return out

    def _pattern(self, warp, lane, address, ws, base):
        """(requests, bytes, addresses - base, sizes, Batch) of one warp's access, cached.

        Coalescing depends only on addresses relative to a 512-byte aligned base
        (every segment and sector rule works within aligned pieces of <= 256 B), so a
        warp repeating another's pattern shifted by a multiple of 512 B is looked up."""
        rel = address - base
        key = (ws, rel.tobytes(), lane.tobytes())
        hit = self._patterns.get(key)
        if hit is None:
            if len(self._patterns) > 50_000:
                self._patterns.clear()
            found = warp_transactions(address.tolist(), lane.tolist(), ws, self.cc)
            if found is None:                      # unsorted lanes, misaligned words: the
                b = coalesce_batch(np.zeros_like(warp), lane, address, ws, self.arch)  # reference
                found = b.requests, b.txn_address.tolist(), b.txn_size.tolist()
            requests, addrs, sizes = found
            hit = self._patterns[key] = [requests, sum(sizes), [a - base for a in addrs], sizes, None]
        return hit

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
        base = int(address[0]) & ~511
        entry = self._pattern(warp, lane, address, ws, base)
        if entry[4] is None:                       # the arrays, built once per pattern
            rel, size = np.array(entry[2], dtype=np.int64), np.array(entry[3], dtype=np.int64)
            rel.setflags(write=False)
            size.setflags(write=False)
            entry[4] = (rel, size)
        rel, size = entry[4]
        return Batch(np.full(size.size, warp[0]), rel + base, size, entry[0])

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
        sectors = set()
        for a, k in zip(addresses, lanes):
            if k <= previous or k > 31 or a < 0 or a % ws:
                return None
            previous = k
            sectors.add(a >> 5)
        sectors = sorted(sectors)
        return 1, [x << 5 for x in sectors], [SECTOR_BYTES] * len(sectors)
    if cc < 12:                                    # 1.0/1.1: all or nothing per half-warp
        halves: dict = {}
        for a, k in zip(addresses, lanes):
            if k <= previous or k > 31 or a < 0 or a % ws:
                return None
            previous = k
            halves.setdefault(k >> 4, []).append((a, k))
        out_a: list = []
        out_s: list = []
        for half in halves.values():
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
        return len(halves), out_a, out_s
    seg_size = _segment_size_1x(ws)                # 1.2/1.3: segments, then shrink
    off, size = _QUARTER_TABLES_LISTS[seg_size]
    halves = ({}, {})                              # segment -> quarter mask, first-thread order
    for a, k in zip(addresses, lanes):
        if k <= previous or k > 31 or a < 0 or a % ws:
            return None
        previous = k
        quarters = halves[k >> 4]
        seg = a // seg_size
        quarters[seg] = quarters.get(seg, 0) | 1 << ((a % seg_size) >> 5)
    out_a = []
    out_s = []
    for quarters in halves:
        for seg, mask in quarters.items():
            out_a.append(seg * seg_size + off[mask])
            out_s.append(size[mask])
    return (len(halves[0]) > 0) + (len(halves[1]) > 0), out_a, out_s


_QUARTER_TABLES_LISTS = {k: (o.tolist(), z.tolist()) for k, (o, z) in _QUARTER_TABLES.items()}
