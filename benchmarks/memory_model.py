"""The memory model at work: a coalesced and a stride-32 copy on a simulated GPU.

Prints simulated time, transactions, achieved bandwidth (as a fraction of the
config's peak) and the timed engines' own speed in simulated warp
instructions per CPU second (``time.process_time`` of this one process, so
other jobs on the machine do not count against it).  Run:
``python benchmarks/memory_model.py`` (``--engines timed`` for one engine,
``--repeat 3`` to keep the fastest of three runs of each launch;
``--algorithms 15`` adds list ranking of a random list of 2^15 nodes and
Shiloach-Vishkin on a random graph of 2^14 vertices and 2^15 edges, counting
the CPU time of their launches only).
"""
from __future__ import annotations

import argparse
import datetime
import time

import numpy as np

import simgpu
from simgpu_apps.lessons.coalescing import copy_with_stride


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--log2n", type=int, default=20)
    p.add_argument("--device", default="sim:gtx260")
    p.add_argument("--engines", default="timed,timed-block",
                   help="comma-separated timed engines to run (default: both)")
    p.add_argument("--repeat", type=int, default=1,
                   help="runs of each launch; the fastest CPU time is reported")
    p.add_argument("--algorithms", type=int, default=0, metavar="LOG2N",
                   help="also time list ranking (2^LOG2N nodes) and connected components")
    args = p.parse_args()
    dev = simgpu.get_device(args.device)
    n = 1 << args.log2n
    src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
    blocks = dev.config.gpu.sm_count * dev.config.limits.max_threads_per_sm // 256
    peak = dev.config.memory.peak_bandwidth_gbps
    engines = args.engines.split(",")
    dev.launch(copy_with_stride, 1, 32, src, dst, 1, 32, engine=engines[0])   # imports, warm-up
    print(f"# memory model — {args.device}, n = 2^{args.log2n} ints, {blocks} x 256 threads, "
          f"{datetime.date.today()}; CPU s = time.process_time() of the launch, "
          f"fastest of {args.repeat}")
    print("| engine | copy | time ms | load transactions | store transactions | DRAM bytes | "
          "achieved GB/s | % of peak | CPU s | warp instr/s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    times = {}
    for engine in engines:
        for stride in (1, 32):
            best = None
            for _ in range(args.repeat):
                t0 = time.process_time()
                rep = dev.launch(copy_with_stride, blocks, 256, src, dst, stride, n, engine=engine)
                cpu = time.process_time() - t0
                best = cpu if best is None else min(best, cpu)
            assert np.array_equal(dst.to_host(), (np.arange(n) * stride) % n)
            x = rep.extra
            times[engine, stride] = rep.time_ms
            print(f"| {engine} | stride {stride} | {rep.time_ms:.4f} | {rep.loads.transactions:,} | "
                  f"{rep.stores.transactions:,} | {x['dram_bytes']:,} | {x['achieved_gbps']:.1f} | "
                  f"{x['achieved_gbps'] / peak:.0%} | {best:.2f} | {rep.warp_instructions / best:,.0f} |")
    print()
    for engine in engines:
        print(f"{engine}: stride 32 / stride 1 time: {times[engine, 32] / times[engine, 1]:.2f}x")
    if args.algorithms:
        print()
        algorithms(args.device, engines, args.algorithms)


def algorithms(device, engines, log2n):
    """Warp instructions per CPU second of the launches of two whole algorithms."""
    from algorithms import connected_components, generators, list_ranking
    succ = generators.random_list(1 << log2n, seed=1)
    n, edges = generators.uniform_random_graph(1 << (log2n - 1), 1 << log2n, seed=2)
    print(f"| engine | algorithm | launches | warp instructions | CPU s in launches | warp instr/s |")
    print("|---|---|---:|---:|---:|---:|")
    for engine in engines:
        for name, run in (
                (f"list ranking, random splitter, 2^{log2n} nodes",
                 lambda dev: list_ranking.rank(succ, method="random-splitter", device=dev)),
                (f"Shiloach-Vishkin, 2^{log2n - 1} vertices, 2^{log2n} edges",
                 lambda dev: connected_components.label(n, edges, device=dev))):
            dev = simgpu.get_device(device)
            dev.default_engine = engine
            cpu, launch = [0.0], dev.launch

            def timed_launch(*a, **k):
                t0 = time.process_time()
                try:
                    return launch(*a, **k)
                finally:
                    cpu[0] += time.process_time() - t0
            dev.launch = timed_launch
            reps = run(dev).launches
            wi = sum(r.warp_instructions for r in reps)
            print(f"| {engine} | {name} | {len(reps)} | {wi:,} | {cpu[0]:.2f} | {wi / cpu[0]:,.0f} |")


if __name__ == "__main__":
    main()
