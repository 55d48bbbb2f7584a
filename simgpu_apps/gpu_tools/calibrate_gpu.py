"""The calibration's GPU side (see calibrate.py): each plan run in a child process under
Nsight Compute (cold or warm caches, time or counters), CUDA-graph times without a
profiler, and the whole run as ``--steps`` orders it, saved after every step."""
from __future__ import annotations

import datetime
import json
import pathlib
import shutil
import subprocess
import sys
import time

import numpy as np

import simgpu

from . import ncu_csv
from .calibrate_cases import KERNELS, ORDERS, PLANS, full_grid, ordered, plan, setup


def child(out: pathlib.Path, kind: str, state: str, measured: int, tag: str, order: str = "forward"):
    """Run under ncu: every case, a warm-up launch first (warm state), then ``measured``
    launches. Writes the launch order (labels) for the parent to zip with ncu's rows."""
    import cupy as cp
    dev = simgpu.get_device("cuda")
    labels = []
    for case in ordered(plan(kind), order):
        rng = np.random.default_rng(0)
        kern, grid, block, args = setup(dev, case, rng)
        fn = dev.function(kern)
        if state == "warm":
            dev.launch(kern, grid, block, *args)
            labels.append({"bench": case.bench, "n": case.n, "steps": case.steps, "warmup": True})
        for _ in range(measured):
            dev.launch(kern, grid, block, *args)
            labels.append({"bench": case.bench, "n": case.n, "steps": case.steps, "warmup": False})
        dev.synchronize()
        del args, fn
        cp.get_default_memory_pool().free_all_blocks()
    (out / f"order-{tag}.json").write_text(json.dumps(labels))


def parse_ncu(text: str) -> list:
    """[{kernel, metrics: {name: float}}] in launch order from ``ncu --csv`` output
    (values that are not numbers are left out)."""
    launches = []
    for kernel, values in ncu_csv.parse_csv(text):
        metrics = {}
        for name, value in values.items():
            try:
                metrics[name] = float(value)
            except ValueError:
                pass
        launches.append({"kernel": kernel, "metrics": metrics})
    return launches


TIME = "gpu__time_duration.sum"
COUNTERS = [TIME, "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sector_hit_rate.pct",
            "sm__cycles_elapsed.avg.per_second", "dram__cycles_elapsed.avg.per_second",
            "lts__cycles_elapsed.avg.per_second",
            "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
            "l1tex__t_sector_hit_rate.pct",
            # sectors the SMs ask the L2 for, and those that reach a slice of the other
            # half of the L2 (docs/calibration/l2-halves-h100.md)
            "lts__t_sectors_srcunit_tex.sum", "lts__t_sectors_srcunit_ltcfabric.sum"]


def run_ncu(out: pathlib.Path, kind: str, state: str, measured: int, metrics, tag: str,
            timeout: int, order: str = "forward") -> list:
    """One child under Nsight Compute; rows {bench, n, steps, state, order, metrics}."""
    from cuda_backend.render import kernel_symbol
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    log = out / f"ncu-{tag}.csv"
    cmd = [ncu, "--clock-control", "none", "--cache-control", "all" if state == "cold" else "none",
           "--csv", "--print-units", "base", "--metrics", ",".join(metrics), "--log-file", str(log),
           sys.executable, "-m", "simgpu_apps.gpu_tools.calibrate", "--child", str(out), "--plan", kind,
           "--state", state, "--measured", str(measured), "--tag", tag, "--order", order]
    print("$", " ".join(cmd), flush=True)
    t0 = time.time()
    subprocess.run(cmd, check=True, timeout=timeout, env=ncu_csv.ncu_env(),
                   stdout=subprocess.DEVNULL)
    print(f"  ncu {tag}: {time.time() - t0:.0f} s", flush=True)
    launches = parse_ncu(log.read_text())
    labels = json.loads((out / f"order-{tag}.json").read_text())
    if len(launches) != len(labels):
        raise RuntimeError(f"ncu saw {len(launches)} launches, the child made {len(labels)}")
    rows = []
    for o, l in zip(labels, launches):
        if kernel_symbol(KERNELS[o["bench"]]) not in l["kernel"]:
            raise RuntimeError(f"launch order differs: {o} vs ncu's {l['kernel']}")
        if not o["warmup"]:
            rows.append({"bench": o["bench"], "n": o["n"], "steps": o["steps"], "state": state,
                         "order": order,
                         **l["metrics"]})
    return rows


def graph_times(kind: str, order: str = "forward") -> list:
    """Warm per-launch device time without a profiler: a CUDA graph of K back-to-back
    launches, replayed 5 times, timed with events; us per launch (median replay / K)."""
    import cupy as cp
    dev = simgpu.get_device("cuda")
    rows = []
    for case in ordered(plan(kind), order):
        rng = np.random.default_rng(0)
        kern, grid, block, args = setup(dev, case, rng)
        t1 = dev.launch(kern, grid, block, *args, sync=True).time_ms   # warm-up; one launch, events
        fn = dev.function(kern)
        argv = [a._data if hasattr(a, "_data") else np.int32(a) for a in args]
        k = int(min(200, max(5, 2.0 / max(t1, 1e-3))))
        try:
            stream = cp.cuda.Stream(non_blocking=True)
            with stream:
                stream.begin_capture()
                for _ in range(k):
                    fn((grid,), (block,), tuple(argv))
                graph = stream.end_capture()
                graph.launch(stream)
                stream.synchronize()
                ts = []
                for _ in range(5):
                    a, b = cp.cuda.Event(), cp.cuda.Event()
                    a.record(stream)
                    graph.launch(stream)
                    b.record(stream)
                    b.synchronize()
                    ts.append(cp.cuda.get_elapsed_time(a, b))
            rows.append({"bench": case.bench, "n": case.n, "steps": case.steps, "state": "warm",
                         "graph_us": float(np.median(ts)) * 1e3 / k, "graph_k": k,
                         "event_one_launch_us": t1 * 1e3})
        except Exception as exc:                       # keep the rest of the run
            rows.append({"bench": case.bench, "n": case.n, "steps": case.steps, "state": "warm",
                         "graph_error": repr(exc)[:200], "event_one_launch_us": t1 * 1e3})
        del args, argv, fn
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def smi() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem,"
                               "clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw",
                               "--format=csv"], capture_output=True, text=True, timeout=30).stdout
    except Exception as exc:
        return repr(exc)


STEPS = "warm:gpu,cold:gpu,graph:gpu,counters-warm:sim,counters-cold:sim"
WHATS = ("warm", "cold", "graph", "counters-warm", "counters-cold")


def parse_steps(steps: str) -> list:
    """``--steps`` as [(what, plan, order)]; a ValueError that names the bad item."""
    out = []
    for item in steps.split(","):
        what, _, rest = item.partition(":")
        kind, _, order = rest.partition("@")
        order = order or "forward"
        if what not in WHATS or kind not in PLANS or order not in ORDERS:
            raise ValueError(f"--steps item {item!r}: expected what:plan[@order] with what one "
                             f"of {', '.join(WHATS)}, plan one of {', '.join(PLANS)} and order "
                             f"one of {', '.join(ORDERS)}")
        out.append((what, kind, order))
    return out


def measure_gpu(out_json: pathlib.Path, steps: str, budget_s: int) -> dict:
    """The whole GPU side; writes ``out_json`` after every step, so a cut-off run keeps data."""
    out = out_json.parent
    out.mkdir(parents=True, exist_ok=True)
    dev = simgpu.get_device("cuda")
    result = {"device": dev.gpu_name, "date": str(datetime.date.today()), "steps": steps,
              "script": "python -m simgpu_apps.gpu_tools.calibrate --device cuda", "smi_before": smi(),
              "grid": list(full_grid(dev)), "ncu": [], "graph": [], "counters": [], "errors": []}
    t_end = time.time() + budget_s

    def save():
        out_json.write_text(json.dumps(result, indent=1))

    todo = []
    for what, kind, order in parse_steps(steps):
        tag = f"{what}-{kind}" + ("" if order == "forward" else f"-{order}")
        if what == "graph":
            todo.append(("graph", lambda kind=kind, order=order: graph_times(kind, order)))
        elif what in ("warm", "cold"):
            todo.append(("ncu", lambda kind=kind, st=what, tag=tag, order=order: run_ncu(
                out, kind, st, 4 if st == "warm" else 3, [TIME], tag, 240, order)))
        else:                                            # counters-warm / counters-cold
            todo.append(("counters", lambda kind=kind, st=what.split("-")[1], tag=tag, order=order:
                         run_ncu(out, kind, st, 1, COUNTERS, tag, 150, order)))
    for key, step in todo:
        if time.time() > t_end:
            result["errors"].append(f"{key}: skipped, out of time")
            continue
        try:
            result[key] += step()
        except Exception as exc:
            result["errors"].append(f"{key}: {exc!r}"[:500])
            print("ERROR", key, exc, flush=True)
        save()
    result["smi_after"] = smi()
    save()
    return result
