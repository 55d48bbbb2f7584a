"""The atomic unit's bounded queue (atomics.unit_queue_operations, simgpu.mem.atomic_unit):
a request that finds the queue of its unit full waits outside, and its SM's memory
pipeline takes nothing more until it is in (req.accepted).  Unit level, through
MemorySystem.access: the queue never holds more than the bound (counted from the
operations' own times), the requests' own times do not change, and held requests are
accepted as late as the operations ahead of them take."""
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import simgpu
from simgpu.configs import load_config
from simgpu.mem.memory_system import MemorySystem


def with_bound(cfg, bound):
    return dataclasses.replace(cfg, atomics=dataclasses.replace(
        cfg.atomics, unit_queue_operations=bound))


def most_queued(log) -> int:
    """The most operations in one unit's queue at any time: those entered and not yet
    started, counted at every time one entered."""
    most = 0
    for unit in {u for u, _, _ in log}:
        ops = [(e, s) for u, e, s in log if u == unit]
        for tau in {e for e, _ in ops}:
            most = max(most, sum(e <= tau < s for e, s in ops))
    return most


requests = st.lists(st.tuples(st.integers(0, 26),                 # SM
                              st.sampled_from([0.0, 0.0, 3.0, 40.0, 900.0]),   # issue gap
                              st.sampled_from([0, 0, 4, 8, 256, 4096]),        # word offset
                              st.integers(1, 32)),                # lanes on the word
                    min_size=1, max_size=60)


@pytest.mark.parametrize("name", ["gtx260", "h100"])
@settings(max_examples=15, deadline=None)
@given(reqs=requests, bound=st.sampled_from([1, 8, 64]))
def test_the_queue_never_holds_more_than_the_bound(name, reqs, bound):
    cfg = with_bound(load_config(name), bound)
    free = MemorySystem(with_bound(cfg, None))
    ms = MemorySystem(cfg)
    ms.atomics.log = []
    t, base = 0.0, 1 << 20
    for sm, gap, word, lanes in reqs:
        t += gap
        a = base + word
        args = ("atomic", [a - a % 32], [32], t, sm)
        done = ms.access(*args, lanes={a: lanes})
        assert ms.accepted >= t
        # the request's own time as with no bound (only its SM's later requests wait)
        assert done == free.access(*args, lanes={a: lanes})
    # a request of more operations than the bound enters an empty queue (lanes on one
    # word: one operation each, on GT200 and, one per round, on the H100)
    per_request = max(lanes for *_, lanes in reqs)
    assert most_queued(ms.atomics.log) <= max(bound, per_request)
    assert ms.atomics.operations == free.atomics.operations


def test_held_requests_are_accepted_as_late_as_the_operations_ahead_take():
    """GT200: warp requests of 32 lanes on one word, sent at once from 10 SMs: the first
    two fit the 64 operations; each later one is accepted 32 operations (32 x
    same_address cycles) after the one before, give or take its DRAM read."""
    cfg = load_config("gtx260")
    bound, same = cfg.atomics.unit_queue_operations, cfg.atomics.same_address_serialization_cycles
    assert bound == 64
    ms = MemorySystem(cfg)
    accepted = []
    for sm in range(10):
        ms.access("atomic", [4096], [32], 0.0, sm, lanes={4096: 32})
        accepted.append(ms.accepted)
    assert accepted[:2] == [0.0, 0.0]
    steps = np.diff(accepted[2:])
    assert accepted[2] > 0 and np.all(np.abs(steps - 32 * same) <= 0.1 * 32 * same), accepted
    assert ms.summary(ms.drained)["atomic_queue_held"] == 8


@pytest.mark.parametrize("device", ["sim:gtx260", "sim:h100"])
def test_the_configs_bound_the_queue(device):
    assert simgpu.get_device(device).config.atomics.unit_queue_operations == 64
