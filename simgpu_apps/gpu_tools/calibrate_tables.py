"""The calibration's tables (see calibrate.py): the GPU's sweep (``gpu_sweep_tables``),
the simulator against the GPU (``compare``), and the loaders that pool several runs'
JSON files."""
from __future__ import annotations

import json
import pathlib

import numpy as np

from .calibrate_cases import FULL, KERNELS, UNITS, Case
from .calibrate_gpu import TIME


def _median(rows, key, **match):
    vals = [r[key] for r in rows if key in r and all(r.get(k) == v for k, v in match.items())]
    return float(np.median(vals)) if vals else None


def gpu_table(gpu: dict, state: str) -> dict:
    """{(bench, n, steps): median ncu us} for one cache state."""
    keys = {(r["bench"], r["n"], r["steps"]) for r in gpu["ncu"] if r["state"] == state}
    return {k: _median(gpu["ncu"], TIME, bench=k[0], n=k[1], steps=k[2], state=state) / 1e3
            for k in sorted(keys)}


def chase_latency(times: dict, n: int):
    """ns per dependent load: the slope between the two step counts of ``n`` nodes."""
    pts = sorted((s, t) for (b, m, s), t in times.items() if b == "chase" and m == n and t is not None)
    if len(pts) < 2:
        return None
    (s1, t1), (s2, t2) = pts[0], pts[-1]
    return (t2 - t1) * 1e3 / (s2 - s1)


def gpu_sweep_tables(gpu: dict) -> str:
    """The GPU's sweep: device times and rates by size and footprint, both cache states."""
    lines = [f"GPU sweep: {gpu['device']}, {gpu['date']}, `{gpu.get('script', '')}`; grid "
             f"{gpu.get('grid')} (blocks, threads). Times: Nsight Compute `gpu__time_duration` "
             "(`--clock-control none`), median of 4 warm launches after a warm-up (warm) or of "
             "3 launches each after ncu flushed the caches (`--cache-control all`, cold); "
             "'net' subtracts the empty kernel's time; graph: CUDA graph of back-to-back warm "
             "launches timed with events, per launch.", ""]
    warm, cold = gpu_table(gpu, "warm"), gpu_table(gpu, "cold")
    graph = {(r["bench"], r["n"], r["steps"]): r.get("graph_us") for r in gpu.get("graph", [])}
    e_w, e_c = warm.get(("empty", FULL, 0)), cold.get(("empty", FULL, 0))
    lines += ["Empty kernel (fixed cost per kernel), by grid:", "",
              "| blocks of 256 | warm us | cold us | graph us per launch | one launch, CUDA events us |",
              "|---:|---:|---:|---:|---:|"]
    one = {(r["bench"], r["n"], r["steps"]): r.get("event_one_launch_us") for r in gpu.get("graph", [])}
    for key in sorted(k for k in warm if k[0] == "empty"):
        lines.append(f"| {key[1]:,} | {warm[key]:.2f} | {_f(cold.get(key))} | {_f(graph.get(key))} | "
                     f"{_f(one.get(key))} |")
    lines += ["", f"Rates below are net of the full-grid empty kernel ({_f(e_w)} us warm, {_f(e_c)} us "
              "cold).", ""]
    lines += ["| benchmark | n | footprint | warm us | cold us | graph us | warm rate (net) | "
              "cold rate (net) | unit |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for key in sorted(warm, key=lambda k: (list(KERNELS).index(k[0]), k[1], k[2])):
        b, n, s = key
        if b in ("empty", "chase"):
            continue
        c = Case(b, n, s)
        w, co, g = warm[key], cold.get(key), graph.get(key)
        rw = c.value((w - e_w) * 1e-6) if w > e_w else float("nan")
        rc = c.value((co - e_c) * 1e-6) if co and co > e_c else float("nan")
        lines.append(f"| {b} | {n:,} | {_bytes(c.footprint())} | {w:.2f} | {_f(co)} | {_f(g)} | "
                     f"{rw:.4g} | {rc:.4g} | {UNITS[b]} |")
    lines += ["", "Pointer chase, ns per dependent load (slope between 512 and 4096 steps):", "",
              "| nodes | footprint | warm ns/load | cold ns/load |", "|---:|---:|---:|---:|"]
    for n in sorted({k[1] for k in warm if k[0] == "chase"}):
        lines.append(f"| {n:,} | {_bytes(4 * n)} | {_f(chase_latency(warm, n))} | "
                     f"{_f(chase_latency(cold, n))} |")
    if gpu.get("counters"):
        lines += ["", "Counters (ncu, one launch per case, sim-sized cases; collecting them takes "
                  "several replays of each kernel, between which ncu restores memory, so even the "
                  "'warm' rows see a mostly cold L2):", "",
                  "| benchmark | n | steps | state | us | DRAM read MB | DRAM write MB | L2 hit % | "
                  "SM GHz | red req | atom req |", "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in gpu["counters"]:
            lines.append(f"| {r['bench']} | {r['n']:,} | {r['steps']} | {r['state']} | "
                         f"{r.get(TIME, 0) / 1e3:.2f} | {r.get('dram__bytes_read.sum', 0) / 1e6:.2f} | "
                         f"{r.get('dram__bytes_write.sum', 0) / 1e6:.2f} | "
                         f"{_f(r.get('lts__t_sector_hit_rate.pct'), 1)} | "
                         f"{_f(r.get('sm__cycles_elapsed.avg.per_second', 0) / 1e9, 3)} | "
                         f"{r.get('l1tex__t_requests_pipe_lsu_mem_global_op_red.sum', 0):,.0f} | "
                         f"{r.get('l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum', 0):,.0f} |")
    if gpu.get("errors"):
        lines += ["", "Errors: " + "; ".join(gpu["errors"])]
    return "\n".join(lines)


def _f(x, digits=2):
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}f}"


def _rate(x):
    return _f(x, 3) if x and x < 100 else _f(x, 0)


def _bytes(b):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size:
            return f"{b / size:.3g} {unit}"
    return f"{b} B"


def gpu_figure(times: dict, case: "Case"):
    """The GPU's figure for ``case`` from {(bench, n, steps): us}: its rate net of the
    empty kernel, or for the chase its ns per load; None where it cannot be had."""
    if case.bench == "chase":
        return chase_latency(times, case.n)
    t, e = times.get((case.bench, case.n, case.steps)), times.get(("empty", FULL, 0))
    return case.value((t - e) * 1e-6) if t is not None and e is not None and t > e else None


def contexts(gpu: dict, state: str) -> list:
    """{(bench, n, steps): median us} per run and order the pooled launches came from."""
    names = sorted({r.get("context", "") for r in gpu["ncu"] if r["state"] == state})
    return [gpu_table({"ncu": [r for r in gpu["ncu"] if r.get("context", "") == c]}, state)
            for c in names]


def compare_rows(gpu: dict, sim: dict) -> list:
    """One row per simulated case and cache state: GPU net rate, sim rate, ratio, and the
    range of the GPU's figure over the runs and orders its launches were pooled from."""
    out = []
    for state in ("warm", "cold"):
        g = gpu_table(gpu, state)
        each = contexts(gpu, state)
        e = g.get(("empty", FULL, 0)) or 0.0
        s = {(r["bench"], r["n"], r["steps"]): r["us"] for r in sim["rows"] if r["state"] == state}
        se = s.get(("empty", FULL, 0)) or 0.0      # the model's fixed cost per kernel, likewise
        for key in sorted(s, key=lambda k: (list(KERNELS).index(k[0]), k[1], k[2])):
            b, n, steps = key
            if b == "empty" or (b == "chase" and steps != max(k[2] for k in s if k[:2] == key[:2])):
                continue
            if key not in g:
                continue
            c = Case(b, n, steps)
            if b == "chase":
                gv, sv = chase_latency(g, n), chase_latency(s, n)
                gus, net = g[key], None
            else:
                gus, net = g[key], g[key] - e
                gv = c.value(net * 1e-6) if net > 0 else None
                sv = c.value((s[key] - se) * 1e-6) if s[key] > se else None
            ratio = sv / gv if gv and sv else None
            spread = [v for v in (gpu_figure(t, c) for t in each) if v is not None]
            out.append({"bench": b, "n": n, "steps": steps, "state": state, "gpu_us": gus,
                        "gpu_net_us": net, "sim_us": s[key], "gpu": gv, "sim": sv,
                        "gpu_range": (min(spread), max(spread), len(spread)) if spread else None,
                        "unit": UNITS[b], "ratio": ratio,
                        "within": ratio is not None and abs(ratio - 1) <= 0.15})
    return out


def compare(gpu: dict, sim: dict) -> str:
    rows = compare_rows(gpu, sim)
    g = gpu_table(gpu, "warm")
    e = g.get(("empty", FULL, 0))
    se = next((r["us"] for r in sim["rows"] if r["bench"] == "empty" and r["n"] == FULL
               and r["state"] == "warm"), 0.0)
    lines = [f"Calibration: {sim['device']} ({sim.get('config', '')}) against {gpu['device']} "
             f"(GPU run {gpu['date']}, simulator run {sim['date']}).", "",
             f"GPU: Nsight Compute `gpu__time_duration`, median; 'net' is that minus the empty "
             f"kernel's time on the same grid ({_f(e)} us warm). Simulator: timed-block cycles at "
             f"{sim.get('clock_mhz', '?')} MHz, no launch overhead; its rates are net of its "
             f"own empty kernel ({_f(se)} us) likewise. Chase: ns per load from the slope "
             "between 512 and 4096 steps on both devices (fixed costs cancel).", "",
             "| benchmark | n | footprint | cache | GPU us | GPU net us | sim us | GPU | GPU by run | "
             "sim | unit | sim / GPU | within 15% |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---|"]
    for r in rows:
        c = Case(r["bench"], r["n"], r["steps"])
        spread = "-"
        if r["gpu_range"]:
            lo, hi, k = r["gpu_range"]
            spread = _rate(lo) if k == 1 else f"{_rate(lo)}-{_rate(hi)} ({k})"
        lines.append(f"| {r['bench']} | {r['n']:,} | {_bytes(c.footprint())} | {r['state']} | "
                     f"{r['gpu_us']:.2f} | {_f(r['gpu_net_us'])} | {r['sim_us']:.2f} | "
                     f"{_rate(r['gpu'])} | {spread} | {_rate(r['sim'])} | "
                     f"{r['unit']} | {_f(r['ratio'])} | {'yes' if r['within'] else 'no'} |")
    ok = sum(r["within"] for r in rows)
    lines += ["", f"{ok} of {len(rows)} within 15%."]
    return "\n".join(lines)


def load_gpu(paths: str) -> dict:
    """One GPU result from one JSON file or several, comma-separated (their samples pooled;
    each launch labelled with its context: the file and the order its plan ran in)."""
    files = paths.split(",")
    runs = [json.loads(pathlib.Path(f).read_text()) for f in files]
    gpu = dict(runs[0])
    for key in ("ncu", "graph", "counters", "errors"):
        gpu[key] = [x for r in runs for x in r.get(key, [])]
    gpu["ncu"] = [{**x, "context": f"{pathlib.Path(f).stem}@{x.get('order', 'forward')}"}
                  for f, r in zip(files, runs) for x in r.get("ncu", [])]
    gpu["date"] = ", ".join(sorted({r["date"] for r in runs}))
    return gpu


def load_sim(paths: str) -> dict:
    """One simulator result from one JSON file or several, comma-separated (rows joined)."""
    runs = [json.loads(pathlib.Path(f).read_text()) for f in paths.split(",")]
    sim = dict(runs[0])
    sim["rows"] = [x for r in runs for x in r["rows"]]
    return sim
