"""check="uninit": shared memory and empty() arrays start poisoned; a read before any
write is an error at the user's line naming block, thread, array and index.  Without
the check the simulator's memory starts at zero (deterministic)."""
import numpy as np
import pytest

import simgpu
from simgpu.lang import (Array, atomic_add, blockDim, blockIdx, i32, kernel, shared_array,
                         syncthreads, threadIdx)
from simgpu.sim.checks import UninitializedRead

from ..cuda import kernels_for_render as KR
from . import kernels as KS

ENGINES = ["lockstep", "warps", "timed", "timed-block"]


@kernel
def partial_fill(out: Array[i32], filled: i32):
    s = shared_array(i32, 64)
    t = threadIdx.x
    if t < filled:
        s[t] = t
    syncthreads()
    out[blockIdx.x * blockDim.x + t] = s[63 - t]


@kernel
def copy(src: Array[i32], dst: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        dst[i] = src[i]


@kernel
def bump(a: Array[i32]):
    atomic_add(a, threadIdx.x, 1)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_read_of_unwritten_shared_memory_names_the_line_thread_and_index(engine):
    dev = simgpu.get_device("sim:h100")
    out = dev.zeros(128, np.int32)
    with pytest.raises(UninitializedRead) as info:
        dev.launch(partial_fill, 2, 64, out, 60, engine=engine, check="uninit")
    msg = str(info.value)
    assert "out[blockIdx.x * blockDim.x + t] = s[63 - t]" in msg and "^" in msg
    assert "shared array 's' index 63 was never written" in msg    # thread 0 reads s[63]
    assert "in block (0, 0, 0), thread (0, 0, 0) (and " in msg   # threads 0-3 of each block
    # every word written: no error, and the combined checks run too
    dev.launch(partial_fill, 2, 64, out, 64, engine=engine, check="races,uninit")
    assert list(out.to_host()[:64]) == list(range(63, -1, -1))


def test_without_the_check_shared_memory_reads_zero():
    dev = simgpu.get_device("sim:gtx260")
    out = dev.zeros(64, np.int32)
    dev.launch(partial_fill, 1, 64, out, 60)
    assert list(out.to_host()[:4]) == [0, 0, 0, 0]


def test_empty_arrays_are_poisoned_until_written():
    dev = simgpu.get_device("sim:h100")
    n = 40
    a = dev.empty(n, np.int32)
    b = dev.empty(n, np.int32)
    with pytest.raises(UninitializedRead, match=r"array 'src' index 0 was never written"):
        dev.launch(copy, 1, 64, a, b, n, check="uninit")
    dev.launch(copy, 1, 64, dev.to_device(np.arange(n, dtype=np.int32)), a, n - 8,
               check="uninit")                           # writes a[0:32]
    dev.launch(copy, 1, 64, a, b, n - 8, check="uninit")  # reads only what was written
    with pytest.raises(UninitializedRead, match=r"index 32 was never written"):
        dev.launch(copy, 1, 64, a, b, n, check="uninit")
    with pytest.raises(UninitializedRead, match="atomic read of uninitialized memory"):
        dev.launch(bump, 1, 32, dev.empty(32, np.int32), check="uninit")
    a.copy_from(np.zeros(n, np.int32))                      # the host wrote every word
    dev.launch(copy, 1, 64, a, b, n, check="uninit")
    dev.launch(copy, 1, 64, dev.zeros(n, np.int32), b, n, check="uninit")


def test_a_launch_without_the_check_forgets_the_poison():
    dev = simgpu.get_device("sim:h100")
    a = dev.empty(32, np.int32)
    dev.launch(copy, 1, 32, dev.zeros(32, np.int32), a, 32)      # unchecked: writes all of a
    dev.launch(copy, 1, 32, a, dev.zeros(32, np.int32), 32, check="uninit")


@pytest.mark.parametrize("case", [
    lambda dev: (KR.block_sum, 3, 128, dev.to_device(np.arange(300, dtype=np.int32)),
                 dev.zeros(3, np.int32), 300),
    lambda dev: (KS.block_sums, 2, 128, dev.to_device(np.arange(200, dtype=np.int32)),
                 dev.zeros(2, np.int64), 200),
    lambda dev: (KS.reverse_in_shared, 2, 64, dev.to_device(np.arange(128, dtype=np.int32)),
                 dev.zeros(128, np.int32)),
])
def test_the_repositorys_shared_memory_kernels_write_before_they_read(case):
    """The kernels that once relied on zeroed shared memory store their zeros now
    (the CUDA rendering no longer clears shared memory for them)."""
    dev = simgpu.get_device("sim:gtx260")
    kern, grid, block, *args = case(dev)
    dev.launch(kern, grid, block, *args, check="races,uninit")


def test_a_device_copy_carries_what_was_written():
    """dev.copy() writes on the device what its source held: a copy of a host-filled
    array reads clean, a copy of an unwritten empty() array is still unwritten."""
    dev = simgpu.get_device("sim:gtx260")
    out = dev.zeros(64, np.int32)
    filled = dev.copy(dev.to_device(np.arange(64, dtype=np.int32)))
    dev.launch(copy, 1, 64, filled, out, 64, check="uninit")
    assert out.to_host().tolist() == list(range(64))
    with pytest.raises(UninitializedRead, match="never written"):
        dev.launch(copy, 1, 64, dev.copy(dev.empty(64, np.int32)), out, 64, check="uninit")


def test_uninitialized_arrays_are_empty_arrays_on_the_simulator():
    """Device.uninitialized: on the simulator empty()'s poisoned zeros (a real GPU skips
    the memset), with empty()'s checks of the length and dtype."""
    dev = simgpu.get_device("sim:h100")
    a = dev.uninitialized(40, np.int32)
    assert a.size == 40 and a.dtype == np.int32 and not a.to_host().any()
    with pytest.raises(UninitializedRead, match=r"array 'src' index 0 was never written"):
        dev.launch(copy, 1, 64, a, dev.zeros(40, np.int32), 40, check="uninit")
    with pytest.raises(ValueError, match="an array length is an integer >= 0, not -1"):
        dev.uninitialized(-1, np.int32)
    with pytest.raises(ValueError, match="complex128.* is not an element type"):
        dev.uninitialized(4, np.complex128)
