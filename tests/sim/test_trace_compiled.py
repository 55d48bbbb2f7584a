"""The compiled trace-block replay loop (simgpu.sim.trace_loop, numba) against the Python
replay it transcribes (run_timed with trace=, simpy): every replayed launch must give
the same report, field for field (cycles, time, counts, every extra field, the trace's
own, the samples) and the same outputs, whether the trace is recorded before the timing
or during it, with or without the event-queue short cut (its event heap:
test_compiled_heap).  Where it does not cover a launch (an L2, several schedulers per SM) the
Python replay runs."""
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

import simgpu  # noqa: E402
import simgpu.sim.timed as timed  # noqa: E402
import simgpu.sim.trace_compiled as trace_compiled  # noqa: E402
import simgpu.sim.trace_replay as trace_replay  # noqa: E402
from simgpu.sim import trace_loop as L  # noqa: E402
from tests.sim import kernels as K  # noqa: E402
from tests.sim import replayed  # noqa: E402
from tests.sim import trace_kernels as T  # noqa: E402
from tests.sim.test_trace_engine import rank_both  # noqa: E402


def full(rep) -> dict:
    d = rep.to_dict()
    d["samples"] = {k: {f: (v.tolist() if isinstance(v, np.ndarray) else v)
                        for f, v in s.items()} for k, s in rep.samples.items()}
    return d


def both(monkeypatch, run):
    """run() with the Python replay, then with the compiled loop: (results, compiled
    launches)."""
    out = []
    for compiled in (False, True):
        monkeypatch.setattr(trace_compiled, "ENABLED", compiled)
        before = trace_compiled.RUNS[0]
        out.append((run(), trace_compiled.RUNS[0] - before))
    assert out[0][1] == 0
    return out[0][0], out[1][0], out[1][1]


def launch(device, kernel, grid, block, make_args):
    dev = replayed.device(device) if isinstance(device, str) else device()   # (fresh)
    args = make_args(dev)
    rep = dev.launch(kernel, grid, block, *args, engine="trace-block")
    return full(rep), [a.to_host() for a in args if hasattr(a, "to_host")]


def assert_launch_same(monkeypatch, device, kernel, grid, block, make_args, compiled=1):
    a, b, ran = both(monkeypatch, lambda: launch(device, kernel, grid, block, make_args))
    assert ran == compiled
    assert a[0] == b[0]
    for x, y in zip(a[1], b[1]):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("packing", [64, 48])
@pytest.mark.parametrize("ahead", [True, False])
def test_list_ranking_reports_identical(monkeypatch, packing, ahead):
    if not ahead:                   # recorded during the timing, as at the paper's sizes
        monkeypatch.setattr(trace_replay, "RECORD_AHEAD_LANES", 0)
    a, b, ran = both(monkeypatch, lambda: rank_both("sim:gtx260", "random-splitter",
                                                    packing, n=3000)[1])
    np.testing.assert_array_equal(a.ranks, b.ranks)
    assert [full(r) for r in a.launches] == [full(r) for r in b.launches]
    walk = next(r for r in b.launches if r.kernel.startswith("rs3_walk"))
    assert walk.extra["engine_ran"] == "trace-block"
    assert ran >= 3                 # RS1, RS3, RS5 at least (RS2 races: timed-block)


def test_without_the_queue_short_cut(monkeypatch):
    monkeypatch.setattr(timed, "SKIP_QUEUE", False)
    rng = np.random.default_rng(2)
    a, b = (rng.integers(0, 100, 3000).astype(np.int32) for _ in range(2))
    assert_launch_same(monkeypatch, "sim:gtx260", T.far_uses, (12, 1, 1), (256, 1, 1),
                       lambda d: [d.to_device(a), d.to_device(b), d.zeros(3000, np.int32),
                                  np.int32(3000)])


def test_shared_memory_and_syncthreads(monkeypatch):
    a = np.arange(3000, dtype=np.int32)
    assert_launch_same(monkeypatch, "sim:gtx260", K.block_sums, (23, 1, 1), (128, 1, 1),
                       lambda d: [d.to_device(a), d.zeros(23, np.int64), np.int32(2950)])
    assert_launch_same(monkeypatch, "sim:gtx260", T.shared_rotate, (40, 1, 1), (64, 1, 1),
                       lambda d: [d.to_device(a), d.zeros(3000, np.int32), np.int32(3000),
                                  np.int32(5)])


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_kernels_shapes_and_recording(data):
    with pytest.MonkeyPatch.context() as mp:
        if data.draw(st.booleans()):
            mp.setattr(trace_replay, "RECORD_AHEAD_LANES", 0)
        mp.setattr(trace_compiled, "AHEAD", data.draw(st.sampled_from([1, 3, 32])))
        mp.setattr(trace_compiled, "BATCH", data.draw(st.sampled_from([2, 7, 256])))
        n = data.draw(st.integers(1, 1500))
        a = np.array(data.draw(st.lists(st.integers(0, 200), min_size=n, max_size=n)),
                     np.int32)
        b = a[::-1].copy()
        threads = data.draw(st.sampled_from([32, 64, 96, 256]))
        blocks = data.draw(st.integers(1, 40))
        kernel = data.draw(st.sampled_from(["far_uses", "grid_stride_copy", "shared_rotate",
                                            "collatz"]))
        if kernel == "shared_rotate":
            turns = data.draw(st.integers(0, 6))
            args = (T.shared_rotate, (blocks, 1, 1), (64, 1, 1), lambda d: [
                d.to_device(a), d.zeros(n, np.int32), np.int32(n), np.int32(turns)])
        elif kernel == "far_uses":
            args = (T.far_uses, (blocks, 1, 1), (threads, 1, 1), lambda d: [
                d.to_device(a), d.to_device(b), d.zeros(n, np.int32), np.int32(n)])
        elif kernel == "collatz":
            m = blocks * threads
            args = (K.collatz_steps, (blocks, 1, 1), (threads, 1, 1), lambda d: [
                d.to_device(np.arange(1, m + 1, dtype=np.int64)), d.zeros(m, np.int32),
                np.int32(m)])
        else:
            args = (T.grid_stride_copy, (blocks, 1, 1), (threads, 1, 1), lambda d: [
                d.to_device(a), d.zeros(n, np.int32), np.int32(n)])
        assert_launch_same(mp, "sim:gtx260", *args)


def test_configs_it_does_not_cover_run_the_python_replay(monkeypatch):
    a = np.arange(2048, dtype=np.int32)
    make = lambda d: [d.to_device(a), d.zeros(2048, np.int32), np.int32(2048)]  # noqa: E731
    # an L2 (no compiled memory core): the Python replay
    assert_launch_same(monkeypatch, "sim:h100", T.grid_stride_copy, (8, 1, 1), (128, 1, 1),
                       make, compiled=0)
    # two warp schedulers per SM
    dev = simgpu.get_device("sim:gtx260")
    cfg = dataclasses.replace(dev.config, issue=dataclasses.replace(dev.config.issue,
                                                                    schedulers_per_sm=2))
    assert_launch_same(monkeypatch, lambda: type(dev)(cfg, "sim:gtx260+2"),
                       T.grid_stride_copy, (8, 1, 1), (128, 1, 1), make, compiled=0)
