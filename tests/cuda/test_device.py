"""The 'cuda' device: the same kernels on a real GPU (skipped where there is none)."""
import numpy as np
import pytest

import simgpu
from cuda_backend.device import CudaUnavailable
from simgpu.lang import LaunchError

from ..sim import kernels as K


@pytest.fixture(scope="module")
def gpu():
    try:
        return simgpu.get_device("cuda")
    except CudaUnavailable as exc:
        pytest.skip(f"no GPU here: {exc}")


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
