"""`simgpu paper`: the frame of the paper's experiments (tiny sizes, sim:gtx260).

One module-scoped run writes everything into a temporary folder; a second run
must come from the cache, and a run with --jobs 2 must give the same numbers.
"""
import contextlib
import csv
import io
import importlib.util
import json
import re
import time
from pathlib import Path

import pytest

from simgpu_apps.cli import main
from simgpu_apps.experiments import runner

CLAIMS = ("fig2-gpu-vs-cpu", "fig3l-per-element", "fig3r-64-beats-48", "fig3r-crossing-inflection",
          "table2-rs3-vs-rs5", "table3-random-vs-even", "p-small-factor-of-cores",
          "fig4-gpu-vs-cpu", "fig4-family-order", "fig5-saturation", "fig6-rounds",
          "fig6-sv2-sv3-dominate", "fig6-work-order", "sv-round-bound", "table4-reads",
          "table4-writes")
TABLES = ("fig2_numbers", "table2_rs_kernels", "table3_splitters", "table3_histogram",
          "table_p_choice", "fig4_cc_numbers", "fig5_cc_numbers", "fig6_cc_numbers",
          "table4_sv_counts")
FIGURES = ("fig2_list_ranking_time", "fig3_left_time_per_element", "fig3_right_packing",
           "fig4_cc_time", "fig5_cc_speedup", "fig6_cc_rounds_kernels")
# tables made of simulated numbers only (no wall-clock column): equal for any --jobs
DETERMINISTIC = ("table2_rs_kernels", "table3_splitters", "table3_histogram", "table_p_choice",
                 "fig5_cc_numbers", "fig6_cc_numbers", "table4_sv_counts")
HAVE_MPL = importlib.util.find_spec("matplotlib") is not None
VERDICT = re.compile(r"^Verdict \[([\w-]+)\]: (held|partly held|not held|not tested|not available)$",
                     re.M)


def paper(out, *extra):
    """Run the command in this process; returns (stdout, seconds)."""
    buf, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = main(["paper", "--quick", "--tiny", "--out", str(out), "--no-progress", *extra])
    took = time.perf_counter() - t0
    assert code == 0, err.getvalue()
    return buf.getvalue(), took


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(first run, second run, --jobs 2 run): (folder, stdout, seconds) each."""
    a, b = tmp_path_factory.mktemp("paper_j1"), tmp_path_factory.mktemp("paper_j2")
    first = (a, *paper(a))
    second = (a, *paper(a, "--overwrite"))
    jobs2 = (b, *paper(b, "--jobs", "2"))
    return first, second, jobs2


def test_every_file_is_written(runs):
    out, stdout, _ = runs[0]
    assert (out / "report.md").is_file()
    for t in TABLES:
        assert (out / f"{t}.md").is_file() and (out / f"{t}.csv").is_file(), t
    for f in FIGURES:
        assert (out / f"{f}.csv").is_file(), f
        assert (out / f"{f}.png").is_file() == HAVE_MPL, f
    if not HAVE_MPL:
        assert "skipped" in (out / "report.md").read_text()


def test_each_claim_has_a_verdict_line(runs):
    out, stdout, _ = runs[0]
    text = (out / "report.md").read_text()
    found = dict(VERDICT.findall(text))
    assert set(CLAIMS) <= set(found), set(CLAIMS) - set(found)
    for c in CLAIMS:                       # also printed by the command
        assert f"Verdict [{c}]: {found[c]}" in stdout
    assert "this machine" in text and "Core 2 Quad" in text      # the CPU caveat


def test_tables_name_device_date_script_and_sizes(runs):
    out, _, _ = runs[0]
    today = time.strftime("%Y-%m-%d")
    for t in TABLES:
        md = (out / f"{t}.md").read_text()
        head = "".join(line for line in (out / f"{t}.csv").read_text().splitlines(True)
                       if line.startswith("#"))
        for text in (md, head):
            assert "sim:gtx260" in text and "simgpu paper" in text and today in text
            assert "sizes:" in text
        rows = list(csv.reader(line for line in (out / f"{t}.csv").read_text().splitlines()
                               if not line.startswith("#")))
        assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows), t


def test_second_run_comes_from_the_cache(runs):
    (a, _, first), (a2, stdout, second) = runs[0], runs[1]
    m = re.search(r"\((\d+) of (\d+) points from the cache\)", stdout)
    assert m and m.group(1) == m.group(2), stdout[-300:]
    assert second < first
    assert list((a / "cache").rglob("*.json"))


def _sim_results(out: Path) -> dict:
    res = {}
    for f in (out / "cache").rglob("*.json"):
        data = json.loads(f.read_text())
        if data["point"]["kind"] != "wall":
            res[f.relative_to(out)] = data["result"]
    return res


def test_jobs_2_gives_the_same_numbers(runs):
    (a, _, _), (b, stdout, _) = runs[0], runs[2]
    ra, rb = _sim_results(a), _sim_results(b)
    assert ra and ra.keys() == rb.keys()
    for k in ra:
        assert ra[k] == rb[k], k
    strip = lambda p: [line for line in p.read_text().splitlines() if not line.startswith("#")]
    for t in DETERMINISTIC:
        assert strip(a / f"{t}.csv") == strip(b / f"{t}.csv"), t
    verdicts = lambda out: [v for v in VERDICT.findall((out / "report.md").read_text())
                            if not v[0].startswith(("fig2", "fig4-gpu"))]   # wall-clock claims
    assert verdicts(a) == verdicts(b)


def test_cc_missing_is_reported_not_available(tmp_path, monkeypatch):
    from simgpu_apps.experiments import connected_components as ccx
    monkeypatch.setattr(ccx, "available", lambda: "ImportError: being written")
    paper(tmp_path, "--only", "cc")
    text = (tmp_path / "report.md").read_text()
    assert "not available" in text and "being written" in text
    assert "Verdict [fig5-saturation]: not available" in text


def test_run_points_takes_any_executor(tmp_path):
    """A Dask-like executor: submit(fn, *args) -> future with .result()."""
    class Future:
        def __init__(self, value):
            self.value = value

        def result(self):
            return self.value

    class Inline:
        submitted = 0

        def submit(self, fn, *args):
            Inline.submitted += 1
            return Future(fn(*args))

    pts = [runner.Point.make("lr_sim", "sim:gtx260", method="wylie", n=n, input_seed=1)
           for n in (64, 128)]
    cache = runner.Cache(tmp_path, "test")
    res = runner.run_points(pts + pts[:1], Inline(), cache)
    assert Inline.submitted == 2 and set(res) == set(pts)
    assert all(r["correct"] and r["time_ms"] > 0 for r in res.values())
    again = runner.run_points(pts, Inline(), cache)
    assert Inline.submitted == 2 and again == res and cache.hits == 2


def test_bad_jobs_is_one_line(capsys):
    assert main(["paper", "--jobs", "0"]) == 2
    err = capsys.readouterr().err
    assert "--jobs must be >= 1" in err and "Traceback" not in err


def test_cc_figures_time_and_count_the_sv_kernels_only():
    """The driver's helper kernels (edge upload, labels) run too, but the paper's
    figures and Table 4 are about SV0..SV5: time_ms is their sum alone."""
    from algorithms import connected_components as cc
    import simgpu
    from simgpu_apps.experiments import connected_components as E
    params = dict(graph="trees", arg=2, m=256, seed=E.GRAPH_SEED, blocks=None,
                  engine="timed-block", components=E.COMPONENTS)
    out = E.compute_sim(params, "sim:gtx260")
    assert out["correct"] and set(out["kernels"]) <= set(E.KERNELS)
    assert out["time_ms"] == pytest.approx(sum(k["time_ms"] for k in out["kernels"].values()))
    n, edges = E.build_graph("trees", 256, 2, E.GRAPH_SEED)
    dev = simgpu.get_device("sim:gtx260")
    dev.default_engine = "timed-block"
    launched = {rep.kernel for rep in cc.label(n, edges, device=dev).launches}
    assert launched - set(E.KERNELS)                 # helpers ran, and are left out above
