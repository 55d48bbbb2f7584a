"""A pytest plugin for simgpu tests. Enable it in a ``conftest.py``:

    pytest_plugins = ["simgpu.testing.pytest_plugin"]

* ``@pytest.mark.gpu``: the test runs only where a CUDA GPU and CuPy are
  there (it is skipped, saying why, elsewhere);
* ``simgpu_device`` fixture: the test runs once per device named by
  ``--simgpu-devices`` (default ``sim:gtx260,sim:h100``; add ``cuda`` to
  compare with the GPU: its runs are skipped where there is none);
* ``cuda_device`` fixture: the real GPU, or the test is skipped.
"""
from __future__ import annotations

import pytest

DEFAULT_DEVICES = "sim:gtx260,sim:h100"
_cuda = {}


def cuda_or_reason():
    """(the 'cuda' device, None) or (None, why there is none); asked once per session."""
    if "result" not in _cuda:
        import simgpu
        try:
            _cuda["result"] = (simgpu.get_device("cuda"), None)
        except Exception as exc:            # CudaUnavailable, RuntimeError: no backend
            _cuda["result"] = (None, f"no CUDA GPU here: {exc}")
    return _cuda["result"]


def pytest_addoption(parser):
    group = parser.getgroup("simgpu")
    group.addoption("--simgpu-devices", default=DEFAULT_DEVICES,
                    help="comma-separated devices for the simgpu_device fixture "
                         f"(default {DEFAULT_DEVICES}; e.g. sim:gtx260,cuda)")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU and CuPy (skipped without one)")


def pytest_runtest_setup(item):
    if item.get_closest_marker("gpu") is not None:
        dev, why = cuda_or_reason()
        if dev is None:
            pytest.skip(why)


def pytest_generate_tests(metafunc):
    if "simgpu_device" in metafunc.fixturenames:
        names = [n.strip() for n in metafunc.config.getoption("simgpu_devices").split(",")
                 if n.strip()]
        metafunc.parametrize("simgpu_device", names, indirect=True)


@pytest.fixture
def simgpu_device(request):
    """A device of ``--simgpu-devices`` (the test runs once per device)."""
    name = request.param
    if name == "cuda" or name.startswith("cuda:"):
        dev, why = cuda_or_reason()
        if dev is None:
            pytest.skip(why)
        return dev
    import simgpu
    return simgpu.get_device(name)


@pytest.fixture
def cuda_device():
    """The real GPU ('cuda'), or the test is skipped."""
    dev, why = cuda_or_reason()
    if dev is None:
        pytest.skip(why)
    return dev
