import numpy as np
import pytest

import simgpu

# simgpu.testing's plugin (the gpu marker, simgpu_device); pytester tests it.
pytest_plugins = ["pytester", "simgpu.testing.pytest_plugin"]


@pytest.fixture(scope="session", autouse=True)
def _compiled_memory_core():
    """The compiled memory core (simgpu.mem.fast_memory, where numba is installed) loaded
    before the first test, so that no test's time (a hypothesis deadline) includes its
    compile (some 30-60 s in a fresh checkout, then cached)."""
    from simgpu.mem.fast_warm import warm_up
    warm_up()


@pytest.fixture
def dev():
    """The default device: the paper's GTX 260 (CC 1.3, half-warp coalescing).
    The tests that take it check results and counts, not time: their launches run on
    the untimed lockstep engine (fast, lane order), where one names no engine."""
    d = simgpu.get_device("sim:gtx260")
    d.default_engine = "lockstep"
    return d


@pytest.fixture
def h100():
    """sim:h100, on the untimed lockstep engine where a launch names none (as dev)."""
    d = simgpu.get_device("sim:h100")
    d.default_engine = "lockstep"
    return d


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
