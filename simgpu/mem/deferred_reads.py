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

One driver for both paths: :class:`DeferredReads` numbers the accesses
(:class:`Deferred`), queues their reads, counts down what each one waits for and, once
nothing is left, has its unit work out its time (:meth:`DeferredReads.decide` for a
GPU without an L2, GT200's loads, :class:`Load`; :meth:`DeferredL2.decide
<simgpu.mem.deferred_l2.DeferredL2.decide>` for the L2's misses and the accesses that
found their sectors on the way), then frees its miss entries and tells its waiters.
Stores, atomics and page walks are still booked at arrival, into the same sub-channels.
"""
from __future__ import annotations

from heapq import heapify

from .dram_scheduler import FrFcfs, FrFcfsQueue
from .uncached import by_partition

__all__ = ["DEFERRED", "Deferred", "DeferredReads", "Load"]

#: A deferred load's stand-in time is DEFERRED + its number: later than any simulated
#: cycle (2^40 cycles: over 10 minutes at 1.5 GHz), and exact as a float up to 2^40 loads.
DEFERRED = float(2 ** 40)
_INF = float("inf")


class Deferred:
    """An access whose time waits on DRAM reads not yet decided (and, with an L2, on
    earlier such accesses): what the driver (:class:`DeferredReads`) keeps of each."""

    __slots__ = ("number", "sm", "kind", "left", "pieces", "ends", "done", "entries",
                 "waiters", "cells")

    def __init__(self, number: int, sm: int, kind: str):
        self.number = number
        self.sm = sm
        self.kind = kind                      # "load", "store" or "atomic"
        self.left = 1                         # transactions and earlier accesses still
                                              # undecided (+1 until it is queued)
        self.pieces: dict = {}                # transaction key -> reads not yet placed
        self.ends: dict = {}                  # transaction key -> its data out
        self.done: float | None = None        # when its data are back (a store: acknowledged)
        self.entries: list = []               # the SM's miss entries it holds
        self.waiters: list = []               # told once it is decided
        self.cells: list = []                 # far misses' crossings of the link, once booked


class Load(Deferred):
    """A load of a GPU without an L2, its reads queued: one transaction key per
    partition (its replies leave the partition's port once its last read is placed)."""

    __slots__ = ("issued", "last", "flits", "reply_flits")

    def __init__(self, number: int, sm: int, issued: float):
        super().__init__(number, sm, "load")
        self.issued = issued
        self.last = issued                    # the latest reply out of a partition's port
        self.flits: dict = {}                 # partition -> its reply flits
        self.reply_flits = 0                  # (all partitions')


class DeferredReads:
    """Every sub-channel's FR-FCFS queue for one launch, and the accesses waiting on them:
    the one driver of deferred reads.  It numbers the accesses, queues their
    transactions' reads, counts each access's undecided transactions and earlier
    accesses down as the scheduler places them, and once one has none left, has the
    unit work out its time (:meth:`decide`: a GT200 load's replies here,
    :class:`~simgpu.mem.deferred_l2.DeferredL2`'s rules with an L2), frees the miss
    entries it holds and tells its waiters.

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
        self.placed: list = []                # (end, order, access, key) of this tick
        self.count = 0                        # accesses so far
        self.nodes: dict[int, Deferred] = {}  # number -> an undecided access
        self.fresh: list[Deferred] = []       # accesses not yet taken by their warp
        self.drained = 0.0                    # the latest access's data back
        self.decisions = 0                    # ticks that ran (the CPU cost's measure)
        self.open = 0                         # accesses not yet decided
        # ``cross(access, crossings)`` (the engine's): far misses' data to book on the
        # link between the L2's halves once decided (simgpu.mem.deferred_l2)
        self.cross = None
        # the unit that works out a decided access's time: this one (GT200's loads) or
        # the DeferredL2 of a GPU with an L2
        self.unit = self
        # ``freed(sms)`` (the engine's): called after a tick whose decisions gave the
        # miss entries of these SMs their release times (warps waiting for entries)
        self.freed = None
        self.freed_sms: set = set()

    # --- booking ---------------------------------------------------------------------

    def new(self, node: Deferred) -> Deferred:
        """Number ``node`` (made with ``self.count``) and keep it until it is decided."""
        self.count += 1
        self.open += 1
        self.fresh.append(node)
        self.nodes[node.number] = node
        return node

    def load(self, sm: int, issued: float, by_part: dict, arrivals: dict) -> float:
        """Queue a load's transactions, ``by_part`` {partition: [(bank, row, size,
        address)]}, each partition's arriving at ``arrivals[partition]``; return the
        load's stand-in time."""
        load = self.new(Load(self.count, sm, issued))
        net = self.net
        for part, txns in by_part.items():
            arrive = arrivals[part]
            pieces = 0
            flits = 0
            for txn in txns:
                flits += net.flits(txn[2]) if net.modeled else 0
                pieces += self.queue(load, part, part, txn, arrive)
            load.pieces[part] = pieces
            load.ends[part] = arrive
            load.flits[part] = flits
            load.reply_flits += flits
            load.left += 1
        self.one_less(load)                   # (queued)
        return DEFERRED + load.number

    def queue(self, node: Deferred, key, part: int, txn: tuple, arrive: float) -> int:
        """Queue one transaction ``txn`` (bank, row, size, address) of ``node`` at
        partition ``part``, arriving at ``arrive``, its reads placed under ``key``;
        return how many reads it is (piece by piece where the address map spreads it)."""
        d = self.dram
        b, r, s, a = txn
        p = d.parts[part]
        p.transactions += 1
        p.bytes += s
        queues, bps, burst = self.queues[part], d.banks_per_sub, d.burst
        if s > burst and d.amap.lanes > 1:    # piece by piece where the map puts each
            pieces = d.amap.pieces(a, s)
            for bk, rk, n in pieces:
                self._add(queues[bk // bps], arrive, bk % bps, rk, n, node, key)
            return len(pieces)
        self._add(queues[b // bps], arrive, b % bps, r, -(-s // burst), node, key)
        return 1

    def _add(self, queue: FrFcfsQueue, arrive: float, bank: int, row: int, bursts: int,
             node: Deferred, key) -> None:
        queue.add(arrive, bank, row, bursts, (node, key))
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
        for end, _, node, key in placed:
            self._out(node, key, end)
        if self.freed_sms:
            sms, self.freed_sms = self.freed_sms, set()
            if self.freed is not None:
                self.freed(sms)
        if due != _INF:
            at += self.step
            self._tick_at(due - self.lead if due - self.lead > at else at)

    # --- the decisions ---------------------------------------------------------------

    def _placed(self, read, end: float) -> None:
        """A read of ``read`` = (access, key) is placed: its data are out at ``end``."""
        self.placed.append((end, len(self.placed), read[0], read[1]))

    def _out(self, node: Deferred, key, end: float) -> None:
        """A read of ``node``'s transaction ``key`` has its data out at ``end``."""
        if end > node.ends.get(key, 0.0):
            node.ends[key] = end
        node.pieces[key] -= 1
        if node.pieces[key]:
            return
        if node.__class__ is Load:            # its replies leave the partition's port
            self._replies(node, key)
        self.one_less(node)

    def one_less(self, node: Deferred) -> None:
        """One of what ``node`` waits for is decided (or it is queued)."""
        node.left -= 1
        if not node.left:
            self._settle(node)

    def _settle(self, node: Deferred) -> None:
        """Decide ``node`` and tell its waiters, depth first: a later access waiting on it
        (a Deferred among them, with an L2) is decided as soon as it has nothing else to
        wait for, and tells its own before the next waiter is told.  An explicit stack,
        as an access may free a long chain of later ones (a stencil's warps each hit the
        lines the one before is fetching and fetch the next ones)."""
        self._decide(node)
        waiters, node.waiters = node.waiters, []
        stack = [iter(waiters)]
        while stack:
            w = next(stack[-1], None)
            if w is None:
                stack.pop()
            elif isinstance(w, Deferred):
                w.left -= 1
                if not w.left:
                    self._decide(w)
                    waiters, w.waiters = w.waiters, []
                    stack.append(iter(waiters))
            else:
                w()                           # a warp's event

    def _decide(self, node: Deferred) -> None:
        """Everything ``node`` waited for is known: its unit works out its times; its
        miss entries free when its data are back."""
        done = node.done = self.unit.decide(node)
        del self.nodes[node.number]
        self.open -= 1
        if done > self.drained:
            self.drained = done
        if node.entries:                      # the miss entries free when the data are back
            for e in node.entries:
                e[0] = done
            heapify(self.mshr.held[node.sm])
            self.freed_sms.add(node.sm)

    def _replies(self, load: Load, part: int) -> None:
        """``load``'s last read at ``part`` is placed: its replies leave the port."""
        net = self.net
        finish = load.ends[part]
        if net.modeled:
            finish += net.part_out[part].book(finish, load.flits[part])
            net.flits_sent += load.flits[part]
        if finish > load.last:
            load.last = finish

    def decide(self, load: Load) -> float:
        """A GT200 load's time: its replies back at the SM."""
        net = self.net
        if net.modeled:
            done = (load.last + net.half_trip
                    + net.sm_in[load.sm // net.per_port].book(load.last, load.reply_flits))
        else:
            done = net.to_sm(load.last)
        return done if done > load.issued else load.issued

    def hold(self, entry: list, stand_in: float) -> None:
        """The SM's miss ``entry`` ([free at, count], :class:`~simgpu.mem.mshr.Mshr`) is
        held by the access of ``stand_in`` until its data are back."""
        node = self.nodes.get(int(stand_in - DEFERRED))
        if node is None:
            raise AssertionError(f"no undecided access for stand-in {stand_in}")   # (a wiring bug)
        node.entries.append(entry)

    def take(self) -> list[Deferred]:
        """The accesses queued since the last call (the engine's warp keeps them)."""
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
