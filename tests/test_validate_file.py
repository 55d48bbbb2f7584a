"""simgpu validate FILE.py beyond the simulator pair: ncu's counts (with a stand-in ncu),
the note where ncu is missing, the scatter plot, the GPU's launch-overhead line."""
import json
import math
import os
import pathlib
import stat
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from simgpu.report import LaunchReport
from simgpu_apps import compare_ncu, scatter_svg, validate_file
from simgpu_apps.compare import Comparison, compare, summary_markdown
from simgpu_apps.gpu_tools.ncu_csv import LaunchCounts

from .test_compare import CASES_FILE, double

SVG = "{http://www.w3.org/2000/svg}"


def fake(name, a_ms, b_ms):
    return Comparison(name, ("sim:h100 (timed-block)", "cuda:0 (cuda)"), name=name,
                      times_ms=(a_ms, b_ms))


def _inverse(svg_root):
    """Map SVG coordinates back to (x ms, y ms) from the plot's decade ticks."""
    lo_hi = [float(t.text) for t in svg_root.iter(SVG + "text")
             if t.get("text-anchor") == "middle" and t.get("id") is None and t.text]
    lo, hi = math.log10(min(lo_hi)), math.log10(max(lo_hi))
    L, T = scatter_svg.LEFT, scatter_svg.TOP
    pw = scatter_svg.W - scatter_svg.LEFT - scatter_svg.RIGHT
    ph = scatter_svg.H - scatter_svg.TOP - scatter_svg.BOTTOM
    return lambda px, py: (10 ** (lo + (px - L) / pw * (hi - lo)),
                           10 ** (lo + (T + ph - py) / ph * (hi - lo)))


def test_the_scatter_has_a_point_per_timed_case_the_band_and_labels(tmp_path):
    results = [fake("a", 0.010, 0.011), fake("b", 0.2, 0.1), fake("c", 1.0, 0.9),
               fake("untimed", None, 0.5)]
    path = tmp_path / "t.svg"
    assert scatter_svg.write_svg(results, path) == 3
    root = ET.parse(path).getroot()
    to_ms = _inverse(root)
    points = root.findall(f".//{SVG}g[@id='points']/{SVG}circle")
    assert len(points) == 3
    got = sorted(to_ms(float(c.get("cx")), float(c.get("cy"))) for c in points)
    for (x, y), r in zip(got, sorted([(0.011, 0.010), (0.1, 0.2), (0.9, 1.0)])):
        assert x == pytest.approx(r[0], rel=0.01) and y == pytest.approx(r[1], rel=0.01)
    # red outside the band, blue inside: b is 2x off, a (0.91) and c (1.11) within 15%
    colours = {c.find(SVG + "title").text.split(":")[0]: c.get("fill") for c in points}
    assert colours["b"] != colours["a"] == colours["c"]
    band = root.find(f".//{SVG}polygon[@id='band15']")
    corners = [to_ms(*map(float, p.split(","))) for p in band.get("points").split()]
    assert sorted(round(y / x, 3) for x, y in corners) == [0.85, 0.85, 1.15, 1.15]
    assert root.find(f".//{SVG}line[@id='identity']") is not None
    assert "cuda:0" in root.find(f".//{SVG}text[@id='xlabel']").text
    assert "sim:h100" in root.find(f".//{SVG}text[@id='ylabel']").text
    assert "2 of 3 cases within 15%" in root.find(f".//{SVG}text[@id='title']").text


def test_a_plot_without_times_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no case has a time on both devices"):
        scatter_svg.write_svg([fake("x", None, 1.0)], tmp_path / "t.svg")


@pytest.fixture
def cases_file(tmp_path):
    path = tmp_path / "cases_plot.py"
    path.write_text(CASES_FILE)
    return path


def test_validate_plots_a_users_cases(cases_file, tmp_path, capsys):
    from simgpu_apps.cli import main
    out = tmp_path / "times.svg"
    assert main(["validate", str(cases_file), "--devices", "sim:h100,sim:gtx260",
                 "--plot", str(out), "--markdown"]) == 0
    root = ET.parse(out).getroot()
    assert len(root.findall(f".//{SVG}g[@id='points']/{SVG}circle")) == 1
    text = capsys.readouterr().out
    assert "| case | outputs | counts |" in text and "| double_it | equal |" in text


def test_a_png_without_matplotlib_is_refused_before_any_case_runs(cases_file, tmp_path, capsys,
                                                                  monkeypatch):
    from simgpu_apps.cli import main
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import matplotlib fails
    ran = []
    monkeypatch.setattr(validate_file, "compare", lambda *a, **k: ran.append(1))
    assert main(["validate", str(cases_file), "--plot", str(tmp_path / "t.png")]) == 2
    assert "needs matplotlib (pip install 'simgpu[plot]')" in capsys.readouterr().err
    assert not ran and not (tmp_path / "t.png").exists()
    assert main(["validate", str(cases_file), "--plot", str(tmp_path / "t.txt")]) == 2
    assert "name an .svg or a .png file" in capsys.readouterr().err


class Args:
    file, ncu_dir = "cases.py", None


def test_without_ncu_every_case_says_counts_were_not_compared(monkeypatch):
    r = compare(double, 2, 64, np.arange(300, dtype=np.int32), np.zeros(300, np.int32), 300,
                devices=("sim:h100", "sim:h100"), engines=("lockstep", "lockstep"))
    r.counts, r.device_counts = [], (r.device_counts[0], None)     # as a GPU's side
    monkeypatch.setattr(validate_file, "find_ncu", lambda: None)
    validate_file._with_ncu(Args(), [r], ("sim:h100", "cuda"))
    assert r.counts_agree is None
    assert any(n.startswith("counts not compared: ncu not found on PATH") for n in r.notes)
    assert "counts not compared: ncu not found on PATH" in r.markdown()
    assert "| not compared |" in summary_markdown([r])


FAKE_NCU = r'''#!{python}
"""A stand-in for ncu: runs the child, then writes a CSV for the launches its manifest lists."""
import json, os, subprocess, sys
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
child = args[args.index("--log-file") + 2:]
assert os.environ["SIMGPU_CUDA_TIMING"] == "events"
subprocess.run(child, check=True)
out = child[child.index("--out") + 1]
manifest = json.load(open(os.path.join(out, "manifest.json")))
head = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"]
rows = [",".join(f'"{{h}}"' for h in head)]
metrics = {{"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "10",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "1,040",
           "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "10",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "40",
           "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum": "1",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum": "3",
           "gpu__time_duration.sum": "4,500"}}
for k, m in enumerate(manifest):
    for name, value in metrics.items():
        rows.append(",".join(f'"{{v}}"' for v in [k, 1, "python", "h", m["kernel"] + "_sym", name, "", value]))
open(log, "w").write("==PROF== Connected\n" + "\n".join(rows) + "\n")
'''


def test_counts_and_time_come_from_ncu_when_it_runs(cases_file, tmp_path, monkeypatch):
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable))
    ncu.chmod(ncu.stat().st_mode | stat.S_IEXEC)
    root = str(pathlib.Path(__file__).resolve().parents[1])        # the child imports simgpu
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    launches, note = compare_ncu.profile(cases_file, tmp_path / "ncu-out", str(ncu), "sim:h100")
    assert note == "" and [lc.kernel for lc in launches] == ["double_it_sym"]
    assert json.loads((tmp_path / "ncu-out" / "manifest.json").read_text()) == \
        [{"case": "double_it", "kernel": "double_it"}]
    r = compare(double, 2, 64, np.arange(300, dtype=np.int32), np.zeros(300, np.int32), 300,
                devices=("sim:h100", "sim:h100"), engines=("timed-block", "lockstep"))
    compare_ncu.attach(r, launches[0], 1, r.device_counts[0])
    got = {c: (a, b) for c, a, b in r.counts}
    sim = r.device_counts[0]
    assert got["loads.requests"] == (sim["loads.requests"], 10)
    assert got["loads.transactions"] == (sim["loads.transactions"], 1040)
    assert got["atomics.requests"] == (0, 1) and got["atomics.transactions"] == (0, 3)  # red folded
    assert r.times_ms[1] == pytest.approx(0.0045) and "gpu__time_duration" in r.time_sources[1]


def test_ncu_launches_that_do_not_match_the_cases_are_refused():
    manifest = [{"case": "a", "kernel": "copy"}, {"case": "b", "kernel": "gather"}]
    launches, note = compare_ncu.match([LaunchCounts("copy"), LaunchCounts("histogram")], manifest)
    assert launches is None and "case b launched gather, ncu saw histogram" in note
    launches, note = compare_ncu.match([LaunchCounts("copy")], manifest)
    assert launches is None and "ncu saw 1 launches for 2 cases" in note


def test_a_gpu_report_prints_the_kernel_time_and_the_launch_overhead_apart():
    rep = LaunchReport("k", "cuda:0", (1, 1, 1), (32, 1, 1), engine="cuda", time_ms=0.004,
                       counted=False, launch_overhead_ms=0.018, extra={"kernel_timing": "gated"})
    text = rep.table()
    assert "time 0.004000 ms" in text
    assert "launch overhead 0.018000 ms" in text and "the time is the kernel's own" in text
    rep.extra["kernel_timing"] = "events"
    assert "which may include it" in rep.table()


def test_the_timing_mode_follows_the_environment(monkeypatch):
    from cuda_backend.kernel_timing import default_mode
    monkeypatch.delenv("SIMGPU_CUDA_TIMING", raising=False)
    monkeypatch.delenv("CUDA_INJECTION64_PATH", raising=False)
    assert default_mode() == "gated"
    monkeypatch.setenv("CUDA_INJECTION64_PATH", "/opt/nsight/libinjection.so")   # under ncu
    assert default_mode() == "events"
    monkeypatch.setenv("SIMGPU_CUDA_TIMING", "gated")
    assert default_mode() == "gated"


def test_a_simulated_time_is_the_kernel_time_with_the_launch_interval_apart():
    """As ncu's gpu__time_duration: report.cycles, not time_ms (which adds the host's
    launch interval where it is longer than the GPU's fixed cost)."""
    import simgpu
    a, n = np.arange(3000, dtype=np.int32), 3000
    r = compare(double, 4, 128, a, np.zeros(n, np.int32), n, devices=("sim:h100", "sim:gtx260"))
    for name, t, over in zip(("sim:h100", "sim:gtx260"), r.times_ms, r.launch_overhead_ms):
        dev = simgpu.get_device(name)
        dev.cache_control = "all"
        rep = dev.launch(double, 4, 128, dev.to_device(a), dev.zeros(n, np.int32), n,
                         engine="timed-block")
        assert t == pytest.approx(rep.cycles / (dev.config.gpu.core_clock_mhz * 1e3))
        assert t + over == pytest.approx(rep.time_ms) and over >= 0
    assert "report.cycles" in r.time_sources[0]


def test_the_simulator_side_reruns_against_a_saved_gpu_side(cases_file, tmp_path, capsys):
    from simgpu_apps.cli import main
    assert main(["validate", str(cases_file), "--devices", "sim:h100,sim:gtx260", "--json"]) == 0
    saved = json.loads(capsys.readouterr().out)
    saved[0]["time_ms"][1] = 0.5                      # as if measured elsewhere
    saved[0]["counts"][0]["b"] = 7
    (tmp_path / "gpu.json").write_text(json.dumps(saved))
    assert main(["validate", str(cases_file), "--devices", "sim:h100,cuda", "--json",
                 "--gpu-json", str(tmp_path / "gpu.json")]) == 0      # no GPU needed
    again = json.loads(capsys.readouterr().out)[0]
    assert again["time_ms"] == [saved[0]["time_ms"][0], 0.5]
    assert again["counts"][0] == {**saved[0]["counts"][0], "b": 7}
    assert any("from " + str(tmp_path / "gpu.json") in n for n in again["notes"])
    (tmp_path / "other.json").write_text(json.dumps([{**saved[0], "case": "other"}]))
    assert main(["validate", str(cases_file), "--devices", "sim:h100,cuda",
                 "--gpu-json", str(tmp_path / "other.json")]) == 2
    assert "holds other cases" in capsys.readouterr().err
