"""The coalescer unit: the one place where warp instructions become transactions.

It applies :mod:`simgpu.mem.coalesce`'s rules (per warp in plain Python,
:func:`~simgpu.mem.coalesce.warp_transactions`; many warps at once with numpy,
:func:`~simgpu.mem.coalesce.coalesce_batch`) and remembers patterns: coalescing
depends only on addresses relative to a 512-byte aligned base (every segment and
sector rule works within aligned pieces of <= 256 B), so a warp repeating
another's pattern shifted by a multiple of 512 B is looked up, not recomputed
(from its second sighting on: most patterns seen once are never seen again).

Scattered accesses of several warps (pointer chasing: each lane reads a random
word) repeat no pattern, so on CC 1.2 and newer they skip the cache and the
per-lane loop: the same rules, vectorized over the whole access in a few numpy
calls (:func:`_segment_transactions`, :func:`_sector_keys`).  Which way an access
goes is only a matter of speed (``tests/mem/test_coalescer_scattered.py`` holds
both to the reference rules).

Both the traffic counter (:mod:`simgpu.sim.counters`, which only records what
this unit produced) and the timed engines' memory pipeline take their
transactions from here, so the counts and the times cannot disagree.
"""
from __future__ import annotations

import numpy as np

from .access import MemoryAccess
from .coalesce import (_QUARTER_TABLES, Batch, _freeze, coalesce_batch, parse_arch,
                       warp_transactions)
from .warp_coalesce import HALF_WARP, SECTOR_BYTES

__all__ = ["Coalescer", "FlatWarps", "WarpTransactions"]

#: Accesses of fewer lanes go to the pattern cache directly: the vectorized rules cost
#: about 15 us whatever the lanes (some 25 numpy calls); 8 random lanes over 8 warps
#: took 17 us that way and 20 us through the cache (2026-11-26, this 2-core machine).
SCATTERED_MIN_LANES = 8

_SEGMENT_SHIFT = {1: 5, 2: 6, 4: 7, 8: 7, 16: 7}  # log2 of the CC 1.2/1.3 segment (bytes)
_or_all = np.bitwise_or.reduce


def _looks_scattered(w, address) -> bool:
    """Whether an access is worth the vectorized rules of scattered lanes rather than the
    pattern cache: enough lanes, and its first two do not read within 128 bytes of each
    other in one warp (as every coalesced or short-strided access does, whose patterns
    recur).  Only a choice of method: both give the same transactions."""
    return w.size >= SCATTERED_MIN_LANES and not (
        w[0] == w[1] and -128 < int(address[1]) - int(address[0]) < 128)


def _frozen_batch(warps, addresses, requests) -> Batch:
    """The Batch of one 32-byte transaction per entry of ``addresses``."""
    return Batch(*_freeze(warps, addresses, np.full(addresses.size, SECTOR_BYTES, np.int64)),
                 requests=int(requests))


def _valid_key(w, lane, address, ws):
    """``(warp << 5) | lane`` per lane where the access meets warp_transactions'
    preconditions in every warp -- warps non-decreasing, lanes 0..31 ascending within a
    warp, addresses >= 0 and aligned to the word -- else None (the reference path then
    takes the access, and reports what is wrong with it).  Warps are held to
    0 <= warp < 2**40 so that the key cannot overflow."""
    if isinstance(ws, bool) or ws not in _SEGMENT_SHIFT or address.dtype != np.int64 \
            or w.dtype.kind != "i" or lane.dtype.kind != "i":
        return None
    # one OR over each array shows any bit out of place: a sign, a misaligned low bit,
    # a lane above 31, a warp at 2**40 or above (three calls, not six)
    if int(_or_all(address)) & (-1 << 63 | (ws - 1)) or int(_or_all(lane)) & ~31 \
            or int(_or_all(w)) >> 40:
        return None
    key = (w.astype(np.int64, copy=False) << 5) | lane
    if (key[1:] <= key[:-1]).any():                # strictly ascending: (warp, lane) order
        return None
    return key


def _sector_keys(key, address):
    """CC 2.0+: the distinct (warp, sector) pairs of a valid access (``key`` from
    :func:`_valid_key`), ascending, packed as ``(warp - first warp) << bits | sector``:
    (keys, bits); None where the pair does not fit in 62 bits (addresses near 2**63)."""
    sector = address >> 5
    bits = int(sector.max()).bit_length()
    offset = (key >> 5) - (int(key[0]) >> 5)
    if bits + int(offset[-1]).bit_length() > 62:
        return None
    keys = np.sort((offset << bits) | sector)
    new = keys[1:] != keys[:-1]
    if not new.all():
        keys = keys[np.concatenate(([True], new))]
    return keys, bits


def _segment_transactions(key, address, ws):
    """CC 1.2/1.3: the transactions of a valid access (``key`` from :func:`_valid_key`) as
    ``(first_lanes, addresses, sizes)``: transaction i is issued for the lane at position
    ``first_lanes[i]`` (ascending); ``first_lanes`` and ``sizes`` are None where every lane
    has one 32-byte transaction of its own.  None where (half-warp, segment) does not
    fit in 62 bits.

    The guide's loop (:func:`~simgpu.mem.warp_coalesce.warp_transactions`) issues one
    transaction per distinct segment of a half-warp, in the order of each segment's
    first lane, sized by which 32-byte quarters its lanes use; lanes come in (warp,
    lane) order, so that is the order of the first lanes.  Where no two lanes of a
    half-warp share a segment (scattered lanes), each lane is its own transaction of
    one quarter: 128 B and 64 B shrink to 32 B (:func:`~simgpu.mem.warp_coalesce._shrink`)
    at the quarter of the word, ``address // 32 * 32`` (a naturally aligned word of
    <= 16 bytes never crosses a 32-byte boundary)."""
    shift = _SEGMENT_SHIFT[ws]
    segment = address >> shift
    bits = int(segment.max()).bit_length()
    half = key >> 4                                 # (warp, half-warp), non-decreasing
    offset = half - int(half[0])
    if bits + int(offset[-1]).bit_length() > 62:
        return None
    packed = (offset << bits) | segment
    keys = np.sort(packed)
    if not (keys[1:] == keys[:-1]).any():
        return None, address & -SECTOR_BYTES, None
    order = np.argsort(packed, kind="stable")       # each segment's lanes in lane order
    keys = packed[order]
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    quarters = np.bitwise_or.reduceat(1 << ((address[order] & ((1 << shift) - 1)) >> 5),
                                      starts)
    first = order[starts]
    issue = np.argsort(first)
    first, quarters = first[issue], quarters[issue]
    off, size = _QUARTER_TABLES[1 << shift]
    return first, (segment[first] << shift) + off[quarters], size[quarters]


class WarpTransactions:
    """What one warp instruction became: its requests, bytes moved, transactions."""

    __slots__ = ("requests", "bytes", "addresses", "sizes")

    def __init__(self, requests: int, moved: int, addresses: list, sizes: list):
        self.requests, self.bytes, self.addresses, self.sizes = requests, moved, addresses, sizes


class FlatWarps:
    """The transactions of many warps as arrays (the trace recorder keeps these: 8-10
    bytes a transaction, not a Python int in a list): warp i's are
    ``addresses[cuts[i]:cuts[i + 1]]``, each of ``sizes`` bytes (None: all 32)."""

    __slots__ = ("addresses", "sizes", "cuts")

    def __init__(self, addresses: np.ndarray, sizes, cuts: np.ndarray):
        self.addresses, self.sizes, self.cuts = addresses, sizes, cuts

    def warps(self, lo: int, hi: int) -> list:
        """Warps ``lo .. hi - 1`` as :meth:`Coalescer.per_warp`'s callers get them: one
        ``(addresses, sizes)`` pair of int lists per warp."""
        cuts = self.cuts[lo:hi + 1].tolist()
        t0 = cuts[0]
        a = self.addresses[t0:cuts[-1]].tolist()
        if self.sizes is None:
            return [(a[c - t0:d - t0], [SECTOR_BYTES] * (d - c)) for c, d in zip(cuts, cuts[1:])]
        s = self.sizes[t0:cuts[-1]].tolist()
        return [(a[c - t0:d - t0], s[c - t0:d - t0]) for c, d in zip(cuts, cuts[1:])]


class Coalescer:
    """One architecture's coalescing, with its pattern cache."""

    MAX_PATTERNS = 50_000
    MAX_SEEN_ONCE = 200_000

    def __init__(self, arch: str):
        self.arch = arch
        self.cc = parse_arch(arch)
        self._patterns: dict = {}
        self._seen_once: set = set()               # hashes of the patterns met once

    # --- per warp (the timed engines) ----------------------------------------------

    def per_warp(self, acc: MemoryAccess) -> list:
        """The transactions of each warp of ``acc`` (in warp order), as
        :class:`WarpTransactions` with absolute addresses (lists of ints)."""
        w, address, lane, ws = acc.warp, acc.address, acc.lane, acc.word_size
        if w.size == 0:
            return []
        # several warps of scattered lanes: the vectorized rules (one warp: the per-lane
        # loop is cheaper, 10 us against 15 for 32 random lanes)
        if self.cc >= 12 and w[0] != w[-1] and _looks_scattered(w, address):
            found = self._scattered_per_warp(w, lane, address, ws)
            if found is not None:
                return found
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

    def _scattered_per_warp(self, w, lane, address, ws):
        """per_warp through the vectorized rules (:meth:`_scattered_flat`), without the
        pattern cache (a scattered pattern is seldom seen twice, and would crowd out those
        that recur); None where they do not apply (CC 1.0/1.1, input that the reference
        must judge)."""
        found = self._scattered_flat(w, lane, address, ws)
        if found is None:
            return None
        lane_cuts, flat = found
        cuts = flat.cuts.tolist()
        addresses = flat.addresses.tolist()
        sizes = ([SECTOR_BYTES] * len(addresses) if flat.sizes is None
                 else flat.sizes.tolist())
        if self.cc >= 20:                          # one request a warp
            return [WarpTransactions(1, SECTOR_BYTES * (hi - lo), addresses[lo:hi],
                                     sizes[lo:hi]) for lo, hi in zip(cuts, cuts[1:])]
        lanes, lane_cuts = lane.tolist(), lane_cuts.tolist()
        return [WarpTransactions((lanes[lo] < HALF_WARP) + (lanes[hi - 1] >= HALF_WARP),
                                 sum(sizes[t_lo:t_hi]), addresses[t_lo:t_hi], sizes[t_lo:t_hi])
                for lo, hi, t_lo, t_hi in zip(lane_cuts, lane_cuts[1:], cuts, cuts[1:])]

    def flat(self, acc: MemoryAccess):
        """:meth:`per_warp` of an access of several warps, kept as arrays: (requests,
        :class:`FlatWarps`), the same transactions in the same order without a Python
        list per warp, where the access is of scattered lanes (:meth:`flat_scattered`)
        or one contiguous run (:meth:`_contiguous`, from the same patterns as
        per_warp's); None otherwise (per_warp's lists then)."""
        w = acc.warp
        if not w.size or w[0] == w[-1]:
            return None
        if self.cc >= 12 and _looks_scattered(w, acc.address):
            return self.flat_scattered(acc)
        b = self._contiguous(acc)
        if b is None:
            return None
        tw = b.txn_warp
        starts = np.flatnonzero(np.concatenate(([True], tw[1:] != tw[:-1])))
        return b.requests, FlatWarps(b.txn_address, b.txn_size, np.append(starts, tw.size))

    def flat_scattered(self, acc: MemoryAccess):
        """:meth:`flat` of an access of several warps of scattered lanes, from the same
        vectorized rules as :meth:`_scattered_per_warp`; None where they do not apply."""
        found = self._scattered_flat(acc.warp, acc.lane, acc.address, acc.word_size)
        if found is None:
            return None
        lane_cuts, flat = found
        return self._scattered_requests(acc.lane, lane_cuts), flat

    def _scattered_requests(self, lane, lane_cuts) -> int:
        """The requests of warps of scattered lanes (each warp's lanes ascending,
        ``lane[lane_cuts[i]:lane_cuts[i + 1]]``): one a warp on CC 2.0+; on CC 1.x one
        per half-warp with a lane."""
        if self.cc >= 20:
            return lane_cuts.size - 1
        return int(np.count_nonzero(lane[lane_cuts[:-1]] < HALF_WARP)
                   + np.count_nonzero(lane[lane_cuts[1:] - 1] >= HALF_WARP))

    def _scattered_flat(self, w, lane, address, ws):
        """The vectorized rules of scattered lanes (:func:`_valid_key`,
        :func:`_sector_keys`, :func:`_segment_transactions`): (where each warp's lanes
        start, and an end, as an array; the transactions as :class:`FlatWarps`), or None
        where they do not apply."""
        key = _valid_key(w, lane, address, ws)
        if key is None:
            return None
        lane_cuts = np.append(np.flatnonzero(np.concatenate(([True], w[1:] != w[:-1]))),
                              w.size)
        if self.cc >= 20:
            found = _sector_keys(key, address)
            if found is None:
                return None
            sorted_keys, bits = found
            cuts = lane_cuts
            if sorted_keys.size < w.size:          # lanes shared sectors: each warp's count
                warp_of = sorted_keys >> bits
                new_warp = np.concatenate(([True], warp_of[1:] != warp_of[:-1]))
                cuts = np.append(np.flatnonzero(new_warp), sorted_keys.size)
            addresses = (sorted_keys & ((1 << bits) - 1)) << 5
            return lane_cuts, FlatWarps(addresses, None, cuts)
        found = _segment_transactions(key, address, ws)
        if found is None:
            return None
        first, addresses, sizes = found
        if first is None:                          # one 32-byte transaction per lane
            return lane_cuts, FlatWarps(addresses, None, lane_cuts)
        return lane_cuts, FlatWarps(addresses, sizes, np.searchsorted(first, lane_cuts))

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
        """Coalesce a warp's pattern not in the cache (``addresses``/``lanes``: its lists;
        ``warp``, ``lane``, ``address``: its arrays, for the reference)."""
        found = warp_transactions(addresses, lanes, ws, self.cc)
        if found is None:                          # unsorted lanes, misaligned words: the
            b = coalesce_batch(np.zeros_like(warp), lane, address, ws, self.arch)  # reference
            found = b.requests, b.txn_address.tolist(), b.txn_size.tolist()
        requests, addrs, sizes = found
        hit = [requests, sum(sizes), [a - base for a in addrs], sizes, None]
        # Remembered at its second sighting: a pattern seen once (scattered lanes) is
        # mostly never seen again, and would fill the cache (and empty it, useful
        # patterns with it, when full); only its hash is kept, which costs far less.
        seen = hash(key)
        if seen in self._seen_once:
            if len(self._patterns) > self.MAX_PATTERNS:
                self._patterns.clear()
            self._patterns[key] = hit
        else:
            if len(self._seen_once) > self.MAX_SEEN_ONCE:
                self._seen_once.clear()
            self._seen_once.add(seen)
        return hit

    # --- many warps at once (the lockstep and per-warp counting engines) ----------------

    def batch(self, acc: MemoryAccess) -> Batch:
        """The coalescer's Batch for ``acc``; one-warp patterns are remembered, many
        warps of scattered lanes go through the vectorized rules."""
        if acc.warp.size == 0 or acc.warp[0] != acc.warp[-1]:
            if self.cc >= 12 and _looks_scattered(acc.warp, acc.address):
                found = self._scattered_batch(acc.warp, acc.lane, acc.address, acc.word_size)
                if found is not None:
                    return found
            return self._contiguous(acc) or coalesce_batch(acc.warp, acc.lane, acc.address,
                                                           acc.word_size, self.arch)
        return self._one_warp(acc.warp, acc.lane, acc.address, acc.word_size)

    def _scattered_batch(self, w, lane, address, ws):
        """batch through the vectorized rules of scattered lanes: :meth:`flat_scattered`'s
        transactions, each labelled with its warp; None where they do not apply."""
        found = self._scattered_flat(w, lane, address, ws)
        if found is None:
            return None
        lane_cuts, flat = found
        requests = self._scattered_requests(lane, lane_cuts)
        warps = np.repeat(w[lane_cuts[:-1]].astype(np.int64), np.diff(flat.cuts))
        if flat.sizes is None:
            return _frozen_batch(warps, flat.addresses, requests)
        return Batch(*_freeze(warps, flat.addresses, flat.sizes), requests=int(requests))

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
