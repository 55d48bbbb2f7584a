"""The paper's experiments: ``simgpu paper`` reproduces the figures and tables of
Dehne & Yogaratnam (list ranking: Fig. 2, Fig. 3, Tables 2 and 3; connected
components: Fig. 4, 5, 6 and Table 4) on a simulated GPU or on the real one,
and writes report.md with a verdict for each of the paper's claims.

    from simgpu_apps.experiments import run_paper
    run_paper(out="out/paper", size_name="quick", device="sim:gtx260", jobs=2)
    run_paper(out="out/paper", size_name="quick", scheduler="tcp://host:8786")   # a Dask cluster

Modules: runner (points, cache, executor, progress), list_ranking and
connected_components (what to measure and how to judge it), report (tables,
report.md), plots (PNG figures, when matplotlib is installed).
"""
from __future__ import annotations

import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import connected_components, costs, list_ranking
from .paper_document import write_outputs, write_paper_report, verdict_line
from .runner import (Cache, Progress, code_version, connect_dask, dask_threads, fmt_seconds,
                     host_id, run_points)

__all__ = ["run_paper", "SIZES", "EXPERIMENTS", "CLAIM_IDS", "check_out"]

P = lambda a, b: [1 << k for k in range(a, b + 1)]      # 2^a .. 2^b
_M = 1_000_000

# Sizes per setting.  fig5_blocks: ints are block counts, floats multiples of the SM count;
# fig5_families: the Fig. 5 families (default: all of connected_components.FAMILIES).
SIZES = {
    "tiny": dict(lr_n=P(8, 10), p_n=1 << 10, p_factors=[0.5, 1, 2], cc_m=P(8, 9),
                 fig5_m=1 << 8, fig5_blocks=[1, 1.0, 2.0], fig5_families=["lists", "random d=1%"],
                 fig6_m=1 << 8, fig6_k=[2], t4_m=1 << 9, cpu_repeats=3, gpu_repeats=3),
    "quick": dict(lr_n=P(11, 16), p_n=1 << 15, p_factors=[0.5, 1, 2, 4, 8, 16, 32],
                  cc_m=P(10, 14), fig5_m=1 << 13, fig5_blocks=[1, 2, 4, 8, 16, 1.0, 2.0, 4.0],
                  fig6_m=1 << 12, fig6_k=[2, 3, 4, 6, 8, 12, 16, 20], t4_m=1 << 16,
                  cpu_repeats=5, gpu_repeats=5),
    "full": dict(lr_n=P(11, 20), p_n=1 << 18, p_factors=[0.5, 1, 2, 4, 8, 16, 32, 64],
                 cc_m=P(10, 18), fig5_m=1 << 16,
                 fig5_blocks=[1, 2, 4, 8, 12, 16, 20, 24, 1.0, 32, 2.0, 64, 4.0, 128],
                 fig6_m=1 << 16, fig6_k=list(range(2, 21)), t4_m=1 << 20,
                 cpu_repeats=20, gpu_repeats=20),
    # the paper's own sizes (Fig. 2/3: lists to 64M nodes, every 2M from 40M to 64M on both
    # packings for Fig. 3 right; Fig. 4/6: m up to 8,000,000 edges).  Decimal millions, as
    # the paper's text gives them (n ~ 54,000,000).  Fig. 5's m is not in the paper: 1M here
    # (one block at 8M edges takes seconds per run on a GPU).  Table 4 counts lane accesses
    # (lockstep simulator, exact formulas): 2^16 edges test them as well as 8M would.
    "paper": dict(lr_n=[_M, 2 * _M, 4 * _M, 8 * _M, 16 * _M, 32 * _M, 64 * _M],
                  lr_dense=list(range(40 * _M, 64 * _M, 2 * _M)), p_n=16 * _M,
                  p_factors=[0.5, 1, 2, 4, 8, 16, 32, 64], cc_m=[_M, 2 * _M, 4 * _M, 8 * _M],
                  fig5_m=_M, fig5_blocks=[1, 2, 4, 8, 16, 1.0, 32, 2.0, 64, 4.0, 128],
                  fig6_m=8 * _M, fig6_k=list(range(2, 21)), t4_m=1 << 16,
                  cpu_repeats=3, gpu_repeats=3),
}
EXPERIMENTS = {"lr": list_ranking, "cc": connected_components}
CLAIM_IDS = ("fig2-gpu-vs-cpu", "fig3l-per-element", "fig3r-64-beats-48",
             "fig3r-crossing-inflection", "table2-rs3-vs-rs5", "table3-random-vs-even",
             "p-small-factor-of-cores", "fig4-gpu-vs-cpu", "fig4-family-order",
             "fig5-saturation", "fig6-rounds", "fig6-sv2-sv3-dominate", "fig6-work-order",
             "sv-round-bound", "table4-reads", "table4-writes")


@dataclass
class Ctx:
    device: str                 # where the timed points run
    count_device: str           # where the counting (lockstep) points run
    host: str                   # the 'device' of wall-clock points
    info: dict                  # sm_count, cores, resident_threads, gpu_name, ...
    sizes: dict
    size_name: str
    real_gpu: bool = False
    extra: dict = field(default_factory=dict)


def device_info(name: str) -> dict:
    """What the experiments need to know about the device (instantiates it)."""
    import simgpu
    try:
        dev = simgpu.get_device(name)
    except RuntimeError as exc:                  # no CuPy / no GPU for "cuda"
        raise ValueError(str(exc)) from None
    cfg = getattr(dev, "config", None)
    real = not dev.is_simulated
    if cfg is not None:
        info = dict(sm_count=int(cfg.gpu.sm_count), cores=int(cfg.gpu.sm_count * cfg.gpu.cores_per_sm),
                    resident_threads=int(cfg.gpu.sm_count * cfg.limits.max_threads_per_sm),
                    gpu_name=cfg.gpu.name, arch=dev.arch, config_key=cfg.key,
                    capacity=int(cfg.memory.global_memory_bytes))
    else:                                        # a GPU without a bundled config
        info = dict(sm_count=dev.sm_count, cores=dev.sm_count * 128,
                    resident_threads=dev.sm_count * dev.max_threads_per_sm, gpu_name=dev.gpu_name,
                    arch=dev.arch, config_key=None,
                    cores_note="cores assumed 128 per SM (no bundled config)")
    info["real"] = real
    return info


def host_desc() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{model}, {os.cpu_count()} logical CPUs, Python {platform.python_version()} "
            f"on {platform.system()}")


def time_notes(ctx: Ctx, info: dict) -> list:
    if ctx.real_gpu:
        gpu = (f"GPU times are CUDA-event times of every kernel launch of an algorithm, summed, "
               f"on {info['gpu_name']}: the median of {ctx.sizes['gpu_repeats']} runs after one "
               "warm-up run (host-device copies and host work between launches not included).")
    else:
        gpu = ("GPU times are **simulated**: the `time_ms` of simgpu's timed-block engine "
               f"(per-warp memory timing, block-level lockstep issue) on {info['gpu_name']} "
               "(list ranking's race-free launches replayed from traces by trace-block, "
               "which gives timed-block's times bit for bit) "
               "summed over every kernel launch of an algorithm, each launch including the "
               "config's kernel launch overhead; host work between launches is not included. "
               "They are deterministic: the same point gives the same time in any process.")
    cpu = (f"CPU times are measured **on this machine** ({host_desc()}): the process CPU time "
           "of single-threaded references (the sequential list ranking and union-find), the "
           "wall-clock time of the multi-process CPU random splitter; the fastest of "
           f"{ctx.sizes['cpu_repeats']} runs (after a warm-up when a run is short), with math "
           "libraries' thread pools pinned to one thread. The spread of the runs, (max - min) / "
           "min, is reported beside them, and a verdict whose margin lies inside it is marked "
           "unstable. Not on the paper's "
           "Intel Core 2 Quad. The sequential list ranking reference (`method=\"sequential\"`) "
           "walks the list in a Python loop (about 0.4 us per node, several times slower than "
           "the paper's C code), and the sequential connected components reference is a "
           "numpy-vectorized union-find. So compare ratios and trends with the paper, not "
           "absolute values, and read the GPU/CPU ratios as this machine's.")
    why = ("the same sizes as the simulated runs, so that the two compare point by point"
           if ctx.real_gpu else "the simulator executes every warp instruction on the host")
    if ctx.size_name == "paper":
        sizes = ("Sizes (paper) are the paper's: lists up to 64,000,000 nodes (every 2,000,000 "
                 "from 40M to 64M on both packings for Fig. 3 right), graphs with m up to "
                 "8,000,000 edges (Fig. 4 and 6); Fig. 5 at m = 1,000,000 and Table 4's counts "
                 "at m = 2^16 (see SIZES in simgpu_apps/experiments/__init__.py). A point whose "
                 "arrays do not fit the device's memory is refused by the device and listed "
                 "as such in the footprint tables.")
    else:
        sizes = (f"Sizes ({ctx.size_name}) are far below the paper's (lists up to 64M nodes, "
                 f"graphs with m = 8M edges): {why}. Where a claim is about sizes not run, its "
                 "verdict says 'not tested' (`simgpu paper --size paper` runs them).")
    return [gpu, cpu, sizes]


def _script(size_name, device, jobs) -> str:
    flag = {"quick": " --quick", "tiny": " --quick --tiny", "full": "",
            "paper": " --size paper"}[size_name]
    return f"simgpu paper{flag} --device {device}" + (f" --jobs {jobs}" if jobs != 1 else "")


INTERRUPTED = "INTERRUPTED"     # marks an output folder whose run was stopped (partial report)


def check_out(out: Path, overwrite: bool) -> str:
    """Refuse (ValueError) to write into the output of an earlier run unless
    ``overwrite``; returns "new", "resume" (an interrupted run's cache, no report
    yet) or "overwrite"."""
    if not out.exists() or not any(out.iterdir()):
        return "new"
    if (out / INTERRUPTED).exists() and (out / "cache").is_dir():
        return "resume"                  # its report is partial: the rerun completes it
    if (out / "report.md").exists():
        if not overwrite:
            raise ValueError(f"{out}/ holds the output of an earlier run (report.md); pass "
                             "--overwrite to replace its report, tables and figures (its cache "
                             "of points is reused), or choose another --out")
        return "overwrite"
    if (out / "cache").is_dir():
        return "resume"
    if not overwrite:
        raise ValueError(f"{out}/ is not empty and holds no simgpu paper output; choose another "
                         "--out, or pass --overwrite to write into it anyway")
    return "overwrite"


def run_paper(out="out/paper", size_name: str = "quick", device: str = "sim:gtx260", jobs: int = 1,
              only=None, stream=None, progress: bool = True, scheduler: str | None = None,
              overwrite: bool = False, beside=None, cpu_repeats: int | None = None,
              gpu_repeats: int | None = None, dry_run: bool = False,
              cached_sim: bool = False) -> dict:
    """Run the experiments, write tables, figures and report.md into `out`.
    Returns a summary dict (claims, files, cache hits, elapsed).

    scheduler: the address of a Dask scheduler (``tcp://host:8786``): the simulated
    points then run on that cluster's workers (its scheduler and workers must have
    the same simgpu installed) instead of local processes, and `jobs` is not used; the wall-clock
    CPU baselines still run here, and the cache and outputs are written here.

    overwrite: write into `out` even if an earlier run finished there (else refused; an
    interrupted run's folder, with a cache and no report, is resumed without it).
    beside: an earlier report.md (or its folder) whose verdicts go beside this run's.
    cpu_repeats / gpu_repeats: override the size setting's repeats.
    dry_run: print the plan's estimate and return (nothing computed or written).
    cached_sim: take the simulated points from ``out``'s cache only (computed elsewhere:
    benchmarks/paper_points.py, another machine, an earlier run at the same code version);
    those not there are left out and their claims say "not available".  The CPU baselines
    (wall-clock points) are still measured here."""
    stream = stream or sys.stdout
    t0 = time.perf_counter()
    if size_name not in SIZES:
        raise ValueError(f"unknown size setting {size_name!r}")
    if jobs < 1:
        raise ValueError(f"--jobs must be >= 1, not {jobs}")
    only = list(only or EXPERIMENTS)
    for k in only:
        if k not in EXPERIMENTS:
            raise ValueError(f"unknown experiment {k!r}; choose from {', '.join(EXPERIMENTS)}")
    sizes = dict(SIZES[size_name])
    for key, v in (("cpu_repeats", cpu_repeats), ("gpu_repeats", gpu_repeats)):
        if v is not None:
            if int(v) < 1:
                raise ValueError(f"--{key.replace('_', '-')} must be >= 1, not {v}")
            sizes[key] = int(v)
    out = Path(out)
    state = check_out(out, overwrite)
    beside_info = None
    if beside is not None:
        from .paper_document import read_verdicts
        path = Path(beside) / "report.md" if Path(beside).is_dir() else Path(beside)
        if not path.is_file():
            raise ValueError(f"--beside {beside}: no report.md there")
        beside_info = {"label": f"verdict in {path}", "verdicts": read_verdicts(path)}
    info = device_info(device)
    real = info["real"]
    ctx = Ctx(device=device, count_device=(device if not real else f"sim:{info['config_key'] or 'gtx260'}"),
              host=host_id(), info=info, sizes=sizes, size_name=size_name, real_gpu=real)
    if scheduler is not None and real:
        raise ValueError("--scheduler runs simulated devices only: a real GPU's points run on "
                         "this machine's card (drop --scheduler)")
    if real and jobs > 1:
        print("note: --jobs is set to 1 on a real GPU (parallel points would share the card)",
              file=stream)
        jobs = 1
    if not dry_run:
        out.mkdir(parents=True, exist_ok=True)
    cache = Cache(out / "cache", code_version(cuda=real))
    points = list(dict.fromkeys(p for k in only for p in EXPERIMENTS[k].plan(ctx)))
    skipped = []
    if cached_sim:
        skipped = [p for p in points if p.kind != "wall" and not cache.path(p).exists()]
        points = [p for p in points if p.kind == "wall" or cache.path(p).exists()]
    todo = [p for p in points if not cache.path(p).exists()]
    client = None
    if scheduler is not None:
        if jobs > 1:
            print("note: --jobs is not used with --scheduler (the cluster's workers run the "
                  "points)", file=stream)
        client = connect_dask(scheduler, cache.version)
        parallel = dask_threads(client)
        where = (f"on the Dask cluster at {scheduler} ({len(client.nthreads())} workers, "
                 f"{parallel} threads)")
    else:
        parallel = min(jobs, os.cpu_count() or 1)
        where = f"with --jobs {jobs}"
    est = costs.estimate(todo, parallel)
    refused = [p for p in todo if p.cost <= costs.FIXED and p.experiment == "lr_sim"]
    if state == "resume":
        print(f"resuming the interrupted run in {out}/ ({len(points) - len(todo)} of "
              f"{len(points)} points in its cache)", file=stream)
    print(f"simgpu paper ({size_name}) on {device} ({info['gpu_name']}): {len(points)} points, "
          f"{len(points) - len(todo)} cached, {len(todo)} to compute {where} (cache version "
          f"{cache.version})", file=stream)
    print(costs.describe(est, parallel), file=stream, flush=True)
    if skipped:
        print(f"--cached-sim: {len(skipped)} simulated point(s) of the plan are not in the "
              "cache and are left out (their claims: not available)", file=stream, flush=True)
    if refused:
        print(f"{len(refused)} point(s) will not fit {device}'s memory (predicted footprint "
              f"above its {info['capacity']:,} bytes): the device refuses them at once, and "
              "the report lists them", file=stream, flush=True)
    if dry_run:
        return dict(points=len(points), todo=len(todo), estimate=est, plan=points)
    bar = Progress(len(points), sum(p.cost for p in todo), "simgpu paper", enabled=progress)
    errors: dict = {}
    interrupted = False
    executor = client if client is not None else ProcessPoolExecutor(jobs) if jobs > 1 else None
    try:
        results = run_points(points, executor, cache, bar, errors)
    except KeyboardInterrupt:
        bar.close()
        interrupted = True
        print(f"\ninterrupted: the points computed so far are in {out}/cache; run the same "
              "command again to resume from there. Writing the report of those points "
              "(the others: not available)", file=stream, flush=True)
        results = {p: r for p in points if (r := cache.get(p)) is not None}
    finally:
        bar.close()
        if client is not None:
            client.close()              # releases the futures: the cluster drops what is left
        elif executor is not None:
            executor.shutdown(cancel_futures=True)
    sections = [s for k in only for s in EXPERIMENTS[k].analyze(ctx, results)]

    from .plots import plotter
    draw = plotter()
    script = _script(size_name, device, 1 if scheduler else jobs)   # the numbers do not depend on it
    meta = dict(device=device, date=time.strftime("%Y-%m-%d"), script=script,
                size_name=size_name, host_desc=host_desc(), time_notes=time_notes(ctx, info),
                beside=beside_info,
                device_desc=(f"{info['gpu_name']}, {info['sm_count']} SMs, "
                             + ("CUDA events" if real else "simulated, timed-block engine")))
    written = write_outputs(sections, out, meta, draw)
    elapsed = time.perf_counter() - t0
    run_info = dict(points=len(points), cached=cache.hits, interrupted=interrupted, computed=len(points) - cache.hits - len(errors),
                    left_out=[p.label() for p in skipped],
                    failed=len(errors), elapsed=fmt_seconds(elapsed), pngs=written["pngs"],
                    errors=[(p.label(), e) for p, e in errors.items()],
                    figures_note=("PNG (matplotlib, Agg)" if draw else
                                  "PNG files skipped: matplotlib is not installed "
                                  "(pip install 'simgpu[plot]'); each figure's data is in its .csv"))
    report = write_paper_report(sections, out, meta, run_info)
    marker = out / INTERRUPTED
    if interrupted:
        marker.write_text("this run was interrupted; run the same command again to resume\n")
    elif marker.exists():
        marker.unlink()
    claims = [c for s in sections for c in s.claims]
    if interrupted:
        print(f"wrote the partial report {report} ({len(results)} of {len(points)} points)",
              file=stream)
        raise KeyboardInterrupt
    for p, e in errors.items():
        print(f"FAILED {p.label()}: {e}", file=stream)
    for c in claims:
        print(f"{verdict_line(c)}  ({c.source})", file=stream)
    if not draw:
        print("figures: PNGs skipped (matplotlib is not installed); figure data written as CSV",
              file=stream)
    print(f"wrote {report} and {len(written['tables'])} tables, {len(written['figures'])} figures "
          f"into {out}/ in {fmt_seconds(elapsed)} ({cache.hits} of {len(points)} points from the "
          "cache)", file=stream)
    return dict(claims=claims, written=written, cache_hits=cache.hits, points=len(points),
                errors=errors, elapsed=elapsed, report=report)
