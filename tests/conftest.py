import numpy as np
import pytest

import simgpu

# simgpu.testing's plugin (the gpu marker, simgpu_device); pytester tests it.
pytest_plugins = ["pytester", "simgpu.testing.pytest_plugin"]


@pytest.fixture
def dev():
    """The default device: the paper's GTX 260 (CC 1.3, half-warp coalescing)."""
    return simgpu.get_device("sim:gtx260")


@pytest.fixture
def h100():
    return simgpu.get_device("sim:h100")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def gpu():
    """The real GPU ('cuda'); tests that take it are skipped where there is none."""
    from cuda_backend.device import CudaUnavailable
    try:
        return simgpu.get_device("cuda")
    except CudaUnavailable as exc:
        pytest.skip(f"no GPU here: {exc}")
