"""A memory instruction's waits in the timed engine, booked on the compiled core without
the warp's process: a compiled queue of waits beside simpy's.

Where an SM's miss entries are all taken, or the memory pipeline holds a request back
beyond the simulation's slack, the timed engine's warp waits in simulated time and then
books the rest of its instruction (``serve`` with ``resume``).  On sim:gtx260 the
connected-components kernels' scattered loads wait some ten times per instruction
(m = 2^16 edges, trees: 0.49 M waits for 0.06 M instructions): each was a simpy
``Timeout``, a resume of the warp's generator, the engine's ``serve`` and the core's
Python wrapper, only to call ``fast_path.serve_packed`` and, mostly, wait again
(profiled 2026-11-27, 2^18 trees: about half of the launches' CPU time).

:class:`WaitQueue` keeps the waits in a heap of its own (numpy arrays, the
instructions' packed transactions in one arena) and one entry in simpy's queue for its
first wait, under that wait's key.  When simpy pops it, :func:`run` books the waits in
key order on the core, each one that must wait again pushed back, as long as they come
before simpy's next event; a wait whose instruction is all booked ends the run, and its
warp goes on at once, within the same step, as after its ``Timeout``.  The order of
events is the engine's own: a wait's key is the ``Timeout``'s (``now + (when - now)``,
normal priority, the next event id, so that ties fall the same way; the ids the run
takes are simpy's next ones).  The engine's own loop (``timed.FAST_WAITS = False``)
stays the reference; the tests compare the two.  A wait whose core went off meanwhile
(an atomic handed the launch to the Python units) resumes its warp, which books the
rest through the engine's own ``serve``.
"""
from __future__ import annotations

import itertools
from heapq import heappop, heappush

import numpy as np
from simpy.events import NORMAL

from ..mem.fast_jit import njit
from ..mem.fast_path import serve_instruction
from .compiled_heap import C_EID, C_SIZE, before, pop, push

S_I, S_FIRST, S_SM, S_WRITE, S_N, S_OFF, S_LEN = range(7)      # a wait's integers
N_S = 7
F_BACK, F_AT = range(2)                                           # and floats
PRIORITY = int(NORMAL)              # a Timeout's priority in simpy's queue (URGENT: 0)


@njit
def run(st, ctl, ht, hp, he, hv, si, sf, arena, lt, lp, le, slack, now):
    """Book the waits that come before simpy's next event (key (lt, lp, le)), in key
    order: each one's instruction from its warp and transaction on (``serve`` with
    ``resume`` at the wait's time), pushed back under the next event id if it must wait
    again.  Returns the slot of a wait whose instruction is all booked (``sf[s, F_AT]``
    accepted, ``sf[s, F_BACK]`` back), or -1; ``now[0]``: the last wait's time."""
    while ctl[C_SIZE]:
        if not before(ht[0], hp[0], he[0], lt, lp, le):
            return -1
        j = pop(ctl, ht, hp, he, hv)
        t, s = ht[j], hv[j, 0]
        now[0] = t
        n, off = si[s, S_N], si[s, S_OFF]
        pk = arena[off:off + si[s, S_LEN]]
        status, at, back, i, first, when = serve_instruction(
            st, si[s, S_WRITE] != 0, pk[:n], pk[n:2 * n], pk[2 * n:], si[s, S_I],
            si[s, S_FIRST], sf[s, F_BACK], t, si[s, S_SM], t, slack)
        sf[s, F_BACK] = back
        if not status:
            sf[s, F_AT] = at
            return s
        si[s, S_I], si[s, S_FIRST] = i, first
        push(ctl, ht, hp, he, hv, t + (when - t), PRIORITY, s, 0)   # (as Timeout(when - now))
    return -1


class _Entry:
    """The queue's entry in simpy's queue (what ``step`` reads of an event), under the
    key of the queue's first wait when it was put there (stale once another is)."""

    __slots__ = ("callbacks", "_ok", "key")

    def __lt__(self, other) -> bool:
        # (a stale entry and the live one may share a key, the first wait's again:
        # either may pop first, the stale one does nothing)
        return False

    def __init__(self, queue, key):
        self.callbacks = [queue._popped]
        self._ok = True
        self.key = key


def stale(entry) -> bool:
    """Whether simpy's queue entry ``entry`` is a :class:`WaitQueue`'s that stands for
    nothing now (``Environment.skip_to`` drops those off the queue's head)."""
    return entry.__class__ is _Entry and entry.key is not entry.callbacks[0].__self__.armed


class WaitQueue:
    """A launch's waits of memory instructions on the compiled core (see the module)."""

    def __init__(self, env, memory, slack: float, slots: int = 64):
        self.env, self.memory, self.fast, self.slack = env, memory, memory.fast, slack
        self.ctl = np.zeros(2, np.int64)
        self.now = np.zeros(1)
        self.arena = np.zeros(1 << 16, np.int64)
        self.used = 0
        self.ht, self.hp, self.he, self.hv = np.zeros(slots), np.zeros(slots, np.int64), \
            np.zeros(slots, np.int64), np.zeros((slots, 2), np.int64)
        self.si, self.sf = np.zeros((slots, N_S), np.int64), np.zeros((slots, 2))
        self.free = list(range(slots - 1, -1, -1))
        self.waiting: dict = {}          # slot: (the event its warp waits on, per_warp)
        self.armed = None                # the key of the entry in simpy's queue

    def _grow(self) -> None:
        """Twice the slots (the waits and the heap as they are)."""
        k = len(self.si)
        self.ht, self.hp, self.he, self.hv = (np.concatenate([a, np.zeros_like(a)])
                                              for a in (self.ht, self.hp, self.he, self.hv))
        self.si, self.sf = (np.concatenate([a, np.zeros_like(a)]) for a in (self.si, self.sf))
        self.free = list(range(2 * k - 1, k - 1, -1))

    def _room(self, length: int) -> int:
        """Where in the arena a wait's ``length`` numbers go (compacted or grown first)."""
        if self.used + length > len(self.arena):
            live = sum(int(self.si[s, S_LEN]) for s in self.waiting) + length
            arena = np.zeros(max(len(self.arena), 2 * live), np.int64)
            used = 0
            for s in self.waiting:
                off, ln = self.si[s, S_OFF], self.si[s, S_LEN]
                arena[used:used + ln] = self.arena[off:off + ln]
                self.si[s, S_OFF] = used
                used += ln
            self.arena, self.used = arena, used
        off = self.used
        self.used += length
        return off

    def wait(self, write: bool, resume, when: float, sm: int):
        """Queue the rest of an instruction (the engine's ``resume``, from the core) for
        ``when``; returns the event its warp waits on: its value (accepted, back), or
        ("off", resume) where the core went off."""
        per_warp, _, i, first, back = resume
        env = self.env
        t = env._now + (when - env._now)         # (as env.timeout(when - env.now))
        if t < env._now:
            raise ValueError(f"Negative delay {when - env._now}")
        e = next(env._eid)
        if not self.free:
            self._grow()
        s = self.free.pop()
        packed = per_warp.packed
        off = self._room(len(packed))
        self.arena[off:off + len(packed)] = packed
        self.si[s] = (i, first, sm, write, per_warp.n, off, len(packed))
        self.sf[s, F_BACK] = back
        self.ctl[C_EID] = e                      # (simpy's id, taken above)
        push(self.ctl, self.ht, self.hp, self.he, self.hv, t, PRIORITY, s, 0)
        done = env.event()
        self.waiting[s] = (done, per_warp)
        self._arm()
        return done

    def _arm(self) -> None:
        """Put an entry for the first wait in simpy's queue (unless there is one)."""
        if self.ctl[C_SIZE]:
            key = (float(self.ht[0]), int(self.he[0]))
            if key != self.armed:
                self.armed = key
                heappush(self.env._queue, (key[0], NORMAL, key[1], _Entry(self, key)))

    def _popped(self, entry) -> None:
        """simpy popped an entry: book the waits due (if it is the live one)."""
        if entry.key is not self.armed:
            return                               # (stale: a wait with an earlier key came)
        self.armed = None
        env = self.env
        q = env._queue
        while q and q[0][3].__class__ is _Entry:     # (all stale now)
            heappop(q)
        if self.memory.fast is not self.fast:    # the core went off: the engine books
            s = int(self.hv[pop(self.ctl, self.ht, self.hp, self.he, self.hv), 0])
            return self._done(s, ("off", (self.waiting[s][1], None, int(self.si[s, S_I]),
                                          int(self.si[s, S_FIRST]),
                                          float(self.sf[s, F_BACK]))))
        lt, lp, le = (q[0][0], int(q[0][1]), q[0][2]) if q else (np.inf, 0, 0)
        self.ctl[C_EID] = next(env._eid)
        s = run(self.fast.state, self.ctl, self.ht, self.hp, self.he, self.hv, self.si,
                self.sf, self.arena, lt, lp, le, self.slack, self.now)
        env._eid = itertools.count(int(self.ctl[C_EID]))
        env._now = float(self.now[0])
        if s >= 0:
            return self._done(s, (float(self.sf[s, F_AT]), float(self.sf[s, F_BACK])))
        self._arm()

    def _done(self, s: int, value) -> None:
        """Wait ``s`` is over: its warp goes on now, within this step (the next wait's
        entry in simpy's queue first, where the warp's ``skip_to`` sees it)."""
        done, _ = self.waiting.pop(s)
        self.free.append(s)
        if not self.waiting:
            self.used = 0
        self._arm()
        done._ok, done._value = True, value
        callbacks, done.callbacks = done.callbacks, None
        for callback in callbacks:
            callback(done)
