"""Which unit limits sim:h100's streaming reads: the same kernels with one unit at a time
taken out of the way (issue 18; docs/results/h100-stream-limits.md).

    python -m calibration.stream_limits [--shapes read wide stride8 stride32]
                                            [--variants model rows-free ...] [--log2n 22]

The GPU's side of the same shapes (the probe proposed in the results note; on the lent
H100, each shape launched twice for Nsight Compute to time):

    ncu --clock-control none --cache-control all --csv --metrics gpu__time_duration.sum,\
        dram__bytes_read.sum,lts__t_sectors.avg.pct_of_peak_sustained_elapsed \
        python -m calibration.stream_limits --device cuda --log2n 24 \
        --shapes read1 read2 read4 read wide

Shapes (cold L2, timed-block engine, a fresh sim:h100 per run):

* ``readB``: a grid-stride read of 2^22 int32 (16 MiB; ``--log2n``) by B blocks of 256
  per SM (``read`` = ``read8``: one full wave of 1,056), each thread summing its words:
  one 128-B load per warp in flight, the shape of the calibration's streaming read;
  fewer blocks, fewer bytes in flight (Little's law: the rate tells the loaded latency);
* ``wide``: the same loop with eight independent loads per iteration (eight lines per
  warp in flight), 8 x 2^21 x 66 / 64 int32 (66 MiB): a streaming read with the
  memory-level parallelism that a CuPy copy or sum has;
* ``strideS``: 2^20 threads (4,096 blocks), each reading one int32 at S x i and storing
  it: S = 8 reads every sector of 32 MiB, 8 lines per warp; S = 32 one sector of each
  128-B line, 32 lines per warp;
* ``stencil``: 2^22 threads, each summing five neighbours of an int32 array (the held-out
  ``stencil_1d`` itself, run only to diagnose).  The kernels: simgpu_apps/memory_kernels.py.

Variants (config overrides in a temporary copy of h100.toml):

* ``model``: as configured;
* ``rows-free``: the DRAM's row timings (tRP, tRCD, tRAS, tRC, tRRD, tRRD_L, tFAW) one
  memory cycle: a row switch costs nothing, so the banks' row conflicts do not bind;
* ``slices-x10``: the L2 slices' load, store and combined budgets ten times larger: they
  do not bind;
* ``both``: rows-free and slices-x10;
* ``both+mshr``: and no bound on the miss entries;
* ``at-arrival``: the DRAM's reads booked as they arrive, over a 32-read queue (h100.toml
  until 2026-11-27, docs/results/h100-dram-scheduling-2026-11-27.md);
* ``fr-fcfs``: ``[dram] read_scheduling = "fr-fcfs"`` over the 32-read window this probe
  first ran it with (the L2's misses decided by the FR-FCFS controller as the clock
  reaches them, simgpu/mem/deferred_l2.py; h100.toml now has a window of 128);
  ``fr-fcfs+slices-x10``: and the slices' budgets as in ``slices-x10``;
  ``fr-fcfs+no-cap``: and no starvation bound (``frfcfs_cap`` 2^30: a diagnosis);
* ``lanes64``: ``[dram] lane_bytes = 64`` (one row per 64-B fill); ``lanes64+swizzle``:
  and ``lane_swizzle = true`` (docs/results/h100-dram-lanes-2026-11-28.md);
* ``no-first-load``: ``warp_first_load_ns = 0``; ``no-dispatch``: ``block_dispatch_ns = 0``.

Per run: the time (cycles at the core clock, with the fixed cost), the DRAM bytes over
the body (cycles less ``kernel_fixed_us``) as GB/s and as a fraction of the peak, the
data buses' busy fraction, the row hit rate, the mean read-queue occupancy a read finds
(of ``read_queue_depth``), the transactions that waited for a miss entry, and each load
instruction's latency from issue to its last data (mean and median, cycles; the
memory system's access is wrapped for the run to record it), and the bytes in flight
that Little's law gives (rate x mean latency per load request), and how busy the L2
slices were over the body: the bytes booked on their combined budgets over
``l2_combined_bandwidth_gbps`` x time, and on their fill ports over
``l2_fill_bandwidth_gbps`` x time where the config has them (the GPU's nearest figure,
``lts__t_sectors`` as a fraction of its peak, counts the tag stage's sectors).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import pathlib
import re
import tempfile
import time

import numpy as np

import simgpu
from simgpu.lang import Array, blockDim, blockIdx, i32, kernel, threadIdx
from simgpu.mem.deferred_reads import DEFERRED
from simgpu.mem.memory_system import MemorySystem
from simgpu_apps.memory_kernels import read_sum, read_wide, stencil_1d

CONFIG = pathlib.Path(simgpu.__file__).parent / "configs" / "h100.toml"
ROWS_FREE = {k: 1 for k in ("trp", "trcd", "tras", "trc", "trrd", "trrd_l", "tfaw")}
SLICES_X10 = {"l2_bandwidth_gbps": 54000.0, "l2_store_bandwidth_gbps": 41000.0,
              "l2_combined_bandwidth_gbps": 59000.0}
# h100.toml's DRAM reads until 2026-11-27 (booked at arrival, a 32-read queue), and FR-FCFS
# over the 32-read window this probe first ran it with (h100.toml now has 128)
AT_ARRIVAL = {"read_scheduling": '"at-arrival"', "read_queue_depth": 32}
FR_FCFS_32 = {"read_scheduling": '"fr-fcfs"', "read_queue_depth": 32}
VARIANTS = {
    "model": {},
    "rows-free": ROWS_FREE,
    "slices-x10": SLICES_X10,
    "both": {**ROWS_FREE, **SLICES_X10},
    "both+mshr": {**ROWS_FREE, **SLICES_X10, "max_outstanding_misses_per_sm": 1 << 20},
    "at-arrival": AT_ARRIVAL,
    "fr-fcfs": {**FR_FCFS_32},
    "fr-fcfs+slices-x10": {**FR_FCFS_32, **SLICES_X10},
    "fr-fcfs+no-cap": {**FR_FCFS_32, "frfcfs_cap": 1 << 30},
    "lanes64": {"lane_bytes": 64},
    "lanes64+swizzle": {"lane_bytes": 64, "lane_swizzle": "true"},
    "no-first-load": {"warp_first_load_ns": 0},
    "no-dispatch": {"block_dispatch_ns": 0},
}
WAVE = 132 * 8                      # one full wave of 256-thread blocks on the H100


@kernel
def read_strided(src: Array[i32], dst: Array[i32], stride: i32, n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        dst[i] = src[i * stride]


def launch(dev, shape: str, log2n: int = 22):
    """Launch one shape; ``log2n``: the read's size (int32 words)."""
    m = re.fullmatch(r"read(\d*)", shape)
    if m:                            # readB: B blocks per SM (8: the full wave)
        n, grid = 1 << log2n, 132 * int(m.group(1) or 8)
        src, out = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(grid * 256, np.int32)
        return dev.launch(read_sum, grid, 256, src, out, n)
    if shape == "wide":
        n = 8 * WAVE * 256 * 8
        src, out = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(WAVE * 256, np.int32)
        return dev.launch(read_wide, WAVE, 256, src, out, n)
    if shape == "stencil":
        n = 1 << 22
        src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
        return dev.launch(stencil_1d, n // 256, 256, src, dst, n)
    m = re.fullmatch(r"stride(\d+)", shape)
    if m:
        stride, n = int(m.group(1)), 1 << 20
        src, dst = dev.to_device(np.arange(n * stride, dtype=np.int32)), dev.zeros(n, np.int32)
        return dev.launch(read_strided, n // 256, 256, src, dst, stride, n)
    raise SystemExit(f"unknown shape {shape!r}: readB (B blocks per SM), wide, stencil or strideS")


def gpu(shapes: list, log2n: int) -> None:
    """The probe's GPU side: each shape once after a warm-up, on the CUDA device, for Nsight
    Compute to time (run the script under ncu; see docs/results/h100-stream-limits.md)."""
    dev = simgpu.get_device("cuda")
    for shape in shapes:
        for _ in range(2):
            launch(dev, shape, log2n)


def variant_config(changes: dict, folder: pathlib.Path) -> str:
    """A copy of h100.toml with ``changes`` (key = value, wherever the key is)."""
    text = CONFIG.read_text()
    for key, value in changes.items():
        text, hits = re.subn(rf"^({key}\s*=\s*)[^#\n]*", rf"\g<1>{value}  ", text, flags=re.M)
        if hits != 1:
            raise SystemExit(f"h100.toml has {hits} lines for {key!r}, expected one")
    path = folder / f"h100_{abs(hash(tuple(sorted(changes.items()))))}.toml"
    path.write_text(text)
    return str(path)


@contextlib.contextmanager
def load_latencies(record: list):
    """Record (issue, data back) of every load instruction the memory system serves."""
    original = MemorySystem.access

    def access(self, kind, addresses, sizes, t, sm=0, **kw):
        first = self.deferred.count if self.deferred is not None else 0
        done = original(self, kind, addresses, sizes, t, sm, **kw)
        if kind == "load":
            # (read_scheduling "fr-fcfs": a stand-in; its accesses' times come later)
            record.append((t, done if done < DEFERRED else
                           [n for n in self.deferred.fresh if n.number >= first]))
        return done

    MemorySystem.access = access
    try:
        yield record
    finally:
        MemorySystem.access = original


def run(shape: str, name: str, folder: pathlib.Path, log2n: int = 22) -> str:
    changes = VARIANTS[name]
    dev = simgpu.get_device("sim:" + variant_config(changes, folder) if changes else "sim:h100")
    dev.default_engine, dev.cache_control = "timed-block", "all"
    cfg = dev.config
    t0 = time.process_time()
    with load_latencies([]) as lat:
        rep = launch(dev, shape, log2n)
    cpu = time.process_time() - t0
    x = rep.extra
    clock = cfg.gpu.core_clock_mhz
    body = rep.cycles - cfg.issue.kernel_fixed_us * clock
    gbps = x["dram_bytes"] / (body / clock * 1e-6) / 1e9
    waits = np.array([(d if not isinstance(d, list) else max(n.done for n in d)) - t
                      for t, d in lat])
    bytes_per_load = x["dram_bytes"] / max(1, len(lat))
    in_flight = gbps * 1e9 * waits.mean() / (clock * 1e6) / 1e6      # MB (Little's law)
    # how busy the slices were over the body: the bytes booked on their combined budgets
    # (and on their fill ports, where the config has them) over what those move
    seconds = body / clock * 1e-6
    c = cfg.cache
    combined = c.l2_combined_bandwidth_gbps or c.l2_bandwidth_gbps
    busy = x.get("l2_slice_bytes", 0) / (combined * 1e9 * seconds)
    fill_gbps = getattr(c, "l2_fill_bandwidth_gbps", None)
    fill_busy = f"{x.get('l2_fill_port_bytes', 0) / (fill_gbps * 1e9 * seconds):.2f}" if fill_gbps else "-"
    return (f"| {shape} | {name} | {rep.cycles / clock:.2f} | {gbps:,.0f} | "
            f"{gbps / cfg.memory.peak_bandwidth_gbps:.2f} | {x['bus_utilization']:.2f} | "
            f"{x['row_hit_rate']:.2f} | {x['queue_mean']:.1f} | {x.get('mshr_waits', 0):,} | "
            f"{waits.mean():.0f} / {np.median(waits):.0f} | {bytes_per_load:.0f} | "
            f"{in_flight:.2f} | {busy:.2f} | {fill_busy} | {cpu:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="+", default=["read", "wide", "stride8", "stride32"])
    ap.add_argument("--variants", nargs="+", choices=list(VARIANTS),
                    default=[v for v in VARIANTS if not v.startswith(("no-", "lanes"))])
    ap.add_argument("--log2n", type=int, default=22, help="the read shapes' int32 words (2^N)")
    ap.add_argument("--device", default="sim:h100", help="'cuda': the probe's GPU side (under ncu)")
    args = ap.parse_args()
    if args.device == "cuda":
        gpu(args.shapes, args.log2n)
        return
    print(f"# sim:h100 streaming limits, engine timed-block, cold L2, {datetime.date.today()} "
          "(calibration/stream_limits.py)")
    print("| shape | variant | us | DRAM GB/s (body) | of peak | bus busy | row hits | "
          "read queue mean | miss-entry waits | load latency mean / median (cycles) | "
          "DRAM B per load | MB in flight (Little) | slices busy | fill ports busy | CPU s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes:
            for name in args.variants:
                print(run(shape, name, pathlib.Path(tmp), args.log2n), flush=True)


if __name__ == "__main__":
    main()
