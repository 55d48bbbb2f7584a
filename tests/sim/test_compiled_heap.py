"""simgpu.sim.compiled_heap, the event heap of the compiled loops (trace_loop's replay,
timed_waits' memory waits), against simpy's own queue discipline: heapq over
(time, priority, event id), ids numbered in push order."""
import heapq

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simgpu.sim import compiled_heap as H

TIMES = st.sampled_from([0.0, 1.0, 2.5, 7.0, 1e9])


def heap(cap):
    return (np.zeros(2, np.int64), np.zeros(cap), np.zeros(cap, np.int64),
            np.zeros(cap, np.int64), np.zeros((cap, 2), np.int64))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.tuples(TIMES, st.integers(0, 1)), st.none()), max_size=80),
       st.integers(0, 10**6))
def test_pops_in_simpys_order(ops, first_id):
    """Every pop takes heapq's least (time, priority, id); ids continue from ctl[C_EID]
    (where timed_waits sets simpy's next id); the payload travels with its entry."""
    ctl, ht, hp, he, hv = heap(64)
    ctl[H.C_EID] = first_id
    ref, eid = [], first_id
    for k, op in enumerate(ops):
        if op is None:
            if ref:
                t, p, e, a = heapq.heappop(ref)
                j = H.pop(ctl, ht, hp, he, hv)
                assert (ht[j], hp[j], he[j], hv[j, 0], hv[j, 1]) == (t, p, e, a, -a)
        else:
            t, p = op
            assert H.push(ctl, ht, hp, he, hv, t, p, k, -k)
            heapq.heappush(ref, (t, p, eid, k))
            eid += 1
        assert ctl[H.C_SIZE] == len(ref) and ctl[H.C_EID] == eid


def test_a_full_heap_refuses_and_changes_nothing():
    ctl, ht, hp, he, hv = heap(3)
    for k in range(3):
        assert H.push(ctl, ht, hp, he, hv, 5.0 - k, 1, k, 0)
    before = [a.copy() for a in (ctl, ht, hp, he, hv)]
    assert not H.push(ctl, ht, hp, he, hv, 0.0, 0, 9, 9)
    for a, b in zip(before, (ctl, ht, hp, he, hv)):
        np.testing.assert_array_equal(a, b)
    assert [hv[H.pop(ctl, ht, hp, he, hv), 0] for _ in range(3)] == [2, 1, 0]


@pytest.mark.parametrize("key, other, want", [
    ((1.0, 1, 5), (2.0, 0, 0), True),       # time first
    ((1.0, 1, 0), (1.0, 0, 9), False),      # then priority (URGENT 0 first)
    ((1.0, 0, 3), (1.0, 0, 4), True),       # then the id
    ((1.0, 0, 4), (1.0, 0, 4), False)])
def test_key_order(key, other, want):
    assert H.before(*key, *other) is want
