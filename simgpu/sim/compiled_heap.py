"""simpy's event queue as a compiled binary heap, for the loops that run simpy's order
without simpy (trace_loop's replay, timed_waits' memory waits).

An entry is keyed as simpy keys its events, (time, priority, event id), and carries two
integers for its owner (what the event resumes: a kind and a slot, say).  Event ids are
the heap's own, numbered in push order from ``ctl[C_EID]`` as simpy's ``schedule``
numbers them, so no two keys are equal and the pop order is fully determined.

Arrays: ``ctl`` (int64; ``ctl[C_SIZE]`` the entries, ``ctl[C_EID]`` the next event id;
callers may keep their own scalars after these two), ``ht`` (float64 times), ``hp``,
``he`` (int64 priorities, ids) and ``hv`` (int64, shape (capacity, 2): the payloads).
"""
from __future__ import annotations

from ..mem.fast_jit import njit

C_SIZE, C_EID = 0, 1


@njit
def before(t, p, e, u, q, f):
    """Key (t, p, e) comes before key (u, q, f)."""
    return t < u or (t == u and (p < q or (p == q and e < f)))


@njit
def push(ctl, ht, hp, he, hv, t, prio, a, b):
    """Schedule an entry at time ``t`` with priority ``prio`` under the next event id,
    carrying (a, b).  False (and nothing changed) where the heap is full."""
    k = ctl[C_SIZE]
    if k >= ht.shape[0]:
        return False
    e = ctl[C_EID]
    ctl[C_EID] = e + 1
    ctl[C_SIZE] = k + 1
    while k:                                     # sift the hole up
        p = (k - 1) >> 1
        if not before(t, prio, e, ht[p], hp[p], he[p]):
            break
        ht[k], hp[k], he[k], hv[k, 0], hv[k, 1] = ht[p], hp[p], he[p], hv[p, 0], hv[p, 1]
        k = p
    ht[k], hp[k], he[k], hv[k, 0], hv[k, 1] = t, prio, e, a, b
    return True


@njit
def pop(ctl, ht, hp, he, hv):
    """Take the first entry off the heap: it is moved to just past the heap's end, whose
    index is returned (read its time and payload there until the next push)."""
    n = ctl[C_SIZE] - 1
    ctl[C_SIZE] = n
    t0, p0, e0, a0, b0 = ht[0], hp[0], he[0], hv[0, 0], hv[0, 1]
    if n:
        t, p, e, a, b = ht[n], hp[n], he[n], hv[n, 0], hv[n, 1]
        k = 0
        while True:                              # sift the last entry down from the root
            c = 2 * k + 1
            if c >= n:
                break
            if c + 1 < n and before(ht[c + 1], hp[c + 1], he[c + 1], ht[c], hp[c], he[c]):
                c += 1
            if not before(ht[c], hp[c], he[c], t, p, e):
                break
            ht[k], hp[k], he[k], hv[k, 0], hv[k, 1] = ht[c], hp[c], he[c], hv[c, 0], hv[c, 1]
            k = c
        ht[k], hp[k], he[k], hv[k, 0], hv[k, 1] = t, p, e, a, b
    ht[n], hp[n], he[n], hv[n, 0], hv[n, 1] = t0, p0, e0, a0, b0
    return n
