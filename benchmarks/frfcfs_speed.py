"""CPU cost of ``[dram] read_scheduling = "fr-fcfs"`` against "at-arrival" in the timed
engine, on kernels where warps wait for the SM's miss entries.

    python benchmarks/frfcfs_speed.py [--device sim:gtx260 sim:h100] [--repeat 2]
                                      [--kernels gather_scatter wide copy] [--log2 16]

Under FR-FCFS a load's time is unknown until the scheduler decides its reads, and so is
when the miss entries it holds free (simgpu/sim/deferred.py): a warp that waits for
entries is told when decisions free them.  Prints, per device, kernel and scheduling:
simulated cycles, the CPU seconds of the launch and of collecting its garbage
(time.process_time, fastest of --repeat; the garbage of earlier launches is collected
first, untimed), the fr-fcfs / at-arrival CPU ratio, the report's ``mshr_waits`` and the
scheduler's decision events.  The kernels:

* ``gather_scatter``: dst[perm[i]] = src[a[i]] + src[b[i]], uniform random indices
  (every lane its own transaction: the miss entries run out);
* ``wide``: eight independent loads per loop iteration, a wave of 8 blocks per SM;
* ``copy``: one word per thread, read and written (streaming).
"""
from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import subprocess
import time

import numpy as np

import simgpu
from simgpu.lang import Array, blockDim, blockIdx, i32, kernel, threadIdx
from simgpu.mem import native_load
from simgpu_apps.memory_kernels import gather_scatter, read_wide

from dram_bandwidth import with_scheduling

BLOCK = 256


@kernel
def copy(src: Array[i32], dst: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        dst[i] = src[i]


def launch(dev, name: str, log2n: int):
    """Launch kernel ``name`` on ``dev`` (inputs from a fixed seed): (report, CPU s,
    size label); the output is checked against numpy."""
    n = 1 << log2n
    rng = np.random.default_rng([20261126, log2n])
    if name == "gather_scatter":
        src = rng.integers(-2**20, 2**20, n, dtype=np.int32)
        a, b = (rng.integers(0, n, n, dtype=np.int32) for _ in range(2))
        perm = rng.permutation(n).astype(np.int32)
        args = [dev.to_device(v) for v in (src, a, b, perm)]
        dst = dev.zeros(n, np.int32)
        gc.collect()
        t0 = time.process_time()
        rep = dev.launch(gather_scatter, -(-n // BLOCK), BLOCK, *args, dst, n, engine="timed-block")
        gc.collect()
        cpu = time.process_time() - t0
        want = np.zeros(n, np.int32)
        want[perm] = src[a] + src[b]
        assert np.array_equal(dst.to_host(), want)
        return rep, cpu, f"n=2^{log2n}"
    if name == "wide":
        grid = dev.config.gpu.sm_count * 8          # a wave of 8 blocks per SM
        n = 8 * grid * BLOCK * max(1, n // (8 * grid * BLOCK))
        src = np.arange(n, dtype=np.int32)
        out = dev.zeros(grid * BLOCK, np.int32)
        gc.collect()
        t0 = time.process_time()
        rep = dev.launch(read_wide, grid, BLOCK, dev.to_device(src), out, n, engine="timed-block")
        gc.collect()
        cpu = time.process_time() - t0
        assert np.array_equal(out.to_host(), src.reshape(-1, grid * BLOCK).sum(0).astype(np.int32))
        return rep, cpu, f"{grid} blocks, n={n:,}"
    if name == "copy":
        src = rng.integers(0, 1000, n, dtype=np.int32)
        dst = dev.zeros(n, np.int32)
        gc.collect()
        t0 = time.process_time()
        rep = dev.launch(copy, -(-n // BLOCK), BLOCK, dev.to_device(src), dst, n, engine="timed-block")
        gc.collect()
        cpu = time.process_time() - t0
        assert np.array_equal(dst.to_host(), src)
        return rep, cpu, f"n=2^{log2n}"
    raise SystemExit(f"unknown kernel {name!r}: gather_scatter, wide or copy")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", nargs="+", default=["sim:gtx260", "sim:h100"])
    ap.add_argument("--kernels", nargs="+", default=["gather_scatter", "wide", "copy"])
    ap.add_argument("--log2", type=int, nargs="+", default=[16],
                    help="problem sizes (2^k words; wide: rounded to whole waves)")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        rev = "?"
    units = "compiled" if native_load.loaded() else "source"
    print(f"# fr-fcfs vs at-arrival CPU time, engine timed-block, {datetime.date.today()} "
          f"(benchmarks/frfcfs_speed.py, commit {rev}, {platform.node()}, "
          f"{os.cpu_count()} CPUs, memory units {units}, fastest of {args.repeat})")
    print("| device | kernel | size | reads | cycles | CPU s | fr-fcfs / at-arrival | "
          "mshr_waits | decision events |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|")
    for device in args.device:
        for name in args.kernels:
            for log2n in args.log2:
                base = None
                for mode in ("at-arrival", "fr-fcfs"):
                    best = None
                    for _ in range(args.repeat):
                        dev = with_scheduling(simgpu.get_device(device), mode)
                        rep, cpu, size = launch(dev, name, log2n)
                        if best is None or cpu < best[1]:
                            best = (rep, cpu)
                    rep, cpu = best
                    base = cpu if base is None else base
                    ratio = f"{cpu / base:.2f}" if mode == "fr-fcfs" else ""
                    print(f"| {device} | {name} | {size} | {mode} | {rep.cycles:,} | {cpu:.2f} | "
                          f"{ratio} | {rep.extra.get('mshr_waits', 0):,} | "
                          f"{rep.extra.get('deferred_decisions', '')} |", flush=True)


if __name__ == "__main__":
    main()
