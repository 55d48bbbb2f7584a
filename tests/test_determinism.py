"""The same seed gives the same results, counts and times, whatever else the process
does (issue 19).

Once, a paper point computed on a Dask worker gave list ranking's RS2 0.008858 ms where
the inline run gave 0.008826 ms.  The worker's profiler (Worker.trigger_profile, every
10 ms) holds the computing thread's frames while it reads them; a function that returns
meanwhile keeps its locals, so the 40-byte counters of the input scan (a local of
device_input.prepare) outlived the call, and the next allocation (RS2's ``given``) went
elsewhere than into their freed block.  Device addresses now do not depend on when
arrays are freed (simgpu.mem.address_space); these tests hold frames as such a profiler
does, and run the point in other processes.
"""
import json
import os
import subprocess
import sys

import pytest

from simgpu.sim.device import SimDevice
from simgpu_apps.experiments import list_ranking, runner


def lr_point(variant, n):
    return runner.Point.make("lr_sim", "sim:gtx260", cost=1,
                             **list_ranking.point_params(variant, n))


def result(point):
    out = runner.compute_point(point)
    assert out["ok"], out
    return out["result"]


# rs48 at n = 512: the point and step that moved (random splitters: RS2's given array;
# even splitters: the splitters' array, which moved RS3/RS5 and their memory counts)
POINTS = [lr_point("rs48", 512), lr_point("even48", 512)]


@pytest.fixture(scope="module")
def reference():
    return [result(p) for p in POINTS]


def test_a_profiler_holding_frames_changes_no_number(reference, monkeypatch):
    """A sampling profiler that takes the stack at every launch and keeps it until its
    next sample (as a Dask worker's does for the time it reads it): the locals of every
    function on that stack live until then."""
    sample = []
    launch = SimDevice.launch

    def sampled(self, *args, **kwargs):
        sample[:] = [sys._getframe()]          # this frame and, through f_back, its callers
        return launch(self, *args, **kwargs)

    monkeypatch.setattr(SimDevice, "launch", sampled)
    for p, want in zip(POINTS, reference):
        assert result(p) == want, p.p


CHILD = """
import json
from tests.test_determinism import POINTS, lr_point, result
for variant, n in (("wylie", 256), ("rs48", 256)):       # warm-up points first
    result(lr_point(variant, n))
print(json.dumps([result(p) for p in POINTS]))
"""


def test_other_processes_with_other_hash_seeds_give_the_same_numbers(reference):
    """Fresh processes with other PYTHONHASHSEEDs (str/bytes hashes, so set and dict
    orders, differ; a Dask worker's is its own), each after other points (warm caches:
    the coalescer's patterns, the input list, compiled kernels), give this process's
    results, bit for bit."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    procs = [subprocess.Popen([sys.executable, "-c", CHILD], cwd=root, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=dict(env, PYTHONHASHSEED=seed))
             for seed in ("0", "4242")]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        got = json.loads(out.strip().splitlines()[-1])
        assert got == json.loads(json.dumps(reference))
