"""The DRAM partitions: where addresses live, and when each transaction is served.

* :class:`AddressMap` -- a byte address's (partition, bank, row): consecutive
  ``partition_interleave_bytes`` chunks go round-robin over the partitions, and
  each partition's own bytes fill a row of one bank, then the next bank.
* :class:`Partition` -- one partition's state (per bank: when it is free and
  which row is open; its data bus; what is in flight) and its counts.
* :class:`Dram` -- serves a batch of transactions arriving at one partition
  together and returns when each is done there (a reservation table: one
  computation per transaction, not a simulation event per byte).

All times are in SM-clock cycles (``gpu.core_clock_mhz``).
"""
from __future__ import annotations

from collections import deque

__all__ = ["AddressMap", "Partition", "Dram"]


class AddressMap:
    """(partition, bank, row) of byte addresses."""

    def __init__(self, memory):
        self.interleave = memory.partition_interleave_bytes
        self.n = memory.partitions
        self.banks = memory.dram_banks_per_partition
        self.row_bytes = memory.row_buffer_bytes
        self._chunk_rows = self.row_bytes % self.interleave == 0
        # (partition, bank, row) per interleave chunk, where the chunk decides it (rows
        # a whole number of chunks long, as in every config): the hot path reads it
        # directly (``cache.get(address // interleave) or where(address)``).
        self.cache: dict = {}

    def locate(self, address):
        """(partition, bank, row) of byte addresses (an int or a numpy array): interleave
        chunks round-robin over the partitions, then rows over the banks."""
        chunk = address // self.interleave
        local = (chunk // self.n) * self.interleave + address % self.interleave
        page = local // self.row_bytes
        return chunk % self.n, page % self.banks, page // self.banks

    def where(self, address: int):
        """:meth:`locate` of one address, remembered per interleave chunk."""
        if not self._chunk_rows:
            p, b, r = self.locate(address)
            return int(p), int(b), int(r)
        chunk = address // self.interleave
        hit = self.cache.get(chunk)
        if hit is None:
            if len(self.cache) > 1 << 20:
                self.cache.clear()
            page = (chunk // self.n) * self.interleave // self.row_bytes
            hit = self.cache[chunk] = (chunk % self.n, page % self.banks, page // self.banks)
        return hit


class Partition:
    """One memory partition's state and counts."""

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
        self.writebacks = 0                    # of them L2 write-backs


class Dram:
    """The partitions of one GPU and the rule that serves their transactions."""

    def __init__(self, config):
        m = config.memory
        cycle_ns = 1e3 / config.gpu.core_clock_mhz
        self.n = m.partitions
        self.bytes_per_cycle = m.peak_bandwidth_gbps / m.partitions * cycle_ns   # GB/s * ns = B
        # what the partitions sustain, by direction (HBM3 refresh, turnarounds, ...)
        self.read_bytes_per_cycle = self.bytes_per_cycle * (m.read_efficiency or 1.0)
        self.write_bytes_per_cycle = self.bytes_per_cycle * (m.write_efficiency or 1.0)
        self.reorder = bool(m.reorder)
        self.hit = m.row_hit_latency_ns / cycle_ns
        self.activate = (m.row_miss_latency_ns - m.row_hit_latency_ns) / cycle_ns
        self.parts = [Partition(i, m.dram_banks_per_partition) for i in range(m.partitions)]

    def serve(self, part: int, txns, arrive: float, finishes: list | None = None,
              sample: bool = True, write: bool = False):
        """Serve ``txns`` [(bank, row, size, address)] arriving together at partition
        ``part`` at ``arrive``; return when the last is done at the partition (and, given
        ``finishes``, (last, each one's)).

        In order (the default), a transaction waiting for its bank holds the bus for
        the ones behind it; with ``reorder`` (first-ready, as GPU memory controllers
        schedule) the bus is only a rate limit: the transactions take its slots in
        arrival order, and each is done when both its bank and its slot allow."""
        p = self.parts[part]
        in_flight = p.in_flight
        while in_flight and in_flight[0] <= arrive:
            in_flight.popleft()
        if sample:
            depth = len(in_flight)
            p.queue_samples += 1
            p.queue_total += depth
            if depth > p.queue_max:
                p.queue_max = depth
        last = arrive
        bank_free, open_row, append = p.bank_free, p.open_row, in_flight.append
        bus_free, busy, hits, moved = p.bus_free, p.busy, 0, 0
        activate, hit, reorder = self.activate, self.hit, self.reorder
        per_cycle = self.write_bytes_per_cycle if write else self.read_bytes_per_cycle
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
            if reorder:
                bus_free = (arrive if arrive > bus_free else bus_free) + data
                done = ready + data if ready + data > bus_free else bus_free
            else:
                bus_free = (ready if ready > bus_free else bus_free) + data
                done = bus_free
            bank_free[b] = done
            busy += data
            moved += s
            done += hit
            if done > last:
                last = done
            append(done)
        if finishes is not None:                       # each one's: the deque's last entries
            end = len(in_flight)
            finishes += [in_flight[i] for i in range(end - len(txns), end)]
        p.bus_free, p.busy = bus_free, busy
        p.row_hits += hits
        p.bytes += moved
        p.transactions += len(txns)
        if not sample:
            p.writebacks += len(txns)
        return last if finishes is None else (last, finishes)

    def summary(self, cycles: float) -> dict:
        parts = self.parts
        tx = [p.transactions for p in parts]
        samples = sum(p.queue_samples for p in parts)
        return {
            "partition_transactions": tx,
            "queue_mean": (sum(p.queue_total for p in parts) / samples) if samples else 0.0,
            "queue_max": max(p.queue_max for p in parts),
            "bus_utilization": (sum(p.busy for p in parts) / (cycles * self.n)) if cycles else 0.0,
            "row_hit_rate": (sum(p.row_hits for p in parts) / sum(tx)) if sum(tx) else 0.0,
            "dram_bytes": sum(p.bytes for p in parts),
        }
