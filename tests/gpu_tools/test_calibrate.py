"""The calibration script's own logic, without a GPU: the simulator side, ncu CSV
parsing, and the comparison's arithmetic."""
import json

import numpy as np
import pytest

import simgpu
from simgpu_apps.gpu_tools.calibrate import main
from simgpu_apps.gpu_tools.calibrate_cases import Case, FULL, KERNELS, measure_sim, ordered, plan
from simgpu_apps.gpu_tools.calibrate_gpu import TIME, parse_ncu, parse_steps, run_ncu
from simgpu_apps.gpu_tools.calibrate_tables import (
    chase_latency, compare, compare_rows, gpu_figure, gpu_sweep_tables, load_gpu)

NCU_CSV = '''==PROF== Connected to process 9
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","9","python","h","empty","1","7","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","2,592"
"1","9","python","h","copy","1","7","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","3,890"
"1","9","python","h","copy","1","7","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","1,040,384"
'''


def test_parse_ncu_keeps_launch_order_and_every_metric():
    launches = parse_ncu(NCU_CSV)
    assert [l["kernel"] for l in launches] == ["empty", "copy"]
    assert launches[0]["metrics"][TIME] == 2592
    assert launches[1]["metrics"]["dram__bytes_read.sum"] == 1040384


def test_rates_and_chase_slope():
    assert Case("copy", 1 << 20).value(1e-6) == pytest.approx(8 * 2**20 / 1e-6 / 1e9)
    assert Case("read", 1 << 20).value(1e-6) == pytest.approx(4 * 2**20 / 1e-6 / 1e9)
    assert Case("gather", 1000).value(1e-6) == pytest.approx(1.0)       # G elements/s
    # the slope between two step counts cancels any fixed cost
    times = {("chase", 64, 512): 10.0 + 512 * 0.3, ("chase", 64, 4096): 10.0 + 4096 * 0.3}
    assert chase_latency(times, 64) == pytest.approx(300.0)              # ns per load


def _fake_gpu(sim_rows, scale, fixed_us):
    """A GPU result whose device times are the simulator's, net of its own empty kernel
    on the same grid, x ``scale`` plus a fixed cost of its own (the empty kernel: the
    fixed cost alone)."""
    empty = {(r["state"], r["n"]): r["us"] for r in sim_rows if r["bench"] == "empty"}
    net = {id(r): r["us"] - empty.get((r["state"], FULL), 0.0) for r in sim_rows}
    ncu = [dict(bench=r["bench"], n=r["n"], steps=r["steps"], state=r["state"],
                **{TIME: ((r["bench"] != "empty") * net[id(r)] * scale + fixed_us) * 1e3})
           for r in sim_rows for _ in range(3)]
    return {"device": "fake", "date": "today", "ncu": ncu, "graph": [], "counters": [], "errors": []}


@pytest.fixture(scope="module")
def quick_sim():
    dev = simgpu.get_device("sim:h100")
    rows = measure_sim(dev, plan("quick"))
    return dev, {"device": "sim:h100", "date": "today", "clock_mhz": 1980, "rows": rows}


def test_compare_subtracts_the_empty_kernel_and_judges_15_percent(quick_sim):
    _, sim = quick_sim
    assert {r["bench"] for r in sim["rows"]} == set(KERNELS) - {"read", "write"}
    # the GPU takes the simulator's time plus 2.5 us of fixed cost: net, they agree
    rows = compare_rows(_fake_gpu(sim["rows"], 1.0, 2.5), sim)
    assert rows and all(r["within"] for r in rows)
    assert all(r["ratio"] == pytest.approx(1.0) for r in rows)
    # a GPU 1.25x slower than the model: every case is out; the model's rates are 1.25x
    # the GPU's, its chase latency 0.8x
    rows = compare_rows(_fake_gpu(sim["rows"], 1.25, 2.5), sim)
    assert not any(r["within"] for r in rows)
    assert all(r["ratio"] == pytest.approx(0.8 if r["bench"] == "chase" else 1.25) for r in rows)
    assert "| no |" in compare(_fake_gpu(sim["rows"], 1.25, 2.5), sim)


def test_model_chase_costs_the_configured_latencies():
    """The chase slope on the model is its L2 hit latency (warm) and its DRAM round trip
    (cold) plus a few cycles of loop: what the calibrated config values were fitted by.
    Cold, about half the nodes live in the far half of the H100's split L2 and cost
    l2_far_latency_cycles more (warm, the warm-up left copies of all in the near half)."""
    dev = simgpu.get_device("sim:h100")
    cfg = dev.config
    n = 1 << 24                      # 64 MiB: the 256 nodes visited almost never share a DRAM row
    cases = [Case("chase", n, s) for s in (64, 256)]
    rows = measure_sim(dev, cases)
    for state, expect in (("warm", cfg.cache.l2_latency_cycles),
                          ("cold", cfg.memory.interconnect_latency_cycles
                           + (cfg.dram.trp + cfg.dram.trcd + cfg.dram.tcl)   # a row conflict
                           * cfg.gpu.core_clock_mhz / cfg.memory.memory_clock_mhz
                           + cfg.cache.l2_far_latency_cycles / 2)):
        times = {(r["bench"], r["n"], r["steps"]): r["us"] for r in rows if r["state"] == state}
        cycles = chase_latency(times, n) * cfg.gpu.core_clock_mhz / 1e3
        slack = 0 if state == "warm" else 15          # the far share of 192 random nodes
        assert expect - slack <= cycles <= expect + 10 + slack, (state, cycles, expect)


def test_report_reads_a_gpu_sweep(quick_sim):
    _, sim = quick_sim
    text = gpu_sweep_tables(_fake_gpu(sim["rows"], 1.0, 2.5))
    assert "Empty kernel" in text and "| copy | 16,384 |" in text and "ns per dependent load" in text


def test_kernels_that_write_run_warm_even_beyond_the_l2(tmp_path):
    """A read-only footprint over twice the L2 leaves nothing of use in it, so its
    warm state is its cold run; a copy leaves dirty data that the next launch
    must write back, so its warm state is simulated."""
    from tests.sim.test_memory_timing import variant
    dev = variant("h100", tmp_path, l2_bytes=2048)
    rows = measure_sim(dev, [Case("read", 4096), Case("copy", 4096)])
    by = {(r["bench"], r["state"]): r for r in rows}
    assert by[("read", "warm")].get("same_run_as") == "cold"
    assert "same_run_as" not in by[("copy", "warm")]


def test_a_plan_runs_in_each_order_once_per_case():
    cases = plan("sim")
    assert ordered(cases, "forward") == cases
    assert ordered(cases, "reverse") == cases[::-1]
    shuffled = ordered(cases, "shuffle")
    assert shuffled == ordered(cases, "shuffle")           # a fixed permutation
    assert shuffled != cases and sorted(map(repr, shuffled)) == sorted(map(repr, cases))
    with pytest.raises(ValueError, match="forward, reverse, shuffle"):
        ordered(cases, "sideways")


def test_run_ncu_runs_the_child_in_its_order_and_labels_its_rows(tmp_path, monkeypatch):
    """run_ncu with ncu faked: the child is told the order, and every row it returns says
    which order its launch ran in (the figure's range over runs is taken by it)."""
    import json
    import pathlib
    import subprocess
    from cuda_backend.render import kernel_symbol
    cases = ordered(plan("quick"), "reverse")
    seen = []

    def fake_run(cmd, **kw):
        seen.append(cmd)
        tag = cmd[cmd.index("--tag") + 1]
        labels = [{"bench": c.bench, "n": c.n, "steps": c.steps, "warmup": False} for c in cases]
        (tmp_path / f"order-{tag}.json").write_text(json.dumps(labels))
        head = NCU_CSV.splitlines()[1]
        lines = [head] + [f'"{i}","9","python","h","{kernel_symbol(KERNELS[c.bench])}","1","7",'
                          f'"(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics",'
                          f'"{TIME}","ns","{1000 + i}"' for i, c in enumerate(cases)]
        pathlib.Path(cmd[cmd.index("--log-file") + 1]).write_text("\n".join(lines))

    monkeypatch.setattr(subprocess, "run", fake_run)
    rows = run_ncu(tmp_path, "quick", "cold", 1, [TIME], "cold-quick-reverse", 10, "reverse")
    assert seen[0][seen[0].index("--order") + 1] == "reverse"
    assert [r["bench"] for r in rows] == [c.bench for c in cases]
    assert {r["order"] for r in rows} == {"reverse"} and rows[0][TIME] == 1000


def test_compare_pools_runs_and_gives_the_range_over_them(quick_sim, tmp_path):
    """Two GPU runs, one 1.25x slower than the model (net of its own empty kernel): the
    figure is the median over both runs' launches; each row gives the range of the
    run's own figures, each net of that run's empty kernel."""
    import json
    _, sim = quick_sim
    paths = []
    for i, scale in enumerate((1.0, 1.25)):
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(_fake_gpu(sim["rows"], scale, 2.5 + i)))
    gpu = load_gpu(",".join(map(str, paths)))
    assert {r["context"] for r in gpu["ncu"]} == {"run0@forward", "run1@forward"}
    rows = compare_rows(gpu, sim)
    for r in rows:
        lo, hi, k = r["gpu_range"]
        assert k == 2
        if r["bench"] == "chase":                     # ns per load: 1.25x longer
            assert hi == pytest.approx(1.25 * lo)
        else:                                         # a rate: 1.25x lower
            assert lo == pytest.approx(r["sim"] / 1.25) and hi == pytest.approx(r["sim"])
        assert lo <= r["gpu"] <= hi
    assert " (2) |" in compare(gpu, sim)
    # a run without the empty kernel gives no net figure of its own
    times = {("copy", 1 << 14, 0): 5.0}
    assert gpu_figure(times, Case("copy", 1 << 14)) is None


def test_a_bad_steps_item_is_named_before_anything_runs(capsys):
    assert parse_steps("warm:gpu,cold:sim@shuffle,counters-cold:sim") == [
        ("warm", "gpu", "forward"), ("cold", "sim", "shuffle"), ("counters-cold", "sim", "forward")]
    for bad in ("cold:sim@sideways", "lukewarm:gpu", "cold", "cold:everything"):
        with pytest.raises(SystemExit) as exc:
            main(["--device", "cuda", "--steps", f"warm:gpu,{bad}"])
        assert f"--steps item {bad!r}" in str(exc.value) and "what:plan[@order]" in str(exc.value)


def test_the_simulator_side_runs_on_the_engine_named(tmp_path, monkeypatch):
    from simgpu_apps.gpu_tools import calibrate
    engines = []
    real = calibrate.measure_sim

    def spy(dev, cases, states):
        engines.append(dev.default_engine)
        return real(dev, cases, states)
    monkeypatch.setattr(calibrate, "measure_sim", spy)
    out = tmp_path / "sim.json"
    calibrate.main(["--device", "sim:h100", "--engine", "timed", "--benches", "empty",
                    "--states", "warm", "--out", str(out)])
    result = json.loads(out.read_text())
    assert engines == ["timed"] and result["engine"] == "timed" and len(result["rows"]) == 1
