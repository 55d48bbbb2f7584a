"""Do list ranking's simulated points give the same numbers whatever else the process does?

A reproduction aid for a determinism defect seen once (2026-11-26, a full-suite run):
tests/test_dask.py::test_paper_command_with_scheduler_gives_the_inline_numbers failed
with sim:gtx260's list ranking at n=512, rs48 random splitters: RS2 0.008858 ms on a
Dask worker against 0.008826 ms inline (and in every fresh process here).  The cause
(issue 19): the Dask worker's profiler held the computing thread's frames, so an array
that a returning function dropped (the input scan's counters) was freed later, and
the device's first-fit allocator put the next array elsewhere.  Fixed in
simgpu.mem.address_space (freed blocks are taken only when unused space has no room).

The points (--points): "tiny", every lr_sim point of ``simgpu paper --quick --tiny
--only lr``; "quick-lr", rs64 and rs48 at 2^11..2^14 (the sizes of ``--quick``).  The
reference: those points computed in plan order in a fresh process (PYTHONHASHSEED=0).
Then, by mode:

  orders     the same points (and the tiny cc_sim points) in random orders, several
             passes in one process, each point in a worker thread while another thread
             allocates and calls gc.collect() (as a Dask worker's event loop may);
  profiler   the points in this process while a thread takes the computing thread's
             frames (sys._current_frames) and holds them 2 ms at a time, as a Dask
             worker's profiler holds them while it reads them (its sleep a GIL release,
             as a file read or a descheduled thread give that profiler);
  processes  fresh processes, one per condition and pass: PYTHONHASHSEED 1, 2 and
             unset (random), the points in reverse order (each after the others: warm
             caches), SIMGPU_NUMBA=0 (the Python memory units), SIMGPU_NATIVE=0 (the
             pure-Python modules where a mypyc build is loaded), both;
  dask       a LocalCluster of two worker processes (one thread each), the points
             submitted costliest first as ``simgpu paper --scheduler`` does, repeatedly
             (--profile-interval: the workers' profiler interval, Dask's 10ms by default).

Every field of every result is compared, bit for bit.  Prints one line per point whose
result differs from the reference (the steps whose times differ), and a summary.  Exit
status 1 when any differed.

    PYTHONPATH=$PWD python3 benchmarks/sweep_determinism.py orders --passes 10
    PYTHONPATH=$PWD python3 benchmarks/sweep_determinism.py profiler --points quick-lr
    PYTHONPATH=$PWD python3 benchmarks/sweep_determinism.py processes --points quick-lr
    PYTHONPATH=$PWD python3 benchmarks/sweep_determinism.py dask --passes 10
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from simgpu_apps.experiments import (SIZES, Ctx, connected_components, device_info,
                                     list_ranking, runner)


def tiny_points():
    info = device_info("sim:gtx260")
    ctx = Ctx(device="sim:gtx260", count_device="sim:gtx260", host=runner.host_id(),
              info=info, sizes=SIZES["tiny"], size_name="tiny")
    lr = list(dict.fromkeys(p for p in list_ranking.plan(ctx) if p.kind == "sim"))
    cc = list(dict.fromkeys(p for p in connected_components.plan(ctx) if p.kind == "sim"))
    return lr, cc


def quick_lr_points():
    """rs64 and rs48 (random splitters) at 2^11..2^14 on sim:gtx260."""
    return [runner.Point.make("lr_sim", "sim:gtx260", cost=n,
                              **list_ranking.point_params(v, n))
            for n in (1 << 11, 1 << 12, 1 << 13, 1 << 14) for v in ("rs64", "rs48")]


def chosen_points(name: str) -> tuple:
    """(the lr points compared, other points run in between) of --points ``name``."""
    lr, cc = tiny_points()
    return (lr, cc) if name == "tiny" else (quick_lr_points(), cc)


def results_here(name: str, reverse: bool = False) -> list:
    """The points' results (computed in plan order, or reversed), in plan order."""
    lr, _ = chosen_points(name)
    order = list(reversed(lr)) if reverse else lr
    got = {p: runner.compute_point(p)["result"] for p in order}
    return [got[p] for p in lr]


def in_process(name: str, reverse: bool = False, **env) -> list:
    """results_here in a fresh process with ``env`` added to this one's environment."""
    code = ("import json, sys; sys.argv = ['x']; from benchmarks.sweep_determinism import "
            f"results_here; print(json.dumps(results_here({name!r}, {reverse!r})))")
    environ = {k: v for k, v in os.environ.items() if k not in env}
    environ.update({k: v for k, v in env.items() if v is not None})
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=environ)
    return json.loads(out.stdout.strip().splitlines()[-1])


def reference(name: str) -> list:
    return in_process(name, PYTHONHASHSEED="0")


def differences(ref: dict, got: dict) -> str:
    steps = [f"{s} {ref['steps'][s]['time_ms']:.9f} -> {got['steps'][s]['time_ms']:.9f} ms"
             for s in ref["steps"] if ref["steps"][s] != got["steps"].get(s)]
    keys = [k for k in ref if k != "steps" and ref[k] != got.get(k)]
    return "; ".join(steps + ([f"other fields: {', '.join(keys)}"] if keys else []))


def noise(stop: threading.Event, seed: int):
    """Allocation (cycles included) and explicit collections from another thread."""
    rng, k = random.Random(seed), 0
    while not stop.is_set():
        x = [[i] for i in range(rng.randrange(100, 3000))]
        x.append([x, x])
        k += 1
        if k % 7 == 0:
            gc.collect()
        time.sleep(rng.random() * 0.002)


def run_orders(lr, cc, passes: int, seed: int):
    rng, stop = random.Random(seed), threading.Event()
    threading.Thread(target=noise, args=(stop, seed), daemon=True).start()
    with ThreadPoolExecutor(1) as pool:
        for k in range(passes):
            order = lr + cc
            rng.shuffle(order)
            for p in order:
                yield k, p, pool.submit(runner.compute_point, p).result()
    stop.set()


def run_profiler(lr, cc, passes: int, seed: int):
    """The points in this thread while another holds this thread's frames 2 ms at a time."""
    me, stop = threading.get_ident(), threading.Event()

    def sampler():
        while not stop.is_set():
            frame = sys._current_frames().get(me)
            time.sleep(0.002)
            del frame
            time.sleep(0.001)

    threading.Thread(target=sampler, daemon=True).start()
    for k in range(passes):
        for p in lr:
            yield k, p, runner.compute_point(p)
    stop.set()


# (name, reverse, environment) of the processes mode; None: the variable unset
CONDITIONS = [("PYTHONHASHSEED=1", False, {"PYTHONHASHSEED": "1"}),
              ("PYTHONHASHSEED=2", False, {"PYTHONHASHSEED": "2"}),
              ("PYTHONHASHSEED unset", False, {"PYTHONHASHSEED": None}),
              ("reverse order (warm)", True, {"PYTHONHASHSEED": None}),
              ("SIMGPU_NUMBA=0", False, {"SIMGPU_NUMBA": "0"}),
              ("SIMGPU_NATIVE=0", False, {"SIMGPU_NATIVE": "0"}),
              ("SIMGPU_NUMBA=0 SIMGPU_NATIVE=0", False, {"SIMGPU_NUMBA": "0",
                                                         "SIMGPU_NATIVE": "0"})]


def run_processes(points_name: str, lr, passes: int):
    for k in range(passes):
        for name, reverse, env in CONDITIONS:
            print(f"# pass {k}: {name}", flush=True)
            for p, res in zip(lr, in_process(points_name, reverse, **env)):
                yield k, p, {"ok": True, "result": res}


def run_dask(lr, cc, passes: int, seed: int, profile_interval: str | None = None):
    import dask
    import distributed
    settings = ({"distributed.worker.profile.interval": profile_interval}
                if profile_interval else {})
    with dask.config.set(settings), \
            distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for k in range(passes):
            order = sorted(lr + cc[:3], key=lambda p: -p.cost)
            futures = {client.submit(runner.compute_point, p, pure=False): p for p in order}
            for fut, p in futures.items():
                yield k, p, fut.result()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("orders", "profiler", "processes", "dask"))
    ap.add_argument("--points", choices=("tiny", "quick-lr"), default="tiny")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile-interval", default=None,
                    help="dask mode: the workers' profiler interval (e.g. 1ms)")
    args = ap.parse_args(argv)
    lr, cc = chosen_points(args.points)
    ref = reference(args.points)
    if args.mode == "processes":
        runs = run_processes(args.points, lr, args.passes)
    elif args.mode == "dask":
        runs = run_dask(lr, cc, args.passes, args.seed, args.profile_interval)
    else:
        runs = {"orders": run_orders, "profiler": run_profiler}[args.mode](
            lr, cc, args.passes, args.seed)
    checked = differed = 0
    print(f"# {args.mode}: {len(lr)} lr_sim points ({args.points}) against a fresh "
          "process's plan-order run")
    for k, p, out in runs:
        if p not in lr:
            continue
        if not out["ok"]:
            print(f"pass {k}: {p.p} failed: {out['error']}")
            differed += 1
            continue
        checked += 1
        want = ref[lr.index(p)]
        if out["result"] != want:
            differed += 1
            print(f"pass {k}: {json.dumps(p.p, sort_keys=True)}: {differences(want, out['result'])}",
                  flush=True)
    print(f"# {checked} results compared, {differed} differed")
    return 1 if differed else 0


if __name__ == "__main__":
    sys.exit(main())
