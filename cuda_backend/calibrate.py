"""Microbenchmarks that calibrate the memory model, run the same way on any device.

    python -m cuda_backend.calibrate --device cuda     --out gpu.json
    python -m cuda_backend.calibrate --device sim:h100 --out sim.json
    python -m cuda_backend.calibrate --compare gpu.json sim.json

Each benchmark is a kernel of the kernel language, so the GPU and the
simulator run the very same code:

* ``copy``: coalesced copy of n ints; GB/s counting read + write;
* ``gather``: ``out[i] = src[idx[i]]`` with a random permutation; G elements/s,
  by footprint (the L2 holds small footprints, not large ones);
* ``chase``: one thread following a random cycle of dependent loads; ns per load;
* ``atomic``: every thread adds 1 to one counter; atomics per ns.

Times are medians of ``--repeats`` launches (CUDA events on the GPU, the
timed-block engine's simulated time on a simulator), after one warm-up
launch, so both devices measure with a warm L2 where the data fits.
"""
from __future__ import annotations

import argparse
import datetime
import json
import pathlib

import numpy as np

import simgpu
from simgpu.lang import Array, atomic_add, blockDim, blockIdx, gridDim, i32, kernel, threadIdx


@kernel
def copy(src: Array[i32], dst: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        dst[i] = src[i]


@kernel
def gather(src: Array[i32], idx: Array[i32], out: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        out[i] = src[idx[i]]


@kernel
def chase(nxt: Array[i32], out: Array[i32], steps: i32):
    j = 0
    for k in range(steps):
        j = nxt[j]
    out[0] = j


@kernel
def atomic_one_counter(counter: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        atomic_add(counter, 0, 1)


def _grid(dev, block=256):
    cfg = getattr(dev, "config", None)
    sms = cfg.gpu.sm_count if cfg else 132
    per_sm = cfg.limits.max_threads_per_sm if cfg else 2048
    return sms * per_sm // block, block


def _time(dev, kern, grid, block, *args, repeats=3):
    dev.launch(kern, grid, block, *args)                 # warm-up (and the L2)
    return float(np.median([dev.launch(kern, grid, block, *args).time_ms for _ in range(repeats)]))


def measure(dev, sizes: dict, repeats: int) -> list:
    if isinstance(dev, simgpu.SimDevice):
        dev.default_engine = "timed-block"
    rng = np.random.default_rng(0)
    grid, block = _grid(dev)
    rows = []
    for n in sizes["copy"]:
        src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
        ms = _time(dev, copy, grid, block, src, dst, n, repeats=repeats)
        rows.append({"bench": "copy", "n": n, "ms": ms, "value": 8 * n / ms / 1e6, "unit": "GB/s"})
    for n in sizes["gather"]:
        src = dev.to_device(np.arange(n, dtype=np.int32))
        idx = dev.to_device(rng.permutation(n).astype(np.int32))
        out = dev.zeros(n, np.int32)
        ms = _time(dev, gather, grid, block, src, idx, out, n, repeats=repeats)
        rows.append({"bench": "gather", "n": n, "ms": ms, "value": n / ms / 1e6, "unit": "G elem/s"})
    for n, steps in sizes["chase"]:
        order = rng.permutation(n).astype(np.int32)
        nxt = np.empty(n, np.int32)
        nxt[order] = np.roll(order, -1)                   # one random cycle through all n
        d_nxt, out = dev.to_device(nxt), dev.zeros(1, np.int32)
        ms = _time(dev, chase, 1, 1, d_nxt, out, steps, repeats=repeats)
        rows.append({"bench": "chase", "n": n, "ms": ms, "value": ms * 1e6 / steps, "unit": "ns/load"})
    for n in sizes["atomic"]:
        counter = dev.zeros(1, np.int32)
        ms = _time(dev, atomic_one_counter, grid, block, counter, n, repeats=repeats)
        rows.append({"bench": "atomic", "n": n, "ms": ms, "value": n / ms / 1e6, "unit": "atomics/ns"})
    return rows


SIZES = {
    "copy": [1 << 20, 1 << 22],
    "gather": [1 << 18, 1 << 22],
    "chase": [(1 << 12, 2048), (1 << 22, 2048)],
    "atomic": [1 << 18],
}
QUICK = {"copy": [1 << 14], "gather": [1 << 14], "chase": [(1 << 10, 256)], "atomic": [1 << 12]}


def compare(gpu_rows, sim_rows) -> str:
    sim = {(r["bench"], r["n"]): r for r in sim_rows}
    lines = ["| benchmark | n | GPU | simulator | sim / GPU | within 15% |",
             "|---|---:|---:|---:|---:|---|"]
    for g in gpu_rows:
        s = sim.get((g["bench"], g["n"]))
        if s is None:
            continue
        ratio = s["value"] / g["value"]
        lines.append(f"| {g['bench']} | {g['n']:,} | {g['value']:.3g} {g['unit']} | "
                     f"{s['value']:.3g} {s['unit']} | {ratio:.2f} | "
                     f"{'yes' if abs(ratio - 1) <= 0.15 else 'no'} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m cuda_backend.calibrate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda")
    p.add_argument("--out")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--compare", nargs=2, metavar=("GPU_JSON", "SIM_JSON"))
    args = p.parse_args(argv)
    if args.compare:
        gpu, sim = (json.loads(pathlib.Path(f).read_text()) for f in args.compare)
        print(f"# Calibration: {sim['device']} against {gpu['device']} "
              f"(GPU run {gpu['date']}, simulator run {sim['date']})\n")
        print(compare(gpu["rows"], sim["rows"]))
        return
    from .device import CudaUnavailable
    try:
        dev = simgpu.get_device(args.device)
    except CudaUnavailable as exc:
        raise SystemExit(f"python -m cuda_backend.calibrate: {exc}") from None
    rows = measure(dev, QUICK if args.quick else SIZES, args.repeats)
    result = {"device": getattr(dev, "gpu_name", dev.name), "date": str(datetime.date.today()),
              "rows": rows}
    for r in rows:
        print(f"{r['bench']:8} n={r['n']:>10,}  {r['value']:10.4g} {r['unit']:10} ({r['ms']:.4f} ms)")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
