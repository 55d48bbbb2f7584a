"""Hold the simulator against the real GPU: outputs, Nsight Compute counters, times.

    python -m simgpu_apps.gpu_tools.validate --out DIR [--docs] [--quick] [--seeds N] [--jobs N]

on a machine with an NVIDIA GPU, CuPy and Nsight Compute (``ncu``).  It

1. runs every validation case on the GPU under ``ncu --clock-control none``,
   reading each launch's global load/store/atomic requests and sectors;
2. runs them again without ncu for CUDA-event times (median of repeats);
3. runs them on ``sim:h100`` (the ``timed-block`` engine: lockstep's counts and a
   time; an empty L2 at each launch, as ncu flushes the GPU's), ``--jobs`` at once;
4. compares: outputs bit-identical (every case's result is schedule-free: a list's
   ranks, each component labelled by its smallest vertex; the winners of races
   change rounds and counts, not results), counts launch by launch, times;
5. writes ``DIR/validation.md`` (and ``docs/validation.md`` with ``--docs``).

A case is a function ``run(device, seed) -> (outputs, reports)``; cases run
whole algorithms, so their kernels see realistic inputs, and every kernel of
the project that no case launches is listed as not validated.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import shutil
import subprocess
from collections import Counter

import numpy as np

import simgpu

from .ncu_csv import (LaunchCounts, METRICS, TIME_METRIC, find_ncu, merged,  # noqa: F401
                       ncu_command, ncu_env, parse_ncu_csv)
from . import validate_stages as stages
from .validate_cases import Case, cases, project_kernels  # noqa: F401  (re-exported)


# Kernels whose counts depend on the interleaving whatever the case: their reads see
# other threads' writes of the same launch (results are schedule-free, counts are not).
SCHEDULE_DEPENDENT = {
    "rs4_jump_in_place": "pointer jumping in place, without rounds: how far a thread's "
                         "pointer has come when it reads depends on the other threads' progress",
}

# Differences that come from nvcc, not from the model: the simulator counts every
# load and store of the kernel's IR; the compiled code may drop some.
COMPILER_EFFECTS = {
    "rs2_choose_64": "nvcc turns word[s] = (hi << 32) | (word[s] & LOW) into a 32-bit store "
                     "of the high half (st.global.u32 at byte 4 of the word in the PTX), so the "
                     "GPU never loads word[s]; and it forwards KISS's freshly seeded state words "
                     "from the stores of kiss_seed_device to the loads of kiss_next in the same "
                     "thread, dropping the first of two stores to each word: per random "
                     "splitter 5 loads and 4 stores fewer than the IR has, per given splitter "
                     "1 load fewer",
    "rs2_choose_48": "as rs2_choose_64: store-to-load forwarding of the KISS state",
}


# --- running ----------------------------------------------------------------------------

def run_cases(dev, selected, seeds, repeats=1):
    """{(case, seed): (outputs, [LaunchCounts])}; times: median over ``repeats`` runs
    (of the same kernel's same occurrence, see pair_launches)."""
    results = {}
    for case in selected:
        for seed in seeds:
            runs = [case.run(dev, seed) for _ in range(repeats)]
            outputs, reports = runs[0]
            # the k-th launch of run 0 in every run (rounds can differ between runs)
            partner = [dict(pair_launches(reports, r[1])) for r in runs]
            launches = []
            for k, rep in enumerate(reports):
                lc = LaunchCounts(rep.kernel)
                if rep.counted:
                    for (kind, what) in METRICS:
                        attr = {"atom": "atomics", "red": "atomics"}.get(kind, kind)
                        if kind != "red":
                            lc.counts[(kind, what)] = getattr(getattr(rep, attr), what)
                times = [r[1][pk[k]].time_ms for r, pk in zip(runs, partner)
                         if k in pk and r[1][pk[k]].time_ms is not None]
                lc.time_ms = float(np.median(times)) if times else None
                if rep.cycles is not None:
                    lc.kernel_ms = rep.cycles / (dev.config.gpu.core_clock_mhz * 1e3)
                launches.append(lc)
            results[(case.name, seed)] = (outputs, launches)
    return results


def sim_device():
    """The simulator as the validation runs it: sim:h100, counts as lockstep's and a time
    from the timed-block engine, and an empty L2 at each launch, as ncu (its default
    ``--cache-control all``) gives the GPU's kernels whose time it measures."""
    dev = simgpu.get_device("sim:h100")
    dev.default_engine = "timed-block"
    dev.cache_control = "all"
    return dev


def _run_on_sim(quick, name, seed):
    case = next(c for c in cases(quick) if c.name == name)
    return run_cases(sim_device(), [case], [seed])[(name, seed)]


def run_sim(selected, seeds, quick=False, jobs=1, cache=None):
    """run_cases on the simulator, each (case, seed) on a fresh device (so its arrays
    sit at the same addresses, and it times the same, whatever ran before it), in
    ``jobs`` processes: the same results for any number of them. With ``cache`` (a
    folder), finished runs are written there as they finish and read back, not rerun
    (validate_stages)."""
    commit = _commit()
    keys = [(c.name, seed) for c in selected for seed in seeds]
    done = {key: stages.cached(cache, *key, commit) for key in keys}
    todo = [key for key in keys if done[key] is None]
    if jobs <= 1:
        for key in todo:
            done[key] = _run_on_sim(quick, *key)
            stages.store(cache, *key, commit, done[key])
        return done
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    # spawned, not forked: the parent holds a CUDA context, which a fork must not copy
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_run_on_sim, quick, *key): key for key in todo}
        for fut in as_completed(futures):
            key = futures[fut]
            done[key] = fut.result()
            stages.store(cache, *key, commit, done[key])
            print(f"  sim done: {key[0]} seed {key[1]}", flush=True)
    return done


def occurrences(kernels: list) -> list:
    """[(kernel, r)]: each launch, named by its kernel, as the r-th launch of that kernel:
    the key that pairs two runs' launches (pair_launches; calibration/kernel_counters.py
    and validation/builtin_sim_side.py pair theirs with it too)."""
    seen: dict = {}
    out = []
    for k in kernels:
        seen[k] = seen.get(k, -1) + 1
        out.append((k, seen[k]))
    return out


def pair_launches(first, second) -> list:
    """(i, j) pairs of launches of the same kernel and the same occurrence of it (the
    r-th sv2_hook of one run with the r-th of the other): runs whose round counts
    differ (concurrent writes on the GPU) still pair round by round, and the kernels
    after the round loop pair with each other."""
    where = {key: j for j, key in enumerate(occurrences([lc.kernel for lc in second]))}
    return [(i, where[key]) for i, key in enumerate(occurrences([lc.kernel for lc in first]))
            if key in where]


def compare(selected, sim, gpu, gpu_ncu, manifest) -> dict:
    """Per-case verdicts and per-launch count comparisons.

    sim, gpu: run_cases results (gpu: the timing run, outside ncu); gpu_ncu: the
    LaunchCounts that ncu saw, in launch order; manifest: [(case, seed, [kernel
    names])] of the run under ncu, which says which of its rows belong to which run
    (its launch counts can differ from the timing run's where rounds are
    schedule-dependent)."""
    table = {"outputs": [], "counts": [], "times": [], "unpaired": []}
    ncu_runs, at, helpers = {}, 0, Counter()
    for name, seed, kernels in manifest:
        # ncu also sees the algorithms' helper launches (input checks, the validation
        # kernels: RankResult.helper_launches), which the cases do not report: skip
        # them, in order, up to each reported kernel
        rows = []
        for kernel in kernels:
            while at < len(gpu_ncu) and gpu_ncu[at].kernel != kernel:
                helpers[gpu_ncu[at].kernel] += 1
                at += 1
            if at == len(gpu_ncu):
                raise RuntimeError(f"ncu's launches end before {name} seed {seed}'s {kernel}")
            rows.append(gpu_ncu[at])
            at += 1
        ncu_runs[(name, seed)] = rows
    helpers.update(lc.kernel for lc in gpu_ncu[at:])
    table["helpers"] = dict(helpers)
    for case in selected:
        for (name, seed), (g_out, g_launches) in gpu.items():
            if name != case.name:
                continue
            s_out, s_launches = sim[(name, seed)]
            same = all(stages.digest(g_out[k]) == stages.digest(s_out[k]) for k in s_out)
            table["outputs"].append((name, seed, same))
            n_launches = ncu_runs[(name, seed)]
            event = dict(pair_launches(n_launches, g_launches))
            pairs = pair_launches(s_launches, n_launches)
            if len(pairs) != max(len(s_launches), len(n_launches)):
                table["unpaired"].append((name, seed, len(s_launches), len(n_launches)))
            for k, j in pairs:
                sl, nl = s_launches[k], n_launches[j]
                g = merged(nl.counts)
                diffs = {key: (sl.counts.get(key), g.get(key)) for key in g
                         if sl.counts.get(key) != g.get(key)}
                if not diffs:
                    verdict = "equal"
                elif sl.kernel in COMPILER_EFFECTS:
                    verdict = "differs: compiler (see below)"
                elif case.schedule_dependent_counts or sl.kernel in SCHEDULE_DEPENDENT:
                    verdict = "differs: schedule-dependent"
                else:
                    verdict = "DIFFERS"
                table["counts"].append((name, seed, k, sl.kernel, sl.counts, g, diffs, verdict))
                ev = g_launches[event[j]].time_ms if j in event else None
                table["times"].append((name, seed, k, sl.kernel, ev, nl.kernel_ms, sl.kernel_ms))
    return table


# --- the report ---------------------------------------------------------------------------

# The calibration section of docs/validation.md: written from the calibration runs
# (python -m simgpu_apps.gpu_tools.calibrate), kept here so a new validation report keeps it.
CALIBRATION_SECTION = pathlib.Path(__file__).resolve().parents[2] / "docs" / "calibration" / \
    "calibration-h100-section.md"


def write_validation_page(path, table, device_name, selected, kernels, elapsed_note=""):
    lines = [f"# Validation: sim:h100 against {device_name}", "",
             f"Produced by `python -m simgpu_apps.gpu_tools.validate` on {datetime.date.today()}, "
             f"commit {_commit()}, {platform.node() or 'GPU machine'}. {elapsed_note}", ""]
    ok = sum(1 for r in table["outputs"] if r[2])
    lines += ["## Outputs", "", f"{ok} of {len(table['outputs'])} runs bit-identical.", "",
              "| case | seed | identical |", "|---|---:|---|"]
    lines += [f"| {n} | {s} | {'yes' if same else 'NO'} |" for n, s, same in table["outputs"]]
    exact = [r for r in table["counts"] if r[7] == "equal"]
    lines += ["", "## Counts (Nsight Compute vs simulator)", "",
              f"{len(exact)} of {len(table['counts'])} launches: every request and sector "
              "count equal.", "",
              "| case | seed | launch | kernel | load req | load sectors | store req | "
              "store sectors | atomic req | atomic sectors | verdict |",
              "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, seed, k, kern, s, g, diffs, verdict in table["counts"]:
        cells = []
        for key in [("loads", "requests"), ("loads", "transactions"), ("stores", "requests"),
                    ("stores", "transactions"), ("atom", "requests"), ("atom", "transactions")]:
            sv, gv = s.get(key), g.get(key)
            cells.append(f"{gv:,}" if sv == gv else f"{gv:,} (sim {sv:,})")
        lines.append(f"| {name} | {seed} | {k} | {kern} | " + " | ".join(cells) + f" | {verdict} |")
    if table["unpaired"]:
        lines += ["", "Runs whose launches did not all pair (the same kernel's r-th launch "
                  "with its r-th): " + "; ".join(
                      f"{n} seed {s}: sim {a} launches, GPU {b}"
                      for n, s, a, b in table["unpaired"]) + ". Their rounds differ: the "
                  "extra round's launches have no partner and are left out above."]
    if table.get("helpers"):
        lines += ["", "Not compared: the algorithms' helper launches (input checks, validation "
                  "kernels, which the cases do not report) that Nsight Compute saw: " + ", ".join(
                      f"{k} x{v}" for k, v in sorted(table["helpers"].items())) + "."]
    lines += ["", "## Times", "",
              "GPU event: CUDA events around one launch through CuPy (median of 5), which "
              "includes the host's launch overhead; GPU kernel: Nsight Compute's "
              "gpu__time_duration, each kernel after ncu flushed the caches (its default "
              "`--cache-control all`); simulator: the timed-block engine's cycles, without the "
              "launch overhead, each launch with an empty L2 likewise (`cache_control = "
              "\"all\"`), each case and seed on a fresh device.", "",
              "| case | seed | launch | kernel | GPU event ms | GPU kernel ms | sim ms | sim / GPU kernel |",
              "|---|---:|---:|---|---:|---:|---:|---:|"]
    for name, seed, k, kern, ev, gk, sk in table["times"]:
        ratio = f"{sk / gk:.3f}" if sk and gk else "-"
        cells = [f"{v:.4f}" if v is not None else "-" for v in (ev, gk, sk)]
        lines.append(f"| {name} | {seed} | {k} | {kern} | " + " | ".join(cells) + f" | {ratio} |")
    per_kernel = by_kernel(table["times"])
    ratios = [r for rs in per_kernel.values() for r in rs]
    if ratios:
        lines += ["", f"sim / GPU kernel time over {len(ratios)} launches: median "
                  f"{np.median(ratios):.2f}, range {min(ratios):.2f} to {max(ratios):.2f}, "
                  f"{within_15(ratios)} within 15%."]
        lines += ["", "By kernel, the model's fastest first:", "",
                  "| kernel | launches | sim / GPU median | range | within 15% |",
                  "|---|---:|---:|---:|---:|"]
        for kern, rs in sorted(per_kernel.items(), key=lambda kv: (np.median(kv[1]), kv[0])):
            lines.append(f"| {kern} | {len(rs)} | {np.median(rs):.2f} | {min(rs):.2f}-{max(rs):.2f} "
                         f"| {within_15(rs)} |")
    if CALIBRATION_SECTION.exists():
        lines += ["", CALIBRATION_SECTION.read_text().rstrip()]
    launched = {r[3] for r in table["counts"]}
    missing = sorted(set(kernels) - launched)
    lines += ["", "## Kernels not validated by any case", ""]
    lines += [f"- `{k}` ({kernels[k]})" for k in missing] or ["(none)"]
    notes = [c for c in selected if c.why]
    compiled = sorted({r[3] for r in table["counts"] if r[7].startswith("differs: compiler")})
    if notes or compiled:
        lines += ["", "## Why some counts differ", ""]
        lines += [f"- {c.name}: {c.why}" for c in notes]
        lines += [f"- `{k}`: {COMPILER_EFFECTS[k]}" for k in compiled]
    pathlib.Path(path).write_text("\n".join(lines) + "\n")


def within_15(ratios) -> int:
    """How many sim / GPU ratios are within 15% of 1."""
    return sum(1 for r in ratios if abs(r - 1) <= 0.15)


def by_kernel(times) -> dict:
    """{kernel: [sim / GPU kernel time of each of its launches]} from the times rows."""
    out: dict = {}
    for _name, _seed, _k, kern, _ev, gk, sk in times:
        if sk and gk:
            out.setdefault(kern, []).append(sk / gk)
    return out


def _commit():
    if os.environ.get("SIMGPU_COMMIT"):          # the GPU machine gets a tree without .git
        return os.environ["SIMGPU_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except Exception:
        return "unknown"


# --- entry ------------------------------------------------------------------------------------

def worker(out_dir, quick, seeds):
    dev = simgpu.get_device("cuda")
    selected = cases(quick)
    results = run_cases(dev, selected, seeds)
    manifest = [[name, seed, [lc.kernel for lc in launches]]
                for (name, seed), (_, launches) in results.items()]
    pathlib.Path(out_dir, "manifest.json").write_text(json.dumps(manifest))


def _measure_gpu(out, args, seeds):
    """Nsight Compute's counts and the CUDA-event times of every case; saved in ``out``."""
    from cuda_backend.device import CudaUnavailable
    try:
        gpu_dev = simgpu.get_device("cuda")
    except CudaUnavailable as exc:
        raise SystemExit(f"python -m simgpu_apps.gpu_tools.validate: {exc}") from None
    child = ["-m", "simgpu_apps.gpu_tools.validate", "--worker", "--out", str(out),
             "--seeds", str(args.seeds)] + (["--quick"] if args.quick else [])
    cmd = ncu_command(find_ncu() or "ncu", out / "ncu.csv", child)
    print("running under Nsight Compute:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, env=ncu_env())
    print("timing on the GPU ...", flush=True)
    gpu_times = run_cases(gpu_dev, cases(args.quick), seeds, repeats=5)
    gpu_times["device"] = f"{gpu_dev.gpu_name} ({gpu_dev.name})"
    stages.save_gpu(out, gpu_times)
    return stages.load_gpu(out)


def main(argv=None, prog="python -m simgpu_apps.gpu_tools.validate", epilog=None):
    p = argparse.ArgumentParser(prog=prog, description=__doc__, epilog=epilog,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="validation-out")
    p.add_argument("--docs", action="store_true", help="also write docs/validation.md")
    p.add_argument("--quick", action="store_true", help="small inputs")
    p.add_argument("--seeds", type=int, default=3, help="random inputs per case (seeds 0..N-1)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="processes for the simulator's side (default: one per CPU)")
    p.add_argument("--gpu-only", action="store_true",
                   help="measure the GPU's side only and save it in --out (see --gpu-from)")
    p.add_argument("--gpu-from", metavar="DIR",
                   help="compare with the GPU side a --gpu-only run saved in DIR (no GPU needed)")
    p.add_argument("--sim-cache", metavar="DIR",
                   help="write each finished simulator run to DIR and reuse those there "
                        "(a run cut off resumes); --sim-only fills it and stops")
    p.add_argument("--sim-only", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    seeds = list(range(args.seeds))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.worker:
        return worker(out, args.quick, seeds)
    selected = cases(args.quick)
    cache = pathlib.Path(args.sim_cache) if args.sim_cache else None
    if args.sim_only:
        run_sim(selected, seeds, args.quick, args.jobs, cache)
        return None
    if args.gpu_from:
        gpu_times, ncu_text, manifest = stages.load_gpu(pathlib.Path(args.gpu_from))
    else:
        gpu_times, ncu_text, manifest = _measure_gpu(out, args, seeds)
    if args.gpu_only:
        return None
    device_name = gpu_times.pop("device")
    print(f"running sim:h100 (timed-block, an empty L2 at each launch) in {args.jobs} "
          "processes ...", flush=True)
    sim = run_sim(selected, seeds, args.quick, args.jobs, cache)
    table = compare(selected, sim, gpu_times, parse_ncu_csv(ncu_text), manifest)
    write_validation_page(out / "validation.md", table, device_name, selected, project_kernels())
    if args.docs:
        shutil.copy(out / "validation.md", pathlib.Path("docs") / "validation.md")
    print((out / "validation.md").read_text())


if __name__ == "__main__":
    main()
