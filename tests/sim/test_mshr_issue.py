"""The SM's issue (schedulers from the config) and its miss entries (MSHRs), on the
simulated GPUs: relations between simulated times, no absolute figures."""
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simgpu
from simgpu.lang import Array, i32, kernel, threadIdx
from simgpu.mem.mshr import Mshr
from simgpu.sim.device import SimDevice
from simgpu.sim.sm import SM
from simgpu_apps.mechanism_kernels import (mlp_loads_1 as loads_1, mlp_loads_2 as loads_2,
    mlp_loads_3 as loads_3, mlp_loads_4 as loads_4)

STRIDE = 4096                   # ints between a thread's loads: each its own segment
ITERS = 16


LOADS = {1: loads_1, 2: loads_2, 3: loads_3, 4: loads_4}


def per_iteration(dev, k, engine):
    """Cycles per iteration of ``k`` (one thread; the difference of two loop lengths)."""
    dev.cache_control = "all"
    n = STRIDE * 2 * ITERS
    arrays = [dev.to_device(np.arange(n, dtype=np.int32) % 97) for _ in range(4)]
    out = dev.zeros(4, np.int32)
    base = dev.launch(k, 1, 1, *arrays, out, ITERS, engine=engine).cycles
    return (dev.launch(k, 1, 1, *arrays, out, 2 * ITERS, engine=engine).cycles - base) / ITERS


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loads=st.integers(2, 4), device=st.sampled_from(["sim:gtx260", "sim:h100", "sim:h200"]),
       engine=st.sampled_from(["timed", "timed-block"]))
def test_independent_loads_cost_at_most_one_and_a_half_of_one(loads, device, engine):
    """Issue 18's property: a thread's independent loads overlap (scoreboard, MSHRs)."""
    dev = simgpu.get_device(device)
    one = per_iteration(dev, LOADS[1], engine)
    assert per_iteration(dev, LOADS[loads], engine) <= 1.5 * one


# --- the miss entries ---------------------------------------------------------------

@kernel
def lanes_load(a: Array[i32], out: Array[i32], n: i32):
    t = threadIdx.x
    if t < n:
        x = a[t * 4096]                 # each lane its own segment: one transaction each
        out[t] = x


@kernel
def lanes_store(a: Array[i32], out: Array[i32], n: i32):
    t = threadIdx.x
    if t < n:
        out[t] = t


def with_mshr(device, limit):
    cfg = simgpu.get_device(device).config
    cfg = dataclasses.replace(cfg, issue=dataclasses.replace(
        cfg.issue, max_outstanding_misses_per_sm=limit))
    return SimDevice(cfg, f"{device}-mshr{limit}")


@pytest.mark.parametrize("device, k", [("sim:gtx260", 4), ("sim:gtx260", 8), ("sim:h100", 4)])
def test_k_plus_one_misses_take_two_latencies(device, k):
    """With k miss entries, one SM's k+1 independent misses take about two latencies:
    the last waits for the first to come back; k of them take one."""
    dev = with_mshr(device, k)
    dev.cache_control = "all"
    a = dev.to_device(np.zeros(STRIDE * 32, np.int32))
    out = dev.zeros(32, np.int32)
    cycles = {n: dev.launch(lanes_load, 1, 32, a, out, n, engine="timed").cycles
              for n in (1, k, k + 1)}
    # a load's round trip: the kernel less the same kernel storing without the load
    latency = cycles[1] - dev.launch(lanes_store, 1, 32, a, out, 1, engine="timed").cycles
    assert latency > 100
    assert cycles[k] - cycles[1] < 0.25 * latency, cycles          # k overlap
    assert 0.75 * latency < cycles[k + 1] - cycles[k] < 1.25 * latency, (cycles, latency)
    unbounded = with_mshr(device, None)
    unbounded.cache_control = "all"
    a2 = unbounded.to_device(np.zeros(STRIDE * 32, np.int32))
    free = unbounded.launch(lanes_load, 1, 32, a2, unbounded.zeros(32, np.int32), k + 1,
                            engine="timed").cycles
    assert free - cycles[k] < 0.25 * latency                       # without the bound


def test_the_entries_free_in_the_order_their_data_come_back():
    m = Mshr(4, 2)
    assert m.free_at(0, 0.0) == 4
    m.hold(0, 3, 100.0)
    m.hold(0, 1, 50.0)
    assert m.free_at(0, 10.0) == 0 and m.free_at(1, 10.0) == 4    # per SM
    assert m.next_free(0) == 50.0
    assert m.admit(0, 2, 10.0) == (1, 50.0)                        # one frees at 50
    m.hold(0, 1, 200.0)
    assert m.admit(0, 3, 60.0) == (3, 100.0)


def test_counts_do_not_change_with_the_bound():
    reports = []
    for limit in (2, None):
        dev = with_mshr("sim:gtx260", limit)
        a = dev.to_device(np.zeros(STRIDE * 32, np.int32))
        out = dev.zeros(32, np.int32)
        reports.append(dev.launch(lanes_load, 2, 32, a, out, 32, engine="timed"))
    bounded, free = reports
    assert bounded.loads == free.loads and bounded.stores == free.stores
    assert bounded.cycles > free.cycles


# --- the schedulers -----------------------------------------------------------------

def test_schedulers_from_the_config():
    gt200, h100 = (simgpu.get_device(d).config for d in ("sim:gtx260", "sim:h100"))
    sm = SM(0, gt200)
    assert sm.issue(0.0, 10)[0] == 40.0             # one instruction per 4 cycles
    assert sm.issue(0.0, 10, 1, 1)[0] == 80.0       # the one scheduler is shared
    sm = SM(0, h100)
    assert sm.issue(0.0, 10)[0] == 10.0             # a warp: one per cycle on its scheduler
    assert sm.issue(0.0, 10, 1, 1)[0] == 10.0       # another scheduler: in parallel
    assert sm.issue(0.0, 10, 1, 4)[0] == 20.0       # warp 4 shares warp 0's scheduler
    assert sm.issue(0.0, 40, 8)[0] == pytest.approx(20.0 + 10.0)   # a block: all four


@kernel
def spin(out: Array[i32], m: i32):
    s = 0
    for j in range(m):
        s = s * 3 + j
    out[threadIdx.x] = s


@kernel
def spin_and_wait(a: Array[i32], out: Array[i32], m: i32):
    t = threadIdx.x
    if t >= 32:                       # warp 1: one load, then waits for it
        x = a[t * 4096]
        out[t] = x
    else:                             # warp 0: arithmetic
        s = 0
        for j in range(m):
            s = s * 3 + j
        out[t] = s


def test_a_stalled_warp_takes_no_issue_slot():
    """On GT200's one scheduler, a warp waiting for its load leaves the issue slots to the
    other warp: the arithmetic warp finishes as soon as alone."""
    dev = simgpu.get_device("sim:gtx260")
    a = dev.to_device(np.zeros(STRIDE * 64, np.int32))
    out = dev.zeros(64, np.int32)
    m = 200
    alone = dev.launch(spin, 1, 32, out, m, engine="timed").cycles
    both = dev.launch(spin_and_wait, 1, 64, a, out, m, engine="timed").cycles
    load = dev.launch(spin_and_wait, 1, 64, a, out, 0, engine="timed").cycles
    assert alone > load                               # the arithmetic is the longer part
    assert both < alone + 0.1 * alone, (alone, both, load)


# --- L1 hits take no entry -------------------------------------------------------------

@kernel
def same_line_twice(a: Array[i32], out: Array[i32]):
    t = threadIdx.x
    x = a[t]                            # one line: four sectors, four misses
    y = a[t + 0]                        # the same sectors, on their way: L1 hits
    out[t] = x + y


def test_l1_hits_take_no_miss_entry():
    """A load's sectors that the SM's L1 holds, or has on their way, merge with what
    fetches them (as GPGPU-Sim's MSHRs merge): with every entry held, an instruction of
    L1 hits goes on at once, and is served when its sectors are there."""
    from simgpu.mem.memory_system import MemorySystem
    from tests.sim.test_memory_timing import without_l1_pipe
    ms = MemorySystem(without_l1_pipe(with_mshr("sim:h100", 4).config))   # (times by hand)
    line = [0, 32, 64, 96]
    first = ms.access("load", line, [32] * 4, 0.0, sm=0)          # four misses: every entry
    assert ms.mshr.free_at(0, 10.0) == 0
    assert ms.access("load", line, [32] * 4, 10.0, sm=0) == pytest.approx(first)
    assert ms.accepted == 10.0 and ms.mshr.waits == 0
    later = first + 1.0
    ms.access("load", [STRIDE * 4 * k for k in range(1, 5)], [32] * 4, later, sm=0)
    assert ms.mshr.free_at(0, later) == 0                          # held by four other misses
    assert ms.access("load", line, [32] * 4, later, sm=0) == pytest.approx(
        later + ms.l1.latency)
    assert ms.mshr.waits == 0


@pytest.mark.parametrize("engine", ["timed", "timed-block"])
def test_a_load_of_sectors_on_their_way_does_not_wait_for_entries(engine):
    """The engine asks entries for an instruction's L1 misses only: a second load of the
    line the first is fetching costs the same with four entries as with no bound."""
    cycles = []
    for limit in (4, None):
        dev = with_mshr("sim:h100", limit)
        dev.cache_control = "all"
        a, out = dev.to_device(np.arange(64, dtype=np.int32)), dev.zeros(32, np.int32)
        cycles.append(dev.launch(same_line_twice, 1, 32, a, out, engine=engine).cycles)
        assert (out.to_host() == 2 * np.arange(32)).all()
    assert cycles[0] == cycles[1]
