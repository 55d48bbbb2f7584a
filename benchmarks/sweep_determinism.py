"""Do the tiny list-ranking points give the same numbers whatever ran before them?

A reproduction aid for a determinism defect seen once (2026-11-26, a full-suite run):
tests/test_dask.py::test_paper_command_with_scheduler_gives_the_inline_numbers failed
with sim:gtx260's list ranking at n=512, rs48 random splitters: RS2 0.008858 ms on a
Dask worker against 0.008826 ms inline (and in every fresh process here).

The reference: every lr_sim point of ``simgpu paper --quick --tiny --only lr``, computed
in plan order in a fresh process (what the inline run does).  Then, by mode:

  orders   the same points (and the tiny cc_sim points) in random orders, several
           passes in one process, each point in a worker thread while another thread
           allocates and calls gc.collect() (as a Dask worker's event loop may);
  dask     a LocalCluster of two worker processes (one thread each), the points
           submitted costliest first as ``simgpu paper --scheduler`` does, repeatedly.

Prints one line per point whose result differs from the reference (the steps whose
times differ), and a summary.  Exit status 1 when any differed.

    PYTHONPATH=$PWD python3 benchmarks/sweep_determinism.py orders --passes 10
    PYTHONPATH=$PWD python3 benchmarks/sweep_determinism.py dask --passes 10
"""
from __future__ import annotations

import argparse
import gc
import json
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


def reference_here() -> list:
    """The lr points' results in plan order (run in a fresh process by reference())."""
    lr, _ = tiny_points()
    return [runner.compute_point(p)["result"] for p in lr]


def reference() -> list:
    code = ("import json, sys; sys.argv = ['x']; from benchmarks.sweep_determinism import "
            "reference_here; print(json.dumps(reference_here()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


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


def run_dask(lr, cc, passes: int, seed: int):
    import distributed
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for k in range(passes):
            order = sorted(lr + cc[:3], key=lambda p: -p.cost)
            futures = {client.submit(runner.compute_point, p, pure=False): p for p in order}
            for fut, p in futures.items():
                yield k, p, fut.result()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("orders", "dask"))
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    lr, cc = tiny_points()
    ref = reference()
    runs = {"orders": run_orders, "dask": run_dask}[args.mode]
    checked = differed = 0
    print(f"# {args.mode}: {len(lr)} lr_sim points against a fresh process's plan-order run")
    for k, p, out in runs(lr, cc, args.passes, args.seed):
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
