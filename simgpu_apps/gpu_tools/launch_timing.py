"""How much of a plain CUDA-event time is the host's launch call: the cuda device's
two timing modes side by side (cuda_backend.kernel_timing).

    python -m simgpu_apps.gpu_tools.launch_timing [--repeats 30]

on a machine with a GPU and CuPy. For a grid-stride int32 copy of n elements, each
launch synchronous (the stream idle at each start, as a single timed launch is), it
prints the median over ``repeats`` launches of: plain events around the launch
(``kernel_timing = "events"``), gated events (the kernel's own time), and the host's
wall time of the launch call. Run outside any profiler (under ncu the device falls
back to plain events).
"""
from __future__ import annotations

import argparse

import numpy as np

import simgpu
from simgpu_apps.lessons.coalescing import copy_striding


def measure(dev, n, repeats):
    src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
    row = {}
    for mode in ("events", "gated"):
        dev.kernel_timing = mode
        dev.launch(copy_striding, 264, 256, src, dst, n, sync=True)        # warm-up
        reps = [dev.launch(copy_striding, 264, 256, src, dst, n, sync=True) for _ in range(repeats)]
        row[mode] = float(np.median([r.time_ms for r in reps]))
        row[mode + " overhead"] = float(np.median([r.launch_overhead_ms for r in reps]))
        row[mode + " modes"] = sorted({r.extra["kernel_timing"] for r in reps})
    dev.kernel_timing = "gated"
    return row


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m simgpu_apps.gpu_tools.launch_timing",
                                description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=30)
    args = p.parse_args(argv)
    dev = simgpu.get_device("cuda")
    print(f"{dev.gpu_name}: int32 copy, grid 264 x 256, synchronous launches, median of "
          f"{args.repeats}\n")
    print("| n | plain events ms | gated events ms (kernel) | difference ms | "
          "host launch call ms | timing seen |")
    print("|---:|---:|---:|---:|---:|---|")
    for n in (1 << 10, 1 << 16, 1 << 20, 1 << 24):
        r = measure(dev, n, args.repeats)
        print(f"| {n:,} | {r['events']:.4f} | {r['gated']:.4f} | {r['events'] - r['gated']:.4f} | "
              f"{r['gated overhead']:.4f} | {', '.join(r['gated modes'])} |")


if __name__ == "__main__":
    main()
