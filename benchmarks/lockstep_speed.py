"""How fast the lockstep engine runs: lane-operations per second on one core.

A lane-operation is one IR operation executed by one active lane (the
report's ``thread_instructions``).  Run: ``python benchmarks/lockstep_speed.py``.
"""
from __future__ import annotations

import argparse
import datetime
import platform
import time

import numpy as np

import simgpu
from simgpu.lang import Array, blockDim, blockIdx, gridDim, i32, i64, kernel, threadIdx


@kernel
def saxpy_striding(x: Array[i32], y: Array[i32], out: Array[i32], a: i32, n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        out[i] = a * x[i] + y[i]


@kernel
def collatz(start: Array[i64], steps: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        x = start[i]
        k = 0
        while x != 1:
            if x % 2 == 0:
                x = x // 2
            else:
                x = 3 * x + 1
            k += 1
        steps[i] = k


def measure(dev, kern, grid, block, *args):
    t0 = time.perf_counter()
    rep = dev.launch(kern, grid, block, *args)
    return rep, time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--log2n", type=int, default=22)
    p.add_argument("--device", default="sim:gtx260")
    args = p.parse_args()
    dev = simgpu.get_device(args.device)
    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    x = dev.to_device(rng.integers(-1000, 1000, n, dtype=np.int32))
    y = dev.to_device(rng.integers(-1000, 1000, n, dtype=np.int32))
    out = dev.empty(n, np.int32)
    rows = []
    rep, dt = measure(dev, saxpy_striding, 27 * 4, 256, x, y, out, 3, n)
    rows.append(("striding saxpy", n, rep, dt))
    m = 1 << 18
    start = dev.to_device(rng.integers(1, 1 << 20, m).astype(np.int64))
    steps = dev.empty(m, np.int32)
    rep, dt = measure(dev, collatz, m // 256, 256, start, steps, m)
    rows.append(("divergent while (collatz)", m, rep, dt))
    print(f"# lockstep engine speed — {args.device}, {datetime.date.today()}, "
          f"{platform.processor() or platform.machine()}, one process")
    print(f"| kernel | elements | lane-ops | warp instr. | wall s | M lane-ops/s |")
    print(f"|---|---:|---:|---:|---:|---:|")
    for name, size, rep, dt in rows:
        print(f"| {name} | {size:,} | {rep.thread_instructions:,} | {rep.warp_instructions:,} | "
              f"{dt:.2f} | {rep.thread_instructions / dt / 1e6:.1f} |")


if __name__ == "__main__":
    main()
