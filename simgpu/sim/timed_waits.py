"""A memory instruction's waits in the timed engine, booked on the compiled core without
the warp's process: entries of simpy's own event queue.

Where an SM's miss entries are all taken, or the memory pipeline holds a request back
beyond the simulation's slack, the timed engine's warp waits in simulated time and then
books the rest of its instruction (``serve`` with ``resume``).  On sim:gtx260 the
connected-components kernels' scattered loads wait some ten times per instruction
(m = 2^16 edges, trees: 0.49 M waits): each was a simpy ``Timeout``, a resume of the
warp's generator, the engine's ``serve`` and the core's Python wrapper, only to call
``fast_path.serve_packed`` and, mostly, wait again (profiled 2026-11-27: about half the
launches' CPU time).

:class:`MissWait` is such a wait as the queue entry itself: simpy's ``step`` pops it at
its time and calls it; it books the instruction's next warps on the core and either
queues itself again (the next wait) or resumes the warp with the result.  The order of
events is exactly the engine's own: each wait is pushed as the ``Timeout`` would be
(``now + (when - now)``, normal priority, the next event id, so that ties fall the same
way), and the warp goes on within the same step as it did after its ``Timeout``.  The
engine's loop (``timed.FAST_WAITS = False``) stays the reference; the tests compare the
two.  A wait whose core went off meanwhile (an atomic handed the launch to the Python
units) resumes the warp, which books the rest through the engine's own ``serve``.
"""
from __future__ import annotations

from simpy.events import NORMAL


class MissWait:
    """One memory instruction's waits: a queue entry (what simpy's ``step`` reads of an
    event: ``callbacks``, ``_ok``) that books on the core when it is popped."""

    __slots__ = ("callbacks", "_ok", "_value", "env", "memory", "fast", "args", "done")

    def __init__(self, env, memory, write: bool, resume, when: float, sm: int, slack: float):
        self.env, self.memory = env, memory
        self.fast = memory.fast
        per_warp, _, i, first, back = resume
        # (serve_packed's arguments but for i, first, back, at and now, set per wait)
        self.args = [write, per_warp, i, first, back, sm, slack]
        self._ok = True
        self._value = None
        self.done = env.event()          # what the warp waits on (untriggered: no event id)
        self._at(when)

    def _at(self, when: float) -> None:
        """Queue this wait for ``when``, as ``env.timeout(when - env.now)`` would be."""
        env = self.env
        delay = when - env._now
        if delay < 0:
            raise ValueError(f"Negative delay {delay}")
        self.callbacks = [self._book]
        env.schedule(self, NORMAL, delay)

    def _book(self, _event) -> None:
        """Popped at the wait's time: book on (the engine's ``serve`` with ``resume``, at
        ``env.now``), then wait again or hand the result to the warp."""
        now = self.env._now
        fast = self.fast
        write, per_warp, i, first, back, sm, slack = self.args
        if self.memory.fast is not fast:       # the core went off: the engine books it
            return self._resume(("off", (per_warp, None, i, first, back)))
        status, at, back, i, first, when = fast._serve(
            fast.state, write, per_warp.packed, per_warp.n, i, first, back, now, sm, now, slack)
        if status:
            a = self.args
            a[2], a[3], a[4] = i, first, back
            self._at(when)
        else:
            self._resume((at, back))

    def _resume(self, value) -> None:
        """The warp goes on now, within this step (as after its ``Timeout``)."""
        done = self.done
        done._ok, done._value = True, value
        callbacks, done.callbacks = done.callbacks, None
        for callback in callbacks:
            callback(done)

