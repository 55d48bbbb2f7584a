"""What a store that writes part of a 32-B sector costs the H100's L2 and DRAM, against
one that writes all of it (issue 18).  Needs a GPU, CuPy and Nsight Compute for the
GPU's side (``--gpu``); the model's side (``--sim``) runs anywhere.

The held-out traffic probe (docs/results/heldout-dram-bytes-2026-11-27.md) found the
two held-out kernels with scattered 4-byte stores (transpose_naive, gather_scatter)
reading and writing more DRAM bytes on the card than in the model.  The question this
probe answers for the model's L2: when a sector that was only partly written leaves
the L2, or is loaded, does the card read it from DRAM first (a read-modify-write:
HBM3 has no write data mask with ECC on)?  And does a partial store cost the L2 more
time than a full one?

Each experiment stores into an array of 8 MiB (well inside the L2 and its dirty
share) or 64 MiB (past both) after the L2 was emptied of dirty data (a read of
256 MiB), with one raw-CUDA kernel, ``store_pattern``, in five patterns:

* ``full``: every word, coalesced (a warp writes four whole sectors);
* ``sector 4 B``: one 4-B word per 32-B sector (a warp: 32 sectors, each 1/8 written);
* ``line 4 B``: one 4-B word per 128-B line;
* ``sector 16 B``: the first 16 B of every sector;
* ``sweep 8 x 4 B``: every word, but a sector's eight words by eight sweeps over the
  array in one kernel (word 0 of every sector, then word 1, ...), as a column-wise
  transpose writes them;

and ``sector 4 B, then read`` / ``full, then read``: the same store, then a kernel
reading the whole array (the read is the one reported: does it fetch the partly
written sectors from DRAM?).  The GPU's side runs under ncu with its application
replay and no cache control, so every kernel sees the L2 its predecessors left.

    python -m calibration.partial_stores --gpu OUT [--set retention|requests]
    python -m calibration.partial_stores --sim OUT [--device sim:h100]
    python -m calibration.partial_stores --report OUT [--md F.md]
"""
from __future__ import annotations

import datetime
import json
import pathlib

import numpy as np

from calibration import probe_cli
from simgpu.lang import Array, blockDim, blockIdx, gridDim, i32, kernel, threadIdx
from simgpu_apps import table_out

SIZES_MIB = (8, 64)
RETENTION_MIB = (2, 4, 6, 8, 12, 16, 24, 32, 48)
# --set requests: R sweeps of one 4-B store per 128-B line (store_pattern's mode 5: sweep r
# writes word r of every line), so every store is a request of one sector, into 8 MiB
REQUEST_SWEEPS = (1, 2, 4, 8, 16, 32)
FLUSH_MIB = 256
# pattern: (store_pattern's mode, words written per word of the array)
PATTERNS = {"full": (0, 1), "sector 4 B": (1, 1 / 8), "line 4 B": (2, 1 / 32),
            "sector 16 B": (3, 1 / 2), "sweep 8 x 4 B": (4, 1)}
THEN_READ = ("sector 4 B", "full")
METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "lts__t_sectors_srcunit_tex_op_write.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"]
BLOCK, BLOCKS_PER_SM = 256, 8

SOURCE = r"""
extern "C" __global__ void store_pattern(int* a, long long count, int mode, long long sectors) {
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < count;
         k += (long long)gridDim.x * blockDim.x) {
        long long w;
        switch (mode) {
        case 0: w = k; break;
        case 1: w = k * 8; break;
        case 2: w = k * 32; break;
        case 3: w = (k / 4) * 8 + k % 4; break;
        case 4: w = (k % sectors) * 8 + k / sectors; break;
        default: w = (k % (sectors / 4)) * 32 + (k / (sectors / 4)) % 32;
        }
        a[w] = (int)k;
    }
}
// one read kernel under two names, so that ncu's rows tell the flush from the read
#define READ_KERNEL(name)                                                               \
extern "C" __global__ void name(const int* a, long long n, int* out) {                 \
    int acc = 0;                                                                        \
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < n;         \
         k += (long long)gridDim.x * blockDim.x)                                        \
        acc ^= a[k];                                                                    \
    if (acc == 0x7fffffff) out[0] = acc;                                                \
}
READ_KERNEL(read_all)
READ_KERNEL(flush_l2)
"""


# The model's side: the same kernels in the kernel language.
@kernel
def sim_store_pattern(a: Array[i32], count: i32, mode: i32, sectors: i32):
    for k in range(blockIdx.x * blockDim.x + threadIdx.x, count, gridDim.x * blockDim.x):
        w = k
        if mode == 1:
            w = k * 8
        elif mode == 2:
            w = k * 32
        elif mode == 3:
            w = (k // 4) * 8 + k % 4
        elif mode == 4:
            w = (k % sectors) * 8 + k // sectors
        elif mode == 5:
            w = (k % (sectors // 4)) * 32 + (k // (sectors // 4)) % 32
        a[w] = k

@kernel
def sim_read_all(a: Array[i32], n: i32, sink: Array[i32]):
    acc = 0
    for k in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        acc = acc ^ a[k]
    if acc == 2147483647:
        sink[0] = acc


def experiments(which: str = "patterns") -> list:
    """[(size MiB, experiment name, [(kernel, mode, count)])]: the launches after each
    flush, in order; the last launch is the one reported.  ``which``: "patterns" (every
    pattern at SIZES_MIB, and the reads after them) or "retention" (whole stores and one
    4-B store per sector at RETENTION_MIB: how much of each the L2 writes back while the
    kernel runs) or "requests" (REQUEST_SWEEPS sweeps of one store per line into 8 MiB:
    what a write request of one sector costs the L2, from the time's slope)."""
    if which == "requests":
        lines = (8 << 20) // 128
        return [(8, f"line 4 B x {r}", [("store_pattern", 5, lines * r)]) for r in REQUEST_SWEEPS]
    if which == "retention":
        return [(mib, name, [("store_pattern", PATTERNS[name][0],
                              int((mib << 20) // 4 * PATTERNS[name][1]))])
                for mib in RETENTION_MIB for name in ("full", "sector 4 B")]
    out = []
    for mib in SIZES_MIB:
        words = (mib << 20) // 4
        for name, (mode, share) in PATTERNS.items():
            out.append((mib, name, [("store_pattern", mode, int(words * share))]))
        for name in THEN_READ:
            mode, share = PATTERNS[name]
            out.append((mib, f"{name}, then read",
                        [("store_pattern", mode, int(words * share)), ("read_all", 0, words)]))
    return out


def child(out: pathlib.Path, which: str) -> None:
    import cupy as cp
    mod = cp.RawModule(code=SOURCE)
    fns = {k: mod.get_function(k) for k in ("store_pattern", "read_all", "flush_l2")}
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    grid = (sms * BLOCKS_PER_SM,)
    big = max(mib for mib, _, _ in experiments(which)) << 20
    a = cp.zeros(big // 4, cp.int32)
    scratch = cp.zeros((FLUSH_MIB << 20) // 4, cp.int32)
    sink = cp.zeros(1, cp.int32)
    manifest = []
    for mib, name, launches in experiments(which):
        sectors = (mib << 20) // 32
        fns["flush_l2"](grid, (BLOCK,), (scratch, np.int64(scratch.size), sink))
        for kernel, mode, count in launches:
            if kernel == "store_pattern":
                fns[kernel](grid, (BLOCK,), (a, np.int64(count), np.int32(mode), np.int64(sectors)))
            else:
                fns[kernel](grid, (BLOCK,), (a, np.int64(count), sink))
            manifest.append([mib, name, kernel])
        cp.cuda.runtime.deviceSynchronize()
    (out / "manifest.json").write_text(json.dumps(manifest))


def gpu(out: pathlib.Path, which: str) -> None:
    """Run the experiments (the --child process) under ncu: application replay, no cache
    control (each experiment empties the L2 itself), files to OUT."""
    from calibration import kernel_counters
    out.mkdir(parents=True, exist_ok=True)
    kernel_counters.under_ncu(out, METRICS, ["-m", "calibration.partial_stores", "--child", str(out),
                                             "--set", which],
                              ("--cache-control", "none", "--replay-mode", "application"))


def run_on_model(dev, a, sink, mib: int, launches: list):
    """One experiment's launches on a simulated device, after emptying its caches (the
    GPU side's flush): the last launch's report."""
    grid = dev.config.gpu.sm_count * BLOCKS_PER_SM
    dev.flush_caches()
    for kernel_name, mode, count in launches:
        if kernel_name == "store_pattern":
            rep = dev.launch(sim_store_pattern, grid, BLOCK, a, count, mode, (mib << 20) // 32)
        else:
            rep = dev.launch(sim_read_all, grid, BLOCK, a, count, sink)
    return rep


def gpu_results(out: pathlib.Path) -> dict:
    """{(size MiB, experiment): {ncu metric: value}} of a --gpu run's folder: each
    experiment's last launch (the flushes left out)."""
    from simgpu_apps.gpu_tools import ncu_csv
    table_out.need(out, "manifest.json", "ncu.csv", "gpu.json")
    runs = [r for r in ncu_csv.parse_csv((out / "ncu.csv").read_text()) if r[0] != "flush_l2"]
    reported = {}
    for (mib, name, _), (_, values) in zip(json.loads((out / "manifest.json").read_text()), runs):
        reported[(mib, name)] = {k: float(v) for k, v in values.items()}   # the last launch
    return reported


def simulate(out: pathlib.Path, device: str, masks: bool = True, which: str = "patterns") -> None:
    """The same experiments on the model (timed-block engine): OUT/sim.json, or with
    ``masks`` False (``[cache] l2_write_masks`` off, the model before it) OUT/sim-before.json."""
    import dataclasses

    import simgpu
    dev = simgpu.get_device(device)
    dev.default_engine = "timed-block"
    if not masks:
        dev.config = dataclasses.replace(
            dev.config, cache=dataclasses.replace(dev.config.cache, l2_write_masks=False))
    cfg = dev.config
    a = dev.zeros((max(mib for mib, _, _ in experiments(which)) << 20) // 4, np.int32)
    sink = dev.zeros(1, np.int32)
    rows = []
    for mib, name, launches in experiments(which):
        rep = run_on_model(dev, a, sink, mib, launches)
        x = rep.extra
        writes = x.get("l2_writebacks", 0) * cfg.cache.sector_bytes
        rows.append({"mib": mib, "experiment": name, "us": rep.cycles / cfg.gpu.core_clock_mhz,
                     "dram_read_mb": (x.get("dram_bytes", 0) - writes) / 1e6,
                     "dram_write_mb": writes / 1e6})
        print(rows[-1], flush=True)
    name = "sim.json" if masks else "sim-before.json"
    (out / name).write_text(json.dumps({"device": device, "date": str(datetime.date.today()),
                                        "write_masks": masks, "rows": rows}))


def report(out: pathlib.Path) -> str:
    reported = gpu_results(out)
    meta = json.loads((out / "gpu.json").read_text())
    models, notes = [], []
    for name, label in (("sim.json", "model"), ("sim-before.json", "model without masks")):
        if (out / name).exists():
            s = json.loads((out / name).read_text())
            models.append((label, {(r["mib"], r["experiment"]): r for r in s["rows"]}))
            notes.append(f"{label}: {s['device']} (timed-block), {s['date']}")
    note = f" {'; '.join(notes)}." if notes else " (No model side: run --sim.)"
    head = ["MiB", "experiment", "GPU us"] + [f"{m} us" for m, _ in models]
    head += ["GPU DRAM read MB"] + [m for m, _ in models] + ["GPU DRAM write MB"]
    head += [m for m, _ in models] + ["GPU L2 write sectors", "GPU L2 read sectors",
                                      "GPU L2 read misses"]
    lines = [f"Partial-sector stores: {meta['device']}, {meta['date']}, "
             "`python -m calibration.partial_stores` (ncu, application replay, no cache "
             f"control; the L2 emptied of dirty data by a {FLUSH_MIB} MiB read before each "
             f"experiment; {BLOCKS_PER_SM} blocks of {BLOCK} per SM).{note}", "",
             "| " + " | ".join(head) + " |",
             "|---:|---|" + "---:|" * (len(head) - 2)]
    for (mib, name), v in reported.items():
        def col(field, fmt="{:.2f}"):
            return [fmt.format(m[(mib, name)][field]) if (mib, name) in m else ""
                    for _, m in models]
        cells = [str(mib), name, f"{v['gpu__time_duration.sum'] / 1e3:.2f}", *col("us"),
                 f"{v['dram__bytes_read.sum'] / 1e6:.2f}", *col("dram_read_mb"),
                 f"{v['dram__bytes_write.sum'] / 1e6:.2f}", *col("dram_write_mb")]
        cells += [f"{v.get(k, 0):,.0f}" for k in (
            "lts__t_sectors_srcunit_tex_op_write.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
            "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    return probe_cli.probe_main(
        __doc__, argv, usage_error="give --gpu OUT, --sim OUT or --report OUT",
        gpu=probe_cli.action("run the experiments under ncu, files here",
                             lambda a: gpu(a.gpu, a.set)),
        child=probe_cli.action(probe_cli.HIDDEN, lambda a: child(a.child, a.set)),
        set=probe_cli.setting("which experiments: every pattern at 8 and 64 MiB (default), "
                              "whole and 4-B-per-sector stores at 2-48 MiB (retention), or "
                              "1-32 sweeps of one store per 128-B line into 8 MiB (requests)",
                              choices=["patterns", "retention", "requests"], default="patterns"),
        sim=probe_cli.action("run them on the model, OUT/sim.json",
                             lambda a: simulate(a.sim, a.device, not a.without_masks, a.set),
                             mkdir=True),
        device=probe_cli.setting("with --sim: the simulated device", default="sim:h100"),
        without_masks=probe_cli.setting("with --sim: [cache] l2_write_masks off (the model "
                                        "before it), OUT/sim-before.json", action="store_true"),
        report=probe_cli.table("folder of a --gpu run (and --sim)", lambda a: report(a.report)),
        md=probe_cli.setting("with --report: also write the table here"))


if __name__ == "__main__":
    raise SystemExit(main())
