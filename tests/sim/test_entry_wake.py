"""Warps waiting for an SM's miss entries under ``[dram] read_scheduling = "fr-fcfs"``
are woken by the decisions that give the entries their release times
(:meth:`simgpu.sim.deferred.DeferredLoads.entries` and ``freed``), not by looking again
every lead.  Relations and hand-worked times only, no figures taken from the code."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from simgpu.configs import load_config
from simgpu.lang import Array, i32, kernel
from simgpu.mem.deferred_reads import DEFERRED
from simgpu.mem.mshr import Mshr
from simgpu.sim.deferred import DeferredLoads
from simgpu.sim.device import SimDevice


class _Reads:                       # what DeferredLoads takes of DeferredReads
    lead = 99.0
    cross = freed = None


class _Memory:
    def __init__(self, mshr):
        self.mshr = mshr

    def defer_reads(self, schedule):
        return _Reads()


def _loads(limit=2):
    env = simpy.Environment()
    mshr = Mshr(limit, 1)
    return env, mshr, DeferredLoads(env, _Memory(mshr))


def test_a_decision_that_frees_an_entry_sooner_wakes_the_warp_then():
    """Entry A held by an undecided load, entry B until 1000: a warp needing one entry
    is due at 1000, until A's load is decided (at 10) to free A at 500: then at 500,
    and not again at 1000."""
    env, mshr, deferred = _loads()
    a = mshr.hold(0, 1, DEFERRED)
    mshr.hold(0, 1, 1000.0)
    woken = []

    def warp():
        yield deferred.entries(0, 1, mshr.when_free(0, 1), 0.0)
        woken.append(env.now)

    def decide():
        yield env.timeout(10)
        a[0] = 500.0
        mshr.held[0].sort()
        deferred.freed({0})

    env.process(warp())
    env.process(decide())
    env.run()
    assert woken == [500.0]
    assert deferred.waiting[0] == []
    assert mshr.wait_cycles == 500.0


def test_entries_held_only_by_undecided_loads_wait_for_their_decision():
    """Both entries undecided: no time to wake at until a decision gives one; a decision
    on another SM does not wake the warp."""
    env, mshr, deferred = _loads()
    first = mshr.hold(0, 1, DEFERRED)
    mshr.hold(0, 1, DEFERRED + 1)
    woken = []

    def warp():
        when = mshr.when_free(0, 1)
        assert when >= DEFERRED
        yield deferred.entries(0, 1, when, 0.0)
        woken.append(env.now)

    def decide():
        yield env.timeout(5)
        deferred.freed({3})                   # (another SM's entries)
        yield env.timeout(5)
        first[0] = 700.0
        mshr.held[0].sort()
        deferred.freed({0})

    env.process(warp())
    env.process(decide())
    env.run()
    assert woken == [700.0]


def test_entries_free_within_a_step_are_a_plain_wait():
    """Free by now + step (the lead): no decision can free them sooner (an undecided
    load's data come back later than that), so the warp just waits, unregistered."""
    env, mshr, deferred = _loads()
    mshr.hold(0, 2, 60.0)
    mshr.hold(0, 1, DEFERRED)
    event = deferred.entries(0, 1, mshr.when_free(0, 1), 0.0)
    assert isinstance(event, simpy.events.Timeout) and not deferred.waiting
    env.run()
    assert env.now == 60.0


@settings(max_examples=60, deadline=None)
@given(held=st.lists(st.tuples(st.integers(0, 50), st.integers(1, 4)), max_size=12),
       needs=st.lists(st.integers(1, 64), min_size=1, max_size=4))
def test_when_free_each_is_the_sorted_walk(held, needs):
    """when_free_each (a copy of the heap, popped) against the plain rule: the held
    entries in time order until ``need`` are free."""
    mshr = Mshr(64, 1)
    for until, count in held:
        mshr.hold(0, count, float(until))
    free = 64 - sum(c for _, c in held)
    expected = []
    for n in needs:
        short, got = n - free, None
        for until, count in sorted([list(x) for x in held]):
            short -= count
            if short <= 0:
                got = float(until)
                break
        expected.append(got)
    if None in expected:
        with pytest.raises(ValueError):
            mshr.when_free_each(0, needs)
    else:
        assert mshr.when_free_each(0, needs) == expected


@kernel
def four_loads(a: Array[i32], out: Array[i32], rounds: i32, stride: i32):
    """One thread, four independent loads per round at addresses far apart."""
    acc = 0
    r = 0
    while r < rounds:
        base = r * 4 * stride
        x0 = a[base]
        x1 = a[base + stride]
        x2 = a[base + 2 * stride]
        x3 = a[base + 3 * stride]
        acc += x0 + x1 + x2 + x3
        r += 1
    out[0] = acc


@pytest.mark.parametrize("name", ("gtx260", "h100"))
@pytest.mark.parametrize("engine", ("timed", "timed-block"))
def test_one_thread_out_of_entries_waits_as_at_arrival(name, engine):
    """One thread, two miss entries, four independent loads a round: the third load
    waits for the first's entry, a DRAM round trip (longer than a lead).  Its reads
    reach the DRAM one or two at a time at rows far apart (nothing for FR-FCFS to
    reorder), so every decided time is the one booked at arrival, and the warp, woken
    when its entry frees, runs in the same cycles and waits as often as at arrival
    (looking again every lead, it counted a wait at each look)."""
    reps = {}
    stride, rounds = 1 << 16, 6                 # words: 256 KiB apart
    a = np.arange(4 * rounds * stride, dtype=np.int32) % 97
    for mode in ("at-arrival", "fr-fcfs"):
        cfg = load_config(name)
        cfg = dataclasses.replace(
            cfg, dram=dataclasses.replace(cfg.dram, read_scheduling=mode),
            issue=dataclasses.replace(cfg.issue, max_outstanding_misses_per_sm=2))
        dev = SimDevice(cfg, f"sim:{name}-{mode}")
        out = dev.zeros(1, np.int32)
        reps[mode] = dev.launch(four_loads, 1, 1, dev.to_device(a), out, rounds, stride,
                                engine=engine)
        assert out.to_host()[0] == a[::stride][:4 * rounds].sum()
    assert reps["at-arrival"].extra["mshr_waits"] >= rounds    # (the case is the one meant)
    assert reps["fr-fcfs"].extra["deferred_decisions"] > 0
    assert reps["fr-fcfs"].cycles == reps["at-arrival"].cycles
    assert reps["fr-fcfs"].extra["mshr_waits"] == reps["at-arrival"].extra["mshr_waits"]
