"""`simgpu paper` at the paper's sizes (issue 19): the size setting and its
estimate, footprints and capacity refusals, the knee finder, robust CPU
baselines and unstable verdicts, the derived cache fingerprint, and a run
that survives SIGKILL and resumes without recomputing anything."""
import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from simgpu_apps.cli import main
from simgpu_apps.experiments import (SIZES, Ctx, check_out, costs, fingerprint, knees,
                                     list_ranking as L, measure, runner)
from simgpu_apps.experiments.paper_document import unstable_margin

ROOT = Path(__file__).resolve().parents[1]


def _ctx(size="paper", real=False):
    info = dict(sm_count=27, cores=216, resident_threads=27 * 1024, gpu_name="GTX 260", real=real,
                config_key="gtx260", capacity=896 << 20)
    return Ctx("sim:gtx260", "sim:gtx260", "host:test", info, SIZES[size], size, real_gpu=real)


# --- the size setting and its estimate ---------------------------------------------

def test_paper_size_covers_the_papers_grid():
    pts = L.plan(_ctx())
    ns = {v: sorted(p.p["n"] for p in pts if p.experiment == "lr_sim" and p.p.get("threads") is None
                    and p.p["method"] == L.GPU_VARIANTS[v]["method"]
                    and p.p.get("packing") == L.GPU_VARIANTS[v].get("packing")
                    and p.p.get("splitters") == L.GPU_VARIANTS[v].get("splitters"))
          for v in ("rs64", "rs48")}
    ns["rs64p"] = sorted(p.p["n"] for p in pts if p.p.get("walk") == "paper")
    every_2m = list(range(40_000_000, 64_000_001, 2_000_000))
    for v in ("rs64", "rs48", "rs64p"):
        assert set(every_2m) <= set(ns[v]) and max(ns[v]) == 64_000_000
    from simgpu_apps.experiments import connected_components as C
    cc = C.plan(_ctx())
    assert max(p.p["m"] for p in cc if p.experiment == "cc_sim") == 8_000_000
    assert sum(p.p["m"] == 8_000_000 for p in cc if p.experiment == "cc_sim") >= 20   # Fig. 6


def test_estimate_counts_a_point_that_cannot_fit_as_refused_at_once():
    """896 MiB: 20n bytes of Wylie fit to ~46.9M nodes, 12n of the 64-bit splitter to 78M."""
    ctx = _ctx()
    wy = [L.sim_point(ctx, "wylie", n) for n in (32_000_000, 64_000_000)]
    assert wy[0].cost > 100 and wy[1].cost == costs.FIXED
    assert L.sim_point(ctx, "rs64", 64_000_000).cost > 100


def test_estimate_arithmetic():
    mk = lambda kind, cost, mem: runner.Point.make("lr_sim", "d", kind=kind, cost=cost, memory=mem,
                                                   n=int(cost * 1000 + mem))
    pts = [mk("sim", 10.0, 100), mk("sim", 30.0, 300), mk("sim", 20.0, 200), mk("wall", 5.0, 50)]
    one = costs.estimate(pts, 1)
    assert one == {"seconds": 65.0, "sim_seconds": 60.0, "wall_seconds": 5.0, "peak_bytes": 300}
    two = costs.estimate(pts, 2)
    assert two["seconds"] == 60.0 / 2 + 5.0 and two["peak_bytes"] == 300 + 200
    assert costs.estimate([], 4) == {"seconds": 0, "sim_seconds": 0, "wall_seconds": 0,
                                     "peak_bytes": 0.0}
    # a point's model: a + b n (Wylie a + b n log2 n)
    assert costs.lr_cost("rs64", 1000, False) == pytest.approx(
        costs.FIXED + costs.SIM_PER_NODE["rs64"] * 1000)
    assert costs.lr_cost("wylie", 1024, False) == pytest.approx(
        costs.FIXED + costs.SIM_WYLIE_PER_NODE_ROUND * 1024 * 10)
    # a random splitter with few threads: each walks n/p nodes (Sec. 3.2's sweep of p)
    assert costs.lr_cost("rs64", 1000, False, threads=10) == pytest.approx(
        costs.FIXED + costs.SIM_PER_NODE["rs64"] * 1000 + costs.SIM_PER_THREAD_NODE * 100)
    p_sweep = [costs.lr_cost("rs64", 16_000_000, False, threads=p) for p in (108, 216, 432, 13824)]
    assert p_sweep == sorted(p_sweep, reverse=True)
    assert costs.point_memory(10) == costs.MEM_BASE + 10 * costs.MEM_PER_NODE


def test_per_node_cost_grows_with_size_between_the_anchors_only():
    """growth(): 1 up to the first anchor, linear in log2(size) to the second, flat past
    it; the list and graph points' costs carry it (the estimate at the paper's sizes)."""
    anchors = ((22, 1.0), (26, 1.85))
    assert costs.growth(1 << 10, anchors) == costs.growth(1 << 22, anchors) == 1.0
    assert costs.growth(1 << 24, anchors) == pytest.approx(1.425)
    assert costs.growth(1 << 26, anchors) == costs.growth(1 << 30, anchors) == pytest.approx(1.85)
    sizes = [1 << k for k in range(10, 31)]
    g = [costs.growth(n, anchors) for n in sizes]
    assert g == sorted(g)
    n = 64_000_000
    assert costs.lr_cost("rs48", n, False) == pytest.approx(
        costs.FIXED + costs.SIM_PER_NODE["rs48"] * costs.growth(n, costs.LR_GROWTH) * n)
    m = 8_000_000
    assert costs.cc_cost("trees", m, "timed-block", False) == pytest.approx(
        costs.FIXED + costs.HOST_PER_EDGE * m
        + costs.SIM_PER_EDGE["trees"] * costs.growth(m, costs.CC_GROWTH) * m)
    # a list-ranking point's memory: its own model (fitted at 2^23 and 64M nodes), never
    # below the general one
    assert costs.lr_memory(64_000_000) == costs.LR_MEM_BASE + costs.LR_MEM_PER_NODE * 64e6
    for n in sizes:
        assert costs.lr_memory(n) >= costs.point_memory(n)


def test_estimate_is_printed_before_anything_runs(tmp_path):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["paper", "--size", "paper", "--estimate", "--out", str(tmp_path / "o")]) == 0
    text = buf.getvalue()
    assert re.search(r"estimated time ~\d+h\d\dm", text) and "peak host memory ~" in text
    assert "cost models" in text and not (tmp_path / "o").exists()


def test_quick_and_size_disagree_is_one_line(capsys):
    assert main(["paper", "--quick", "--size", "paper", "--estimate"]) == 2
    assert "disagree" in capsys.readouterr().err


# --- footprints and refusals ------------------------------------------------------

def _small_card(tmp_path, capacity: int) -> str:
    text = (ROOT / "simgpu/configs/gtx260.toml").read_text()
    text = re.sub(r"(?m)^global_memory_bytes\s*=\s*\d+", f"global_memory_bytes = {capacity}", text)
    path = tmp_path / "small.toml"
    path.write_text(text)
    return f"sim:{path}"


def test_a_point_that_does_not_fit_is_refused_not_simulated(tmp_path):
    """12n (random splitter, 64-bit) fits, 20n (Wylie) does not: the paper's 64M on 896 MB."""
    n = 1 << 17
    params = dict(L.GPU_VARIANTS["rs64"], n=n, input_seed=1, threads=None, seed=0)
    full = L.compute_sim(params, "sim:gtx260")
    # a card that holds the 64-bit random splitter with 2n to spare (its page tables are
    # smaller than the 896 MB card's, counted in allocator_peak_bytes), in whole 512 KiB
    # pages as real memory sizes are (the allocator does not use a partial page at the
    # top): less than 2n + a page = 6n to spare, so Wylie's 8n more cannot fit
    page = 512 * 1024
    dev = _small_card(tmp_path, -(-(full["allocator_peak_bytes"] + 2 * n) // page) * page)
    rs = L.compute_sim(params, dev)
    assert rs["correct"] and not rs.get("refused")
    # succ 4n + the packed words 8n, and the splitter arrays (tens of bytes per thread)
    assert 12 * n <= rs["footprint_bytes"] < 12 * n + 64 * rs["stats"]["threads"]
    wy = L.compute_sim(dict(L.GPU_VARIANTS["wylie"], n=n, input_seed=1), dev)
    assert wy["refused"] and "DeviceMemoryError" in wy["error"] and wy["time_ms"] is None
    assert wy["footprint_bytes"] > wy["capacity_bytes"] - (1 << 20)


def test_wylie_that_does_not_fit_is_refused_before_any_launch(tmp_path, monkeypatch):
    """The paper's Wylie at 64M nodes on the 896 MB card: its words (16 bytes a node) are
    allocated before the input check, so the refusal costs no simulated launch (it had
    simulated the whole check's scan first: 149 s at 64M nodes) and leaves the device
    as it was."""
    import gc

    import simgpu
    from algorithms import list_ranking
    n = 1 << 17                          # succ 0.5-1 MiB fits in 3 MiB with the page tables, the words' 2 MiB do not
    dev = simgpu.get_device(_small_card(tmp_path, 3 << 20))
    launches = []
    real_launch = dev.launch
    monkeypatch.setattr(dev, "launch", lambda *a, **k: launches.append(a) or real_launch(*a, **k))
    before = dev.memory.in_use
    succ = L.input_list(n, 1)
    with pytest.raises(simgpu.DeviceMemoryError, match="uint64"):
        list_ranking.rank(succ, method="wylie", device=dev, validate=False)
    gc.collect()
    assert launches == [] and dev.memory.in_use == before
    # the random splitter's 12 bytes a node fit, and its launches do run on that card
    r = list_ranking.rank(succ, method="random-splitter", device=dev, validate=False)
    assert launches and L.ranks_are_right(succ, r.ranks)


def test_memory_counts_read_every_integer_key():
    class Rep:
        def __init__(self, extra):
            self.extra = extra
    reps = [Rep({"tlb_walks": 3, "brand_new_counter": 5, "queue_max": 7, "partition_transactions": [10, 30],
                 "row_hit_rate": 0.75, "occupancy": 0.5, "step": "RS3"}),
            Rep({"tlb_walks": 4, "brand_new_counter": 1, "partition_transactions": [20, 20],
                 "row_hit_rate": 0.5})]
    out = measure.memory_counts(reps)
    assert out["tlb_walks"] == 7 and out["brand_new_counter"] == 6
    assert out["partition_transactions"] == 80 and out["dram_row_misses"] == 10 + 20
    assert "occupancy" not in out and "step" not in out and out["queue_max"] == 7


# --- knees ---------------------------------------------------------------------------

def test_crossing_is_interpolated():
    xs = [40, 44, 48, 52, 56, 60]
    a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    b = [1.5, 2.4, 3.3, 3.8, 4.4, 5.0]     # a - b: -0.5 -0.4 -0.3 +0.2 ...: crosses in 48..52
    (x, d), = knees.crossing(xs, a, b)
    assert x == pytest.approx(48 + 4 * 0.3 / 0.5) and d == "a above b after"
    assert knees.crossing(xs, a, [v + 1 for v in a]) == []


def test_hinge_finds_a_bend_and_not_a_line():
    xs = list(range(40, 66, 2))
    bend = [x if x <= 50 else 50 + 2.5 * (x - 50) for x in xs]
    k = knees.hinge(xs, bend)
    assert k["inflection"] and k["knee"] == 50 and k["ratio"] == pytest.approx(2.5)
    rng = np.random.default_rng(0)
    line = [2 * x + 1 + rng.normal(0, 0.01) for x in xs]
    assert not knees.hinge(xs, line)["inflection"]
    assert knees.hinge(xs[:4], line[:4]) == {}


# --- robust CPU baselines --------------------------------------------------------------

def test_cpu_times_take_the_minimum_and_report_the_spread():
    calls = []
    out = measure.cpu_times(lambda: calls.append(sum(range(20000))), 4, "cpu")
    assert len(out["times_ms"]) == 4 and len(calls) == 5           # a short run: warm-up first
    assert out["ms"] == min(out["cpu_times_ms"]) and out["measure"] == "process CPU time"
    t = out["cpu_times_ms"]
    assert out["spread"] == pytest.approx((max(t) - min(t)) / min(t))
    assert os.environ["OMP_NUM_THREADS"] == "1"


def test_unstable_when_a_threshold_lies_inside_the_spread():
    assert unstable_margin(9.0, 0.2, (1, 10, 40)) != ""            # 9 .. 10.8 holds 10
    assert unstable_margin(12.0, 0.2, (1, 10, 40)) == ""           # 12 .. 14.4
    assert "threshold 2" in unstable_margin(1.9, 0.1, (2,))


# --- the cache fingerprint, derived from the sources ----------------------------------

ENTRIES = {"simgpu_apps.experiments.list_ranking": ["compute_sim", "compute_wall"],
           "simgpu_apps.experiments.connected_components": ["compute_sim", "compute_wall"]}


def _changed(path_end: str, old: str, new: str):
    def read(p):
        text = Path(p).read_text()
        if str(p).endswith(path_end):
            assert old in text, (path_end, old)
            text = text.replace(old, new, 1)
        return text
    return read


def test_fingerprint_follows_the_code_the_numbers_use():
    base = fingerprint.fingerprint(ENTRIES)
    _, files = fingerprint.dependencies(ENTRIES)
    names = {str(f.relative_to(fingerprint.ROOT)) for f in files}
    assert {"algorithms/list_ranking/random_splitter.py", "simgpu/mem/tlb.py",
            "simgpu/configs/gtx260.toml", "simgpu_apps/experiments/measure.py"} <= names
    assert "simgpu_apps/cli.py" not in names and "cuda_backend/device.py" not in names
    # a function the numbers use, in a module reached only through imports
    used = _changed("algorithms/list_ranking/random_splitter.py", "def rank_splitters(",
                    "def rank_splitters(  ")
    assert fingerprint.fingerprint(ENTRIES, read=used) != base
    # a helper of the compute function, in the experiment module itself
    helper = _changed("experiments/list_ranking.py", "tail = succ == np.arange(len(succ))",
                      "tail = succ == np.arange(succ.size)")
    assert fingerprint.fingerprint(ENTRIES, read=helper) != base
    # the analysis (verdicts) is not part of it: no recomputation for a changed verdict
    verdict = _changed("experiments/list_ranking.py", "10 <= S <= 40", "10 <= S <= 41")
    assert fingerprint.fingerprint(ENTRIES, read=verdict) == base
    assert fingerprint.fingerprint(ENTRIES, ("cuda_backend",)) != base
    assert runner.code_version().endswith(base)


# --- the output folder, interruption and resumption -------------------------------------

def test_an_earlier_run_is_not_overwritten(tmp_path):
    assert check_out(tmp_path / "new", False) == "new"
    (tmp_path / "run" / "cache").mkdir(parents=True)
    assert check_out(tmp_path / "run", False) == "resume"
    (tmp_path / "run" / "report.md").write_text("x")
    with pytest.raises(ValueError, match="--overwrite"):
        check_out(tmp_path / "run", False)
    assert check_out(tmp_path / "run", True) == "overwrite"
    (tmp_path / "run" / "INTERRUPTED").write_text("x")       # a partial report: resumed
    assert check_out(tmp_path / "run", False) == "resume"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="holds no simgpu paper output"):
        check_out(tmp_path / "other", False)


def _entries(out: Path) -> dict:
    return {f: (f.stat().st_mtime_ns, f.read_text()) for f in (out / "cache").rglob("*.json")}


def test_sigkill_mid_run_then_resume_recomputes_nothing(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "simgpu_apps.cli", "paper", "--quick", "--tiny", "--only", "lr",
           "--out", str(out), "--no-progress"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and len(list((out / "cache").rglob("*.json"))) < 4:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)                # mid-run, most likely mid-point
    finally:
        proc.wait()
    before = _entries(out)
    assert 4 <= len(before) and not (out / "report.md").exists()
    for f, (_, text) in before.items():                  # no entry half-written
        assert json.loads(text)["result"] is not None, f
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "resuming the interrupted run" in done.stdout
    m = re.search(r"\((\d+) of (\d+) points from the cache\)", done.stdout)
    assert m and int(m.group(1)) == len(before)
    after = _entries(out)
    for f, stamp in before.items():                      # nothing recomputed or rewritten
        assert after[f] == stamp, f
    assert len(after) == int(m.group(2))


def test_crossing_claim_at_the_papers_sizes():
    """Synthetic curves with the paper's shape: a crossing at 54M, knees at 46M and 58M."""
    from simgpu_apps.experiments.fig3_right import _crossing_claim
    ns = list(range(40_000_000, 64_000_001, 2_000_000))
    m = lambda n: n / 1e6
    t64 = {n: m(n) if n <= 46e6 else 46 + 3 * (m(n) - 46) for n in ns}        # 70 at 54M
    t48 = {n: 1.1 * m(n) + 10.6 if n <= 58e6 else 74.4 + 4 * (m(n) - 58) for n in ns}
    c = _crossing_claim(ns, t64, t48, {})
    assert c.verdict == "held", c.numbers
    flat = {n: n / 1e6 for n in ns}
    c = _crossing_claim(ns, flat, {n: v * 1.1 for n, v in flat.items()}, {})
    assert c.verdict == "not held" and "needs a cost that grows" in c.numbers
    assert _crossing_claim(ns[:3], t64, t48, {}).verdict == "not tested"


def test_fig3_right_judges_the_papers_two_versions():
    """The claims compare the paper's 64-bit accesses (rs64p) with its 48-bit version; the
    fused walk (rs64) is drawn and tabled beside them but judged on nothing."""
    from simgpu_apps.experiments.fig3_right import fig3_right
    ctx = _ctx()
    ns = list(range(40_000_000, 64_000_001, 2_000_000))
    m = lambda n: n / 1e6
    curves = {"rs64p": {n: m(n) if n <= 46e6 else 46 + 3 * (m(n) - 46) for n in ns},
              "rs48": {n: 1.1 * m(n) + 10.6 if n <= 58e6 else 74.4 + 4 * (m(n) - 58) for n in ns},
              "rs64": {n: 0.5 * m(n) for n in ns}}          # always fastest: no crossing
    res = {L.sim_point(ctx, v, n): {"time_ms": t[n], "steps": {"RS3": {"time_ms": t[n]}}}
           for v, t in curves.items() for n in ns}
    sec = fig3_right(ctx, res, ns, {}, L)
    claims = {c.id: c for c in sec.claims}
    assert claims["fig3r-crossing-inflection"].verdict == "held"
    assert claims["fig3r-64-beats-48"].verdict == "held"
    assert len(sec.figures[0].panels[0].series) == 3
    assert sorted({row[1] for row in sec.tables[0].rows}) == ["48", "64", "64p"]


def test_ctrl_c_writes_a_partial_report_and_the_rerun_completes_it(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "simgpu_apps.cli", "paper", "--quick", "--tiny", "--only", "lr",
           "--out", str(out), "--no-progress"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    deadline = time.time() + 120
    while time.time() < deadline and len(list((out / "cache").rglob("*.json"))) < 3:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted" in stdout
    assert "**interrupted**" in (out / "report.md").read_text() and (out / "INTERRUPTED").exists()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "resuming the interrupted run" in done.stdout, done.stderr
    assert "**interrupted**" not in (out / "report.md").read_text()
    assert not (out / "INTERRUPTED").exists()


def test_a_beside_verdict_is_named_once(tmp_path):
    """--beside REPORT: each claim's section names the earlier verdict once ("verdict in
    REPORT: held"; it had read "verdict in verdict in REPORT")."""
    from simgpu_apps.experiments.paper_document import Claim, Section, write_paper_report
    claim = Claim("fig2-gpu-vs-cpu", "Fig. 2", "about 20x", "10 <= S <= 40", "held", "S = 12")
    meta = dict(device="sim:gtx260", device_desc="d", date="2026-11-27", script="s", size_name="paper",
                host_desc="h", time_notes=[],
                beside={"label": "verdict in docs/paper/report.md", "verdicts": {claim.id: "partly held"}})
    run_info = dict(points=1, cached=1, computed=0, failed=0, elapsed="1s", figures_note="", pngs=())
    text = write_paper_report([Section("fig2", "Fig. 2", claims=[claim])], tmp_path, meta, run_info).read_text()
    assert "- verdict in docs/paper/report.md: partly held" in text
    assert "verdict in verdict in" not in text
