"""Memory partitions: address interleaving, request queues, DRAM row buffers.

Each partition (a 64-bit GDDR3 channel on the GTX 260, an HBM channel on
Hopper) serves the transactions routed to it in arrival order.  A
transaction waits for its bank (a row miss first closes the open row and
opens its own: tRP + tRCD) and for the partition's data bus (size / the
partition's share of the peak bandwidth), then returns after the column
latency and the interconnect.  The partition keeps, per bank, when it is
free and which row is open, and for the bus when it is free — a reservation
table, so one warp instruction costs one computation per partition it
touches rather than one simulation event per byte.

Where the config has caches (the modern GPUs), an L2 of 32-byte sectors
sits in front of the partitions: a hit is served at the L2's latency and
bandwidth and never reaches DRAM; a miss goes on to the partition and fills
the sector.  The L2's contents belong to the device and outlive a launch,
as on hardware.  (L1 is not modeled: see docs/fidelity.md.)

All times are in SM-clock cycles (the config's ``core_clock_mhz``).
"""
from __future__ import annotations

from collections import Counter, deque

import numpy as np


class Partition:
    def __init__(self, index: int, banks: int):
        self.index = index
        self.bus_free = 0.0
        self.bank_free = [0.0] * banks
        self.open_row = [-1] * banks
        self.in_flight: deque = deque()        # completion times, ascending
        self.transactions = 0
        self.bytes = 0
        self.busy = 0.0                        # cycles the data bus was busy
        self.row_hits = 0
        self.queue_samples = 0
        self.queue_total = 0
        self.queue_max = 0


class SectorCache:
    """A set-associative cache of 32-byte sectors with LRU replacement."""

    WAYS = 16

    def __init__(self, size_bytes: int, sector_bytes: int):
        self.sector = sector_bytes
        self.sets = max(1, size_bytes // (sector_bytes * self.WAYS))
        self.lines: dict = {}                  # set -> list of tags, most recent last
        self.hits = 0
        self.misses = 0

    def lookup(self, address: int) -> bool:
        """True on a hit; on a miss the sector is filled (evicting the LRU one)."""
        tag = address // self.sector
        ways = self.lines.setdefault(tag % self.sets, [])
        if tag in ways:
            ways.remove(tag)
            ways.append(tag)
            self.hits += 1
            return True
        if len(ways) == self.WAYS:
            ways.pop(0)
        ways.append(tag)
        self.misses += 1
        return False


class MemorySystem:
    """The partitions of one GPU, shared by every SM."""

    def __init__(self, config, l2: SectorCache | None = None):
        m = config.memory
        self.config = config
        self.interleave = m.partition_interleave_bytes
        self.n = m.partitions
        self.banks = m.dram_banks_per_partition
        self.row_bytes = m.row_buffer_bytes
        cycle_ns = 1e3 / config.gpu.core_clock_mhz
        self.bytes_per_cycle = m.peak_bandwidth_gbps / m.partitions * cycle_ns   # GB/s * ns = B
        self.hit = m.row_hit_latency_ns / cycle_ns
        self.activate = (m.row_miss_latency_ns - m.row_hit_latency_ns) / cycle_ns
        self.half_trip = m.interconnect_latency_cycles / 2
        self.atomic_latency = config.atomics.global_atomic_latency_cycles
        self.same_address = config.atomics.same_address_serialization_cycles
        self.parts = [Partition(i, self.banks) for i in range(self.n)]
        self.drained = 0.0        # when the last transaction so far is done (stores too)
        c = config.cache
        self.l2 = l2 if l2 is not None or not c.present else SectorCache(c.l2_bytes, c.sector_bytes)
        if self.l2 is not None:
            self.l2_latency = c.l2_latency_cycles
            # each partition's L2 slice serves its share of the L2 bandwidth
            l2_gbps = c.l2_bandwidth_gbps or 2 * m.peak_bandwidth_gbps
            self.l2_bytes_per_cycle = l2_gbps / self.n * cycle_ns
            self.l2_free = [0.0] * self.n
            self.l2_start = (self.l2.hits, self.l2.misses)

    def locate(self, address):
        """(partition, bank, row) of byte addresses (an int or a numpy array): interleave
        chunks round-robin over the partitions, then rows over the banks."""
        chunk = address // self.interleave
        local = (chunk // self.n) * self.interleave + address % self.interleave
        page = local // self.row_bytes
        return chunk % self.n, page % self.banks, page // self.banks

    def access(self, kind: str, addresses, sizes, t: float) -> float:
        """Serve one warp instruction's transactions issued at cycle ``t``; return when its data is back.

        A warp instruction has at most 32 transactions, so plain Python beats
        numpy's per-call overhead here.
        """
        arrive = t + self.half_trip
        by_part: dict = {}
        done = t
        if self.l2 is not None and kind == "atomic":
            return self._l2_atomic(addresses.tolist(), t)
        parts, banks, rows = self.locate(addresses)
        l2 = self.l2
        for a, s, part, bank, row in zip(addresses.tolist(), sizes.tolist(), parts.tolist(),
                                          banks.tolist(), rows.tolist()):
            if l2 is not None and l2.lookup(a):
                start = max(t, self.l2_free[part])       # an L2 hit: the slice's bandwidth only
                self.l2_free[part] = start + s / self.l2_bytes_per_cycle
                done = max(done, self.l2_free[part] + self.l2_latency)   # a round trip
                continue
            by_part.setdefault(part, []).append((bank, row, s, a))
        for part, txns in by_part.items():
            finish = self._serve(self.parts[part], txns, arrive)
            if kind == "atomic":
                # Read-modify-write at the partition; lanes on one address go one by one.
                collisions = max(Counter(a for *_, a in txns).values())
                finish += self.atomic_latency - self.hit + (collisions - 1) * self.same_address
            done = max(done, finish + self.half_trip)
        self.drained = max(self.drained, done)
        return done

    def _l2_atomic(self, addresses, t: float) -> float:
        """Atomics on GPUs with an L2 are done there (its slices hold the ALUs); lanes on
        one address go one after another at the slice's serialization rate."""
        done = t
        for a, count in Counter(addresses).items():
            part = (a // self.interleave) % self.n
            self.l2.lookup(a)
            start = max(t, self.l2_free[part])
            self.l2_free[part] = start + 32 / self.l2_bytes_per_cycle + (count - 1) * self.same_address
            done = max(done, self.l2_free[part] + self.atomic_latency)
        self.drained = max(self.drained, done)
        return done

    def _serve(self, p: Partition, txns, arrive: float) -> float:
        while p.in_flight and p.in_flight[0] <= arrive:
            p.in_flight.popleft()
        depth = len(p.in_flight)
        p.queue_samples += 1
        p.queue_total += depth
        p.queue_max = max(p.queue_max, depth)
        last = arrive
        bank_free, open_row, in_flight = p.bank_free, p.open_row, p.in_flight
        bus_free, busy, hits, moved = p.bus_free, p.busy, 0, 0
        activate, per_cycle, hit = self.activate, self.bytes_per_cycle, self.hit
        for b, r, s, _ in txns:
            ready = bank_free[b]
            if ready < arrive:
                ready = arrive
            if open_row[b] != r:
                ready += activate                      # precharge + activate the new row
                open_row[b] = r
            else:
                hits += 1
            data = s / per_cycle
            bus_free = (ready if ready > bus_free else bus_free) + data
            bank_free[b] = bus_free
            busy += data
            moved += s
            last = bus_free + hit
            in_flight.append(last)
        p.bus_free, p.busy = bus_free, busy
        p.row_hits += hits
        p.bytes += moved
        p.transactions += len(txns)
        return last

    def summary(self, cycles: float) -> dict:
        """Per-partition counts, queue depths and utilization for the report."""
        tx = [p.transactions for p in self.parts]
        samples = sum(p.queue_samples for p in self.parts)
        total_bytes = sum(p.bytes for p in self.parts)
        seconds = cycles / (self.config.gpu.core_clock_mhz * 1e6) if cycles else 0
        l2 = {}
        if self.l2 is not None:
            hits, misses = self.l2.hits - self.l2_start[0], self.l2.misses - self.l2_start[1]
            l2 = {"l2_hit_rate": hits / (hits + misses) if hits + misses else 0.0}
        return {
            **l2,
            "partition_transactions": tx,
            "queue_mean": (sum(p.queue_total for p in self.parts) / samples) if samples else 0.0,
            "queue_max": max(p.queue_max for p in self.parts),
            "bus_utilization": (sum(p.busy for p in self.parts) / (cycles * self.n)) if cycles else 0.0,
            "row_hit_rate": (sum(p.row_hits for p in self.parts) / sum(tx)) if sum(tx) else 0.0,
            "dram_bytes": total_bytes,
            "achieved_gbps": total_bytes / seconds / 1e9 if seconds else 0.0,
        }
