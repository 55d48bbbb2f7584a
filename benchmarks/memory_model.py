"""The memory model at work: a coalesced and a stride-32 copy on a simulated GPU.

Prints simulated time, transactions, achieved bandwidth (as a fraction of the
config's peak) and the timed engine's own speed in simulated warp
instructions per wall-clock second.  Run: ``python benchmarks/memory_model.py``.
"""
from __future__ import annotations

import argparse
import datetime
import time

import numpy as np

import simgpu
from simgpu.examples.coalescing import copy_with_stride


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--log2n", type=int, default=20)
    p.add_argument("--device", default="sim:gtx260")
    args = p.parse_args()
    dev = simgpu.get_device(args.device)
    n = 1 << args.log2n
    src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
    blocks = dev.config.gpu.sm_count * dev.config.limits.max_threads_per_sm // 256
    peak = dev.config.memory.peak_bandwidth_gbps
    print(f"# memory model — {args.device}, n = 2^{args.log2n} ints, {blocks} x 256 threads, "
          f"timed engine, {datetime.date.today()}")
    print("| copy | time ms | load transactions | store transactions | DRAM bytes | "
          "achieved GB/s | % of peak | wall s | warp instr/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    times = {}
    for stride in (1, 32):
        t0 = time.perf_counter()
        rep = dev.launch(copy_with_stride, blocks, 256, src, dst, stride, n, engine="timed")
        wall = time.perf_counter() - t0
        assert np.array_equal(dst.to_host(), (np.arange(n) * stride) % n)
        x = rep.extra
        times[stride] = rep.time_ms
        print(f"| stride {stride} | {rep.time_ms:.4f} | {rep.loads.transactions:,} | "
              f"{rep.stores.transactions:,} | {x['dram_bytes']:,} | {x['achieved_gbps']:.1f} | "
              f"{x['achieved_gbps'] / peak:.0%} | {wall:.1f} | {rep.warp_instructions / wall:,.0f} |")
    print(f"\nstride 32 / stride 1 time: {times[32] / times[1]:.2f}x")


if __name__ == "__main__":
    main()
