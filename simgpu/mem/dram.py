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

Where the config has caches (the modern GPUs; ``simgpu.mem.caches``):

* each SM's **L1** serves global loads: a hit costs the L1's latency; a
  miss goes on to the L2 and fills its sector.  Stores write through
  without allocating; atomics bypass it.  The L1 starts empty at every
  launch (the driver invalidates it between kernels).
* the **L2** of 32-byte sectors sits in front of the partitions: a hit is
  served at the L2's latency and its slice's share of the L2 bandwidth; a
  load miss goes on to the partition and fills the sector, which then leaves
  the slice for the SM as a hit's data does; a store
  allocates its sector dirty (write-back, no fetch); a dirty sector evicted
  later is written back through its partition's queue (nobody waits for
  it).  The L2's contents belong to the device and outlive a launch.

All times are in SM-clock cycles (the config's ``core_clock_mhz``).
"""
from __future__ import annotations

from collections import Counter, deque

import numpy as np

from .caches import L1Cache, L2, SectorCache

__all__ = ["MemorySystem", "Partition", "L2", "SectorCache", "L1Cache", "L1_SETS"]

#: Sets of an L1 when the config does not say: Accel-Sim's l1_assoc
#: microbenchmark finds 4 sets (of many ways) on every NVIDIA GPU since Kepler.
L1_SETS = 4


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
        self.writebacks = 0                    # of them L2 write-backs


class MemorySystem:
    """The partitions (and caches) of one GPU for one launch, shared by every SM."""

    def __init__(self, config, l2: L2 | None = None):
        m = config.memory
        self.config = config
        self.interleave = m.partition_interleave_bytes
        self.n = m.partitions
        self.banks = m.dram_banks_per_partition
        self.row_bytes = m.row_buffer_bytes
        cycle_ns = 1e3 / config.gpu.core_clock_mhz
        self.bytes_per_cycle = m.peak_bandwidth_gbps / m.partitions * cycle_ns   # GB/s * ns = B
        # what the partitions sustain, by direction (HBM3 refresh, turnarounds, ...)
        self.read_bytes_per_cycle = self.bytes_per_cycle * (m.read_efficiency or 1.0)
        self.write_bytes_per_cycle = self.bytes_per_cycle * (m.write_efficiency or 1.0)
        self.reorder = bool(m.reorder)
        self.hit = m.row_hit_latency_ns / cycle_ns
        self.activate = (m.row_miss_latency_ns - m.row_hit_latency_ns) / cycle_ns
        self.half_trip = m.interconnect_latency_cycles / 2
        self.atomic_latency = config.atomics.global_atomic_latency_cycles
        self.same_address = config.atomics.same_address_serialization_cycles
        self.parts = [Partition(i, self.banks) for i in range(self.n)]
        self.drained = 0.0        # when the last transaction so far is done (stores too)
        # far loads' data that still have to cross between the L2's halves, for the
        # engine to book (:meth:`cross`): (arrival at the link, way, bytes, cycles after)
        self.crossings: list = []
        self._chunk_rows = self.row_bytes % self.interleave == 0
        self._where_cache: dict = {}
        c = config.cache
        self.l2 = l2 if l2 is not None or not c.present else L2.for_config(c)
        self.l1: list = []
        if self.l2 is not None:
            self.l2_latency = c.l2_latency_cycles
            self.l2_fill = c.l2_fill_bytes or c.sector_bytes
            # each partition's L2 slice serves its share of the L2 bandwidth: loads at
            # l2_bandwidth_gbps, stores at l2_store_bandwidth_gbps, both together at
            # l2_combined_bandwidth_gbps (each defaults to the load figure: one budget)
            l2_gbps = c.l2_bandwidth_gbps or 2 * m.peak_bandwidth_gbps
            self.l2_bytes_per_cycle = (c.l2_combined_bandwidth_gbps or l2_gbps) / self.n * cycle_ns
            self.l2_load_per_cycle = l2_gbps / self.n * cycle_ns
            self.l2_store_per_cycle = (c.l2_store_bandwidth_gbps or l2_gbps) / self.n * cycle_ns
            self.l2_free = [0.0] * self.n               # the slice, both directions
            self.l2_free_dir = {True: [0.0] * self.n, False: [0.0] * self.n}   # by load?
            # and a request (an instruction's sectors of one 128-B line) per
            # l2_request_cycles: random sectors, one request each, are bound by that
            self.l2_request_cycles = c.l2_request_cycles or 0.0
            self.l2_request_free = [0.0] * self.n
            # A split L2 (two halves): what crosses to the other half takes
            # l2_far_latency_cycles more.
            self.split = len(self.l2.halves) > 1
            # SM i sits beside the half given by the parity of i's bits: 66 and 66 SMs on
            # the H100, as measured, in a pattern that (like the GPU's own irregular one,
            # benchmarks/l2_halves.py) does not line up with the round robin that hands
            # out blocks and the modulo that spreads addresses over partitions; a regular
            # one ((i >> 1) & 1) sent a streaming kernel's loads to half the slices.
            self.sm_half = [bin(i).count("1") & 1 for i in range(config.gpu.sm_count)]
            self.far_latency = c.l2_far_latency_cycles or 0
            # The link each way between the halves (l2_fabric_bandwidth_gbps), by the half
            # it goes to: the data of the stores that SMs beside one half send to sectors
            # homed in the other, and of the other half's SMs' far loads, share it
            # (benchmarks/l2_fabric.py), first come, first served. A store's data reach
            # it when the store is issued; a far load's when they are back from the far
            # slice or DRAM, later: those are left in ``crossings`` for the engine, which
            # books them (:meth:`cross`) when the simulation reaches that time.
            fabric = c.l2_fabric_bandwidth_gbps if self.split else None
            self.fabric_per_cycle = fabric * cycle_ns if fabric else 0.0
            self.fabric_free = [0.0, 0.0]
            self.fabric_bytes = 0
            self.l2_start = (self.l2.hits, self.l2.misses, self.l2.writebacks)
            self.l2.evicted.clear()
            self.clock = self.l2.clock             # this launch's cycle 0 on the L2's clock
            if c.l1_bytes_per_sm:
                sets = c.l1_sets or L1_SETS
                self.l1 = [L1Cache(c.l1_bytes_per_sm, c.l1_line_bytes, c.sector_bytes, sets)
                           for _ in range(config.gpu.sm_count)]
                self.l1_latency = c.l1_latency_cycles

    def locate(self, address):
        """(partition, bank, row) of byte addresses (an int or a numpy array): interleave
        chunks round-robin over the partitions, then rows over the banks."""
        chunk = address // self.interleave
        local = (chunk // self.n) * self.interleave + address % self.interleave
        page = local // self.row_bytes
        return chunk % self.n, page % self.banks, page // self.banks

    def _where(self, address: int):
        """:meth:`locate` of one address, remembered per interleave chunk where the
        chunk decides it (rows a whole number of chunks long, as in every config)."""
        if not self._chunk_rows:
            p, b, r = self.locate(address)
            return int(p), int(b), int(r)
        chunk = address // self.interleave
        hit = self._where_cache.get(chunk)
        if hit is None:
            if len(self._where_cache) > 1 << 20:
                self._where_cache.clear()
            page = (chunk // self.n) * self.interleave // self.row_bytes
            hit = self._where_cache[chunk] = (chunk % self.n, page % self.banks, page // self.banks)
        return hit

    def access(self, kind: str, addresses, sizes, t: float, sm: int = 0, *,
               l1: bool = True) -> float:
        """Serve one warp instruction's transactions issued at cycle ``t`` by SM ``sm``;
        return when its data is back.  ``l1=False``: a load that passes the L1 by
        (a fresh load, simgpu.ir.fresh: relaxed at device scope, read at the L2).

        ``addresses`` and ``sizes`` are lists of ints (or int arrays): a warp
        instruction has at most 32 transactions, so plain Python beats numpy's
        per-call overhead here.
        """
        if not isinstance(addresses, list):
            addresses, sizes = np.asarray(addresses).tolist(), np.asarray(sizes).tolist()
        if self.l2 is not None:
            if kind == "atomic":
                return self._l2_atomic(addresses, t)
            return self._access_cached(kind, addresses, sizes, t, sm, l1)
        arrive = t + self.half_trip
        by_part: dict = {}
        done = t
        where, cache, interleave = self._where, self._where_cache, self.interleave
        for a, s in zip(addresses, sizes):
            w = cache.get(a // interleave) or where(a)
            txns = by_part.get(w[0])
            if txns is None:
                by_part[w[0]] = [(w[1], w[2], s, a)]
            else:
                txns.append((w[1], w[2], s, a))
        for part, txns in by_part.items():
            finish = self._serve(self.parts[part], txns, arrive, write=kind == "store")
            if kind == "atomic":
                # Read-modify-write at the partition; lanes on one address go one by one.
                collisions = max(Counter(a for *_, a in txns).values())
                finish += self.atomic_latency - self.hit + (collisions - 1) * self.same_address
            done = max(done, finish + self.half_trip)
        self.drained = max(self.drained, done)
        return done

    def _access_cached(self, kind: str, addresses, sizes, t: float, sm: int,
                       use_l1: bool = True) -> float:
        """Loads and stores through the L1 (loads only) and the L2.

        Where the L2 is split, a load looks in the half beside its SM first: a hit
        there is served by that half's slice; a miss goes to the sector's home half
        (when that is the other one: across the fabric, l2_far_latency_cycles more)
        and from there to DRAM, and leaves a copy in the near half.  A store goes to
        the home half, which keeps the written data; a copy of it in the writer's half
        stays (it is current), one in the other half is dropped."""
        load = kind == "load"
        l1 = self.l1[sm] if load and use_l1 and self.l1 else None
        l2, l2_free, per_cycle, l2_latency = self.l2, self.l2_free, self.l2_bytes_per_cycle, self.l2_latency
        dir_free = self.l2_free_dir[load]
        dir_per_cycle = self.l2_load_per_cycle if load else self.l2_store_per_cycle
        clock = self.clock                     # L2 entries hold ready times on the L2's clock
        where, cache, interleave = self._where, self._where_cache, self.interleave
        split, far_latency = self.split, self.far_latency
        near = self.sm_half[sm] if split else 0
        mine = l2.halves[near]                 # the half beside this SM
        other = l2.halves[near ^ 1] if split else None
        l2_sets, l2_sector, l2_lines = mine.sets, mine.sector, mine.lines
        done = t
        by_part: dict = {}
        misses: list = []                      # (partition, position there, L2 entries, L1 entry,
                                               #  its sector there or -1 if not asked for, far?,
                                               #  when its slice's read-out allows)
        if l1 is not None:
            l1_hit_at = t + self.l1_latency
            l1_line, l1_sector, per_line = l1.line, l1.sector, l1.per_line
            l1_sets, l1_count, l1_ways = l1.sets, l1.set_count, l1.ways
        line, k = None, 0                      # (k: the sector in its L1 line)
        fill, fetched, wanted = (self.l2_fill if load else 0), None, None
        fabric, fabric_free = self.fabric_per_cycle, self.fabric_free
        per_request, req_free, line_of_request = self.l2_request_cycles, self.l2_request_free, None
        for a, s in zip(addresses, sizes):
            if l1 is not None:
                # L1Cache.find, inlined: the line made most recently used, or allocated.
                tag = a // l1_line
                lines = l1_sets[tag % l1_count]
                line = lines.pop(tag, None)
                if line is None:
                    if len(lines) >= l1_ways:
                        del lines[next(iter(lines))]
                    line = [None] * per_line
                lines[tag] = line
                k = (a // l1_sector) % per_line
                ready = line[k]
                if ready is not None:          # an L1 hit (waiting for the data if in flight)
                    l1.hits += 1
                    if ready < l1_hit_at:
                        ready = l1_hit_at
                    if ready > done:
                        done = ready
                    continue
                l1.misses += 1
            part, bank, row = cache.get(a // interleave) or where(a)
            far = split and (part & 1) != near     # its home (L2.home, inlined) is the other half
            tag = a // l2_sector
            slice_ = part
            if far and not load:                   # a store goes straight to the home half
                home = l2.halves[near ^ 1]
                entry = home.find(a)
            else:                                  # SectorCache.find in the near half, inlined
                ways = l2_lines.get(tag % l2_sets)
                entry = ways.pop(tag, None) if ways is not None else None
                if entry is not None:
                    ways[tag] = entry
                    mine.hits += 1
                else:
                    mine.misses += 1
                if far:
                    if entry is not None:
                        slice_ = part ^ 1            # the near copy, in the neighbouring slice
                    else:                            # on to the home half, across the fabric
                        home = l2.halves[near ^ 1]
                        entry = home.find(a)
            if entry is not None or not load:
                # An L2 hit, or a store (write-back L2: it allocates without fetching).
                # The slice's budgets are separate queues (both directions together, and
                # this direction): the access is done when the later of them has passed it.
                # (Coupling them, each access starting when both were free, wasted the
                # combined budget whenever one direction came in a run: a copy moved
                # 4.6 TB/s through the model's L2 against the H100's 6.4.)
                free = l2_free[slice_]
                l2_free[slice_] = (t if t > free else free) + s / per_cycle
                free = dir_free[slice_]
                dir_free[slice_] = (t if t > free else free) + s / dir_per_cycle
                ready = l2_free[slice_] if l2_free[slice_] > dir_free[slice_] else dir_free[slice_]
                if fabric and far and slice_ == part:
                    if load:                         # a far hit's data, back to this half
                        self.crossings.append((ready, near, s, l2_latency + far_latency))
                    else:                            # a store's, to its home half, now
                        free = fabric_free[near ^ 1]
                        fabric_free[near ^ 1] = (t if t > free else free) + s / fabric
                        if fabric_free[near ^ 1] > ready:
                            ready = fabric_free[near ^ 1]
                if per_request and (a >> 7) != line_of_request:
                    # a new request (an instruction's sectors of one 128-B line): its lookup
                    line_of_request = a >> 7
                    free = req_free[slice_]
                    req_free[slice_] = (t if t > free else free) + per_request
                    if req_free[slice_] > ready:
                        ready = req_free[slice_]
                extra = 0
                if far and slice_ == part:           # the data crosses between the halves
                    extra = far_latency
                    self.fabric_bytes += s
                ready += l2_latency + extra          # a round trip
                if entry is None:                    # a store's new sector, at its home
                    entry = (home if far else mine).fill(a, clock + ready, True)
                elif entry[0] - clock + extra > ready:
                    ready = entry[0] - clock + extra           # the sector is still on its way
                if not load:
                    if not entry[1]:
                        (home if far else mine).make_dirty(a, entry)
                    if split and not far:            # the other half's copy is stale now
                        o_ways = other.lines.get(tag % other.sets)
                        if o_ways:
                            o_ways.pop(tag, None)
                elif far and slice_ == part:         # a far hit leaves a copy in the near half
                    mine.fill(a, clock + ready)
                    sl = part ^ 1                    # written into the near slice
                    l2_free[sl] = (t if t > l2_free[sl] else l2_free[sl]) + s / per_cycle
                if line is not None:
                    line[k] = ready
                if ready > done:
                    done = ready
                continue
            if per_request and (a >> 7) != line_of_request:
                # A miss is looked up too: a request at the near slice (and, for a sector
                # homed in the far half, one there), ahead of the hits behind it.
                line_of_request = a >> 7
                for sl in ((part ^ 1, part) if far else (part,)):
                    free = req_free[sl]
                    req_free[sl] = (t if t > free else free) + per_request
            # The data leaves the near slice for the SM as a hit's does: the same
            # budgets, and the SM has it no sooner than that read-out allows.
            out = part ^ 1 if far else part
            free = l2_free[out]
            l2_free[out] = (t if t > free else free) + s / per_cycle
            free = dir_free[out]
            dir_free[out] = (t if t > free else free) + s / dir_per_cycle
            out = (l2_free[out] if l2_free[out] > dir_free[out] else dir_free[out]) + l2_latency
            txns = by_part.get(part)
            if txns is None:
                txns = by_part[part] = []
            if fill > s:
                # The DRAM returns the aligned block around the sector (l2_fill_bytes), one
                # transaction per block: the block's other sectors come with it.
                base = a - a % fill
                if fetched is None:
                    fetched, wanted = {}, set(addresses)
                at = fetched.get(base)
                if at is not None:                   # its block is already on the way
                    misses.append((at[0], at[1], self._fill_l2(a, near, far), line, k, far, out))
                    continue
                fetched[base] = (part, len(txns))
                for b in range(base, base + fill, l2_sector):
                    # (sectors this instruction asks for come here as misses themselves)
                    if b not in wanted:
                        misses.append((part, len(txns), self._fill_l2(b, near, far, True), None, -1, far, 0))
                s = fill
            misses.append((part, len(txns), self._fill_l2(a, near, far), line, k, far, out))
            txns.append((bank, row, s, a))
            # The block is written into its home slice (and, through the far half, into the
            # near one as a copy): slice bandwidth that the requester does not wait for.
            for sl in ((part, part ^ 1) if far else (part,)):
                l2_free[sl] = (t if t > l2_free[sl] else l2_free[sl]) + s / per_cycle
            if far:
                self.fabric_bytes += s               # the block comes back through the far half
        if by_part:
            arrive = t + self.half_trip
            finished = {part: self._serve(self.parts[part], txns, arrive, [])[1]
                        for part, txns in by_part.items()}
            for part, i, entries, line, k, far, out in misses:
                ready = finished[part][i] + self.half_trip
                if far:
                    if fabric and k >= 0:            # a sector asked for: its data cross the link
                        self.crossings.append((ready, near, l2_sector, far_latency))
                    ready += far_latency
                if out > ready:                      # the slice's read-out is the later
                    ready = out
                for entry in entries:
                    entry[0] = clock + ready
                if line is not None:
                    line[k] = ready
                if ready > done:
                    done = ready
        if l2.evicted:
            self._write_back(t)
        self.drained = max(self.drained, done)
        return done

    def cross(self, crossings: list) -> float:
        """Book far loads' data (what an access left in ``crossings``) on the link, first
        come first served from their arrival on (call it when the simulation has reached
        the first arrival, so that what came earlier is booked already); return when the
        last of them is through and at its SM."""
        done = 0.0
        per_cycle, free = self.fabric_per_cycle, self.fabric_free
        for arrival, way, nbytes, after in sorted(crossings):
            free[way] = (arrival if arrival > free[way] else free[way]) + nbytes / per_cycle
            if free[way] + after > done:
                done = free[way] + after
        return done

    def _fill_l2(self, address: int, near: int, far: bool, only_absent: bool = False) -> list:
        """The L2 entries a sector coming from DRAM fills: its home half's and, when the
        home is the other half, a copy in the near one (``only_absent``: not those
        already there, for the other sectors of a fetched block)."""
        halves = self.l2.halves
        where = (near ^ 1, near) if far else (near,)
        if not only_absent:
            return [halves[h].fill(address, 0.0) for h in where]
        entries = []
        for h in where:
            half = halves[h]
            tag = address // half.sector
            if tag not in half.lines.get(tag % half.sets, ()):
                entries.append(half.fill(address, 0.0))
        return entries

    def _write_back(self, t: float) -> None:
        """Queue the dirty sectors the L2 just evicted at their partitions (DRAM writes
        that nobody waits for)."""
        by_part: dict = {}
        for a in self.l2.evicted:
            part, bank, row = self._where(a)
            by_part.setdefault(part, []).append((bank, row, self.l2.sector, a))
        self.l2.evicted.clear()
        for part, txns in by_part.items():
            done = self._serve(self.parts[part], txns, t + self.half_trip, sample=False,
                               write=True)
            # The kernel is not over before the DRAM has taken the write-backs its own
            # stores forced out of the L2 (the L2 cannot hold more than it has).
            if done > self.drained:
                self.drained = done

    def _l2_atomic(self, addresses, t: float) -> float:
        """Atomics on GPUs with an L2 are done there (its slices hold the ALUs). Each
        sector of a warp's atomic request holds its slice's atomic unit for
        same_address_serialization_cycles, however many lanes of the warp hit it: on
        the H100 one counter takes one warp request per 1.45 cycles whether it has 1
        or 32 lanes, and 2^20 counters (4 sectors a request, all slices busy) about
        4 x 1.45 cycles per request and slice (calibrate.py, docs/results/
        calibration-h100.md). At least the slice's bandwidth time for 32 bytes.

        A sector not in the L2 is read from DRAM first (the atomic needs its old value),
        in blocks of l2_fill_bytes as a load miss's: that atomic is done a load miss's
        round trip plus the unit's time after it is issued, at the earliest.  The slice's
        unit is not held while it waits (others go ahead), so only the atomic waits."""
        done = t
        l2 = self.l2
        hold = max(32 / self.l2_bytes_per_cycle, self.same_address)
        alu = self.atomic_latency - self.l2_latency         # the unit's part of the latency
        fill, asked = self.l2_fill, dict.fromkeys(addresses)  # each sector once, in order
        fetched: dict = {}                                    # block -> (partition, position)
        by_part: dict = {}
        missed: list = []                                     # (partition, position, entry, asked?)
        for a in asked:
            part, bank, row = self._where(a)
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
            elif entry[0] - self.clock > t:      # its sector is still on its way
                done = max(done, entry[0] - self.clock + hold + alu)
            home.make_dirty(a, entry)
            start = max(t, self.l2_free[part])
            self.l2_free[part] = start + hold
            done = max(done, self.l2_free[part] + self.atomic_latency)
        if by_part:
            arrive = t + self.half_trip
            finished = {part: self._serve(self.parts[part], txns, arrive, [])[1]
                        for part, txns in by_part.items()}
            for part, i, entry, wanted in missed:
                ready = finished[part][i] + self.half_trip
                entry[0] = self.clock + ready
                if wanted:
                    done = max(done, ready + hold + alu)
        if l2.evicted:
            self._write_back(t)
        self.drained = max(self.drained, done)
        return done

    def _serve(self, p: Partition, txns, arrive: float, finishes: list | None = None,
               sample: bool = True, write: bool = False):
        """Serve ``txns`` [(bank, row, size, address)] arriving at ``arrive``; return when
        the last is done at the partition (and, given ``finishes``, (last, each one's)).

        In order (the default), a transaction waiting for its bank holds the bus for
        the ones behind it; with ``reorder`` (first-ready, as GPU memory controllers
        schedule) the bus is only a rate limit: the transactions take its slots in
        arrival order, and each is done when both its bank and its slot allow."""
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

    def finish(self, cycles: float) -> None:
        """The launch ended at ``cycles``: move the L2's clock past it."""
        if self.l2 is not None:
            self.l2.clock = self.clock + cycles

    def summary(self, cycles: float) -> dict:
        """Per-partition counts, queue depths and utilization for the report."""
        tx = [p.transactions for p in self.parts]
        samples = sum(p.queue_samples for p in self.parts)
        total_bytes = sum(p.bytes for p in self.parts)
        seconds = cycles / (self.config.gpu.core_clock_mhz * 1e6) if cycles else 0
        caches = {}
        if self.l1:
            hits, misses = sum(c.hits for c in self.l1), sum(c.misses for c in self.l1)
            caches["l1_hit_rate"] = hits / (hits + misses) if hits + misses else 0.0
        if self.l2 is not None:
            hits, misses = self.l2.hits - self.l2_start[0], self.l2.misses - self.l2_start[1]
            caches["l2_hit_rate"] = hits / (hits + misses) if hits + misses else 0.0
            caches["l2_writebacks"] = self.l2.writebacks - self.l2_start[2]
            if self.split:
                caches["l2_fabric_bytes"] = self.fabric_bytes
        return {
            **caches,
            "partition_transactions": tx,
            "queue_mean": (sum(p.queue_total for p in self.parts) / samples) if samples else 0.0,
            "queue_max": max(p.queue_max for p in self.parts),
            "bus_utilization": (sum(p.busy for p in self.parts) / (cycles * self.n)) if cycles else 0.0,
            "row_hit_rate": (sum(p.row_hits for p in self.parts) / sum(tx)) if sum(tx) else 0.0,
            "dram_bytes": total_bytes,
            "achieved_gbps": total_bytes / seconds / 1e9 if seconds else 0.0,
        }
