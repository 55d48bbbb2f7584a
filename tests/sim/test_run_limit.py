"""A kernel that never ends stops with KernelTimeoutError on every engine, naming the
kernel, the loop's line, the block and thread; Ctrl-C interrupts every engine and
leaves the device usable; inter-block waiting works on the per-warp engines and is
refused with the reason on lockstep (issue 21 item 3, issue 23 item 4)."""
import _thread
import threading

import numpy as np
import pytest

import simgpu
from simgpu.lang import Array, KernelTimeoutError, blockIdx, i32, kernel, threadIdx
from simgpu.sim.schedule import MAX_LOOP_ITERATIONS

ENGINES = ("lockstep", "warps", "timed", "timed-block")


@kernel
def forever(out: Array[i32]):
    x = 0
    while x >= 0:
        x = (x + 1) % 7
    out[threadIdx.x] = x


@kernel
def wait_for_block_1(flag: Array[i32], out: Array[i32]):
    if blockIdx.x == 0:
        while flag[0] == 0:
            out[0] = out[0] + 1
    else:
        flag[0] = 1


@kernel
def long_loop(out: Array[i32], n: i32):
    s = 0
    for i in range(n):
        s = s + 1
    out[threadIdx.x] = s


@pytest.mark.parametrize("engine", ENGINES)
def test_a_loop_that_never_ends_stops_with_the_kernel_block_thread_and_line(engine):
    dev = simgpu.get_device("sim:h100")
    out = dev.zeros(64, np.int32)
    with pytest.raises(KernelTimeoutError) as info:
        dev.launch(forever, 2, 64, out, engine=engine, max_loop_iterations=300)
    e = info.value
    assert "kernel 'forever'" in e.what and "300 times" in e.what
    assert e.loc.line == forever.ir.body[1].loc.line and "while x >= 0" in e.loc.source
    assert "block (0, 0, 0), thread (0, 0, 0)" in e.detail
    assert "max_loop_iterations" in e.hint
    assert isinstance(e, simgpu.SimgpuError) and isinstance(e, simgpu.lang.KernelRuntimeError)


def test_the_limit_is_on_by_default_and_high():
    assert MAX_LOOP_ITERATIONS >= 1 << 20
    dev = simgpu.get_device("sim:gtx260")
    out = dev.zeros(32, np.int32)
    dev.launch(long_loop, 1, 32, out, 5000, engine="lockstep")          # far below it: runs
    assert out.to_host()[0] == 5000
    with pytest.raises(KernelTimeoutError):
        dev.launch(long_loop, 1, 32, out, 5000, engine="lockstep", max_loop_iterations=4999)
    dev.launch(long_loop, 1, 32, out, 5000, engine="lockstep", max_loop_iterations=5001)


@pytest.mark.parametrize("engine", ["warps", "timed", "timed-block"])
def test_one_block_waiting_for_another_works_on_the_per_warp_engines(engine):
    dev = simgpu.get_device("sim:gtx260")
    flag, out = dev.zeros(1, np.int32), dev.zeros(1, np.int32)
    dev.launch(wait_for_block_1, 2, 32, flag, out, engine=engine, max_loop_iterations=10_000)
    assert flag.to_host()[0] == 1 and out.to_host()[0] >= 1


def test_inter_block_waiting_on_lockstep_is_refused_with_the_reason():
    dev = simgpu.get_device("sim:gtx260")
    flag, out = dev.zeros(1, np.int32), dev.zeros(1, np.int32)
    with pytest.raises(KernelTimeoutError, match="wait_for_block_1") as info:
        dev.launch(wait_for_block_1, 2, 32, flag, out, engine="lockstep",
                   max_loop_iterations=1000)
    assert "never ends" in info.value.hint and "engine='warps' or 'timed'" in info.value.hint


@kernel
def one(out: Array[i32]):
    out[threadIdx.x] = threadIdx.x + 1


@pytest.mark.parametrize("engine", ENGINES)
def test_ctrl_c_interrupts_every_engine_and_the_device_still_works(engine):
    dev = simgpu.get_device("sim:h100")
    fresh = simgpu.get_device("sim:h100")
    out = dev.zeros(64, np.int32)
    kept = fresh.zeros(64, np.int32)       # the same addresses on both devices (kept: an
    # array is freed when its last reference goes, and its address used again)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            dev.launch(forever, 2, 64, out, engine=engine, max_loop_iterations=10**9)
    finally:
        timer.cancel()
    a, b = dev.zeros(32, np.int32), fresh.zeros(32, np.int32)
    ra = dev.launch(one, 1, 32, a, engine=engine)
    rb = fresh.launch(one, 1, 32, b, engine=engine)
    assert a.to_host().tolist() == list(range(1, 33))
    assert ra.time_ms == rb.time_ms and ra.stores == rb.stores      # the same as a fresh device
    del kept
