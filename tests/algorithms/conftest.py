import pytest

from simgpu.sim.device import SimDevice


@pytest.fixture(autouse=True)
def lockstep_by_default(monkeypatch):
    """The algorithm tests check ranks, labels and counts, not times: a launch that
    names no engine runs on the untimed lockstep engine here (fast; lane order), not
    on the timed engine a user's launch gets by default. Tests that want another
    engine name it in launch_options."""
    monkeypatch.setattr(SimDevice, "DEFAULT_ENGINE", "lockstep")
