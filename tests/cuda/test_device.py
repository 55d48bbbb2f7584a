"""The 'cuda' device: the same kernels on a real GPU (skipped where there is none)."""
import numpy as np
import pytest

import simgpu
from cuda_backend.device import CudaUnavailable
from simgpu.lang import LaunchError

from ..sim import kernels as K


def test_no_gpu_is_a_clear_error_not_a_traceback():
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed: the error path is not reachable here")
    except ImportError:
        pass
    with pytest.raises(CudaUnavailable, match=r"needs CuPy .* pip install 'simgpu\[gpu\]'"):
        simgpu.get_device("cuda")


@pytest.mark.gpu
def test_kernels_match_the_simulator(gpu, rng):
    sim = simgpu.get_device("sim:h100")
    n = 5000
    a = rng.integers(-1000, 1000, n, dtype=np.int32)
    start = rng.integers(1, 10**6, 300).astype(np.int64)
    blocks = (n + K.BLOCK - 1) // K.BLOCK
    results = {}
    for dev in (sim, gpu):
        sums = dev.zeros(blocks, np.int64)
        dev.launch(K.block_sums, blocks, K.BLOCK, dev.to_device(a), sums, n)
        steps = dev.zeros(300, np.int32)
        dev.launch(K.collatz_steps, 3, 128, dev.to_device(start), steps, 300)
        total = dev.zeros(1, np.int64)
        dev.launch(K.sum_atomic, 5, 128, dev.to_device(a.astype(np.int64)), total, n)
        results[dev.name] = (sums.to_host(), steps.to_host(), total.to_host())
    for x, y in zip(results["sim:h100"], results[gpu.name]):
        assert np.array_equal(x, y)


@pytest.mark.gpu
def test_report_and_checks_on_the_gpu(gpu):
    n = 1 << 20
    src, dst = gpu.to_device(np.arange(n, dtype=np.int32)), gpu.zeros(n, np.int32)
    rep = gpu.launch(K.copy_striding, 264, 256, src, dst, n)
    assert np.array_equal(dst.to_host(), np.arange(n))
    assert rep.time_ms > 0 and not rep.counted and "not measured" in rep.table()
    with pytest.raises(LaunchError, match="at most 1024 per block"):
        gpu.launch(K.copy_striding, 1, 2048, src, dst, n)


@pytest.mark.gpu
def test_uninitialized_arrays_take_a_kernel_s_writes(gpu):
    """Device.uninitialized on the GPU: CuPy memory without a memset, as a kernel's output."""
    n = 1 << 20
    src, dst = gpu.to_device(np.arange(n, dtype=np.int32)), gpu.uninitialized(n, np.int32)
    assert dst.size == n and dst.dtype == np.int32
    gpu.launch(K.copy_striding, 264, 256, src, dst, n)
    assert np.array_equal(dst.to_host(), np.arange(n))


@pytest.mark.gpu
def test_large_copies_go_through_page_locked_memory(gpu, rng, monkeypatch):
    """Host arrays of PAGE_LOCK_BYTES or more are registered with the driver for the
    copy (and released after it); smaller ones, or arrays the driver refuses, go
    from pageable memory. Either way the data arrive intact."""
    from cuda_backend.device import PAGE_LOCK_BYTES
    runtime = gpu.cp.cuda.runtime
    calls = []
    real_register, real_unregister = runtime.hostRegister, runtime.hostUnregister
    monkeypatch.setattr(runtime, "hostRegister",
                        lambda p, n, f: (calls.append(("lock", n)), real_register(p, n, f)))
    monkeypatch.setattr(runtime, "hostUnregister",
                        lambda p: (calls.append(("unlock",)), real_unregister(p)))
    big = rng.integers(-2**31, 2**31, PAGE_LOCK_BYTES // 4 + 7, dtype=np.int32)
    d = gpu.to_device(big)
    back = d.to_host()
    assert np.array_equal(back, big)
    assert calls == [("lock", big.nbytes), ("unlock",), ("lock", big.nbytes), ("unlock",)]
    d.copy_from(big[::-1].copy())
    assert np.array_equal(d.to_host(), big[::-1]) and len(calls) == 8
    calls.clear()
    small = big[:1000].copy()
    assert np.array_equal(gpu.to_device(small).to_host(), small) and calls == []

    def refuse(p, n, f):
        raise runtime.CUDARuntimeError(1)            # e.g. a limit on locked memory
    monkeypatch.setattr(runtime, "hostRegister", refuse)
    assert np.array_equal(gpu.to_device(big).to_host(), big)
