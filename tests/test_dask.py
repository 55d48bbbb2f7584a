"""Sweeps on a Dask cluster: `simgpu paper --scheduler ADDRESS` and run_points(points, Client).

One local cluster of two worker processes (one thread each) serves the module.
The numbers from the cluster must be those of the inline run, point for point,
and the cache files must be written here.
"""
import contextlib
import io
import json
import sys

import pytest

distributed = pytest.importorskip("distributed")

from simgpu_apps.cli import main                                        # noqa: E402
from simgpu_apps.experiments import (SIZES, Ctx, connected_components,  # noqa: E402
                                device_info, list_ranking, runner)

# the list-ranking tables made of simulated numbers only (equal on any executor)
LR_DETERMINISTIC = ("table2_rs_kernels", "table3_splitters", "table3_histogram", "table_p_choice")


@pytest.fixture(scope="module")
def cluster():
    # Without the workers' statistical profiler: a sampler that holds a returned
    # function's frame keeps its local arrays alive a moment longer, and the footprint
    # of the next allocation counts them (CI, 2026-11-27: cc_sim's allocator peak
    # 546,048 on the cluster against 545,792 inline; a frame-holding sampler thread
    # gives the same 546,048 inline). The simulated times and counts do not move.
    import dask
    with dask.config.set({"distributed.worker.profile.enabled": False}), \
            distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                     dashboard_address=None) as c:
        yield c


def tiny_points(k=6):
    """The k cheapest simulated points of the tiny plans, list ranking and connected components."""
    info = device_info("sim:gtx260")
    ctx = Ctx(device="sim:gtx260", count_device="sim:gtx260", host=runner.host_id(), info=info,
              sizes=SIZES["tiny"], size_name="tiny")
    pts = [p for mod in (list_ranking, connected_components) for p in mod.plan(ctx)
           if p.kind == "sim"]
    pts = sorted(dict.fromkeys(pts), key=lambda p: p.cost)
    lr = [p for p in pts if p.experiment == "lr_sim"][:k // 2]
    cc = [p for p in pts if p.experiment == "cc_sim"][:k - len(lr)]
    return lr + cc


def test_run_points_on_a_dask_cluster_matches_inline(cluster, tmp_path):
    points = tiny_points()
    assert {p.experiment for p in points} == {"lr_sim", "cc_sim"}
    version = runner.code_version()
    inline = runner.run_points(points, None, runner.Cache(tmp_path / "inline", version))
    cache = runner.Cache(tmp_path / "dask", version)
    errors = {}
    with distributed.Client(cluster) as client, distributed.get_task_stream(client) as ts:
        remote = runner.run_points(points, client, cache, errors=errors)
        workers = set(client.nthreads())
    assert not errors
    assert len(inline) == len(points) and remote == inline
    # every point ran as a task on a worker of the cluster, not in this process
    assert len(ts.data) == len(points)
    assert {t["worker"] for t in ts.data} <= workers
    for p in points:                     # written here, readable by the next run
        data = json.loads(cache.path(p).read_text())
        assert data["point"] == p.ident(version) and data["result"] == inline[p]
    again = runner.Cache(tmp_path / "dask", version)
    assert runner.run_points(points, None, again) == inline and again.hits == len(points)


def paper(out, *extra):
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = main(["paper", "--quick", "--tiny", "--only", "lr", "--out", str(out),
                     "--no-progress", *extra])
    return code, buf.getvalue(), err.getvalue()


def sim_results(out):
    """{point without the code version: result} of the simulated points in out/cache
    (keyed so, not by file name, so that the comparison says which point differs)."""
    res = {}
    for f in (out / "cache").rglob("*.json"):
        data = json.loads(f.read_text())
        if data["point"]["kind"] != "wall":
            point = {k: v for k, v in data["point"].items() if k != "version"}
            res[json.dumps(point, sort_keys=True)] = data["result"]
    return res


def test_paper_command_with_scheduler_gives_the_inline_numbers(cluster, tmp_path):
    a, b = tmp_path / "inline", tmp_path / "dask"
    code, _, err = paper(a)
    assert code == 0, err
    code, out, err = paper(b, "--scheduler", cluster.scheduler_address)
    assert code == 0, err
    assert f"on the Dask cluster at {cluster.scheduler_address} (2 workers, 2 threads)" in out
    ra, rb = sim_results(a), sim_results(b)
    assert ra and ra.keys() == rb.keys()
    for k in ra:     # (both values in the message: which side moved, if one ever does)
        assert ra[k] == rb[k], f"{k}: inline {ra[k]!r}, on the Dask cluster {rb[k]!r}"
    strip = lambda p: [line for line in p.read_text().splitlines() if not line.startswith("#")]
    for t in LR_DETERMINISTIC:
        assert strip(a / f"{t}.csv") == strip(b / f"{t}.csv"), t
    assert "Verdict [table2-rs3-vs-rs5]:" in (b / "report.md").read_text()


def test_workers_with_other_sources_are_refused(cluster):
    with pytest.raises(ValueError, match="run other simgpu sources"):
        runner.connect_dask(cluster.scheduler_address, "not-this-version", timeout=10)


def test_unreachable_scheduler_is_one_line(tmp_path, capsys):
    import dask.config
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code = main(["paper", "--quick", "--tiny", "--only", "lr", "--out", str(tmp_path),
                     "--no-progress", "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_without_dask_the_error_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)       # import distributed fails
    code = main(["paper", "--quick", "--tiny", "--out", str(tmp_path), "--no-progress",
                 "--scheduler", "tcp://127.0.0.1:8786"])
    err = capsys.readouterr().err
    assert code == 2 and "pip install 'simgpu[dask]'" in err
    assert len(err.strip().splitlines()) == 1


def test_scheduler_refuses_a_real_gpu(tmp_path, capsys, monkeypatch):
    import simgpu_apps.experiments as ex
    real = dict(device_info("sim:gtx260"), real=True)
    monkeypatch.setattr(ex, "device_info", lambda name: real)
    code = main(["paper", "--quick", "--tiny", "--device", "cuda", "--out", str(tmp_path),
                 "--no-progress", "--scheduler", "tcp://127.0.0.1:8786"])
    assert code == 2 and "simulated devices only" in capsys.readouterr().err


def test_a_failing_executor_fails_its_points_not_the_sweep(tmp_path):
    """A future that raises (a worker died, the scheduler could not unpickle the task)
    marks its point failed, uncached; the other points are kept."""
    class Future:
        def __init__(self, fn, args, broken):
            self.fn, self.args, self.broken = fn, args, broken

        def result(self):
            if self.broken:
                raise RuntimeError("KilledWorker: the worker died\nmore lines")
            return self.fn(*self.args)

    class HalfBroken:
        def __init__(self):
            self.calls = 0

        def submit(self, fn, *args):
            self.calls += 1
            return Future(fn, args, broken=self.calls == 1)

    pts = [runner.Point.make("lr_sim", "sim:gtx260", cost=n, method="wylie", n=n, input_seed=1)
           for n in (64, 128)]
    cache, errors = runner.Cache(tmp_path, "test"), {}
    res = runner.run_points(pts, HalfBroken(), cache, errors=errors)
    # costliest first: n=128 went first and broke
    assert set(res) == {pts[0]} and set(errors) == {pts[1]}
    assert errors[pts[1]] == "RuntimeError from the executor: KilledWorker: the worker died"
    assert cache.path(pts[0]).is_file() and not cache.path(pts[1]).exists()
