"""Blocks streaming their own regions through the timed engines, with the DRAM's reads
booked at arrival and decided by FR-FCFS (``[dram] read_scheduling``; issue 18 item 4).

    python benchmarks/frfcfs_streams.py [--device sim:gtx260]

Each block sums its own region of ``words`` 32-bit words (one stream per block): with
few blocks the kernel is latency-bound, with many the streams interleave at every
partition, where FR-FCFS can group each open row's reads.  Prints cycles, the row hit
rate, the DRAM buses' utilization and the CPU seconds of each launch.
"""
from __future__ import annotations

import argparse
import datetime
import time

import numpy as np

import simgpu
from simgpu.lang import Array, blockDim, blockIdx, i32, kernel, threadIdx

from dram_bandwidth import with_scheduling


@kernel
def region_sums(a: Array[i32], out: Array[i32], per: i32):
    acc = 0
    for i in range(blockIdx.x * per + threadIdx.x, (blockIdx.x + 1) * per, blockDim.x):
        acc += a[i]
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="sim:gtx260")
    args = ap.parse_args()
    print(f"# {args.device}, {datetime.date.today()} (benchmarks/frfcfs_streams.py)")
    print("| blocks x words | engine | reads | cycles | row hit rate | bus utilization | CPU s |")
    print("|---|---|---|---:|---:|---:|---:|")
    for blocks, per in [(8, 1 << 14), (56, 1 << 13)]:
        a = np.arange(blocks * per, dtype=np.int32) % 1000
        for engine in ("timed", "timed-block"):
            for mode in ("at-arrival", "fr-fcfs"):
                dev = with_scheduling(simgpu.get_device(args.device), mode)
                out = dev.zeros(blocks * 256, np.int32)
                t0 = time.process_time()
                r = dev.launch(region_sums, blocks, 256, dev.to_device(a), out, per, engine=engine)
                cpu = time.process_time() - t0
                sums = out.to_host().reshape(blocks, 256).sum(1)
                assert np.array_equal(sums, a.reshape(blocks, per).sum(1))
                print(f"| {blocks} x 2^{per.bit_length() - 1} | {engine} | {mode} | {r.cycles:,} | "
                      f"{r.extra['row_hit_rate']:.2f} | {r.extra['bus_utilization']:.2f} | "
                      f"{cpu:.2f} |", flush=True)


if __name__ == "__main__":
    main()
