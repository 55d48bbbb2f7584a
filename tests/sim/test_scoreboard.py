"""The warp scoreboard (simgpu.sim.scoreboard): loads do not block at issue, a warp
stalls at the first use of a pending value; stores are fire and forget until
syncthreads().

Two kinds of tests: the interpreter's event stream for a warp whose accesses
are given ready times by hand (where the Stalls come), and relations between
simulated times on sim:gtx260 and sim:h100 (no absolute times).
"""
import numpy as np
import pytest

import simgpu
from simgpu.lang import Array, i32, kernel, syncthreads, threadIdx
from simgpu.mem.access import MemoryAccess
from simgpu.sim.interpreter import ArrayBinding, Counters, Executor
from simgpu.sim.lanes import Geometry, LaneGroup
from simgpu.sim.schedule import Schedule
from simgpu.sim.scoreboard import Fence, Stall
from simgpu_apps.mechanism_kernels import (sb_atomics_unused as atomics_unused,
    sb_atomics_used as atomics_used, sb_chain_2 as chain_2, sb_index_only as index_only,
    sb_loads_1 as loads_1, sb_loads_2 as loads_2, sb_loads_4 as loads_4, sb_no_load as no_load,
    sb_stores_only as stores_only, sb_stores_sync as stores_sync, sb_unused_load as unused_load)

ITERS = 16
STRIDE = 4096                   # ints between iterations: each load its own segment


# --- the event stream ------------------------------------------------------------

class Clock:
    now = 0.0


def event_stream(k, arrays: dict, scalars: dict, latency: float = 100.0, lockstep=False,
                 timed=True):
    """Drive one warp of ``k`` as the timed engine does, with every access back
    ``latency`` after the previous event; returns ['load a', 'stall', ...]."""
    geom = Geometry((1, 1, 1), (32, 1, 1))
    group = LaneGroup.blocks(geom, 0, 1) if lockstep else LaneGroup.warp(geom, 0, 0, 0, 1)
    ex = Executor(group, Schedule("fixed"), Counters(), lockstep=lockstep)
    clock = Clock()
    if timed:
        ex.clock = clock
    bindings = {name: ArrayBinding(name, a, (i + 1) << 20, "global", a.size)
                for i, (name, a) in enumerate(arrays.items())}
    out = []
    for event in ex.run(k.ir, scalars, bindings):
        if isinstance(event, MemoryAccess):
            out.append(f"{event.kind} {event.array}")
            if timed:
                event.__dict__["ready"] = clock.now + latency
        elif isinstance(event, Stall):
            out.append("stall")
            clock.now = event.until
        elif isinstance(event, Fence):
            out.append("fence")
        else:
            out.append(type(event).__name__)
    return out


@kernel
def two_then_use(a: Array[i32], b: Array[i32], out: Array[i32]):
    t = threadIdx.x
    x = a[t]
    y = b[t]
    out[t] = x + y


@kernel
def sum_in_one_statement(a: Array[i32], b: Array[i32], c: Array[i32], out: Array[i32]):
    t = threadIdx.x
    out[t] = a[t] + b[t] * 2 + c[t]


@kernel
def indirect(a: Array[i32], b: Array[i32], out: Array[i32]):
    t = threadIdx.x
    out[t] = a[b[t]]


@kernel
def use_after_other_work(a: Array[i32], b: Array[i32], out: Array[i32]):
    t = threadIdx.x
    x = a[t]
    out[t] = t                   # does not need x
    y = b[t] + 1                 # a computed value: waits for b, not for x
    out[t] = x + y


@kernel
def overwritten(a: Array[i32], out: Array[i32]):
    t = threadIdx.x
    x = a[t]
    x = t                        # the load's value is dead: nobody waits for it
    out[t] = x


@kernel
def branch_on_load(a: Array[i32], out: Array[i32]):
    t = threadIdx.x
    x = a[t]
    if x > 0:
        out[t] = 1


def _arrays(*names, n=64):
    return {name: np.arange(n, dtype=np.int32) % 32 for name in names}


def test_independent_loads_issue_before_the_first_use():
    assert event_stream(two_then_use, _arrays("a", "b", "out"), {}) == [
        "load a", "load b", "stall", "store out"]


def test_loads_of_one_statement_wait_once_where_the_value_is_needed():
    assert event_stream(sum_in_one_statement, _arrays("a", "b", "c", "out"), {}) == [
        "load a", "load b", "load c", "stall", "store out"]


def test_an_address_from_a_load_waits_for_it():
    assert event_stream(indirect, _arrays("a", "b", "out"), {}) == [
        "load b", "stall", "load a", "stall", "store out"]


def test_the_stall_comes_at_the_first_use_not_before():
    assert event_stream(use_after_other_work, _arrays("a", "b", "out"), {}) == [
        "load a", "store out", "load b", "stall", "store out"]


def test_a_dead_value_is_not_waited_for():
    assert event_stream(overwritten, _arrays("a", "out"), {}) == ["load a", "store out"]


def test_a_branch_waits_for_its_condition():
    assert event_stream(branch_on_load, _arrays("a", "out"), {}) == [
        "load a", "stall", "store out"]


@pytest.mark.parametrize("lockstep", [False, True])
def test_without_ready_times_nothing_is_pending(lockstep):
    """The lockstep and warps engines never set ready times: no Stall, no Fence."""
    for k, names in ((two_then_use, "a b out"), (indirect, "a b out"),
                     (sum_in_one_statement, "a b c out")):
        stream = event_stream(k, _arrays(*names.split()), {}, lockstep=lockstep, timed=False)
        assert stream and all(e.split()[0] in ("load", "store") for e in stream), stream


# --- times on the simulated GPUs --------------------------------------------------


def per_iteration(device, engine="timed", threads=1):
    """Simulated cycles per loop iteration of each kernel above, one thread (or block),
    every launch with empty caches."""
    dev = simgpu.get_device(device)
    dev.cache_control = "all"
    n = STRIDE * 2 * ITERS
    a, b, c, d = (dev.to_device(np.arange(n, dtype=np.int32)) for _ in range(4))
    out = dev.zeros(n, np.int32)
    cases = {
        "loads_1": (loads_1, a, out), "loads_2": (loads_2, a, b, out),
        "loads_4": (loads_4, a, b, c, d, out), "chain_2": (chain_2, a, b, out),
        "no_load": (no_load, a, out), "unused_load": (unused_load, a, out),
        "stores_only": (stores_only, out), "index_only": (index_only, out),
        "stores_sync": (stores_sync, out), "atomics_unused": (atomics_unused, c),
        "atomics_used": (atomics_used, c, out)}
    got = {}
    for name, (k, *args) in cases.items():
        # the difference of two lengths: what the launch and the last loads cost drops out
        base = dev.launch(k, 1, threads, *args, ITERS, engine=engine).cycles
        got[name] = (dev.launch(k, 1, threads, *args, 2 * ITERS, engine=engine).cycles - base) / ITERS
    return dev.config, got


@pytest.fixture(scope="module")
def gtx260():
    return per_iteration("sim:gtx260")


@pytest.mark.parametrize("device, engine", [("sim:gtx260", "timed-block"), ("sim:h100", "timed"),
                                            ("sim:h100", "timed-block")])
def test_four_independent_loads_cost_at_most_one_and_a_half_of_one(device, engine):
    """(sim:gtx260 with engine timed: in test_gtx260_relations.)"""
    t = per_iteration(device, engine)[1]
    assert t["loads_4"] <= 1.5 * t["loads_1"], t
    assert t["chain_2"] > 1.5 * t["loads_1"], t


def test_gtx260_relations(gtx260):
    config, t = gtx260
    step = config.issue.alu_latency_cycles + config.issue.warp_issue_cycles   # one more instruction
    latency = t["loads_1"] - t["no_load"]             # what a used load adds to an iteration
    assert t["loads_4"] <= 1.5 * t["loads_1"], t
    # a dependent chain pays each load's latency; two independent loads overlap
    assert t["chain_2"] >= t["no_load"] + 2 * latency - 2 * step, t
    assert t["loads_2"] < t["no_load"] + 1.5 * latency, t
    # a load whose value is never used costs its issue, not its latency
    assert t["unused_load"] - t["no_load"] <= 2 * step < latency, t
    # stores do not wait for memory, syncthreads waits for them
    assert t["stores_only"] - t["index_only"] <= 2 * step, t
    assert t["stores_sync"] - t["stores_only"] >= 0.8 * latency, t
    # an atomic whose result is unused is fire and forget (a RED); a used one is waited for
    assert t["atomics_unused"] < 0.5 * t["atomics_used"], t


def test_same_seed_same_times():
    a = per_iteration("sim:gtx260", "timed-block")[1]
    assert a == per_iteration("sim:gtx260", "timed-block")[1]
