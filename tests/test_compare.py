"""simgpu_apps.compare: a user's kernel on two simulated devices or engines."""
import json

import numpy as np
import pytest

from simgpu.lang import Array, ArgumentError, blockDim, blockIdx, f32, gridDim, i32, kernel, threadIdx
from simgpu_apps.compare import compare


@kernel
def double(a: Array[i32], out: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        out[i] = a[i] * 2


@kernel
def scale(a: Array[f32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        a[i] = a[i] * f32(0.5)


def test_two_engines_agree_on_outputs_and_counts():
    a = np.arange(1000, dtype=np.int32)
    r = compare(double, 4, 128, a, np.zeros(1000, np.int32), 1000,
                devices=("sim:h100", "sim:h100"), engines=("lockstep", "timed"))
    assert r.outputs_agree and [o[0] for o in r.outputs] == [0, 1]
    assert all(x == y for _, x, y in r.counts) and len(r.counts) == 9
    assert r.times_ms[0] is None and r.times_ms[1] > 0
    assert json.loads(r.to_json())["outputs"][1]["equal"] is True
    assert "| stores.transactions |" in r.markdown()
    assert a.tolist() == list(range(1000))              # the caller's arrays are not touched


def test_two_configs_give_two_times_and_their_own_counts():
    r = compare(double, 4, 128, np.arange(1000, dtype=np.int32), np.zeros(1000, np.int32), 1000,
                devices=("sim:gtx260", "sim:h100"))
    assert r.outputs_agree and all(t > 0 for t in r.times_ms)
    got = {c: (x, y) for c, x, y in r.counts}
    assert got["loads.bytes"][0] == 4000 and got["loads.bytes"][1] >= 4000   # sectors vs segments


def test_floats_are_compared_within_the_stated_tolerance():
    x = np.linspace(0, 1, 300).astype(np.float32)
    r = compare(scale, 3, 128, x, 300, devices=("sim:gtx260", "sim:h100"), rtol=0.0)
    assert r.outputs_agree and r.rtol == 0.0


def test_bad_arguments_are_refused():
    with pytest.raises(ArgumentError):
        compare(len, 1, 32)
    with pytest.raises(ArgumentError):
        compare(double, 1, 32, devices=("sim:h100",))
    with pytest.raises(ArgumentError):
        compare(double, 1, 32, rtol=-1)


CASES_FILE = '''import numpy as np
from simgpu.lang import kernel, Array, i32, threadIdx, blockIdx, blockDim, gridDim
@kernel
def double_it(a: Array[i32], out: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        out[i] = a[i] * 2
CASES = [dict(kernel=double_it, grid=2, block=64,
              args=[np.arange(300, dtype=np.int32), np.zeros(300, np.int32), 300])]
'''


def test_simgpu_validate_runs_a_users_file_of_cases(tmp_path, capsys):
    from simgpu_apps.cli import main
    (tmp_path / "cases_here.py").write_text(CASES_FILE)
    assert main(["validate", str(tmp_path / "cases_here.py"), "--engines", "lockstep,timed",
                 "--devices", "sim:h100,sim:h100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out[0]["kernel"] == "double_it" and all(o["equal"] for o in out[0]["outputs"])
    assert all(c["a"] == c["b"] for c in out[0]["counts"])


def test_simgpu_validate_refuses_a_file_without_cases(tmp_path, capsys):
    from simgpu_apps.cli import main
    (tmp_path / "empty_cases.py").write_text("x = 1\n")
    assert main(["validate", str(tmp_path / "empty_cases.py")]) == 2
    assert "must define CASES" in capsys.readouterr().err
