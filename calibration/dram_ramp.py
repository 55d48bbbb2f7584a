"""How a short kernel's DRAM traffic builds up: per-warp timelines of a streaming copy.

The calibration's cold 8 MiB copy (``simgpu_apps/gpu_tools/calibrate_cases.py``: 1,056 blocks of 256
threads, 2^20 int32, four iterations of a grid-stride loop per thread) is the one case
the model misses by more than 15%.  Its kernel time alone cannot say where the GPU
spends the extra microsecond, so this probe runs the same copy (and the streaming read)
with each warp's lane 0 stamping the SM clock after every iteration (the clock read
waits for the store, which waits for the load's data) and the global timer at its
start and end.  From the stamps:

* when each warp started (the block dispatch, as the kernel runs),
* each iteration's latency, by iteration (the first one meets an empty memory system),
* the bytes loaded per 0.25 us since the first warp started: the DRAM rate's ramp.

States: *warm* (after a launch on the same buffers), *cold* (the L2 flushed by writing
and reading a 256 MiB buffer, as ``calibration/cold_l2_only.py`` does), *tlb* (warm
L2, but one int touched in every 2 MiB page of an 8 GiB buffer first, to evict the
TLBs' entries and not the L2's data), and *cold-tlb-warm* (the L2 flushed, then one
int of every 2 MiB page of the copy's own buffers touched).

Kernel times come from Nsight Compute in a second pass.  Raw CUDA: ``%smid`` and the
timers are no part of simgpu's kernel language, and what is measured is the hardware.

    python -m calibration.dram_ramp --child OUT               # stamps -> OUT/stamps.npz
    ncu --clock-control none --cache-control none --csv --print-units base \\
        --metrics gpu__time_duration.sum --log-file OUT/ncu.csv \\
        python -m calibration.dram_ramp --child OUT --tag ncu
    python -m calibration.dram_ramp --report OUT [--md F.md]
    python -m calibration.dram_ramp --sim OUT                 # the model's counterpart

The calibration's own copy with its buffers at other addresses (``--placement``, under
``ncu --cache-control none`` and ``all``, CSVs named placement-warm.csv and
placement-cold.csv in the folder, then ``--placement-report``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import sys

import numpy as np

from simgpu_apps import table_out

MAXIT = 16                       # stamps per warp: iterations of the grid-stride loop
REC = 4 + MAXIT + 1              # smid, global start, global end, clock start, ..., clock end
BIN_US = 0.25

SOURCE = r"""
#define MAXIT %d
#define REC %d
__device__ __forceinline__ unsigned clk() {
    unsigned c; asm volatile("mov.u32 %%0, %%%%clock;" : "=r"(c) :: "memory"); return c;
}
__device__ __forceinline__ unsigned long long gtime() {
    unsigned long long t; asm volatile("mov.u64 %%0, %%%%globaltimer;" : "=l"(t) :: "memory"); return t;
}
// One body for both probes: BODY(i) is the iteration's memory work; the clock read
// after it waits for the loaded value (the store or the branch uses it).
#define PROBE(NAME, PARAMS, BODY)                                                       \
extern "C" __global__ void __launch_bounds__(256, 8) NAME PARAMS {                      \
    __shared__ unsigned stamp[8][MAXIT + 2];                                            \
    __shared__ unsigned long long g[8][2];                                              \
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;                            \
    if (lane == 0) { g[w][0] = gtime(); stamp[w][0] = clk(); }                          \
    const int stride = gridDim.x * blockDim.x;                                          \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                                      \
    for (int it = 1; it <= MAXIT && i < n; it++, i += stride) {                         \
        BODY;                                                                           \
        unsigned c = clk();                                                             \
        if (lane == 0) stamp[w][it] = c;                                                \
    }                                                                                   \
    if (lane == 0) { stamp[w][MAXIT + 1] = clk(); g[w][1] = gtime(); }                  \
    __syncwarp();                                                                       \
    /* one coalesced store per warp: 21 stores by lane 0 slowed every other warp */     \
    unsigned smid; asm volatile("mov.u32 %%0, %%%%smid;" : "=r"(smid));                 \
    long long* r = rec + (long long)(blockIdx.x * (blockDim.x >> 5) + w) * REC;          \
    if (lane < REC)                                                                     \
        r[lane] = lane == 0 ? (long long)smid : lane < 3 ? (long long)g[w][lane - 1]    \
                                                         : (long long)stamp[w][lane - 3]; \
}
PROBE(copy_probe, (const int* src, int* dst, int n, long long* rec), dst[i] = src[i])
PROBE(read_probe, (const int* src, int* out, int n, long long* rec), if (src[i] < 0) out[0] = i)

// The calibration's kernels as they are, uninstrumented, for their times under ncu.
extern "C" __global__ void copy_plain(const int* src, int* dst, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        dst[i] = src[i];
}
extern "C" __global__ void read_plain(const int* src, int* out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        if (src[i] < 0) out[0] = i;
}
// calibrate_cases.py's empty kernel: the fixed cost per kernel in the same state
extern "C" __global__ void empty_plain(const int* src, int* out, int n) {
    if (n < 0) out[0] = n;
}
""" % (MAXIT, REC)

#: (label, kernel, n, blocks, threads per block); the calibration's grid is 1,056 x 256.
CASES = [
    ("copy 8 MiB", "copy", 1 << 20, 1056, 256),
    ("read 4 MiB", "read", 1 << 20, 1056, 256),
    ("copy 32 MiB", "copy", 1 << 22, 1056, 256),
    ("copy 2 MiB", "copy", 1 << 18, 1056, 256),
    # one warp per SM, 8 iterations: latencies of an otherwise idle memory system
    ("copy, one warp per SM", "copy", 132 * 32 * 8, 132, 32),
]
#: How the caches are left before the measured launch (after a warm-up launch):
STATES = {
    "warm": "nothing done",
    "cold": "the L2 flushed",
    "tlb": "one int written in every 2 MiB page of an 8 GiB buffer (TLB entries gone, L2 data kept)",
    "cold-tlb-warm": "the L2 flushed, then one int written in every 2 MiB page of the kernel's buffers",
    "cold-dst-clean": "the L2 flushed, then the destination read (its lines clean in the L2)",
    "cold-dst-dirty": "the L2 flushed, then the destination written (its lines dirty in the L2)",
    "cold-dst-only": "the L2 flushed, then the source read (only the destination cold)",
}
REPEATS = 3
PAGE = 2 << 20


def child(out: pathlib.Path, tag: str) -> None:
    import cupy as cp
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",))
    flush = cp.zeros(64 << 20, cp.int32)                 # 256 MiB: five times the L2
    pages = cp.zeros(8 << 30, cp.int8)                   # 8 GiB: 4,096 pages of 2 MiB
    stamps = {}
    for label, kind, n, blocks, threads in CASES:
        src = cp.arange(n, dtype=cp.int32)
        dst = cp.zeros(n if kind == "copy" else 1, cp.int32)
        rec = cp.zeros(blocks * threads // 32 * REC, cp.int64)
        args = (src, dst, np.int32(n))
        kernels = [(mod.get_function(f"{kind}_probe"), args + (rec,)),
                   (mod.get_function(f"{kind}_plain"), args), (mod.get_function("empty_plain"), args)]
        for state in STATES:
            for r in range(REPEATS):
                for fn, a in kernels:
                    fn((blocks,), (threads,), a)         # warm-up: data, TLBs, code
                    if state.startswith("cold"):
                        flush.fill(1)
                        int(flush.sum())                 # the L2 now holds the flush buffer
                    if state == "tlb":
                        pages[::PAGE] = 1                # one sector per page: TLBs, not L2
                    if state == "cold-tlb-warm":
                        for buf in (src, dst):
                            buf.view(cp.int8)[::PAGE] = 1
                    if state == "cold-dst-clean":
                        int(dst.sum())
                    if state == "cold-dst-dirty":
                        dst.fill(0)
                    if state == "cold-dst-only":
                        int(src.sum())
                    fn((blocks,), (threads,), a)         # measured
                    cp.cuda.Device().synchronize()
                if r == 0:
                    stamps[f"{label}|{state}"] = rec.get()
        if kind == "copy":                                # the copy's result, checked
            assert bool((dst == src).all()), label
        del src, dst, rec
    if tag != "ncu":
        np.savez_compressed(out / "stamps.npz", **stamps)


PLACEMENTS = ("as calibrate.py allocates", "after a 256 MiB buffer", "64 KiB between source and destination")


def placement(out: pathlib.Path) -> None:
    """The calibration's own 8 MiB copy (simgpu's CUDA device, calibrate_cases.setup's buffers)
    with its buffers at three kinds of address, a warm-up launch then three measured ones
    each: run under ``ncu --cache-control all`` it is the calibration's cold case again,
    under ``none`` its warm case.  The buffers' addresses go to placement.json."""
    import cupy as cp

    import simgpu
    from simgpu_apps.gpu_tools.calibrate_cases import (
        copy as copy_kernel, empty as empty_kernel, full_grid)
    dev = simgpu.get_device("cuda")
    n = 1 << 20
    where = []
    for name in PLACEMENTS:
        hold = cp.zeros(64 << 20, cp.int32) if name == PLACEMENTS[1] else None
        src = dev.to_device(np.arange(n, dtype=np.int32))
        pad = dev.zeros(1 << 14, np.int32) if name == PLACEMENTS[2] else None
        dst = dev.zeros(n, np.int32)
        grid, block = full_grid(dev)
        for _ in range(1 + REPEATS):
            dev.launch(copy_kernel, grid, block, src, dst, n)
            dev.launch(empty_kernel, grid, block, dst, grid)
        dev.synchronize()
        where.append({"placement": name, "src": src.base, "dst": dst.base})
        del src, dst, pad, hold
        cp.get_default_memory_pool().free_all_blocks()
    (out / "placement.json").write_text(json.dumps(where, indent=1))


def placement_report(out: pathlib.Path) -> str:
    from simgpu_apps.gpu_tools.calibrate_cases import copy as copy_kernel, empty as empty_kernel
    from simgpu_apps.gpu_tools.calibrate_gpu import TIME, parse_ncu
    from cuda_backend.render import kernel_symbol
    lines = ["| placement | source, destination address | state | copy us | empty us | net us |",
             "|---|---|---|---:|---:|---:|"]
    where = json.loads((out / "placement.json").read_text())
    names = (kernel_symbol(copy_kernel), kernel_symbol(empty_kernel))
    for state in ("warm", "cold"):
        launches = [x for x in parse_ncu((out / f"placement-{state}.csv").read_text())
                    if x["kernel"].split("(")[0] in names]
        per = 2 * (1 + REPEATS)
        for k, w in enumerate(where):
            rows = launches[k * per:(k + 1) * per][2:]          # after the warm-up pair
            copy = np.median([r["metrics"][TIME] for r in rows[0::2]]) / 1e3
            empty = np.median([r["metrics"][TIME] for r in rows[1::2]]) / 1e3
            lines.append(f"| {w['placement']} | {w['src']:#x}, {w['dst']:#x} | {state} | {copy:.2f} | "
                         f"{empty:.2f} | {copy - empty:.2f} |")
    return "\n".join(lines)


def warp_clocks(rec: np.ndarray):
    """Per-warp stamps -> (records, global start and end ns, SM-clock cycles since the
    warp's start at each stamp, the SM clock in GHz: the median of the warps' clock
    cycles over global-timer ns, over warps that ran long enough to tell)."""
    rec = rec.reshape(-1, REC)
    g0, g1 = rec[:, 1].astype(np.float64), rec[:, 2].astype(np.float64)
    clocks = rec[:, 3:].astype(np.int64)
    rel = (clocks - clocks[:, :1]) % (1 << 32)           # cycles since the warp's start
    span_c, span_ns = rel[:, -1], g1 - g0
    ok = span_ns > 500
    return rec, g0, g1, rel, float(np.median(span_c[ok] / span_ns[ok]))


def timeline(rec: np.ndarray, n: int, stride: int) -> dict:
    """Per-warp stamps -> starts, per-iteration latencies and the load rate over time."""
    rec, g0, g1, rel, ghz = warp_clocks(rec)
    warps = rec.shape[0]
    first = (np.arange(warps) * 32)                      # each warp's first index
    iters = np.clip(-(-(n - first) // stride), 0, MAXIT)
    t0 = g0.min()
    start = g0 - t0
    lat, done_at = [], []
    for k in range(1, MAXIT + 1):
        m = iters >= k
        if not m.any():
            break
        lat.append((rel[m, k] - rel[m, k - 1]) / ghz)
        done_at.append(start[m] + rel[m, k] / ghz)
    finish = start + rel[np.arange(warps), iters] / ghz      # each warp's last iteration
    done = np.concatenate(done_at)
    edges = np.arange(0.0, done.max() / 1e3 + BIN_US, BIN_US)
    counts = np.histogram(done / 1e3, edges)[0]
    resolution = np.diff(np.unique(g0))
    return {
        "warps": warps, "ghz": round(ghz, 3),
        "globaltimer_step_ns": float(resolution.min()) if resolution.size else None,
        "start_us": {p: round(float(np.percentile(start, p)) / 1e3, 3) for p in (10, 50, 90, 100)},
        "span_us": round(float((g1.max() - t0) / 1e3), 3),
        "done_us": [round(float(np.median(finish)) / 1e3, 3), round(float(finish.max()) / 1e3, 3)],
        "latency_ns": [{p: round(float(np.percentile(x, p)), 1) for p in (10, 50, 90)} for x in lat],
        "rate_gbps": [round(c * 32 * 4 / (BIN_US * 1e3), 1) for c in counts],   # 128 B per warp load
    }


def report(out: pathlib.Path) -> str:
    from simgpu_apps.gpu_tools.calibrate_gpu import TIME, parse_ncu
    data = np.load(out / "stamps.npz")
    summary = {}
    for label, kind, n, blocks, threads in CASES:
        for state in STATES:
            key = f"{label}|{state}"
            if key in data:
                summary[key] = timeline(data[key], n, blocks * threads)
    times = {}
    csv = out / "ncu.csv"
    if csv.exists():
        launches = parse_ncu(csv.read_text())
        mine = [x for x in launches if x["kernel"].split("(")[0] in
                ("copy_probe", "read_probe", "copy_plain", "read_plain", "empty_plain")]
        at = 0
        for label, kind, n, blocks, threads in CASES:
            for state in STATES:
                got = {"probe": [], "plain": [], "empty": []}
                for _ in range(REPEATS):
                    for which in got:
                        warmup, measured = mine[at], mine[at + 1]
                        at += 2
                        name = "empty_plain" if which == "empty" else f"{kind}_{which}"
                        if measured["kernel"].split("(")[0] != name:
                            raise RuntimeError(f"ncu launch order differs at {label} {state}")
                        got[which].append((warmup["metrics"][TIME], measured["metrics"][TIME]))
                times[f"{label}|{state}"] = {w: [round(float(np.median([m for _, m in v])) / 1e3, 2),
                                                 round(float(np.median([u for u, _ in v])) / 1e3, 2)]
                                             for w, v in got.items()}
    (out / "summary.json").write_text(json.dumps({"timelines": summary, "ncu_us": times}, indent=1))
    lines = ["| case | state | kernel us | empty kernel us | net us | iteration 1 p50 ns | later p50 ns | "
             "warps done p50 / max us |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for key, s in summary.items():
        t = times.get(key)
        label, state = key.split("|")
        later = [x[50] for x in s["latency_ns"][1:]]
        cells = [f"{t['plain'][0]:.2f}", f"{t['empty'][0]:.2f}", f"{t['plain'][0] - t['empty'][0]:.2f}"] \
            if t else ["-"] * 3
        later = f"{np.mean(later):.0f}" if later else "-"
        lines.append(f"| {label} | {state} | " + " | ".join(cells) + f" | {s['latency_ns'][0][50]:.0f} | "
                     f"{later} | {s['done_us'][0]:.2f} / {s['done_us'][1]:.2f} |")
    lines.append("")
    for key, s in summary.items():
        t = times.get(key, {})
        lines.append(f"### {key.replace('|', ', ')}\n")
        if t:
            lines.append(f"- kernel (ncu `gpu__time_duration`, median of {REPEATS}): plain "
                         f"{t['plain'][0]} us (its warm-up launch {t['plain'][1]}), "
                         f"probe {t['probe'][0]} us, empty kernel {t['empty'][0]} us")
        lines.append(f"- {s['warps']} warps, SM clock {s['ghz']} GHz, globaltimer step "
                     f"{s['globaltimer_step_ns']} ns; warps started by (us after the first): "
                     + ", ".join(f"p{p} {v}" for p, v in s["start_us"].items())
                     + f"; last warp done at {s['span_us']} us")
        lines.append("- iteration latency ns (p10/p50/p90): " + "; ".join(
            f"{k + 1}: {x[10]:.0f}/{x[50]:.0f}/{x[90]:.0f}" for k, x in enumerate(s["latency_ns"])))
        lines.append("- loaded GB/s per 0.25 us since the first warp started: "
                     + " ".join(f"{v:.0f}" for v in s["rate_gbps"]) + "\n")
    return "\n".join(lines)


def simulate() -> str:
    """The model's counterpart of the 1,056 x 256 cases: load completions per 0.25 us
    (from cycle 0, the first block's dispatch) and load latencies by issue time."""
    import simgpu
    from simgpu_apps.gpu_tools.calibrate_cases import Case, setup
    from simgpu.mem import memory_system as dram
    lines = []
    orig, orig_cross = dram.MemorySystem.access, dram.MemorySystem.cross
    for label, kind, n, blocks, threads in CASES:
        if blocks != 1056:
            continue
        for state in ("warm", "cold"):
            dev = simgpu.get_device("sim:h100")
            dev.default_engine = "timed-block"
            kern, grid, block, args = setup(dev, Case(kind, n), np.random.default_rng(0))
            if state == "warm":
                dev.launch(kern, grid, block, *args)
            else:
                dev.flush_caches()
            log = []

            def access(self, k, addresses, sizes, t, sm=0, _log=log):
                back = orig(self, k, addresses, sizes, t, sm)
                a = int(addresses[0])            # (a warp's load here: one 128-B line)
                far = self.slices.split and (self.amap.where(a)[0] & 1) != self.slices.sm_half[sm]
                _log.append((k, t, back, a, far))
                return back
            waits = []                           # far loads' wait on the link, cycles

            def cross(self, crossings, _waits=waits):
                done = orig_cross(self, crossings)
                _waits.append(done - max(a + after for a, _, _, after in crossings))
                return done
            dram.MemorySystem.access, dram.MemorySystem.cross = access, cross
            try:
                rep = dev.launch(kern, grid, block, *args)
            finally:
                dram.MemorySystem.access, dram.MemorySystem.cross = orig, orig_cross
            mhz = dev.config.gpu.core_clock_mhz
            picked = [(t, b, a, f) for k, t, b, a, f in log if k == "load"]
            loads = np.array([(t, b) for t, b, _, _ in picked]) / mhz             # us
            # each load's block and iteration, from its first address (all loads read src)
            first = np.array([a for _, _, a, _ in picked])
            far = np.array([f for *_, f in picked])
            index = (first - first.min()) // 4
            block_of, iteration = index % (blocks * threads) // threads, index // (blocks * threads)
            edges = np.arange(0.0, loads[:, 1].max() + BIN_US, BIN_US)
            counts = np.histogram(loads[:, 1], edges)[0]
            lat = (loads[:, 1] - loads[:, 0]) * 1e3
            body = rep.cycles / mhz - dev.config.issue.kernel_fixed_us
            lines.append(f"### sim:h100 {label}, {state}\n")
            second = iteration == 1
            spread = "-"
            if second.any():
                have = np.bincount(block_of[second], None, blocks)
                per_block = np.bincount(block_of[second], lat[second], blocks)[have > 0] / have[have > 0]
                spread = f"{per_block.std():.0f} ns"
            lines.append(f"- kernel {rep.cycles / mhz:.2f} us ({body:.2f} us after the fixed cost); "
                         f"load latency ns p10/p50/p90 {np.percentile(lat, 10):.0f}/"
                         f"{np.percentile(lat, 50):.0f}/{np.percentile(lat, 90):.0f}; the blocks' "
                         f"mean latency in iteration 2, standard deviation: {spread}")
            lines.append("- load latency ns by iteration, median near / far (the line's home "
                         "half beside the warp's SM or not): " + ", ".join(
                             f"{np.median(lat[(iteration == k) & ~far]):.0f} / "
                             f"{np.median(lat[(iteration == k) & far]):.0f}"
                             for k in range(min(4, iteration.max() + 1))))
            if waits:
                w = np.array(waits) / mhz * 1e3
                lines.append(f"- far loads' wait on the link between the L2's halves (a block's "
                             f"instruction, its last sector), ns p50/p90/max: {np.percentile(w, 50):.0f}/"
                             f"{np.percentile(w, 90):.0f}/{w.max():.0f} over {len(w)} instructions")
            lines.append("- loaded GB/s per 0.25 us since cycle 0: "
                         + " ".join(f"{c * 128 / (BIN_US * 1e3):.0f}" for c in counts) + "\n")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", type=pathlib.Path, help="run the launches; stamps to this folder")
    ap.add_argument("--tag", default="", help="with --child: 'ncu' for the timing pass (no stamps)")
    ap.add_argument("--report", type=pathlib.Path, help="folder of a --child run: print the timelines")
    ap.add_argument("--sim", type=pathlib.Path, help="run the model's counterpart; write sim.md here")
    ap.add_argument("--md", help="with --report: also write the text here")
    ap.add_argument("--placement", type=pathlib.Path, help="run the placement launches (under ncu)")
    ap.add_argument("--placement-report", type=pathlib.Path,
                    help="folder with placement.json and placement-warm|cold.csv: print the table")
    args = ap.parse_args(argv)
    if args.child:
        args.child.mkdir(parents=True, exist_ok=True)
        child(args.child, args.tag)
        return 0
    if args.report:
        return table_out.emit(f"Script: `calibration/dram_ramp.py`, {datetime.date.today()}\n\n"
                           + report(args.report), args.md)
    if args.placement:
        args.placement.mkdir(parents=True, exist_ok=True)
        placement(args.placement)
        return 0
    if args.placement_report:
        print(placement_report(args.placement_report))
        return 0
    if args.sim:
        text = simulate()
        print(text)
        args.sim.mkdir(parents=True, exist_ok=True)
        (args.sim / "sim.md").write_text(text + "\n")
        return 0
    ap.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
