"""The warp scoreboard at work, and what it costs the timed engines in CPU time.

Two tables:

1. **Memory-level parallelism of one thread** (one block of one thread, engine
   ``timed``): simulated cycles per loop iteration of a loop with 1, 2 or 4
   independent loads, a dependent chain ``a[b[i]]``, a load whose result is never
   used, a store-only loop, and stores followed by ``syncthreads()``; every launch
   starts with empty caches.  Without a
   scoreboard (before issue 18) the loads of one iteration went one after another.
2. **Speed**: the CPU time (``time.process_time`` of this process) of the RS3
   walk of random-splitter list ranking on a random list of 2^k nodes, engine
   ``timed-block``, and the nodes simulated per CPU second.

Run: ``python benchmarks/scoreboard.py`` (``--device sim:h100``, ``--sizes 16,17,18``,
``--repeat 3`` keeps the fastest of three runs, ``--skip-speed``).
"""
from __future__ import annotations

import argparse
import datetime
import time

import numpy as np

import simgpu
from simgpu_apps.mechanism_kernels import (sb_chain_2 as chain_2, sb_loads_1 as loads_1,
    sb_loads_2 as loads_2, sb_loads_4 as loads_4, sb_stores_only as stores_only,
    sb_stores_sync as stores_sync, sb_unused_load as unused_load)

ITERS = 64
STRIDE = 4096                   # ints between iterations: every load its own segment


def mlp_table(device: str) -> list:
    """(case, cycles per iteration, loads or stores per iteration) on ``device``."""
    dev = simgpu.get_device(device)
    dev.cache_control = "all"           # every launch starts with empty caches (as ncu's)
    n = STRIDE * ITERS
    arrays = [dev.to_device(np.arange(n, dtype=np.int32) % 97) for _ in range(4)]
    out = dev.zeros(n, np.int32)
    rows = []

    def per_iteration(k, *args, accesses):
        base = dev.launch(k, 1, 1, *args, 0, engine="timed").cycles
        cycles = dev.launch(k, 1, 1, *args, ITERS, engine="timed").cycles
        rows.append((k.__name__, (cycles - base) / ITERS, accesses))
    a, b, c, d = arrays
    per_iteration(loads_1, a, out, accesses=1)
    per_iteration(loads_2, a, b, out, accesses=2)
    per_iteration(loads_4, a, b, c, d, out, accesses=4)
    per_iteration(chain_2, a, b, out, accesses=2)
    per_iteration(unused_load, a, out, accesses=1)
    per_iteration(stores_only, out, accesses=1)
    per_iteration(stores_sync, out, accesses=1)
    return rows


def speed_table(device: str, sizes, repeat: int) -> list:
    """(log2 n, RS3 warp instructions, CPU s of RS3, nodes per CPU s) on ``device``."""
    from algorithms import generators, list_ranking
    rows = []
    for k in sizes:
        succ = generators.random_list(1 << k, seed=1)
        best = None
        for _ in range(repeat):
            dev = simgpu.get_device(device)
            dev.default_engine = "timed-block"
            cpu, launch = {}, dev.launch

            def timed_launch(fn, *a, **kw):
                t0 = time.process_time()
                try:
                    return launch(fn, *a, **kw)
                finally:
                    cpu[fn.name] = cpu.get(fn.name, 0.0) + time.process_time() - t0
            dev.launch = timed_launch
            reps = list_ranking.rank(succ, method="random-splitter", device=dev).launches
            rs3 = [r for r in reps if r.kernel.startswith("rs3")]
            t = sum(cpu[name] for name in {r.kernel for r in rs3})
            if best is None or t < best[2]:
                best = (k, sum(r.warp_instructions for r in rs3), t, sum(r.cycles for r in rs3))
        rows.append(best)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default="sim:gtx260")
    p.add_argument("--sizes", default="16,17,18", help="log2 of the list sizes for RS3")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--skip-speed", action="store_true")
    args = p.parse_args()
    print(f"# scoreboard — {args.device}, {datetime.date.today()}")
    print()
    print(f"One thread, {ITERS} iterations, engine timed: cycles per iteration "
          f"(launch with {ITERS} iterations less the launch with 0)")
    print()
    print("| loop | accesses / iteration | cycles / iteration |")
    print("|---|---:|---:|")
    for name, cyc, acc in mlp_table(args.device):
        print(f"| {name} | {acc} | {cyc:,.1f} |")
    if args.skip_speed:
        return
    print()
    print(f"RS3 of random-splitter list ranking, engine timed-block, CPU s = "
          f"time.process_time() of the RS3 launch, fastest of {args.repeat}")
    print()
    print("| nodes | RS3 warp instructions | RS3 cycles | CPU s | nodes / CPU s |")
    print("|---:|---:|---:|---:|---:|")
    for k, wi, t, cyc in speed_table(args.device, [int(s) for s in args.sizes.split(",")],
                                     args.repeat):
        print(f"| 2^{k} | {wi:,} | {cyc:,} | {t:.2f} | {(1 << k) / t:,.0f} |")


if __name__ == "__main__":
    main()
