"""The model's side of calibration/loaded_latency_probe.py: the same levels of load on
sim:h100 (cold L2, timed-block engine), each load instruction's latency from issue to
data as calibration/stream_limits.py records it, beside the DRAM's busy share.

    python -m calibration.loaded_latency_probe_sim [--levels b1 b2 b4 b8 b8u2 b8u4]
                                                  [--log2n 22] [--config sim:h100]
                                                  [--state cold|dirty]

``--state dirty``: the probe's call 2 (docs/calibration/loaded-latency-probe-h100.md),
the L2 left full of dirty lines before the read: a launch first writes a buffer
larger than the L2 (cold L2), then the read runs on the L2 as that launch left it,
and each of its fills evicts a dirty line (a write-back the DRAM writes).

The GPU's window (docs/calibration/loaded-latency-probe-h100.md) spans an iteration's U
loads, from the first one's issue to the last one's data; the model's figure is per load
instruction, so for U > 1 it is at most the window's (the same for U = 1).  The kernel
here has no clock reads: its rate is the plain kernel's, stream_limits' (the probe's
instrumented kernel runs ~120 ns per iteration slower on the GPU).
"""
from __future__ import annotations

import argparse
import datetime

import numpy as np

import simgpu
from calibration.loaded_latency_probe import LEVELS, SMS
from calibration.stream_limits import load_latencies
from simgpu.lang import Array, blockDim, blockIdx, gridDim, i32, kernel, threadIdx
from simgpu_apps.memory_kernels import read_sum


@kernel
def read_u2(src: Array[i32], out: Array[i32], n: i32):
    t = blockIdx.x * blockDim.x + threadIdx.x
    s = gridDim.x * blockDim.x
    acc = 0
    for i in range(t, n, 2 * s):      # n is a multiple of 2 s
        a0 = src[i]
        a1 = src[i + s]
        acc += a0 + a1
    out[t] = acc


@kernel
def read_u4(src: Array[i32], out: Array[i32], n: i32):
    t = blockIdx.x * blockDim.x + threadIdx.x
    s = gridDim.x * blockDim.x
    acc = 0
    for i in range(t, n, 4 * s):      # n is a multiple of 4 s
        a0 = src[i]
        a1 = src[i + s]
        a2 = src[i + 2 * s]
        a3 = src[i + 3 * s]
        acc += a0 + a1 + a2 + a3
    out[t] = acc


KERNELS = {1: read_sum, 2: read_u2, 4: read_u4}     # (one load an iteration: stream_limits')


@kernel
def fill_ones(dst: Array[i32], n: i32):
    t = blockIdx.x * blockDim.x + threadIdx.x
    s = gridDim.x * blockDim.x
    for i in range(t, n, s):
        dst[i] = 1


def run(level: str, log2n: int, config: str = "sim:h100", state: str = "cold") -> dict:
    """One level on a fresh device: the time, the DRAM's rate over the body and its bus's
    busy share, and the load instructions' latency (ns: mean, median, p90)."""
    shape = {lv[0]: lv[1:] for lv in LEVELS}
    if level not in shape:
        raise SystemExit(f"unknown level {level!r}: one of {', '.join(shape)}")
    bps, threads, loads = shape[level]
    grid = SMS * bps
    step = grid * threads * loads
    n = max(step, (1 << log2n) // step * step)      # whole iterations for every thread
    dev = simgpu.get_device(config)
    dev.default_engine, dev.cache_control = "timed-block", "all"
    cfg = dev.config
    src, out = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(grid * threads, np.int32)
    if state == "dirty":                # the L2 full of dirty lines (5/4 of it written)
        words = cfg.cache.l2_bytes * 5 // 4 // 4
        dev.launch(fill_ones, SMS * 8, 256, dev.zeros(words, np.int32), words)
        dev.cache_control = "none"      # the read starts from the L2 the fill left
    elif state != "cold":
        raise SystemExit(f"unknown state {state!r}: cold or dirty")
    with load_latencies([]) as lat:
        rep = dev.launch(KERNELS[loads], grid, threads, src, out, n)
    clock = cfg.gpu.core_clock_mhz
    body_s = (rep.cycles - cfg.issue.kernel_fixed_us * clock) / clock * 1e-6
    waits = np.array([(d if not isinstance(d, list) else max(x.done for x in d)) - t
                      for t, d in lat]) / clock * 1e3
    gbps = rep.extra["dram_bytes"] / body_s / 1e9
    return {"level": level, "words": n, "us": rep.cycles / clock, "gbps": gbps,
            "of_peak": gbps / cfg.memory.peak_bandwidth_gbps,
            "bus_busy": rep.extra["bus_utilization"], "dram_mb": rep.extra["dram_bytes"] / 1e6,
            "lat_ns": (float(waits.mean()), float(np.median(waits)), float(np.percentile(waits, 90)))}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--levels", nargs="+", default=[lv[0] for lv in LEVELS if lv[0] != "w1"])
    ap.add_argument("--log2n", type=int, default=22, help="the array's int32 words (2^N)")
    ap.add_argument("--config", default="sim:h100")
    ap.add_argument("--state", default="cold", choices=("cold", "dirty"))
    a = ap.parse_args(argv)
    print(f"{a.config}, {a.state} L2, timed-block, {datetime.date.today()} "
          "(calibration/loaded_latency_probe_sim.py)\n")
    print("| level | MiB | us | DRAM GB/s (body) | of peak | bus busy | DRAM MB (read + write) "
          "| load latency ns: mean, median, p90 |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for level in a.levels:
        r = run(level, a.log2n, a.config, a.state)
        m, med, p90 = r["lat_ns"]
        print(f"| {level} | {r['words'] * 4 / 2**20:.0f} | {r['us']:.2f} | {r['gbps']:,.0f} | "
              f"{r['of_peak']:.2f} | {r['bus_busy']:.2f} | {r['dram_mb']:.1f} | "
              f"{m:.0f}, {med:.0f}, {p90:.0f} |", flush=True)


if __name__ == "__main__":
    main()
