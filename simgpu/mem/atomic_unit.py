"""The atomic unit: where a global atomic's read-modify-write is done.

* Without an L2 (GT200): at the memory partition.  The partition reads the
  word's DRAM row and writes it back; lanes of one instruction on one address
  go one after another, ``atomics.same_address_serialization_cycles`` each.
* With an L2 (Hopper): at the L2 slice, whose ALUs hold the slice per sector of
  a warp's request (see :meth:`AtomicUnit.at_l2`).
"""
from __future__ import annotations

from collections import Counter

__all__ = ["AtomicUnit"]


class AtomicUnit:
    def __init__(self, config, amap, dram, net, slices=None):
        a = config.atomics
        self.latency = a.global_atomic_latency_cycles
        self.same_address = a.same_address_serialization_cycles
        self.amap, self.dram, self.net, self.slices = amap, dram, net, slices

    def at_partition(self, req) -> float:
        """The atomics of one warp instruction done at their partitions: each partition
        serves its transactions as reads, then its ALU's latency; lanes on one address
        take ``same_address`` each after the first."""
        t = req.translated
        arrive = self.net.to_partition(t)
        where, cache, interleave = self.amap.where, self.amap.cache, self.amap.interleave
        by_part: dict = {}
        for a, s in zip(req.addresses, req.sizes):
            w = cache.get(a // interleave) or where(a)
            by_part.setdefault(w[0], []).append((w[1], w[2], s, a))
        done = t
        for part, txns in by_part.items():
            finish = self.dram.serve(part, txns, arrive)
            collisions = max(Counter(a for *_, a in txns).values())
            finish += self.latency - self.dram.hit + (collisions - 1) * self.same_address
            done = max(done, self.net.to_sm(finish))
        return done

    def at_l2(self, req) -> float:
        """Atomics on GPUs with an L2 are done there (its slices hold the ALUs). Each
        sector of a warp's atomic request holds its slice's atomic unit for
        same_address_serialization_cycles, however many lanes of the warp hit it: on
        the H100 one counter takes one warp request per 1.45 cycles whether it has 1
        or 32 lanes, and 2^20 counters (4 sectors a request, all slices busy) about
        4 x 1.45 cycles per request and slice (calibrate.py, docs/calibration/
        calibration-h100.md). At least the slice's bandwidth time for 32 bytes.

        A sector not in the L2 is read from DRAM first (the atomic needs its old value),
        in blocks of l2_fill_bytes as a load miss's: that atomic is done a load miss's
        round trip plus the unit's time after it is issued, at the earliest.  The slice's
        unit is not held while it waits (others go ahead), so only the atomic waits."""
        addresses, t = req.addresses, req.translated
        done = t
        s = self.slices
        l2 = s.l2
        hold = max(32 / s.l2_bytes_per_cycle, self.same_address)
        alu = self.latency - s.l2_latency         # the unit's part of the latency
        fill, asked = s.l2_fill, dict.fromkeys(addresses)  # each sector once, in order
        fetched: dict = {}                                    # block -> (partition, position)
        by_part: dict = {}
        missed: list = []                                     # (partition, position, entry, asked?)
        for a in asked:
            part, bank, row = self.amap.where(a)
            home = l2.halves[l2.home(part)]
            entry = home.find(a)
            if entry is None:
                base = a - a % fill
                at = fetched.get(base)
                if at is None:                   # its block from DRAM, once a request
                    txns = by_part.setdefault(part, [])
                    at = fetched[base] = (part, len(txns))
                    txns.append((bank, row, fill, base))
                    for b in range(base, base + fill, home.sector):
                        tag = b // home.sector   # the block's other sectors, if absent
                        if b not in asked and tag not in home.lines.get(tag % home.sets, ()):
                            missed.append((*at, home.fill(b, 0.0), False))
                entry = home.fill(a, 0.0)
                missed.append((*at, entry, True))
            elif entry[0] - s.clock > t:      # its sector is still on its way
                done = max(done, entry[0] - s.clock + hold + alu)
            home.make_dirty(a, entry)
            start = max(t, s.l2_free[part])
            s.l2_free[part] = start + hold
            done = max(done, s.l2_free[part] + self.latency)
        if by_part:
            arrive = self.net.to_partition(t)
            finished = {part: self.dram.serve(part, txns, arrive, [])[1]
                        for part, txns in by_part.items()}
            for part, i, entry, wanted in missed:
                ready = self.net.to_sm(finished[part][i])
                entry[0] = s.clock + ready
                if wanted:
                    done = max(done, ready + hold + alu)
        if l2.evicted:
            s._write_back(t)
        return done

