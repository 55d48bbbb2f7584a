"""The timed engines' side of DRAM reads decided as the simulation goes on.

With ``[dram] read_scheduling = "fr-fcfs"`` the memory system queues a load's reads
for the FR-FCFS scheduler (:mod:`simgpu.mem.deferred_reads`) and gives the load a
stand-in time (``DEFERRED`` + its number) in place of the time its data are back.
The warp goes on as with any load (the scoreboard keeps the stand-in as the
register's ready time); where it uses the data, the interpreter yields a ``Stall``
until the stand-in, and the warp waits here until the loads it needs are decided, then
until their data are back.  The scheduler's decisions are simulation events
(:meth:`DeferredLoads.schedule`), each made when the clock is a half interconnect trip
ahead of it (no request issued later can reach the partition by then).  A warp that
finds its SM's miss entries held by undecided loads is woken by the decisions that give
them their release times (:meth:`DeferredLoads.entries`, :meth:`DeferredLoads.freed`).

On GPUs with an L2 (:mod:`simgpu.mem.deferred_l2`) a store's acknowledgement and an
atomic's may wait on an undecided load too: the warp keeps those in its ``acks`` and
waits for them at ``syncthreads()`` (:meth:`DeferredLoads.acked`); a far miss's data
cross the link between the L2's halves once decided (:meth:`DeferredLoads.cross`), and
the warp waits for them as for any far load's.
"""
from __future__ import annotations

from ..mem.deferred_reads import DEFERRED

__all__ = ["DEFERRED", "DeferredLoads"]


class DeferredLoads:
    """A launch's deferred loads, on the engine's clock ``env`` (a simpy environment)."""

    def __init__(self, env, memory):
        self.env = env
        self.memory = memory
        self.reads = memory.defer_reads(self.schedule)
        self.reads.cross = self.cross
        self.reads.freed = self.freed
        # an undecided load's data come back later than a step from now (a decision at
        # clock c is due by c + lead, and its data then cross the interconnect's half
        # trip): entries free by now + step are free as booked, whatever is decided
        self.step = self.reads.lead if self.reads.lead >= 1.0 else 1.0
        self.waiting: dict[int, list] = {}    # SM -> warps waiting for its miss entries

    def schedule(self, t: float, fn) -> None:
        """Call ``fn()`` once the clock is at ``t``."""
        env = self.env
        delay = t - env.now
        ev = env.timeout(delay if delay > 0 else 0.0)
        ev.callbacks.append(lambda _event: fn())

    def take(self, mine: list, acks: list | None = None) -> None:
        """Add the loads the last access queued to the warp's own (``mine``: those
        whose data it uses; ``acks``: stores and atomics, whose acknowledgements
        ``syncthreads()`` waits for)."""
        if self.reads.fresh:
            for load in self.reads.take():
                kind = load.kind
                if kind != "store":
                    mine.append(load)
                if kind != "load" and acks is not None:
                    acks.append(load)

    def wait(self, until: float, mine: list, real: float, late: list | None = None):
        """The warp stalls until ``until``, a stand-in: the interpreter counts every value
        with a real ready time, and every deferred load numbered up to ``until``'s, as
        back by then.  Wait until those loads (of ``mine``) are decided; return when the
        data are all back (``real``: the latest real ready time of the warp's loads;
        never before the clock).  ``late``: the warp's far loads' crossings of the link
        between the L2's halves ([back, through, booked]); those of the loads waited
        for get their real time, and the decided loads' own crossings join them."""
        env = self.env
        number = until - DEFERRED
        t = real
        keep = []
        for load in mine:
            if load.number <= number:
                if load.done is None:
                    event = env.event()
                    load.waiters.append(event.succeed)
                    yield event
                if load.done > t:
                    t = load.done
                if load.cells and late is not None:
                    late += load.cells
            else:
                keep.append(load)
        mine[:] = keep
        if late:
            for cell in late:                 # an access's crossings, booked at its issue
                if DEFERRED <= cell[0] <= until:
                    cell[0] = t
        return t if t > env.now else env.now

    def acked(self, acks: list, acked: float):
        """When the stores and atomics of ``acks`` are acknowledged, and those before
        them (``acked``): waits for their decisions (``syncthreads()``)."""
        for load in acks:
            if load.done is None:
                event = self.env.event()
                load.waiters.append(event.succeed)
                yield event
            if load.done > acked:
                acked = load.done
        acks.clear()
        return acked

    def cross(self, load, crossings: list) -> None:
        """A decided load's far misses (``crossings``, as L2Slices.access leaves them)
        cross the link between the L2's halves: booked when the clock reaches the
        first of them (the engine's book_crossings, for a load decided later)."""
        env = self.env
        cell = [load.done, None, env.event()]
        load.cells.append(cell)
        env.process(self._book(crossings, min(c[0] for c in crossings), cell))

    def _book(self, crossings: list, first: float, cell: list):
        env = self.env
        if first > env.now:
            yield env.timeout(first - env.now)
        cell[1] = self.memory.cross(crossings)
        cell[2].succeed()

    def entries(self, sm: int, need: int, when: float, at: float):
        """A warp needs ``need`` of SM ``sm``'s miss entries at ``at``, and as booked so
        far they are free at ``when`` (a stand-in where undecided loads hold some): the
        event it waits for.  That is ``when`` itself where no decision can free them
        sooner (by now + step); else the warp is told by the decisions that give the
        entries their times (:meth:`freed`), and woken at the earliest time known."""
        env = self.env
        if when <= env.now + self.step:
            self.memory.mshr.wait_cycles += (when - at) * need
            return env.timeout(when - env.now)
        waiter = [need, at, when, env.event()]
        self.waiting.setdefault(sm, []).append(waiter)
        if when < DEFERRED:
            self._wake_at(sm, waiter, when)
        return waiter[3]

    def _wake_at(self, sm: int, waiter: list, when: float) -> None:
        env = self.env
        env.timeout(when - env.now).callbacks.append(lambda _e: self._wake(sm, waiter, when))

    def _wake(self, sm: int, waiter: list, when: float) -> None:
        if waiter[2] != when:                 # (an earlier time replaced this one)
            return
        self.waiting[sm].remove(waiter)
        need, at = waiter[0], waiter[1]
        self.memory.mshr.wait_cycles += (when - at) * need
        waiter[3].succeed()

    def freed(self, sms) -> None:
        """Decisions gave miss entries of ``sms`` their release times: each warp waiting
        for entries of those SMs is woken when its entries now free, if that is sooner."""
        mshr, now = self.memory.mshr, self.env.now
        for sm in sms:
            waiting = self.waiting.get(sm)
            if not waiting:
                continue
            for waiter, t in zip(waiting, mshr.when_free_each(sm, [w[0] for w in waiting])):
                if t < waiter[2]:
                    if t < now:               # (free already: entries released in between)
                        t = now
                    waiter[2] = t
                    if t < DEFERRED:
                        self._wake_at(sm, waiter, t)
