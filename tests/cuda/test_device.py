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


@pytest.mark.gpu
def test_launch_fast_path_accepts_and_refuses_as_check_launch(gpu):
    """After a kernel's first (fully checked) launch, plain arguments skip check_launch
    (cuda_backend: the host's cost per launch); the results are the same, a numpy
    integer still goes through it, and every refusal is check_launch's own, with or
    without a first launch, and changes nothing."""
    n = 1 << 12
    warm, fresh = simgpu.get_device("cuda"), simgpu.get_device("cuda")   # devices of their own
    src = warm.to_device(np.arange(n, dtype=np.int32))
    calls = []
    real = warm.check_launch
    warm.check_launch = lambda *a: calls.append(1) or real(*a)
    for count in (n, n // 2, np.int32(n // 3), n // 4):
        dst = warm.zeros(n, np.int32)
        warm.launch(K.copy_striding, 4, 256, src, dst, count)
        want = np.where(np.arange(n) < int(count), np.arange(n), 0)
        assert np.array_equal(dst.to_host(), want)
    assert len(calls) == 2                       # the first launch and the numpy int
    for dev in (warm, fresh):
        dst = dev.zeros(n, np.int32)
        s = dev.to_device(np.arange(n, dtype=np.int32))
        for args, match in [((s, dst, 2**31), "does not fit i32"),
                            ((s, dev.zeros(n, np.int64), n), "holds int64"),
                            ((s, dst), "takes 3 arguments"),
                            ((s, dst, 1.5), "must be an integer"),
                            ((s, gpu.zeros(n, np.int32), n), "lives on")]:
            with pytest.raises(LaunchError, match=match):
                dev.launch(K.copy_striding, 4, 256, *args)
        with pytest.raises(LaunchError, match="at most 1024 per block"):
            dev.launch(K.copy_striding, 1, 2048, s, dst, n)
        assert not dst.to_host().any()


@pytest.mark.gpu
def test_uninitialized_arrays_are_apart_and_aligned(gpu, rng):
    """Device.uninitialized_arrays on the GPU: one allocation, each array a 256-byte-aligned
    view of its own (what is written to one stays out of the others)."""
    specs = [(5, np.int64), (1000, np.int32), (0, np.uint64), (333, np.uint16), (7, np.int32)]
    arrays = gpu.uninitialized_arrays(*specs)
    assert [(a.size, a.dtype) for a in arrays] == [(n, np.dtype(t)) for n, t in specs]
    assert all(a.base % 256 == 0 for a in arrays if a.size)
    values = [rng.integers(0, 100, n).astype(t) for n, t in specs]
    for a, v in zip(arrays, values):
        a.copy_from(v)
    src = gpu.to_device(np.arange(1, 1001, dtype=np.int32))
    gpu.launch(K.copy_striding, 4, 256, src, arrays[1], 1000)
    values[1] = np.arange(1, 1001)
    for a, v in zip(arrays, values):
        assert np.array_equal(a.to_host(), v)


@pytest.mark.gpu
def test_a_large_read_locks_its_pages_before_waiting_for_the_kernels(gpu, monkeypatch):
    """to_host reads the event times of all launches but the last before its copy (the host
    time overlaps the last kernel), but only after page-locking the host array, which
    takes milliseconds for tens of MB and overlaps the kernels only if it comes first."""
    from cuda_backend.device import PAGE_LOCK_BYTES
    n = PAGE_LOCK_BYTES // 4 + 1
    src, dst = gpu.to_device(np.arange(n, dtype=np.int32)), gpu.zeros(n, np.int32)
    runtime = gpu.cp.cuda.runtime
    order = []
    real_register, real_settle = runtime.hostRegister, gpu._settle
    monkeypatch.setattr(runtime, "hostRegister",
                        lambda p, size, f: (order.append("lock"), real_register(p, size, f)))
    monkeypatch.setattr(gpu, "_settle", lambda but_last=False: (
        order.append("times, all but the last" if but_last else "times"),
        real_settle(but_last)))
    reps = [gpu.launch(K.copy_striding, 264, 256, src, dst, n) for _ in range(3)]
    assert np.array_equal(dst.to_host(), np.arange(n))
    assert order == ["lock", "times, all but the last", "times"]
    assert all(r.time_ms > 0 for r in reps)
