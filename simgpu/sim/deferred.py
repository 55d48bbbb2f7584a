"""The timed engines' side of DRAM reads decided as the simulation goes on.

With ``[dram] read_scheduling = "fr-fcfs"`` the memory system queues a load's reads
for the FR-FCFS scheduler (:mod:`simgpu.mem.deferred_reads`) and gives the load a
stand-in time (``DEFERRED`` + its number) in place of the time its data are back.
The warp goes on as with any load (the scoreboard keeps the stand-in as the
register's ready time); where it uses the data, the interpreter yields a ``Stall``
until the stand-in, and the warp waits here until the loads it needs are decided, then
until their data are back.  The scheduler's decisions are simulation events
(:meth:`DeferredLoads.schedule`), each made when the clock is a half interconnect trip
ahead of it (no request issued later can reach the partition by then).

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
        # how long a warp waiting for miss entries held by undecided loads may sleep: an
        # undecided load's data come back later than two leads from now
        self.step = self.reads.lead if self.reads.lead >= 1.0 else 1.0

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

    def poll(self, when: float, at: float) -> float:
        """When a warp that needs miss entries at ``at`` and finds them free at ``when``
        (maybe a stand-in) looks again: no later than a step from now (and not before
        ``at``), so that entries freed by loads decided in between are seen in time."""
        limit = self.env.now + self.step
        if limit < at:
            limit = at
        return when if when < limit else limit
