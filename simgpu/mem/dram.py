"""The DRAM partitions: where addresses live, and when each transaction is served.

* :class:`AddressMap` -- a byte address's (partition, bank, row): consecutive
  ``partition_interleave_bytes`` chunks go round-robin over the partitions (where
  ``partition_skip_bit`` is set, that address bit is left out of the choice, and the
  chunks it tells apart share a partition, one after the other within it), or, where
  ``partition_hash_unit_bytes`` is set, over the partitions a hash of the address
  chooses (:mod:`~simgpu.mem.slice_hash`); in a partition, consecutive bursts go round-robin over its sub-channels, then over
  their bank groups (``[dram]``; GDDR3 has one of each: a 64-B L2 fill of HBM3
  reads both pseudo-channels at once), and each bank group's bursts fill a row of
  one bank, then the next bank.
* :class:`SubChannel` -- one data bus and its banks (:mod:`~simgpu.mem.dram_timing`
  schedules them: open rows, tRCD/tRP/tRAS/tRC/tRRD/tFAW/tCCD/tWTR/turnaround,
  FR-FCFS, the bounded read and write queues).
* :class:`Partition` -- a partition's sub-channels and its counts.
* :class:`Dram` -- serves a batch of transactions arriving at one partition
  together and returns when each is done there (a reservation table: each
  transaction's commands are placed when it arrives, not simulated cycle by cycle);
  or, for reads whose arrivals are all known, FR-FCFS across them over the
  controller's window (:func:`simgpu.mem.dram_scheduler.schedule_reads`).

All times are in SM-clock cycles (``gpu.core_clock_mhz``); the ``[dram]`` timings
are given in memory cycles and converted once.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .dram_timing import SubChannel, Timing
from .slice_hash import SliceHash

__all__ = ["AddressMap", "Partition", "Dram", "SubChannel", "Timing"]


def _digit_sum(q, base: int):
    """The sum of the base-``base`` digits of ``q`` (an int or an int array)."""
    f = q % base
    q = q // base
    while np.any(q):
        f = f + q % base
        q = q // base
    return f


class AddressMap:
    """(partition, bank, row) of byte addresses.

    A bank is numbered across the partition: ``sub_channel * banks_per_sub_channel
    + group * banks_per_group + bank_in_group``."""

    # (declared types: a build of simgpu.native keeps these as machine numbers)
    interleave: int
    n: int
    banks: int
    row_bytes: int
    burst: int
    lanes: int
    groups: int
    subs: int
    banks_per_sub: int
    banks_per_group: int
    bursts_per_row: int
    lane_bursts: int
    swizzle: bool
    granule: int
    skip: int
    hashed: Any

    def __init__(self, memory, dram=None):
        self.interleave = memory.partition_interleave_bytes
        # the chunk-number bit left out of the partition's choice (-1: none)
        skip = memory.partition_skip_bit
        self.skip = -1 if skip is None else skip - (self.interleave.bit_length() - 1)
        self.n = memory.partitions
        self.hashed = SliceHash(memory) if memory.partition_hash_unit_bytes else None
        # memory.dram_banks_per_partition counts one rank's banks; [dram] ranks (HBM3
        # stack IDs) multiplies them: bank j of a bank group's numbers is in rank j % ranks
        self.banks = memory.dram_banks_per_partition * (dram.ranks if dram is not None else 1)
        self.row_bytes = memory.row_buffer_bytes
        subs = dram.subchannels if dram is not None else 1
        groups = dram.bank_groups if dram is not None else 1
        self.burst = (memory.bus_width_bits // memory.partitions // subs // 8
                      * (dram.burst_length if dram is not None else 1))
        self.lanes = subs * groups             # consecutive bursts rotate over these:
        self.groups, self.subs = groups, subs  # the sub-channels, then the bank groups
        self.banks_per_sub = self.banks // subs
        self.banks_per_group = self.banks_per_sub // groups
        self.bursts_per_row = max(1, self.row_bytes // self.burst)
        # consecutive bursts kept in one lane (one bank's row) before the next lane: a
        # 64-B access of HBM3 opens one row in one pseudo-channel, not one in each
        lane_bytes = dram.lane_bytes if dram is not None else 0
        self.lane_bursts = max(1, lane_bytes // self.burst)
        # with the swizzle, a group of ``lanes`` runs is rotated by the digit sum (base
        # ``lanes``) of the group's number: a power-of-two stride, which the plain rotation
        # keeps on a few lanes, visits them all (each group still fills every lane once)
        self.swizzle = bool(dram is not None and dram.lane_swizzle and self.lanes > 1)
        # The hot path reads (partition, bank, row) per ``granule`` (``cache.get(address //
        # granule) or where(address)``): a partition chunk where all of it lies in one bank,
        # else a burst.
        self._chunk_rows = self.lanes == 1 and self.row_bytes % self.interleave == 0
        self.granule = self.interleave if self._chunk_rows else self.burst
        self.cache: dict[int, tuple[int, int, int]] = {}

    def locate(self, address):
        """(partition, bank, row) of byte addresses (an int or a numpy array)."""
        if self.hashed is not None:
            part, local = self.hashed.locate(address)
        else:
            part, local = self._round_robin(address)
        if self.lanes == 1:
            page = local // self.row_bytes
            return part, page % self.banks, page // self.banks
        k = local // self.burst                # the burst's number in the partition
        run = k // self.lane_bursts            # its run of bursts kept in one lane
        turn = run // self.lanes               # its turn of the rotation over the lanes
        if self.swizzle:
            run = run + _digit_sum(turn, self.lanes)
        lane = run % self.lanes
        sub, group = lane % self.subs, lane // self.subs
        page = (turn * self.lane_bursts + k % self.lane_bursts) // self.bursts_per_row
        bank = (sub * self.banks_per_sub + group * self.banks_per_group
                + page % self.banks_per_group)
        return part, bank, page // self.banks_per_group

    def _round_robin(self, address):
        """(partition, place within it in bytes) of byte addresses, dealt round robin."""
        chunk = address // self.interleave
        if self.skip >= 0:                 # two chunks that differ only in bit ``skip``
            s = self.skip                  # share a partition: the other bits choose it,
            low = chunk & ((1 << s) - 1)   # this one orders them within it
            bit = (chunk >> s) & 1
            chunk = low | ((chunk >> (s + 1)) << s)
            local = ((chunk // self.n) * 2 + bit) * self.interleave + address % self.interleave
        else:
            local = (chunk // self.n) * self.interleave + address % self.interleave
        return chunk % self.n, local

    def pieces(self, address: int, size: int) -> list[tuple[int, int, int]]:
        """A transaction's bursts as the map spreads them: [(bank, row, bursts)], the
        consecutive bursts that share a bank's row as one piece."""
        out: list = []
        for k in range(0, size, self.burst):
            _, bank, row = self.where(address + k)
            if out and out[-1][0] == bank and out[-1][1] == row:
                out[-1] = (bank, row, out[-1][2] + 1)
            else:
                out.append((bank, row, 1))
        return out

    def where(self, address: int) -> tuple[int, int, int]:
        """:meth:`locate` of one address, remembered per granule."""
        key = address // self.granule
        hit = self.cache.get(key)
        if hit is None:
            if len(self.cache) > 1 << 20:
                self.cache.clear()
            p, b, r = self.locate(address)
            hit = self.cache[key] = (int(p), int(b), int(r))
        return hit


class Partition:
    """One memory partition: its sub-channels and counts."""

    def __init__(self, index: int, timing: Timing, subs: int, banks_per_sub: int):
        self.index = index
        self.subs = [SubChannel(timing, banks_per_sub) for _ in range(subs)]
        self.transactions = 0
        self.bytes = 0
        self.writebacks = 0                    # of them L2 write-backs

    def _sum(self, name):
        return sum(getattr(s, name) for s in self.subs)

    @property
    def busy(self) -> float:
        """Cycles the partition's data bus was busy (its sub-channels' average)."""
        return self._sum("busy") / len(self.subs)

    @property
    def row_hits(self) -> int:
        return self._sum("row_hits")

    @property
    def activations(self) -> int:
        return self._sum("activations")

    @property
    def row_conflicts(self) -> int:
        return self._sum("row_conflicts")

    @property
    def stall_cycles(self) -> float:
        """Cycles transactions waited for a place in a full queue."""
        return self._sum("stall")


class Dram:
    """The partitions of one GPU and the rule that serves their transactions.

    :attr:`wait` is the longest a transaction waited for a place in a full queue
    since the memory system last reset it (it does so per request, and passes the
    wait back to the SM as a later acceptance)."""

    n: int                      # (declared types, as AddressMap's)
    bytes_per_cycle: float
    burst: int
    subs_per_part: int
    banks_per_sub: int
    hit: float
    wait: float
    frfcfs_cap: int
    passed_max: int

    def __init__(self, config, amap: AddressMap | None = None):
        m, d = config.memory, config.dram
        cycle_ns = 1e3 / config.gpu.core_clock_mhz
        self.n = m.partitions
        self.amap = amap if amap is not None else AddressMap(m, d)
        self.bytes_per_cycle = m.peak_bandwidth_gbps / m.partitions * cycle_ns   # GB/s * ns = B
        self.timing = Timing(config)
        self.burst = self.amap.burst
        self.subs_per_part = d.subchannels
        self.banks_per_sub = self.amap.banks_per_sub
        self.hit = self.timing.cl                  # read command to data: a row hit's latency
        self.parts = [Partition(i, self.timing, d.subchannels, self.banks_per_sub)
                      for i in range(m.partitions)]
        self.wait = 0.0
        self.frfcfs_cap = d.frfcfs_cap             # (dram_scheduler.schedule_reads: the
        self.passed_max = 0                        # starvation bound; the most younger
                                                   # reads that passed one)

    def serve(self, part: int, txns: list[tuple[int, int, int, int]], arrive: float,
              finishes: list | None = None,
              sample: bool = True, write: bool = False):
        """Serve ``txns`` [(bank, row, size, address)] arriving together at partition
        ``part`` at ``arrive``; return when the last is done at the partition (a read:
        its data are out; a write: the write queue has taken it) and, given
        ``finishes``, (last, each one's in the order of ``txns``).

        Within the batch the scheduler is FR-FCFS: transactions to a bank's open row
        first, then the others grouped by row, each group in arrival order."""
        p = self.parts[part]
        subs, bps, burst = p.subs, self.banks_per_sub, self.burst
        p.transactions += len(txns)
        if not sample:
            p.writebacks += len(txns)
        if len(txns) == 1 and (txns[0][2] <= burst or self.amap.lanes == 1):
            b, r, s, _ = txns[0]                      # one transaction: the common case
            p.bytes += s
            end, w = (subs[b // bps].write(b % bps, r, -(-s // burst), arrive) if write
                      else subs[b // bps].read(b % bps, r, -(-s // burst), arrive))
            if w > self.wait:
                self.wait = w
            if finishes is not None:
                finishes.append(end)
                return end, finishes
            return end
        n = len(txns)
        order: list | range | tuple
        if n == 1:
            order = (0,)
        else:
            b0, r0 = txns[0][0], txns[0][1]
            for b, r, _, _ in txns:
                if b != b0 or r != r0:
                    order = _fr_fcfs(txns, subs, bps)
                    break
            else:
                order = range(n)                   # one row of one bank: as they came
        last = arrive
        moved = 0
        wait = 0.0
        done = [0.0] * n if finishes is not None else None
        if len(subs) == 1 and done is None and self.amap.lanes == 1:
            # one sub-channel of one bank group (GDDR3): bank b is its bank b, no
            # transaction is spread (the hot path of the GT200's loads and stores)
            sc = subs[0]
            for i in order:
                b, r, s, _ = txns[i]
                moved += s
                if write:
                    end, w = sc.write(b, r, -(-s // burst), arrive)
                else:
                    end, w = sc.read(b, r, -(-s // burst), arrive)
                if w > wait:
                    wait = w
                if end > last:
                    last = end
            if wait > self.wait:
                self.wait = wait
            p.bytes += moved
            return last
        spread = self.amap.lanes > 1
        for i in order:
            b, r, s, a = txns[i]
            moved += s
            if s > burst and spread:
                end, w = self._spread(subs, a, s, arrive, write)
            elif write:
                end, w = subs[b // bps].write(b % bps, r, -(-s // burst), arrive)
            else:
                end, w = subs[b // bps].read(b % bps, r, -(-s // burst), arrive)
            if w > wait:
                wait = w
            if done is not None:
                done[i] = end
            if end > last:
                last = end
        if wait > self.wait:
            self.wait = wait
        p.bytes += moved
        if finishes is not None:
            finishes += done or ()
            return last, finishes
        return last

    def _spread(self, subs: list[SubChannel], a: int, s: int, arrive: float,
                write: bool) -> tuple[float, float]:
        """A transaction of several bursts spread over the bank groups and sub-channels:
        each piece served where the address map puts it; (its end, its longest wait)."""
        bps = self.banks_per_sub
        end, wait = arrive, 0.0
        for bk, rk, n in self.amap.pieces(a, s):
            sc = subs[bk // bps]
            e, w = (sc.write(bk % bps, rk, n, arrive) if write
                    else sc.read(bk % bps, rk, n, arrive))
            if e > end:
                end = e
            if w > wait:
                wait = w
        return end, wait

    def drain(self) -> float:
        """Send every write still queued to its banks (the launch is ending); return
        when the last data on any bus is done."""
        end = 0.0
        for p in self.parts:
            for s in p.subs:
                e = s.flush()
                if e > end:
                    end = e
        return end

    def summary(self, cycles: float) -> dict:
        parts = self.parts
        tx = [p.transactions for p in parts]
        subs = [s for p in parts for s in p.subs]
        samples = sum(s.samples for s in subs)
        hits = sum(p.row_hits for p in parts)
        acts = [p.activations for p in parts]
        conflicts = sum(p.row_conflicts for p in parts)
        accesses = hits + sum(acts)
        stall = [round(p.stall_cycles, 1) for p in parts]
        return {
            "partition_transactions": tx,
            "queue_mean": (sum(s.queued_total for s in subs) / samples) if samples else 0.0,
            "queue_max": max(s.queued_max for s in subs),
            "bus_utilization": (sum(p.busy for p in parts) / (cycles * self.n)) if cycles else 0.0,
            "row_hit_rate": hits / accesses if accesses else 0.0,
            "row_hits": hits,
            "row_misses": sum(acts) - conflicts,       # the bank had no row open
            "row_conflicts": conflicts,                # another row had to be closed first
            "activations": sum(acts),
            "partition_activations": acts,
            "queue_full_stall_cycles": round(sum(stall), 1),
            "partition_queue_full_stall_cycles": stall,
            "dram_bytes": sum(p.bytes for p in parts),
        }


def _fr_fcfs(txns: list[tuple[int, int, int, int]], subs: list[SubChannel], bps: int) -> list:
    """The order FR-FCFS serves a batch in: hits on open rows first (arrival order),
    then the rest grouped by (bank, row) in order of each group's first arrival."""
    hits, rest = [], []
    for i, t in enumerate(txns):
        b = t[0]
        if subs[b // bps].open_row[b % bps] == t[1]:
            hits.append(i)
        else:
            rest.append(i)
    if len(rest) > 2:
        keys = [(txns[i][0], txns[i][1]) for i in rest]
        if len(set(keys)) < len(keys):         # a row asked for twice: group its requests
            first: dict = {}                   # (bank, row) -> its first position
            for i, key in zip(rest, keys):
                first.setdefault(key, i)
            rest.sort(key=lambda i: first[txns[i][0], txns[i][1]])   # stable
    return hits + rest
