"""simgpu.testing: the schedule checker, the hypothesis strategies and the pytest plugin."""
import importlib
import sys

import numpy as np
import pytest
from hypothesis import find, given, settings, strategies as st

from simgpu.lang import Array, atomic_add, i32, kernel, threadIdx
from simgpu.testing import FIXED, ScheduleMismatch, check_schedules, schedule_options
from simgpu.testing import strategies as gst

QUIET = settings(derandomize=True, database=None)


@kernel
def count_racy(c: Array[i32]):
    if threadIdx.x % 32 == 0:
        c[0] = c[0] + 1


@kernel
def count_atomic(c: Array[i32]):
    if threadIdx.x % 32 == 0:
        atomic_add(c, 0, 1)


def four(c):
    c[0] += 4


def test_check_schedules_passes_a_right_kernel_under_every_schedule():
    reps = check_schedules(count_atomic, 1, 128, np.zeros(1, np.int32), reference=four,
                           seeds=range(5))
    assert len(reps) == 1 + 2 * 5
    assert [(r.engine, r.schedule, r.seed) for r in reps[:2]] == [
        ("lockstep", "fixed", 0), ("lockstep", "random", 0)]


def test_check_schedules_names_the_schedule_the_array_and_the_index():
    with pytest.raises(ScheduleMismatch, match=r"count_racy', schedule \(engine='lockstep', "
                       r"schedule='fixed', seed=0\): 'c' differs .* index 0: got 1, expected 4"):
        check_schedules(count_racy, 1, 128, np.zeros(1, np.int32), reference=four)


def test_check_schedules_argument_errors():
    with pytest.raises(TypeError, match="takes 1 arguments"):
        check_schedules(count_atomic, 1, 32, reference=four)
    with pytest.raises(ValueError, match=r"outputs \['d'\] are not array arguments"):
        check_schedules(count_atomic, 1, 32, np.zeros(1, np.int32), reference=four,
                        outputs=["d"])


def test_schedule_options_start_with_the_plain_schedule():
    opts = schedule_options(("warps",), range(3))
    assert opts[0] == FIXED and [o["seed"] for o in opts[1:]] == [0, 1, 2]


def test_strategies_shrink_toward_the_simplest_case():
    assert find(gst.schedules(), lambda o: True, settings=QUIET) == FIXED
    assert find(gst.schedules(), lambda o: o["schedule"] == "random", settings=QUIET) == {
        "engine": "lockstep", "schedule": "random", "seed": 0}
    assert find(gst.launch_shapes(multiple_of=32), lambda s: True, settings=QUIET) == (1, 32)
    assert find(gst.graphs(), lambda g: True, settings=QUIET)[0] == 0
    assert find(gst.forests(), lambda f: True, settings=QUIET).tolist() == [0]
    with pytest.raises(ValueError, match="unknown engines"):
        gst.schedules(engines=("fast",))


def _heads_and_tails_ok(succ):
    n = len(succ)
    assert succ.dtype == np.int64 and ((0 <= succ) & (succ < n)).all()
    preds = np.bincount(succ[succ != np.arange(n)], minlength=n)
    assert (preds <= 1).all()                           # every node has at most one predecessor
    far = succ.copy()                                   # pointer jumping reaches a tail: no cycle
    for _ in range(n.bit_length() + 1):
        far = far[far]
    assert (succ[far] == far).all()
    return int(np.count_nonzero(succ == np.arange(n)))  # the number of lists


@settings(max_examples=30, deadline=None)
@given(gst.forests(max_n=40), gst.lists(max_n=40))
def test_forests_and_lists_are_successor_arrays(forest, one_list):
    _heads_and_tails_ok(forest)
    assert _heads_and_tails_ok(one_list) == 1


@settings(max_examples=30, deadline=None)
@given(gst.graphs(max_n=20, self_loops=False), gst.arrays(np.uint8, 2, 5),
       gst.launch_shapes(max_blocks=3, max_threads=64, multiple_of=32))
def test_graphs_arrays_and_shapes_stay_in_their_ranges(graph, a, shape):
    n, edges = graph
    assert edges.shape[1] == 2 and edges.dtype == np.int64
    assert ((0 <= edges) & (edges < max(n, 1))).all() and (edges[:, 0] != edges[:, 1]).all()
    assert a.dtype == np.uint8 and 2 <= len(a) <= 5
    grid, block = shape
    assert 1 <= grid <= 3 and block in (32, 64)


def test_strategies_without_hypothesis_say_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    monkeypatch.delitem(sys.modules, "simgpu.testing.strategies")
    with pytest.raises(ImportError, match=r"needs hypothesis.*pip install 'simgpu\[test\]'"):
        importlib.import_module("simgpu.testing.strategies")
    monkeypatch.undo()
    importlib.import_module("simgpu.testing.strategies")


def test_pytest_plugin_skips_gpu_tests_without_a_gpu_and_parametrizes_devices(pytester,
                                                                              monkeypatch):
    from simgpu.testing import pytest_plugin
    monkeypatch.setattr(pytest_plugin, "_cuda", {"result": (None, "no CUDA GPU here: test")})
    pytester.makeconftest('pytest_plugins = ["simgpu.testing.pytest_plugin"]')
    pytester.makepyfile("""
        import pytest

        @pytest.mark.gpu
        def test_on_the_gpu():
            raise AssertionError("must not run")

        def test_every_device(simgpu_device):
            assert simgpu_device.name.startswith("sim:")
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs",
                                          "--simgpu-devices=sim:gtx260,sim:h100,cuda")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(["*no CUDA GPU here: test*"])
