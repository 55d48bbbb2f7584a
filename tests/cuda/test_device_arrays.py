"""The Device API for device memory that algorithms use to take arrays in and give
them back (simgpu/device.py): as_device_array, export, copy, DeviceArray.view and
__cuda_array_interface__, on the simulator and (marked gpu) with CuPy on a GPU."""
import numpy as np
import pytest

import simgpu


def test_simulator_arrays():
    dev = simgpu.get_device("sim:gtx260")
    a = dev.to_device(np.array([1, -2, 3], dtype=np.int32))
    assert dev.as_device_array(a) is a
    assert dev.as_device_array(np.arange(3)) is None                 # host: the caller copies
    assert simgpu.is_device_array(a) and not simgpu.is_device_array(np.arange(3))
    assert not hasattr(a, "__cuda_array_interface__")                # host memory underneath
    u = a.view(np.uint32)
    assert u.base == a.base and u.to_host().tolist() == [1, 2**32 - 2, 3]
    with pytest.raises(ValueError, match="8-byte items"):
        a.view(np.int64)
    c = dev.copy(a)
    c.copy_from(np.zeros(3, np.int32))
    assert a.to_host().tolist() == [1, -2, 3] and c.base != a.base
    assert dev.export(a, like=a) is a
    assert isinstance(dev.export(a, like=np.zeros(1)), np.ndarray)
    with pytest.raises(ValueError, match="lives on sim:gtx260, not on sim:h100"):
        simgpu.get_device("sim:h100").as_device_array(a)


class FakeCudaMemory:
    __cuda_array_interface__ = {"shape": (2,), "typestr": "<i4", "data": (0, False),
                                "version": 3}


def test_cuda_memory_on_the_simulator_is_a_clear_error():
    dev = simgpu.get_device("sim:gtx260")
    assert simgpu.is_device_array(FakeCudaMemory())
    with pytest.raises(ValueError, match="cannot read CUDA memory.*device='cuda'"):
        dev.as_device_array(FakeCudaMemory())


@pytest.mark.gpu
def test_cupy_arrays_without_copies(gpu):
    import cupy as cp
    x = cp.arange(10, dtype=cp.int64)
    a = gpu.as_device_array(x)
    assert a.base == x.data.ptr                                       # no copy
    assert gpu.export(a, like=x) is a._data
    assert cp.asarray(a).data.ptr == x.data.ptr                       # our arrays go to CuPy too
    m = cp.arange(12, dtype=cp.int32).reshape(6, 2)
    assert gpu.as_device_array(m, ravel=True).to_host().tolist() == list(range(12))
    with pytest.raises(ValueError, match="one-dimensional"):
        gpu.as_device_array(m)
    strided = gpu.as_device_array(x[::2])                             # made contiguous
    assert strided.to_host().tolist() == [0, 2, 4, 6, 8]
