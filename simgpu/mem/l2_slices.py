"""The L2 slices: one per memory partition, in front of it (where the config has an L2).

A global load that missed the L1 (or passed it by) and every store come here:

* a hit is served at ``cache.l2_latency_cycles`` and its slice's share of the
  L2 bandwidth (loads, stores and both together have their own budgets, and each
  request -- an instruction's sectors of one 128-B line -- takes
  ``l2_request_cycles`` of its slice, a store's ``l2_write_request_cycles``);
* a load miss goes on to the DRAM partition (in blocks of ``l2_fill_bytes``),
  fills the sector, and its data then leave the slice for the SM as a hit's do;
  with ``l2_fill_bandwidth_gbps`` the block is written through the slice's fill
  port when it comes back (its own rate, not the hits' budgets), else it takes the
  slice's combined budget when the miss is issued;
* a store allocates its sector dirty (write-back, no fetch); a dirty sector
  evicted later is written back through its partition (nobody waits for it);
* where the L2 is split in two halves (Ampere, Hopper), a load looks in the half
  beside its SM first; what crosses to the other half takes
  ``l2_far_latency_cycles`` more and shares the link between the halves
  (``l2_fabric_bandwidth_gbps``).

The cache structure (sets, LRU, dirty limit, halves) is
:class:`~simgpu.mem.caches.L2`; its contents belong to the device and outlive a
launch, this unit's timing state belongs to one launch.
"""
from __future__ import annotations

from .deferred_reads import DEFERRED
from .interconnect import Port

__all__ = ["L2Slices"]


class L2Slices:
    """The L2's slices of one launch: their bandwidth budgets and the path of a request."""

    def __init__(self, config, l2, amap, dram, net, l1=None):
        m, c = config.memory, config.cache
        cycle_ns = 1e3 / config.gpu.core_clock_mhz
        self.n = m.partitions
        self.l2, self.amap, self.dram, self.net, self.l1 = l2, amap, dram, net, l1
        self.drained = 0.0        # when the last write-back so far is done
        # far loads' data that still have to cross between the L2's halves, for the
        # engine to book (:meth:`cross`): (arrival at the link, way, bytes, cycles after)
        self.crossings: list = []
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
        self.l2_request_cycles = c.l2_request_cycles
        # a store's request its own cost (l2_write_request_cycles): the H100's slices take
        # one-sector write requests at 2.8 cycles each, reads at 1.2 (calibration/
        # partial_stores.py --set requests)
        self.l2_write_request_cycles = c.l2_write_request_cycles or c.l2_request_cycles
        self.l2_request_free = [0.0] * self.n
        # What DRAM returns for a miss is written into its home slice (and, homed in the
        # far half, into the near slice as a copy). With l2_fill_bandwidth_gbps each slice
        # writes it through a fill port of its own, when the data arrive, and the sector
        # is the SM's once the port has taken it: GPGPU-Sim's L2 (gpu-cache.cc,
        # use_fill_port / fill_port_free) has a fill port apart from the data port that
        # hits use, and a miss takes no data-port time; Nsight Compute counts fills at the
        # data stage (lts__d_sectors_fill_*), not among the tag stage's lts__t_sectors. A
        # port books in windows (interconnect.Port), so the fills booked out of time order
        # (when their DRAM time is computed) fill earlier gaps. Without the key a fill
        # takes the slice's combined budget when the miss is issued (as since 51050ae).
        self.sector = c.sector_bytes
        # [cache] l2_write_masks: a store's sector holds data only in the bytes written
        # (each store's bytes per sector come in req.lanes), so a load of a partly written
        # sector misses, and its write-back is a read-modify-write (SectorCache.merge_reads)
        self.write_masks = bool(c.l2_write_masks)
        self.full_mask = l2.halves[0].full        # (SectorCache.full)
        fill_gbps = c.l2_fill_bandwidth_gbps
        self.fill_ports = ([Port(self.sector / (fill_gbps / self.n * cycle_ns)) for _ in range(self.n)]
                           if fill_gbps else None)
        # A split L2 (two halves): what crosses to the other half takes
        # l2_far_latency_cycles more.
        self.split = len(self.l2.halves) > 1
        # SM i sits beside the half given by the parity of i's bits: 66 and 66 SMs on
        # the H100, as measured, in a pattern that (like the GPU's own irregular one,
        # calibration/l2_halves.py) does not line up with the round robin that hands
        # out blocks and the modulo that spreads addresses over partitions; a regular
        # one ((i >> 1) & 1) sent a streaming kernel's loads to half the slices.
        self.sm_half = [bin(i).count("1") & 1 for i in range(config.gpu.sm_count)]
        self.far_latency = c.l2_far_latency_cycles
        # The link each way between the halves (l2_fabric_bandwidth_gbps), by the half
        # it goes to: the data of the stores that SMs beside one half send to sectors
        # homed in the other, and of the other half's SMs' far loads, share it
        # (calibration/l2_fabric.py), first come, first served. A store's data reach
        # it when the store is issued; a far load's when they are back from the far
        # slice or DRAM, later: those are left in ``crossings`` for the engine, which
        # books them (:meth:`cross`) when the simulation reaches that time.
        fabric = c.l2_fabric_bandwidth_gbps if self.split else None
        self.fabric_per_cycle = fabric * cycle_ns if fabric else 0.0
        self.fabric_free = [0.0, 0.0]
        self.fabric_bytes = 0
        # bytes booked on the slices' combined budgets (read-outs, stores, hits, and the
        # fills where they go there), and on their fill ports: the report's busy fractions
        self.slice_bytes = 0
        self.fill_port_bytes = 0
        self.l2_start = (self.l2.hits, self.l2.misses, self.l2.writebacks)
        self.l2.evicted.clear()
        self.clock = self.l2.clock             # this launch's cycle 0 on the L2's clock
        # [dram] read_scheduling = "fr-fcfs": the DeferredL2 that decides the misses'
        # reads later; their times are stand-ins (>= DEFERRED) until then
        self.defer = None

    def access(self, req) -> float:
        """Loads and stores through the L1 (loads only) and the L2.

        Where the L2 is split, a load looks in the half beside its SM first: a hit
        there is served by that half's slice; a miss goes to the sector's home half
        (when that is the other one: across the fabric, l2_far_latency_cycles more)
        and from there to DRAM, and leaves a copy in the near half.  A store goes to
        the home half, which keeps the written data; a copy of it in the writer's half
        stays (it is current), one in the other half is dropped."""
        kind, addresses, sizes, t, sm = req.kind, req.addresses, req.sizes, req.translated, req.sm
        load = kind == "load"
        l1 = self.l1.caches[sm] if load and req.use_l1 and self.l1 is not None else None
        l2, l2_free, per_cycle, l2_latency = self.l2, self.l2_free, self.l2_bytes_per_cycle, self.l2_latency
        dir_free = self.l2_free_dir[load]
        dir_per_cycle = self.l2_load_per_cycle if load else self.l2_store_per_cycle
        clock = self.clock                     # L2 entries hold ready times on the L2's clock
        where, cache, granule = self.amap.where, self.amap.cache, self.amap.granule
        split, far_latency = self.split, self.far_latency
        near = self.sm_half[sm] if split else 0
        mine = l2.halves[near]                 # the half beside this SM
        other = l2.halves[near ^ 1] if split else None
        l2_sets, l2_sector, l2_lines = mine.sets, mine.sector, mine.lines
        done = t
        booked = 0                             # bytes this access books on combined budgets
        by_part: dict = {}
        misses: list = []                      # (partition, position there, L2 entries, L1 entry,
                                               #  its sector there or -1 if not asked for, far?,
                                               #  when its slice's read-out allows)
        if l1 is not None:
            l1_hit_at = t + self.l1.latency
            lookup = self.l1.lookup
        line, k = None, 0                      # (k: the sector in its L1 line)
        fill, fetched, wanted = (self.l2_fill if load else 0), None, None
        fabric, fabric_free = self.fabric_per_cycle, self.fabric_free
        fill_ports, fills = self.fill_ports, []    # (partition, position there, bytes, far?)
        per_request = self.l2_request_cycles if load else self.l2_write_request_cycles
        req_free, line_of_request = self.l2_request_free, None
        full_mask = self.full_mask
        partial = self.write_masks               # sectors written in part: see below
        written = req.lanes if partial and not load else None   # {sector: bytes written}
        for a, s in zip(addresses, sizes):
            if l1 is not None:
                ready, line, k = lookup(l1, a)
                if ready is not None:          # an L1 hit (waiting for the data if in flight)
                    if ready < l1_hit_at:
                        ready = l1_hit_at
                    elif ready >= DEFERRED:    # on its way, its time not decided yet
                        self.defer.l1_hit(req, ready, line, k, l1_hit_at)
                        continue
                    if ready > done:
                        done = ready
                    continue
            part, bank, row = cache.get(a // granule) or where(a)
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
                if partial and load and entry is not None and entry[2] != full_mask:
                    # A sector stores wrote only in part (its home half's entry): the rest
                    # of its bytes are in DRAM, so the load misses; the fill merges them.
                    half = home if far else mine
                    half.hits -= 1
                    half.misses += 1
                    slice_ = part
                    entry = None
            if entry is not None or not load:
                # An L2 hit, or a store (write-back L2: it allocates without fetching).
                # The slice's budgets are separate queues (both directions together, and
                # this direction): the access is done when the later of them has passed it.
                # (Coupling them, each access starting when both were free, wasted the
                # combined budget whenever one direction came in a run: a copy moved
                # 4.6 TB/s through the model's L2 against the H100's 6.4.)
                free = l2_free[slice_]
                l2_free[slice_] = (t if t > free else free) + s / per_cycle
                booked += s
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
                    entry = (home if far else mine).fill(
                        a, clock + ready, True, written.get(a, full_mask) if written else None)
                elif entry[0] >= DEFERRED:           # on its way, its time not decided yet
                    ready = self.defer.l2_hit(req, entry, extra, ready, line, k)
                elif entry[0] - clock + extra > ready:
                    ready = entry[0] - clock + extra           # the sector is still on its way
                if not load:
                    if written:                      # its bytes hold data now
                        entry[2] |= written.get(a, full_mask)
                    if not entry[1]:
                        (home if far else mine).make_dirty(a, entry)
                    if split and not far:            # the other half's copy is stale now
                        o_ways = other.lines.get(tag % other.sets)
                        if o_ways:
                            o_ways.pop(tag, None)
                elif far and slice_ == part:         # a far hit leaves a copy in the near half
                    copy = mine.fill(a, clock + ready)
                    if ready >= DEFERRED:
                        self.defer.copy(copy, ready)
                    sl = part ^ 1                    # written into the near slice
                    l2_free[sl] = (t if t > l2_free[sl] else l2_free[sl]) + s / per_cycle
                    booked += s
                if line is not None:
                    line[k] = ready
                if done < ready < DEFERRED:          # (a stand-in: the access's own, later)
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
            booked += s
            free = dir_free[out]
            dir_free[out] = (t if t > free else free) + s / dir_per_cycle
            out = (l2_free[out] if l2_free[out] > dir_free[out] else dir_free[out]) + l2_latency
            txns = by_part.get(part)
            if txns is None:
                txns = by_part[part] = []
            at_byte = a                              # where the DRAM transaction starts
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
                if base != a:                        # the DRAM reads the block from its start
                    _, bank, row = cache.get(base // granule) or where(base)
                    at_byte = base
            misses.append((part, len(txns), self._fill_l2(a, near, far), line, k, far, out))
            if fill_ports is not None:           # through the fill ports, when it is back
                fills.append((part, len(txns), s, far))
            else:
                # The block is written into its home slice (and, through the far half, into
                # the near one as a copy): slice bandwidth that the requester does not wait for.
                for sl in ((part, part ^ 1) if far else (part,)):
                    l2_free[sl] = (t if t > l2_free[sl] else l2_free[sl]) + s / per_cycle
                    booked += s
            txns.append((bank, row, s, at_byte))
            if far:
                self.fabric_bytes += s               # the block comes back through the far half
        if by_part and self.defer is not None:   # decided later (simgpu.mem.deferred_l2)
            self.defer.misses(req, by_part, misses, t, fills)
        elif by_part:
            arrive = self.net.to_partition(t)
            finished = {part: self.dram.serve(part, txns, arrive, [])[1]
                        for part, txns in by_part.items()}
            done = self.settle(misses, fills, lambda p, i: finished[p][i], near, self.crossings,
                               done)
        self.slice_bytes += booked
        if l2.evicted:
            self._write_back(t)
        self.drained = max(self.drained, done)
        return done if self.defer is None else self.defer.finish(req, done)

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

    def settle(self, misses: list, fills: list, end, near: int, crossings: list,
               done: float) -> float:
        """Write when each of ``misses`` is ready (``end(partition, position)``: when DRAM
        has its block out) into its L2 entries and L1 line, its fills through the fill
        ports, a far sector's crossing of the link into ``crossings``; return the latest
        of those times and ``done``.  The misses booked at arrival (:meth:`access`) and
        those decided later (:mod:`simgpu.mem.deferred_l2`) go through here alike."""
        filled = self._fill_ports(fills, end) if fills else None
        to_sm, clock, far_latency = self.net.to_sm, self.clock, self.far_latency
        fabric, sector = self.fabric_per_cycle, self.l2.sector
        for part, i, entries, line, k, far, out in misses:
            ready = to_sm(end(part, i) if filled is None else filled[part, i])
            if far:
                if fabric and k >= 0:                # a sector asked for: its data cross the link
                    crossings.append((ready, near, sector, far_latency))
                ready += far_latency
            if out > ready:                          # the slice's read-out is the later
                ready = out
            for entry in entries:
                entry[0] = clock + ready
            if line is not None:
                line[k] = ready
            if ready > done:
                done = ready
        return done

    def _fill_ports(self, fills: list, finished) -> dict:
        """Book each block DRAM returned on its home slice's fill port when it is back and,
        homed in the far half, on the near slice's when it has crossed; return when each
        (partition, position) block has been written, as {(partition, position): time}.
        ``finished(partition, position)``: when DRAM has the block out (decided then, under
        fr-fcfs: simgpu.mem.deferred_l2 books the fills as it decides)."""
        ports, sector, far_latency = self.fill_ports, self.sector, self.far_latency
        filled = {}
        for part, i, nbytes, far in fills:
            at = finished(part, i)
            at += ports[part].book(at, nbytes // sector)
            if far:                              # the copy, once across (far_latency later)
                at += ports[part ^ 1].book(at + far_latency, nbytes // sector)
            self.fill_port_bytes += 2 * nbytes if far else nbytes
            filled[part, i] = at
        return filled

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
            part, bank, row = self.amap.where(a)
            by_part.setdefault(part, []).append((bank, row, self.l2.sector, a))
        self.l2.evicted.clear()
        # A sector written only in part is read from DRAM first (a read-modify-write:
        # HBM3 with ECC has no write data mask). Its write takes its place in the write
        # queue as it leaves the L2, as the others do, and goes to the banks when the
        # queue drains, after the reads booked before it; entering it only once the read
        # is back would drain it at once behind its read, a bus turnaround per sector
        # (the 32 MiB partial-store case of calibration/partial_stores.py: 24.9 us
        # against 18.5 this way)
        merge: dict = {}
        for a in self.l2.merge_reads:
            part, bank, row = self.amap.where(a)
            merge.setdefault(part, []).append((bank, row, self.l2.sector, a))
        self.l2.merge_reads.clear()
        for part, txns in by_part.items():
            arrive = self.net.to_partition(t)
            reads = merge.get(part)
            read_done = self.dram.serve(part, reads, arrive) if reads else arrive
            done = self.dram.serve(part, txns, arrive, sample=False, write=True)
            if read_done > done:
                done = read_done
            # The kernel is not over before the DRAM has taken the write-backs its own
            # stores forced out of the L2 (the L2 cannot hold more than it has).
            if done > self.drained:
                self.drained = done


    def summary(self) -> dict:
        hits, misses = self.l2.hits - self.l2_start[0], self.l2.misses - self.l2_start[1]
        out = {"l2_hit_rate": hits / (hits + misses) if hits + misses else 0.0,
               "l2_writebacks": self.l2.writebacks - self.l2_start[2]}
        if self.split:
            out["l2_fabric_bytes"] = self.fabric_bytes
        out["l2_slice_bytes"] = self.slice_bytes
        if self.fill_port_bytes:
            out["l2_fill_port_bytes"] = self.fill_port_bytes
        return out
