"""The coalescing class's scripts: simgpu_apps.lessons.striding, .packing, .splitter_kernels.

Each runs at a tiny size into a temporary folder.  The numbers it prints are
held against LaunchReports of the same measurement made here again through the
public API (fresh device, same seed: the simulator is deterministic), and the
lesson's point is checked on those reports, not against figures written here.
"""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import simgpu
from algorithms import generators, list_ranking
from simgpu_apps.lessons import _lesson, packing, splitter_kernels, striding
from simgpu_apps.lessons.coalescing import copy_partitioning, copy_striding

HAVE_MPL = importlib.util.find_spec("matplotlib") is not None
ROOT = Path(__file__).resolve().parents[1]
STEPS = ("RS1", "RS2", "RS3", "RS4", "RS5")


def rows_of(text: str, first: tuple) -> list:
    """The whitespace-split rows of the printed tables (lines not indented) whose first
    cell is in `first`."""
    return [line.split() for line in text.splitlines()
            if line[:1].strip() and line.split()[0] in first]


def sums(reports) -> dict:
    """Report fields summed here, independently of the scripts' helpers."""
    out = dict(instructions=0, accesses=0, transactions=0, bytes=0, wanted=0, time=0.0)
    for r in reports:
        out["time"] += r.time_ms
        for c in (r.loads, r.stores, r.atomics):
            out["instructions"] += c.instructions
            out["accesses"] += c.lanes
            out["transactions"] += c.transactions
            out["bytes"] += c.bytes
            out["wanted"] += c.bytes_requested
    return out


def check_png(out: Path, name: str, stdout: str):
    png = out / name
    if HAVE_MPL:
        assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"picture written to {png}" in stdout
    else:
        assert not png.exists() and _lesson.PLOT_MISSING in stdout


def rank(n, bits):
    dev = simgpu.get_device("sim:gtx260")
    dev.default_engine = "timed-block"
    return list_ranking.rank(generators.random_list(n, 1), method="random-splitter",
                             packing=bits, device=dev)


def test_striding_lesson(tmp_path, capsys):
    sizes = (8192, 16384)           # 6,912 threads: 2 and 3 words per thread
    assert striding.main(["--sizes", *map(str, sizes), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    check_png(tmp_path, "striding_gtx260.png", out)
    printed = {(r[0], r[1]): r for r in rows_of(out, ("striding", "partitioning"))}
    for n in sizes:
        got = {}
        for name, kern in (("striding", copy_striding), ("partitioning", copy_partitioning)):
            dev = simgpu.get_device("sim:gtx260")
            src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
            rep = dev.launch(kern, dev.config.gpu.sm_count, 256, src, dst, n, engine="timed")
            s = got[name] = sums([rep])
            want = [name, f"{n:,}", f"{-(-n // (dev.config.gpu.sm_count * 256)):,}",
                    f"{s['transactions']:,}", f"{s['bytes']:,}", f"{s['wanted']:,}",
                    _lesson.cell(s["wanted"] / s["bytes"]), _lesson.cell(s["time"])]
            assert printed[(name, f"{n:,}")] == want
        a, b = got["striding"], got["partitioning"]
        assert a["wanted"] == b["wanted"]                     # the same bytes wanted ...
        assert b["bytes"] > a["bytes"] and b["transactions"] >= a["transactions"]  # ... moved worse
        assert a["wanted"] == a["bytes"]                      # striding: every byte moved is wanted
        assert (f"n = {n:,}: partitioning made {b['transactions'] / a['transactions']:.2f}x the "
                f"transactions of striding, moved {b['bytes'] / a['bytes']:.2f}x the bytes and took "
                f"{b['time'] / a['time']:.2f}x the time") in out
    assert "half-warp 0 (lanes 0-15)" in out                # the text picture of the first warp


def test_packing_lesson(tmp_path, capsys):
    sizes = (1024, 4096)
    assert packing.main(["--sizes", *map(str, sizes), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    check_png(tmp_path, "packing_gtx260.png", out)
    printed = {(r[0], r[1]): r for r in rows_of(out, tuple(f"{n:,}" for n in sizes))}
    per_step = {(r[0], r[1]): r for r in rows_of(out, STEPS)}
    walk = {}
    for n in sizes:
        t = {}
        for bits in (64, 48):
            r = rank(n, bits)
            s = t[bits] = sums(r.launches)
            walk[bits] = sums(x for x in r.launches if x.extra["step"] == "RS3")
            assert printed[(f"{n:,}", str(bits))] == [
                f"{n:,}", str(bits), f"{r.stats['threads']:,}", f"{s['instructions']:,}",
                f"{s['accesses']:,}", f"{s['transactions']:,}", f"{s['bytes']:,}",
                _lesson.cell(s["time"])]
            if n == sizes[-1]:                               # the per-step table
                for step in STEPS:
                    st = sums(x for x in r.launches if x.extra["step"] == step)
                    assert per_step[(step, str(bits))] == [
                        step, str(bits), f"{st['accesses']:,}", f"{st['transactions']:,}",
                        f"{st['bytes']:,}", _lesson.cell(st["time"])]
        faster = "64-bit" if t[64]["time"] < t[48]["time"] else "48-bit"
        assert (f"n = {n:,}: accesses {t[48]['accesses'] / t[64]['accesses']:.2f}x, transactions "
                f"{t[48]['transactions'] / t[64]['transactions']:.2f}x") in out
        assert f"time {t[48]['time'] / t[64]['time']:.2f}x: the {faster} version is faster" in out
    # the layouts: the walk (RS3) of the 48-bit version, with owner and rank in two arrays,
    # makes more accesses than the packed 64-bit one (largest n)
    assert walk[48]["accesses"] > walk[64]["accesses"]


def test_splitter_kernels_lesson(tmp_path, capsys):
    n = 2048
    assert splitter_kernels.main(["-n", str(n), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    check_png(tmp_path, "splitter_kernels_gtx260.png", out)
    r = rank(n, 64)
    steps = {s: sums(x for x in r.launches if x.extra["step"] == s) for s in STEPS}
    total = sum(s["time"] for s in steps.values())
    printed = {row[0]: row for row in rows_of(out, STEPS)}
    for name, s in steps.items():
        assert printed[name] == [
            name, "1", f"{s['accesses']:,}", _lesson.cell(s["accesses"] / n),
            f"{s['transactions']:,}", _lesson.cell(s["transactions"] / s["accesses"]),
            f"{s['bytes']:,}", _lesson.cell(s["wanted"] / s["bytes"]), _lesson.cell(s["time"]),
            _lesson.cell(100 * s["time"] / total)]
    rs3, rs5 = steps["RS3"], steps["RS5"]
    # the lesson, from these reports: both steps touch every node a few times ...
    assert n <= rs3["accesses"] <= 5 * n and n <= rs5["accesses"] <= 5 * n
    # ... but the walk's accesses are far less coalesced, and it costs more
    assert rs3["transactions"] / rs3["accesses"] > 2 * rs5["transactions"] / rs5["accesses"]
    assert rs3["transactions"] > rs5["transactions"] and rs3["time"] > rs5["time"]
    assert (f"RS3 took {rs3['time'] / rs5['time']:.1f}x the time of RS5 and made "
            f"{rs3['transactions'] / rs5['transactions']:.1f}x its transactions") in out
    # the per-line tables add up to the step's counts
    for step in ("RS3", "RS5"):
        lines = splitter_kernels.line_rows(r.launches, step)
        assert sum(row[3] for row in lines) == steps[step]["transactions"]
        assert f"{step}, by source line:" in out


def test_without_matplotlib_the_numbers_still_come(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)       # as if it were not installed
    assert splitter_kernels.main(["-n", "1024", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert _lesson.PLOT_MISSING in out and "RS3 took" in out
    assert not list(tmp_path.glob("*.png"))


@pytest.mark.parametrize("argv", [["--device", "cuda"], ["--device", "sim:nonexistent"]])
def test_bad_device_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as e:
        packing.main(argv + ["--no-plot"])
    assert e.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_runnable_with_python_m():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    for name in ("striding", "packing", "splitter_kernels"):
        p = subprocess.run([sys.executable, "-m", f"simgpu_apps.lessons.{name}", "--help"], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert f"python -m simgpu_apps.lessons.{name}" in p.stdout and "--device" in p.stdout


# --- offsetCopy / strideCopy ------------------------------------------------------------

# Efficiencies from the coalescing rules as the CUDA C Programming Guide states them
# (worked by hand, 4-byte words, loads and stores alike):
# CC 1.3, offset k words: an even half-warp reads 64 B inside one 128 B segment (128 B
# moved for k != 0 mod 16); an odd one straddles two segments: the upper part of one
# (64 B, or 32 B for k >= 8) and the lower part of the next (32 B for k <= 8, else 64 B).
# Sector GPUs: 4 sectors per warp, 5 when 4k is not a multiple of 32.
# CC 1.3, stride s: a half-warp's 16 words lie 4s bytes apart: s = 2 -> one 128 B
# segment; 4 -> two of 128 B; 8 -> four of 128 B; 16 -> eight of 128 B (lanes at 0 and
# 64 of each); 32 -> sixteen, each shrunk to 32 B.  Sector GPUs: min(32, 4s) sectors
# of 32 B per warp for 128 B wanted.
OFFSET_EFFICIENCY = {
    "sim:gtx260": {0: 1, 1: 128 / 224, 2: 128 / 224, 4: 128 / 224, 8: 128 / 192,
                   15: 128 / 224, 16: 1, 32: 1},
    "sim:h100": {0: 1, 1: 0.8, 2: 0.8, 4: 0.8, 8: 1, 15: 0.8, 16: 1, 32: 1},
}
STRIDE_EFFICIENCY = {
    "sim:gtx260": {1: 1, 2: 0.5, 4: 0.25, 8: 0.125, 16: 0.0625, 32: 0.125},
    "sim:h100": {1: 1, 2: 0.5, 4: 0.25, 8: 0.125, 16: 0.125, 32: 0.125},
}


def test_offset_stride_lesson_prints_the_guides_efficiencies(tmp_path):
    import io
    from simgpu_apps.lessons import offset_stride as OS
    buf = io.StringIO()
    result = OS.run(("sim:gtx260", "sim:h100"), tmp_path, plot=False, threads=512, stream=buf)
    text = buf.getvalue()
    assert "strideCopy" in text and "the opposite" in text      # the naming warning
    rows = rows_of(text, ("offsetCopy", "strideCopy"))
    assert len(rows) == 2 * (len(OS.OFFSETS) + len(OS.STRIDES))
    printed = iter(rows)
    for device in ("sim:gtx260", "sim:h100"):
        for kind, expect in (("offset", OFFSET_EFFICIENCY), ("stride", STRIDE_EFFICIENCY)):
            for k, rep in result[device][kind].items():
                s = sums([rep])
                assert s["wanted"] / s["bytes"] == pytest.approx(expect[device][k])
                again = OS.measure(device, kind, k, 512)       # the public API, again
                assert sums([again]) == s
                r = next(printed)
                assert r[:6] == [f"{kind}Copy", str(k), _lesson.cell(s["transactions"]),
                                 _lesson.cell(s["bytes"]), _lesson.cell(s["wanted"]),
                                 _lesson.cell(s["wanted"] / s["bytes"])]
    # the lesson's point on CC 1.3: stride 16 moves more than stride 32
    g = result["sim:gtx260"]["stride"]
    assert sums([g[16]])["bytes"] > sums([g[32]])["bytes"]


# --- exercises: the hand-worked answers against the simulator's coalescer -----------------

def test_every_exercise_answer_is_what_the_simulator_does():
    from simgpu_apps.lessons.exercises import EXERCISES
    for e in EXERCISES:
        assert e.simulated() == (e.transactions, e.bytes), e.question


def test_exercises_print_questions_then_answers(capsys):
    from simgpu_apps.lessons import exercises
    exercises.main([])
    out = capsys.readouterr().out
    assert "1. CC 1.3" in out and "answer:" not in out
    exercises.main(["--answers"])
    out = capsys.readouterr().out
    assert out.count("answer:") == len(exercises.EXERCISES)
    assert "answer: 3 transactions, 224 bytes" in out


# --- the step-by-step view ----------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.data())
def test_step_by_step_view_issues_the_coalescers_transactions(data):
    from simgpu.mem.coalesce import transactions
    from simgpu.mem.explain_steps import step_transactions
    ws = data.draw(st.sampled_from([1, 2, 4, 8, 16]))
    arch = data.draw(st.sampled_from(["sm_10", "sm_11", "sm_12", "sm_13", "sm_20", "sm_90"]))
    words = data.draw(st.lists(st.integers(0, 80), min_size=32, max_size=32))
    active = data.draw(st.lists(st.booleans(), min_size=32, max_size=32))
    addr = np.array(words, dtype=np.int64) * ws
    lines, txns = step_transactions(addr, ws, arch, active)
    assert txns == transactions(addr, ws, arch, active)
    if any(active):
        assert lines[-1].startswith("result: ")


# --- the memory chart -----------------------------------------------------------------------

def test_memory_chart_shows_the_reports_figures(tmp_path):
    from simgpu_apps.lessons.memory_chart import chart, plot_chart
    dev = simgpu.get_device("sim:h100")
    n = 4096
    src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
    rep = dev.launch(copy_partitioning, 4, 128, src, dst, n, engine="timed")
    text = chart(rep)
    req = rep.loads.requests + rep.stores.requests
    txn = rep.loads.transactions + rep.stores.transactions
    lines = {line.split()[0]: line for line in text.splitlines()[1:] if line.split()[0] != "|"}
    assert f"{req:,}" in lines["requests"] and f"{txn:,}" in lines["transactions"]
    assert f"{rep.extra['l1_hit_rate']:.1%} hit" in lines["L1"]
    assert f"{rep.extra['l2_hit_rate']:.1%} hit" in lines["L2"]
    assert f"{rep.extra['dram_bytes']:,} B" in lines["DRAM"]
    lock = dev.launch(copy_partitioning, 4, 128, src, dst, n, engine="lockstep")
    assert "no L2 figures" in chart(lock) and "no DRAM figures" in chart(lock)
    if HAVE_MPL:
        plot_chart(rep, str(tmp_path / "chart.png"))
        assert (tmp_path / "chart.png").read_bytes()[:4] == b"\x89PNG"
