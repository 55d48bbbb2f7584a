"""Nsight Compute counts and times for the cases of a user's file (simgpu validate FILE.py).

How a user's Python file gets run under ncu: the parent (``simgpu validate FILE.py
--devices sim:h100,cuda``) re-launches

    ncu --clock-control none --cache-control all --csv --metrics ... \\
        python -m simgpu_apps.compare_ncu FILE.py --out DIR --device cuda

(simgpu_apps.gpu_tools.ncu_csv builds that line for every script of the project that
runs ncu). This child loads FILE.py's CASES as the parent does, launches each case
once on the GPU and writes DIR/manifest.json, the kernel of each case in launch
order; ncu writes DIR/ncu.csv, one row per launch and metric. The parent reads both,
checks that ncu saw exactly one launch per case, of that case's kernel, and gives
each case the GPU's load, store and atomic request and sector counts (reductions,
ncu's ``op_red``, folded into atomics as the simulator counts them and as the
held-out validation does) and the GPU's time: gpu__time_duration.sum, the kernel
alone after ncu flushed the caches.

ncu runs its default kernel replay: it saves and restores the memory a kernel
writes between its passes, so every pass sees the case's inputs and a user's file
need not make the same inputs twice (application replay, which validation.h100_gpu
needs for its 40 GiB chase, reruns the whole file once per pass).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess

import numpy as np

from .gpu_tools.ncu_csv import merged, ncu_command, ncu_env, parse_ncu_csv

COUNTERS = [("loads", "loads"), ("stores", "stores"), ("atomics", "atom")]
NCU_TIME = ("Nsight Compute gpu__time_duration.sum, caches flushed before the kernel "
            "(--cache-control all), --clock-control none")


def worker(path, out: pathlib.Path, device: str):
    import simgpu
    from .compare import case_names, load_cases
    dev = simgpu.get_device(device)
    cases = load_cases(path)
    manifest = []
    for name, c in zip(case_names(cases), cases):
        args = [dev.to_device(np.array(a)) if isinstance(a, np.ndarray) else a for a in c["args"]]
        rep = dev.launch(c["kernel"], c["grid"], c["block"], *args)
        dev.synchronize()
        manifest.append({"case": name, "kernel": rep.kernel})
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


def profile(path, out: pathlib.Path, ncu: str, device: str = "cuda", timeout: int = 300):
    """Run the worker under ncu: ([LaunchCounts per case], "") or (None, why not)."""
    out.mkdir(parents=True, exist_ok=True)
    for old in ("ncu.csv", "manifest.json"):
        (out / old).unlink(missing_ok=True)
    cmd = ncu_command(ncu, out / "ncu.csv", ["-m", "simgpu_apps.compare_ncu", str(path),
                                             "--out", str(out), "--device", device])
    try:
        proc = subprocess.run(cmd, env=ncu_env(), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"counts not compared: ncu ran past {timeout} s"
    (out / "ncu-output.txt").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not (out / "manifest.json").exists():
        said = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
        return None, (f"counts not compared: ncu failed (exit {proc.returncode}): "
                      f"{said[-1] if said else 'no output'} (all of it in {out / 'ncu-output.txt'})")
    return match(parse_ncu_csv((out / "ncu.csv").read_text()),
                 json.loads((out / "manifest.json").read_text()))


def match(launches, manifest):
    """Pair ncu's launches with the cases, one each, in order; a mismatch is said, not guessed."""
    if len(launches) != len(manifest):
        return None, (f"counts not compared: ncu saw {len(launches)} launches for "
                      f"{len(manifest)} cases (one launch per case expected)")
    for m, lc in zip(manifest, launches):
        if m["kernel"] not in lc.kernel:
            return None, (f"counts not compared: case {m['case']} launched {m['kernel']}, "
                          f"ncu saw {lc.kernel}")
    return launches, ""


def attach(result, launch, gpu_side: int, sim_counts: dict | None):
    """Give a Comparison the GPU's counts (against the other side's, where it counts)
    and ncu's time for the GPU side; the CUDA-event time stays in a note."""
    gpu = merged(launch.counts)
    rows = []
    for label, key in COUNTERS:
        for what in ("requests", "transactions"):
            g = int(gpu.get((key, what), 0))
            s = sim_counts.get(f"{label}.{what}") if sim_counts else None
            rows.append((f"{label}.{what}", s, g) if gpu_side == 1 else (f"{label}.{what}", g, s))
    if sim_counts is None:
        result.notes.append("counts: the other device counts none either; ncu's are in the JSON")
    result.counts = rows
    result.notes = [n for n in result.notes if not n.startswith("counts not compared")]
    times, sources = list(result.times_ms), list(result.time_sources)
    if times[gpu_side] is not None:
        result.notes.append(f"{result.devices[gpu_side]}: {sources[gpu_side]}: "
                            f"{times[gpu_side]:.6f} ms")
    times[gpu_side], sources[gpu_side] = launch.kernel_ms, NCU_TIME
    result.times_ms, result.time_sources = tuple(times), tuple(sources)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m simgpu_apps.compare_ncu",
                                description="the child that simgpu validate FILE.py runs under ncu")
    p.add_argument("file")
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cuda")
    args = p.parse_args(argv)
    worker(args.file, pathlib.Path(args.out), args.device)


if __name__ == "__main__":
    main()
