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
