"""How `simgpu paper` scales with workers: the same plan, computed from an empty cache
with --jobs N (local processes) and on a Dask LocalCluster of N single-threaded
worker processes, wall time and speedup against one process.

    python benchmarks/paper_scaling.py [--size quick] [--only lr] [--workers 1 2 4 8]
        [--dask] [--device sim:gtx260] [--markdown out.md]

Each run writes into a fresh temporary folder (so nothing is cached) and the CPU
baselines are excluded (--only picks the experiments; the wall-clock points still run
in this process, one at a time, as in any run). The speedup is bounded by the
plan's largest point and by the wall-clock points (Amdahl): the table prints that
bound, the plan's summed point cost over its largest, from the cost models.
"""
from __future__ import annotations

import argparse
import sys
import io
import os
import tempfile
import time


def one_run(size: str, only, device: str, jobs: int, scheduler=None) -> float:
    from simgpu_apps.experiments import run_paper
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        run_paper(out=os.path.join(tmp, "out"), size_name=size, device=device, jobs=jobs,
                  only=only, progress=False, scheduler=scheduler, stream=io.StringIO())
        return time.perf_counter() - t


def bound(size: str, only, device: str) -> float:
    from simgpu_apps.experiments import run_paper
    with tempfile.TemporaryDirectory() as tmp:
        plan = run_paper(out=os.path.join(tmp, "out"), size_name=size, device=device,
                         only=only, progress=False, dry_run=True, stream=io.StringIO())["plan"]
    sim = [p.cost for p in plan if p.kind != "wall"]
    wall = sum(p.cost for p in plan if p.kind == "wall")
    return (sum(sim) + wall) / (max(sim) + wall) if sim else 1.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="quick", choices=("tiny", "quick", "full"))
    ap.add_argument("--only", default=None, help="lr, cc or lr,cc (default: both)")
    ap.add_argument("--workers", type=int, nargs="*", default=[1, 2, 4, 8])
    ap.add_argument("--dask", action="store_true", help="also on a Dask LocalCluster")
    ap.add_argument("--dask-only", action="store_true", help="only on a Dask LocalCluster "
                    "(speedups then against its one worker)")
    ap.add_argument("--device", default="sim:gtx260")
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args(argv)
    only = args.only.split(",") if args.only else None
    rows = []
    base = None
    for n in ([] if args.dask_only else args.workers):
        s = one_run(args.size, only, args.device, n)
        base = base or (s if n == 1 else None)
        rows.append(("--jobs", n, s))
        print(f"--jobs {n}: {s:.1f} s", flush=True)
    if args.dask or args.dask_only:
        from distributed import LocalCluster
        for n in args.workers:
            with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster:
                s = one_run(args.size, only, args.device, 1, cluster.scheduler_address)
            base = base or (s if n == 1 else None)
            rows.append(("Dask LocalCluster", n, s))
            print(f"dask {n}: {s:.1f} s", flush=True)
    cap = bound(args.size, only, args.device)
    lines = [f"# simgpu paper --size {args.size} on {args.device}: scaling with workers", "",
             f"`python benchmarks/paper_scaling.py {' '.join(argv if argv is not None else sys.argv[1:])}`, "
             f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} logical CPUs. Wall time from an "
             f"empty cache; speedup against one process (--jobs 1, or one Dask worker with --dask-only). The plan's bound (summed point cost "
             f"over its largest point plus the wall-clock points, from the cost models): "
             f"{cap:.1f}x.", "",
             "| runner | workers | wall s | speedup |", "|---|---:|---:|---:|"]
    for how, n, s in rows:
        lines.append(f"| {how} | {n} | {s:.1f} | {base / s:.2f}x |" if base else
                     f"| {how} | {n} | {s:.1f} | |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
