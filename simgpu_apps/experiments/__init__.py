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

from . import connected_components, list_ranking
from .paper_document import write_outputs, write_paper_report, verdict_line
from .runner import (Cache, Progress, code_version, connect_dask, dask_threads, fmt_seconds,
                     host_id, run_points)

__all__ = ["run_paper", "SIZES", "EXPERIMENTS", "CLAIM_IDS"]

P = lambda a, b: [1 << k for k in range(a, b + 1)]      # 2^a .. 2^b

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
                    gpu_name=cfg.gpu.name, arch=dev.arch, config_key=cfg.key)
    else:                                        # a GPU without a bundled config
        info = dict(sm_count=dev.sm_count, cores=dev.sm_count * 128,
                    resident_threads=dev.sm_count * dev.max_threads_per_sm, gpu_name=dev.gpu_name,
                    arch=dev.arch, config_key=None,
                    cores_note="cores assumed 128 per SM (no bundled config)")
    # cost estimates are host seconds of the simulator (measured: sim:h100 runs these
    # sizes about as fast as sim:gtx260); on a real GPU the time goes to input generation
    info["cost_scale"] = 0.1 if real else 1.0
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
               "summed over every kernel launch of an algorithm, each launch including the "
               "config's kernel launch overhead; host work between launches is not included. "
               "They are deterministic: the same point gives the same time in any process.")
    cpu = (f"CPU times are wall-clock times measured **on this machine** ({host_desc()}), the "
           f"fastest of {ctx.sizes['cpu_repeats']} runs after a warm-up (on a shared machine the "
           "slower runs measure other processes; every run is kept in the cache files), not on "
           "the paper's "
           "Intel Core 2 Quad. The sequential list ranking reference (`method=\"sequential\"`) "
           "walks the list in a Python loop (about 0.4 us per node, several times slower than "
           "the paper's C code), and the sequential connected components reference is a "
           "numpy-vectorized union-find. So compare ratios and trends with the paper, not "
           "absolute values, and read the GPU/CPU ratios as this machine's.")
    why = ("the same sizes as the simulated runs, so that the two compare point by point"
           if ctx.real_gpu else "the simulator executes every warp instruction on the host")
    sizes = (f"Sizes ({ctx.size_name}) are far below the paper's (lists up to 64M nodes, graphs "
             f"with m = 8M edges): {why}. Where a claim is about sizes not run, its verdict "
             "says 'not tested'.")
    return [gpu, cpu, sizes]


def _script(size_name, device, jobs) -> str:
    flag = {"quick": " --quick", "tiny": " --quick --tiny", "full": ""}[size_name]
    return f"simgpu paper{flag} --device {device}" + (f" --jobs {jobs}" if jobs != 1 else "")


def run_paper(out="out/paper", size_name: str = "quick", device: str = "sim:gtx260", jobs: int = 1,
              only=None, stream=None, progress: bool = True, scheduler: str | None = None) -> dict:
    """Run the experiments, write tables, figures and report.md into `out`.
    Returns a summary dict (claims, files, cache hits, elapsed).

    scheduler: the address of a Dask scheduler (``tcp://host:8786``): the simulated
    points then run on that cluster's workers (its scheduler and workers must have
    the same simgpu installed) instead of local processes, and `jobs` is not used; the wall-clock
    CPU baselines still run here, and the cache and outputs are written here."""
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
    info = device_info(device)
    real = info["real"]
    ctx = Ctx(device=device, count_device=(device if not real else f"sim:{info['config_key'] or 'gtx260'}"),
              host=host_id(), info=info, sizes=SIZES[size_name], size_name=size_name, real_gpu=real)
    if scheduler is not None and real:
        raise ValueError("--scheduler runs simulated devices only: a real GPU's points run on "
                         "this machine's card (drop --scheduler)")
    if real and jobs > 1:
        print("note: --jobs is set to 1 on a real GPU (parallel points would share the card)",
              file=stream)
        jobs = 1
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cache = Cache(out / "cache", code_version(cuda=real))
    points = list(dict.fromkeys(p for k in only for p in EXPERIMENTS[k].plan(ctx)))
    todo = [p for p in points if not cache.path(p).exists()]
    sim_cost = sum(p.cost for p in todo if p.kind != "wall")
    wall_cost = sum(p.cost for p in todo if p.kind == "wall")
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
    est = sim_cost / parallel + wall_cost + 2
    print(f"simgpu paper ({size_name}) on {device} ({info['gpu_name']}): {len(points)} points, "
          f"{len(points) - len(todo)} cached; estimated time ~{fmt_seconds(est)} "
          f"{where} (cache version {cache.version})", file=stream, flush=True)
    bar = Progress(len(points), sum(p.cost for p in todo), "simgpu paper", enabled=progress)
    errors: dict = {}
    executor = client if client is not None else ProcessPoolExecutor(jobs) if jobs > 1 else None
    try:
        results = run_points(points, executor, cache, bar, errors)
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
                device_desc=(f"{info['gpu_name']}, {info['sm_count']} SMs, "
                             + ("CUDA events" if real else "simulated, timed-block engine")))
    written = write_outputs(sections, out, meta, draw)
    elapsed = time.perf_counter() - t0
    run_info = dict(points=len(points), cached=cache.hits, computed=len(points) - cache.hits - len(errors),
                    failed=len(errors), elapsed=fmt_seconds(elapsed), pngs=written["pngs"],
                    errors=[(p.label(), e) for p, e in errors.items()],
                    figures_note=("PNG (matplotlib, Agg)" if draw else
                                  "PNG files skipped: matplotlib is not installed "
                                  "(pip install 'simgpu[plot]'); each figure's data is in its .csv"))
    report = write_paper_report(sections, out, meta, run_info)
    claims = [c for s in sections for c in s.claims]
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
