"""The timed engines run the simulation with Python's cyclic collector off
(simgpu/sim/timed.py): it is on again after every launch, one that fails too, and a
caller's own setting is kept."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import simgpu
from simgpu.lang import Array, blockDim, blockIdx, i32, kernel, threadIdx


@kernel
def shifted_copy(src: Array[i32], dst: Array[i32], shift: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    dst[i] = src[i + shift]


@pytest.mark.parametrize("engine", ("timed", "timed-block"))
def test_the_collector_is_back_after_a_launch_and_after_a_failed_one(engine):
    dev = simgpu.get_device("sim:gtx260")
    src, dst = dev.to_device(np.arange(64, dtype=np.int32)), dev.zeros(64, np.int32)
    assert gc.isenabled()
    dev.launch(shifted_copy, 2, 32, src, dst, 0, engine=engine)
    assert gc.isenabled() and np.array_equal(dst.to_host(), np.arange(64))
    with pytest.raises(Exception):
        dev.launch(shifted_copy, 2, 32, src, dst, 1, engine=engine)    # reads past src
    assert gc.isenabled()
    gc.disable()
    try:
        dev.launch(shifted_copy, 2, 32, src, dst, 0, engine=engine)
        assert not gc.isenabled()
    finally:
        gc.enable()
