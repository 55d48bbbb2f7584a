"""The coalescer unit: the one place where warp instructions become transactions.

It applies :mod:`simgpu.mem.coalesce`'s rules (per warp in plain Python,
:func:`~simgpu.mem.coalesce.warp_transactions`; many warps at once with numpy,
:func:`~simgpu.mem.coalesce.coalesce_batch`) and remembers patterns: coalescing
depends only on addresses relative to a 512-byte aligned base (every segment and
sector rule works within aligned pieces of <= 256 B), so a warp repeating
another's pattern shifted by a multiple of 512 B is looked up, not recomputed.

Both the traffic counter (:mod:`simgpu.sim.counters`, which only records what
this unit produced) and the timed engines' memory pipeline take their
transactions from here, so the counts and the times cannot disagree.
"""
from __future__ import annotations

import numpy as np

from .access import MemoryAccess
from .coalesce import Batch, coalesce_batch, parse_arch, warp_transactions

__all__ = ["Coalescer", "WarpTransactions"]


class WarpTransactions:
    """What one warp instruction became: its requests, bytes moved, transactions."""

    __slots__ = ("requests", "bytes", "addresses", "sizes")

    def __init__(self, requests: int, moved: int, addresses: list, sizes: list):
        self.requests, self.bytes, self.addresses, self.sizes = requests, moved, addresses, sizes


class Coalescer:
    """One architecture's coalescing, with its pattern cache."""

    MAX_PATTERNS = 50_000

    def __init__(self, arch: str):
        self.arch = arch
        self.cc = parse_arch(arch)
        self._patterns: dict = {}

    # --- per warp (the timed engines) ----------------------------------------------

    def per_warp(self, acc: MemoryAccess) -> list:
        """The transactions of each warp of ``acc`` (in warp order), as
        :class:`WarpTransactions` with absolute addresses (lists of ints)."""
        w, address, lane, ws = acc.warp, acc.address, acc.lane, acc.word_size
        if w.size == 0:
            return []
        if w[0] == w[-1]:                          # one warp
            return [self._absolute(w, lane, address, ws)]
        # A block's warps (the timed-block engine): warp by warp through the pattern
        # cache, which is much cheaper than the batch coalescer for a few warps.  Each
        # warp's base and relative addresses come from one numpy pass over the block.
        cuts = [0, *(np.flatnonzero(w[1:] != w[:-1]) + 1).tolist(), w.size]
        if address.dtype != np.int64:              # (the interpreter's addresses are int64)
            return [self._absolute(w[lo:hi], lane[lo:hi], address[lo:hi], ws)
                    for lo, hi in zip(cuts, cuts[1:])]
        bases = address[cuts[:-1]] & ~511
        rel = address - np.repeat(bases, np.diff(cuts))
        # each warp's pattern key as a slice of the block's bytes (the same bytes as
        # rel[lo:hi].tobytes(): no numpy call per warp), its lists from the block's
        # lists, made at the first miss
        rel_bytes, lane_bytes = rel.tobytes(), lane.tobytes()
        rs, ls = rel.itemsize, lane.itemsize
        patterns, listed = self._patterns, None
        out = []
        for lo, hi, base in zip(cuts, cuts[1:], bases.tolist()):
            key = (ws, rel_bytes[lo * rs:hi * rs], lane_bytes[lo * ls:hi * ls])
            hit = patterns.get(key)
            if hit is None:
                if listed is None:
                    listed = address.tolist(), lane.tolist()
                hit = self._new_pattern(key, listed[0][lo:hi], listed[1][lo:hi], ws, base,
                                        w[lo:hi], lane[lo:hi], address[lo:hi])
            out.append(WarpTransactions(hit[0], hit[1], [base + a for a in hit[2]], hit[3]))
        return out

    def _absolute(self, warp, lane, address, ws) -> WarpTransactions:
        base = int(address[0]) & ~511
        hit = self._pattern(warp, lane, address, ws, base)
        return WarpTransactions(hit[0], hit[1], [base + a for a in hit[2]], hit[3])

    def _pattern(self, warp, lane, address, ws, base, rel=None):
        """[requests, bytes, addresses - base, sizes, arrays or None] of one warp's access
        (``rel``: ``address - base``, where the caller has it)."""
        if rel is None:
            rel = address - base
        key = (ws, rel.tobytes(), lane.tobytes())
        hit = self._patterns.get(key)
        if hit is None:
            hit = self._new_pattern(key, address.tolist(), lane.tolist(), ws, base,
                                    warp, lane, address)
        return hit

    def _new_pattern(self, key, addresses: list, lanes: list, ws, base, warp, lane, address):
        """Coalesce a warp's pattern not seen yet (``addresses``/``lanes``: its lists;
        ``warp``, ``lane``, ``address``: its arrays, for the reference) and remember it."""
        if len(self._patterns) > self.MAX_PATTERNS:
            self._patterns.clear()
        found = warp_transactions(addresses, lanes, ws, self.cc)
        if found is None:                          # unsorted lanes, misaligned words: the
            b = coalesce_batch(np.zeros_like(warp), lane, address, ws, self.arch)  # reference
            found = b.requests, b.txn_address.tolist(), b.txn_size.tolist()
        requests, addrs, sizes = found
        hit = self._patterns[key] = [requests, sum(sizes), [a - base for a in addrs], sizes, None]
        return hit

    # --- many warps at once (the lockstep and per-warp counting engines) ----------------

    def batch(self, acc: MemoryAccess) -> Batch:
        """The coalescer's Batch for ``acc``; one-warp patterns are remembered."""
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
