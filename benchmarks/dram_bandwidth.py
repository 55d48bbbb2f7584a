"""Sustained DRAM bandwidth of four access shapes on a simulated GPU, as a fraction of
the config's peak (issue 18 item 4: it must come out of the DRAM timing rules, and a
GT200 copy sustains roughly 70-85 % of peak).

    python benchmarks/dram_bandwidth.py [--device sim:gtx260 sim:h100] [--log2n 20]
                                        [--read-scheduling at-arrival fr-fcfs]

Shapes (a grid-stride loop over n 32-bit words, the whole GPU busy):
copy (dst[i] = src[i]), read-only (each thread sums its words, one store per
thread), write-only (dst[i] = i), random 32-byte reads (each lane reads one word at
a random index, read coalesced from an index array: every lane is a 32-B
transaction of its own; on the H100 the L2 fetches l2_fill_bytes per miss). The fraction is DRAM bytes moved / kernel
time / peak; kernel time is the simulated launch's cycles (without the host's
launch overhead). On a GPU with an L2 the arrays are first flushed from it.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import time

import numpy as np

import simgpu
from simgpu.lang import Array, blockDim, blockIdx, gridDim, i32, kernel, threadIdx
from simgpu_apps.gpu_tools.calibrate_cases import copy, write     # the calibration's own
from simgpu_apps.memory_kernels import read_sum


@kernel
def random_reads(src: Array[i32], index: Array[i32], out: Array[i32], count: i32):
    t = blockIdx.x * blockDim.x + threadIdx.x
    acc = 0
    for i in range(t, count, gridDim.x * blockDim.x):
        acc += src[index[i]]
    out[t] = acc


def shapes(dev, n):
    src = dev.to_device(np.arange(n, dtype=np.int32))
    dst = dev.zeros(n, np.int32)
    threads = dev.config.gpu.sm_count * dev.config.limits.max_threads_per_sm
    out = dev.zeros(threads, np.int32)
    index = dev.to_device(np.random.default_rng(1).permutation(n)[: n // 8].astype(np.int32))
    return threads, [
        ("copy", copy, (src, dst, n)),
        ("read-only", read_sum, (src, out, n)),
        ("write-only", write, (dst, n)),
        ("random 32-B reads", random_reads, (src, index, out, n // 8)),
    ]


def with_scheduling(dev, mode: str | None):
    """``dev`` with ``[dram] read_scheduling = mode`` (None: as its config has it)."""
    if mode is None or mode == dev.config.dram.read_scheduling:
        return dev
    cfg = dev.config
    cfg = dataclasses.replace(cfg, dram=dataclasses.replace(cfg.dram, read_scheduling=mode))
    return type(dev)(cfg, f"{dev.name}+{mode}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", nargs="+", default=["sim:gtx260", "sim:h100"])
    ap.add_argument("--log2n", type=int, default=20)
    ap.add_argument("--engine", default="timed-block")
    ap.add_argument("--shapes", nargs="+", default=None,
                    help="run only these shapes (copy read-only write-only random)")
    ap.add_argument("--read-scheduling", nargs="+", default=[None],
                    choices=["at-arrival", "fr-fcfs"],
                    help="[dram] read_scheduling to run with (default: the config's)")
    args = ap.parse_args()
    print(f"# DRAM bandwidth, n = 2^{args.log2n} int32 words, engine {args.engine}, "
          f"{datetime.date.today()} (benchmarks/dram_bandwidth.py)")
    print("| device | reads | shape | cycles | DRAM bytes | GB/s | fraction of peak | row hit rate | "
          "activations | queue-full stall cycles | CPU s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, mode in [(d, m) for d in args.device for m in args.read_scheduling]:
        dev = with_scheduling(simgpu.get_device(name), mode)
        cfg = dev.config
        mode = cfg.dram.read_scheduling
        peak = cfg.memory.peak_bandwidth_gbps
        threads, cases = shapes(dev, 1 << args.log2n)
        block = 256
        grid = threads // block
        for label, kern, kargs in cases:
            if args.shapes and label.split()[0] not in args.shapes:
                continue
            if cfg.cache.present:
                dev.flush_caches()
            t0 = time.process_time()
            try:
                rep = dev.launch(kern, grid, block, *kargs, engine=args.engine)
            except ValueError as e:              # (fr-fcfs on a GPU with an L2)
                print(f"| {name} | {mode} | {label} | {e} |", flush=True)
                break
            cpu = time.process_time() - t0
            x = rep.extra
            fixed = (cfg.issue.kernel_fixed_us or 0.0) * cfg.gpu.core_clock_mhz
            cycles = rep.cycles - fixed
            seconds = cycles / (cfg.gpu.core_clock_mhz * 1e6)
            gbps = x["dram_bytes"] / seconds / 1e9
            print(f"| {name} | {mode} | {label} | {cycles:,.0f} | {x['dram_bytes']:,} | {gbps:.1f} | "
                  f"{gbps / peak:.2f} | {x['row_hit_rate']:.2f} | {x['activations']:,} | "
                  f"{x['queue_full_stall_cycles']:,.0f} | {cpu:.1f} |", flush=True)


if __name__ == "__main__":
    main()
