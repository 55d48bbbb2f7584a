"""Reads decided when the simulation reaches them: FR-FCFS across requests in the engines.

With ``[dram] read_scheduling = "fr-fcfs"`` a load's DRAM reads are not booked when
the load is issued (:meth:`SubChannel.read <simgpu.mem.dram_timing.SubChannel.read>`,
first come first served): they join their sub-channel's queue
(:class:`~simgpu.mem.dram_scheduler.FrFcfsQueue`, the FR-FCFS window of
``read_queue_depth`` reads with the ``frfcfs_cap`` bound), and the scheduler decides
them as the simulation's clock reaches their time, so that a younger row hit that
arrives before an older miss is decided can still pass it.  A decision at time ``e``
needs every read that arrives by ``e``: a request issued at ``t`` reaches its
partition no sooner than ``t`` plus the interconnect's half trip, so a decision due
at ``e`` is made once the clock is at ``e - lead`` (``lead``: the half trip less a
cycle), when nothing issued from then on can arrive by ``e``.

Until its reads are decided a load's time is a stand-in, :data:`DEFERRED` plus the
load's number (the timed engines' scoreboard compares times: a stand-in is later than
any real time, and the larger of two stand-ins is the later load of a warp); the
engine waits for the decision where the warp uses the data
(:mod:`simgpu.sim.deferred`).  When a load's last read is placed, its replies are
booked on the interconnect (as :func:`~simgpu.mem.uncached.uncached` books them), the
SM's miss entries it holds get their real release time, and whoever waits is told.

Wired for the path of GPUs without an L2 (GT200's loads, :class:`Load`) and, through
:mod:`~simgpu.mem.deferred_l2`, for the L2's misses (:meth:`DeferredReads.queue`);
stores, atomics and page walks are still booked at arrival, into the same sub-channels.
"""
from __future__ import annotations

from heapq import heapify

from .dram_scheduler import FrFcfs, FrFcfsQueue
from .uncached import by_partition

__all__ = ["DEFERRED", "DeferredReads", "Load"]

#: A deferred load's stand-in time is DEFERRED + its number: later than any simulated
#: cycle (2^40 cycles: over 10 minutes at 1.5 GHz), and exact as a float up to 2^40 loads.
DEFERRED = float(2 ** 40)
_INF = float("inf")


class Load:
    """One load request whose reads are queued: its partitions' pieces still to place."""

    __slots__ = ("number", "sm", "issued", "parts", "left", "last", "reply_flits",
                 "done", "entries", "waiters")
    kind = "load"
    cells = ()                                # (no crossings between L2 halves here)

    def __init__(self, number: int, sm: int, issued: float):
        self.number = number
        self.sm = sm
        self.issued = issued
        self.parts: dict[int, list] = {}      # partition -> [pieces left, last end, reply flits]
        self.left = 0                         # partitions not yet done
        self.last = issued                    # the latest reply out of a partition's port
        self.reply_flits = 0                  # (all partitions')
        self.done: float | None = None        # when its data are back at the SM
        self.entries: list = []               # the SM's miss entries it holds
        self.waiters: list = []               # called once it is decided


class DeferredReads:
    """Every sub-channel's FR-FCFS queue for one launch, and the loads waiting on them.

    ``schedule(t, fn)`` (the engine's) calls ``fn()`` once the simulation's clock is at
    ``t``; it is set before the first load."""

    def __init__(self, dram, net, mshr):
        self.dram, self.net, self.mshr = dram, net, mshr
        self.lead = net.half_trip - 1.0 if net.half_trip >= 1.0 else 0.0
        self.schedule = None
        d = dram
        self.queues = []                      # [partition][sub-channel]
        for p in d.parts:
            row = []
            for sub in p.subs:
                s = FrFcfs(sub, d.timing.read_depth, d.frfcfs_cap)
                row.append(FrFcfsQueue(s, self._placed))
            self.queues.append(row)
        # the queues with reads not yet placed, and when the next tick comes: ticks are a
        # step (the lead) apart at the most often, each deciding for every queue
        self.active: dict[FrFcfsQueue, None] = {}
        self.tick_at = _INF
        self.step = self.lead if self.lead > 0 else 1.0
        self.placed: list = []                # (end, order, load, partition) of this tick
        self.count = 0                        # loads so far
        self.fresh: list[Load] = []           # loads not yet taken by their warp
        self.drained = 0.0                    # the latest load's data back
        self.decisions = 0                    # ticks that ran (the CPU cost's measure)
        self.open = 0                         # loads not yet decided
        # ``cross(access, crossings)`` (the engine's): far misses' data to book on the
        # link between the L2's halves once decided (simgpu.mem.deferred_l2)
        self.cross = None
        self.l2 = None                        # the DeferredL2 of a GPU with an L2
        # ``freed(sms)`` (the engine's): called after a tick whose decisions gave the
        # miss entries of these SMs their release times (warps waiting for entries)
        self.freed = None
        self.freed_sms: set = set()

    # --- booking ---------------------------------------------------------------------

    def load(self, sm: int, issued: float, by_part: dict, arrivals: dict) -> float:
        """Queue a load's transactions, ``by_part`` {partition: [(bank, row, size,
        address)]}, each partition's arriving at ``arrivals[partition]``; return the
        load's stand-in time."""
        load = Load(self.count, sm, issued)
        self.count += 1
        self.open += 1
        d = self.dram
        burst, bps, spread, net = d.burst, d.banks_per_sub, d.amap.lanes > 1, self.net
        for part, txns in by_part.items():
            queues = self.queues[part]
            arrive = arrivals[part]
            p = d.parts[part]
            pieces = 0
            flits = 0
            for b, r, s, a in txns:
                p.transactions += 1
                p.bytes += s
                flits += net.flits(s) if net.modeled else 0
                if s > burst and spread:      # burst by burst where the map puts each
                    for k in range(0, s, burst):
                        _, bk, rk = d.amap.where(a + k)
                        self._add(queues[bk // bps], arrive, bk % bps, rk, 1, load, part)
                        pieces += 1
                else:
                    self._add(queues[b // bps], arrive, b % bps, r, -(-s // burst), load, part)
                    pieces += 1
            load.parts[part] = [pieces, arrive, flits]
            load.reply_flits += flits
            load.left += 1
        self.fresh.append(load)
        return DEFERRED + load.number

    def queue(self, node, key, part: int, txn: tuple, arrive: float) -> int:
        """Queue one transaction ``txn`` (bank, row, size, address) of ``node`` (a
        :class:`~simgpu.mem.deferred_l2.Pending`) at partition ``part``, arriving at
        ``arrive``; return how many reads it is (``self.l2.placed(node, key, end)``
        is told each one's end).  Counted as :meth:`load` counts its transactions."""
        d = self.dram
        b, r, s, a = txn
        p = d.parts[part]
        p.transactions += 1
        p.bytes += s
        queues, bps, burst = self.queues[part], d.banks_per_sub, d.burst
        if s > burst and d.amap.lanes > 1:    # burst by burst where the map puts each
            for k in range(0, s, burst):
                _, bk, rk = d.amap.where(a + k)
                self._add(queues[bk // bps], arrive, bk % bps, rk, 1, node, key)
            return -(-s // burst)
        self._add(queues[b // bps], arrive, b % bps, r, -(-s // burst), node, key)
        return 1

    def _add(self, queue: FrFcfsQueue, arrive: float, bank: int, row: int, bursts: int,
             load: Load, part: int) -> None:
        queue.add(arrive, bank, row, bursts, (load, part))
        self.active[queue] = None
        at = arrive - self.lead               # (later than the clock: see the module's doc)
        if at + self.step < self.tick_at:     # the next tick would be too late for it
            self._tick_at(at)

    def _tick_at(self, at: float) -> None:
        self.tick_at = at
        self.schedule(at, lambda: self._tick(at))

    def _tick(self, at: float) -> None:
        """The clock is at ``at``: make the decisions due by ``at + lead``, and come back
        when the next one is due (a step later at the soonest: a decision made up to a
        step after ``due - lead`` is made before ``due``, and a load's data are back a
        read's latency and a half trip after its decision)."""
        if at != self.tick_at:                # (replaced by an earlier one)
            return
        self.tick_at = _INF
        self.decisions += 1
        limit = at + self.lead
        due = _INF
        for queue in list(self.active):
            d = queue.advance(limit)
            if d < due:
                due = d
            if not queue.waiting:
                del self.active[queue]
                sub = queue.s.sub
                if sub.drain_due >= 0:            # (a drain it was left: due now)
                    due_at, sub.drain_due = sub.drain_due, -1.0
                    if len(sub.pending) > sub.t.low:
                        sub._drain(len(sub.pending) - sub.t.low, due_at)
        # the reads placed, in the order their data leave the partitions (the ports
        # take replies in that order; the queues were advanced one after another)
        placed, self.placed = self.placed, []
        placed.sort()
        for end, _, load, part in placed:
            self._out(load, part, end)
        if self.freed_sms:
            sms, self.freed_sms = self.freed_sms, set()
            if self.freed is not None:
                self.freed(sms)
        if due != _INF:
            at += self.step
            self._tick_at(due - self.lead if due - self.lead > at else at)

    # --- the decisions ---------------------------------------------------------------

    def _placed(self, key, end: float) -> None:
        """A read of ``key`` = (load, partition) is placed: its data are out at ``end``."""
        self.placed.append((end, len(self.placed), key[0], key[1]))

    def _out(self, load: Load, part: int, end: float) -> None:
        """A read of ``load`` at ``part`` has its data out at ``end``."""
        if load.__class__ is not Load:        # an L2 miss's (simgpu.mem.deferred_l2)
            self.l2.placed(load, part, end)
            return
        entry = load.parts[part]
        entry[0] -= 1
        if end > entry[1]:
            entry[1] = end
        if entry[0]:
            return
        net = self.net
        finish = entry[1]
        if net.modeled:                       # its replies leave the partition's port
            finish += net.part_out[part].book(finish, entry[2])
            net.flits_sent += entry[2]
        if finish > load.last:
            load.last = finish
        load.left -= 1
        if load.left:
            return
        if net.modeled:
            done = (load.last + net.half_trip
                    + net.sm_in[load.sm // net.per_port].book(load.last, load.reply_flits))
        else:
            done = net.to_sm(load.last)
        if done < load.issued:
            done = load.issued
        load.done = done
        self.open -= 1
        if done > self.drained:
            self.drained = done
        if load.entries:                      # the miss entries free when the data are back
            for e in load.entries:
                e[0] = done
            heapify(self.mshr.held[load.sm])
            self.freed_sms.add(load.sm)
        for fn in load.waiters:
            fn()
        load.waiters = []

    def hold(self, entry: list, stand_in: float) -> None:
        """The SM's miss ``entry`` ([free at, count], :class:`~simgpu.mem.mshr.Mshr`) is
        held by the load of ``stand_in`` until its data are back."""
        for load in self.fresh:
            if DEFERRED + load.number == stand_in:
                load.entries.append(entry)
                return
        raise AssertionError(f"no fresh load for stand-in {stand_in}")   # (a wiring bug)

    def take(self) -> list[Load]:
        """The loads queued since the last call (the engine's warp keeps them)."""
        fresh, self.fresh = self.fresh, []
        return fresh


def uncached_load(amap, reads: DeferredReads, net, req) -> float:
    """A load of a GPU without caches (:func:`~simgpu.mem.uncached.uncached`'s path up to
    the partitions, its request packets booked the same way), its reads queued at the
    partitions: its stand-in time.  Sets ``req.accepted`` later than its issue where a
    partition's port queue was full."""
    t = req.translated
    if not req.addresses:                 # (nothing to read: back at once)
        return t
    by_part = by_partition(amap, req.addresses, req.sizes)
    arrivals = {}
    if not net.modeled:                   # a fixed latency each way
        arrive = net.to_partition(t)
        for part in by_part:
            arrivals[part] = arrive
        return reads.load(req.sm, t, by_part, arrivals)
    header = net.flits(0)                 # load requests: a header each
    waits = net.requests(req, t, len(req.sizes) * header,
                         {part: header * len(txns) for part, txns in by_part.items()})
    for part in by_part:
        arrivals[part] = t + net.half_trip + waits[part]
    return reads.load(req.sm, t, by_part, arrivals)
