"""An atomic backlog far ahead of the clock, then ordinary loads (sim:gtx260).

Same-address atomics whose results no one waits for let their warps go on while the
partition's atomic unit queues their operations: the replies are booked (when computed)
over a million cycles ahead of the simulation's clock, and the other warps' loads come
back near the clock through the same interconnect ports.  The ports forget windows only
far behind the clock (simgpu.mem.interconnect), so this runs: it used to stop with
'a booking ... behind the port's newest booking' (connected components' cc_edges_count
at the paper's sizes).  The atomic unit's bounded queue (atomics.unit_queue_operations)
now holds such SMs back; with no bound (``None``) the backlog runs far ahead, as it
did."""
import dataclasses

import numpy as np
import pytest

import simgpu
from simgpu.lang import Array, atomic_add, blockDim, blockIdx, gridDim, i32, kernel, threadIdx
from simgpu.mem import fast_memory
from simgpu.mem.interconnect import KEPT_WINDOWS, WINDOW
from simgpu.sim.device import SimDevice


@kernel
def backlog_then_loads(c: Array[i32], x: Array[i32], y: Array[i32], adds: i32, loads: i32):
    # each block's first warp adds 1 to c[0] ``adds`` times (results unused); the other
    # warps sum ``loads`` scattered elements of x
    t = blockIdx.x * blockDim.x + threadIdx.x
    n = gridDim.x * blockDim.x
    if threadIdx.x < 32:
        for j in range(adds):
            atomic_add(c, 0, 1)
    else:
        s = 0
        for j in range(loads):
            s += x[(t + j * 4099) % n]
        y[t] = s


BLOCKS, THREADS, ADDS, LOADS = 108, 256, 8, 8      # 4 blocks on each of the 27 SMs


def launch(engine, bound="config"):
    dev = simgpu.get_device("sim:gtx260")
    if bound != "config":
        cfg = dev.config
        dev = SimDevice(dataclasses.replace(cfg, atomics=dataclasses.replace(
            cfg.atomics, unit_queue_operations=bound)), f"sim:gtx260-queue{bound}")
    n = BLOCKS * THREADS
    x = np.random.default_rng(5).integers(0, 1000, n).astype(np.int32)
    c, dx, dy = dev.zeros(1, np.int32), dev.to_device(x), dev.zeros(n, np.int32)
    r = dev.launch(backlog_then_loads, BLOCKS, THREADS, c, dx, dy, ADDS, LOADS, engine=engine)
    t = np.arange(n)
    want = sum(x[(t + j * 4099) % n] for j in range(LOADS))     # numpy reference
    want[t % THREADS < 32] = 0
    assert c.to_host()[0] == BLOCKS * 32 * ADDS
    assert (dy.to_host() == want).all()
    return dev, r


@pytest.mark.parametrize("bound", [None, "config"])
@pytest.mark.parametrize("engine", ["timed", "timed-block"])
def test_loads_after_a_backlog_far_ahead_of_the_clock(engine, bound):
    dev, r = launch(engine, bound)
    ops = BLOCKS * 32 * ADDS
    assert r.extra["atomic_operations"] == ops
    # (no bound: no request is held at the unit, and the backlog's last replies are
    # booked over a million cycles ahead of the loads'; the config's: SMs are held)
    assert ("atomic_queue_held" in r.extra) == (bound is not None)
    # the operations on c[0] one after another: the launch lasts at least their
    # serialization, which is more than the span a port keeps behind its clock (the
    # replies of the last ones were booked that far ahead of the loads')
    serial = ops * dev.config.atomics.same_address_serialization_cycles
    assert r.cycles >= serial > 2 * KEPT_WINDOWS * WINDOW


def test_the_same_reports_with_the_compiled_core_on_and_off(monkeypatch):
    """timed-block books the launch's first loads on the compiled core (where numba is
    installed) and hands over to the Python units at the first atomic: the same report."""
    pytest.importorskip("numba")
    reports, used = [], []
    real = fast_memory.attach
    monkeypatch.setattr(fast_memory, "attach", lambda m: used.append(real(m)) or used[-1])
    for on in (False, True):
        monkeypatch.setattr(fast_memory, "ENABLED", on)
        reports.append(launch("timed-block", None)[1].to_dict())
    assert used[0] is None and used[-1] is not None        # off, then on
    assert reports[0] == reports[1]
