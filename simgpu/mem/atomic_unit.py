"""The atomic unit: where a global atomic's read-modify-write is done, one after another.

* Without an L2 (GT200): at the memory partition.  The partition reads the
  word's DRAM segment, then its unit does the operations.
* With an L2 (Hopper): at the L2 slice, whose ALUs work on the sector.

Operations on one address are serialized at the unit: the next may start
``atomics.same_address_serialization_cycles`` after the previous one, whether it
comes from another warp or from another lane of the same instruction (the
coalescer merged those lanes into one transaction; the unit still does one
operation per lane -- the CUDA Programming Guide: each read-modify-write to the
location occurs and they are serialized -- unless the config says it does a
warp's lanes on one sector as one operation per round, ``same_address_lanes_merged``,
a round taking one lane of each word, as the H100 was measured to).  Operations on distinct addresses go in parallel up to
the unit's throughput, one per ``atomics.unit_cycles_per_operation`` at each
partition (or L2 slice).  Only times change: the transactions, and so the
counts, are the coalescer's.

Each unit's queue holds at most ``atomics.unit_queue_operations`` operations waiting
for it (where the config bounds it).  The unit does its operations in the order they
were queued, so the queue ahead of a request arriving at ``ready`` is the operations
booked before it that start after ``ready``: a request of ``n`` operations enters once
at most ``bound - n`` are left ahead (an empty queue, for a request of more), at the
start of the one before those.  Until it is in, it waits outside and its SM's memory
pipeline takes nothing more (``req.accepted``, as a full interconnect queue holds a
request back): same-address atomics that no one waits for no longer let the SMs run
ahead of a backlog that grows without bound.  Its own times do not change (its
operations would start after those ahead anyway); the SM's later requests wait.
"""
from __future__ import annotations

from collections import deque

from .deferred_reads import DEFERRED
from .uncached import by_partition

__all__ = ["AtomicUnit"]


class AtomicUnit:
    def __init__(self, config, amap, dram, net, slices=None):
        a = config.atomics
        self.latency = a.global_atomic_latency_cycles
        self.same_address = a.same_address_serialization_cycles
        self.unit_cycles = a.unit_cycles_per_operation
        self.merged = a.same_address_lanes_merged
        self.amap, self.dram, self.net, self.slices = amap, dram, net, slices
        self.address_free: dict = {}              # address -> when its next operation may start
        self.unit_free = [0.0] * config.memory.partitions
        self.operations = 0                       # operations done at the units (lanes, or
                                                  # merged lanes of one address)
        self.serialized_cycles = 0.0              # operations' waits for their address
        self.bound = a.unit_queue_operations or 0  # (0: the queues are not bounded)
        self.starts: dict = {}                    # unit -> the last ``bound`` operations' starts
        self.held = 0                             # requests that found a unit's queue full
        self.log: list | None = None              # (tests) [(unit, entered, start)] per operation

    def _enter(self, unit: int, n: int, ready: float) -> float:
        """When ``n`` operations arriving at ``ready`` find room in ``unit``'s queue (see
        the module's doc): at most ``bound - n`` of those queued before them left."""
        starts = self.starts.get(unit)
        if starts is None:
            starts = self.starts[unit] = deque(maxlen=self.bound)
        k = self.bound - n + 1 if n < self.bound else 1
        if len(starts) >= k and starts[-k] > ready:
            self.held += 1
            return starts[-k]
        return ready

    def _started(self, unit: int, entered: float, start: float) -> None:
        self.starts[unit].append(start)
        if self.log is not None:
            self.log.append((unit, entered, start))

    def _operate(self, part: int, ops, ready: float) -> tuple[float, float]:
        """Do ``ops`` [(address, operations)] at partition ``part``'s unit, their data
        there at ``ready``: (when the last operation starts, when they entered the unit's
        queue -- later than ``ready`` where it was full)."""
        unit_free, address_free = self.unit_free, self.address_free
        unit, same = self.unit_cycles, self.same_address
        last = entered = ready
        if self.bound:
            entered = self._enter(part, sum([c for _, c in ops]), ready)
        free = unit_free[part]
        for address, count in ops:
            at = address_free.get(address, 0.0)
            if at < ready:
                at = ready
            else:
                self.serialized_cycles += at - ready
            for _ in range(count):
                start = at if at > free else free
                free = start + unit
                at = start + same
                if self.bound:
                    self._started(part, entered, start)
            address_free[address] = at
            if at - same > last:
                last = at - same
            self.operations += count
        unit_free[part] = free
        return last, entered

    def _ops(self, lanes: dict | None, address: int, size: int) -> list:
        """The operations on the words of the transaction at ``address`` of ``size`` bytes:
        [(word address, lanes on it)], taken out of ``lanes`` (the request's own copy). Where
        lanes are merged, the transaction (an L2 sector) is one operation per round of the
        warp's lanes on it, a round taking at most one lane of each word: as many as the
        most lanes on one of its words (the H100: 32 lanes on one word are 32 sectors at
        the L2, 8 words of one lane each one; docs/calibration/atomic-sectors-h100.md)."""
        if lanes is None:
            return [(address, 1)]
        if self.merged:
            most = 1
            for w, c in lanes.items():
                if address <= w < address + size and c > most:
                    most = c
            return [(address, most)]
        ops = [(w, c) for w, c in lanes.items() if address <= w < address + size]
        for w, _ in ops:               # each word's lanes once, in the first transaction
            del lanes[w]               # that holds it (half-warps may repeat a segment)
        return ops

    def at_partition(self, req) -> float:
        """The atomics of one warp instruction done at their partitions: each partition
        reads its transactions' segments from DRAM, then its unit does their operations
        (serialized per address, one per ``unit_cycles_per_operation``); the first one's
        result is back ``global_atomic_latency_cycles`` after the data as before."""
        t = req.translated
        # (the address map's cache is keyed by its granule, which is its interleave only
        # where a chunk lies in one bank: by_partition reads it by the granule)
        by_part = by_partition(self.amap, req.addresses, req.sizes)
        done = t
        net, lanes = self.net, (dict(req.lanes) if req.lanes is not None else None)
        alu = self.latency - self.dram.hit
        for part, txns in by_part.items():
            out_flits, back_flits = net.packets(False, [s for *_, s, _ in txns]) \
                if net.modeled else (0, 0)
            accepted, arrive = net.send(t, req.sm, part, out_flits)
            if accepted > req.accepted:
                req.accepted = accepted
            finish = self.dram.serve(part, txns, arrive)
            ops = []
            for *_, s, a in txns:
                ops += self._ops(lanes, a, s)
            start, entered = self._operate(part, ops, finish)
            if entered > finish and t + entered - finish > req.accepted:
                req.accepted = t + entered - finish     # held outside the full queue
            done = max(done, net.reply(start + alu, part, req.sm, back_flits))
        return done

    def at_l2(self, req) -> float:
        """Atomics on GPUs with an L2 are done there (its slices hold the ALUs). Each
        operation holds its slice's atomic unit for unit_cycles_per_operation, and an
        address's next operation starts same_address_serialization_cycles after it;
        where lanes are merged (the H100), a warp's lanes on one sector are one
        operation per round (one lane of each word a round): 2^20 counters (4 sectors a
        request, all slices busy) take about 4 x 1.45 cycles per request and slice
        (calibrate.py, docs/calibration/calibration-h100.md); one counter takes one warp
        request per 1.45 cycles whether it has 1 or 32 lanes because nvcc aggregates
        it (one lane reaches memory: simgpu.ir.uniform). At least the slice's bandwidth
        time for 32 bytes.

        A sector not in the L2 is read from DRAM first (the atomic needs its old value),
        in blocks of l2_fill_bytes as a load miss's: that atomic is done a load miss's
        round trip plus the unit's time after it is issued, at the earliest.  The slice's
        unit is not held while it waits (others go ahead), so only the atomic waits."""
        addresses, t = req.addresses, req.translated
        done = t
        s = self.slices
        l2 = s.l2
        # the slice is held per operation for its throughput (and at least its bandwidth
        # time for 32 bytes); an address's next operation waits same_address after it
        hold = max(32 / s.l2_bytes_per_cycle, self.unit_cycles or self.same_address)
        same, address_free = self.same_address, self.address_free
        lanes = dict(req.lanes) if req.lanes is not None else None
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
            elif entry[0] >= DEFERRED:        # on its way, its time not decided yet
                s.defer.atomic_hit(req, entry, hold + alu, t)
            elif entry[0] - s.clock > t:      # its sector is still on its way
                done = max(done, entry[0] - s.clock + hold + alu)
            home.make_dirty(a, entry)
            ops = self._ops(lanes, a, home.sector)
            entered = t
            if self.bound:
                entered = self._enter(part, sum([c for _, c in ops]), t)
                if entered > t and entered > req.accepted:
                    req.accepted = entered              # held outside the full queue
            for key, count in ops:
                at = address_free.get(key, 0.0)
                if at > t:
                    self.serialized_cycles += at - t
                else:
                    at = t
                for _ in range(count):
                    start = max(at, s.l2_free[part])
                    s.l2_free[part] = start + hold
                    at = start + same
                    done = max(done, start + hold + self.latency)
                    if self.bound:
                        self._started(part, entered, start)
                address_free[key] = at
                self.operations += count
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
        return done if s.defer is None else s.defer.finish(req, done)

