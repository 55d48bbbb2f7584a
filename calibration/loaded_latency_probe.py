"""Which unit of the H100 gives its loads their latency under load (issue 18;
docs/calibration/loaded-latency-probe-h100.md).

Little's law on calibration/stream_limits.py's GPU reads says the H100's load latency
grows with the DRAM's load (381, 390, 417, 505 ns at 0.11, 0.21, 0.39, 0.64 of the
peak) where the model's stays flat.  This probe measures that latency load by load and
puts it beside the counters of each unit it could come from:

* the kernel: stream_limits' grid-stride read (one int per thread, one 128-B line per
  warp and load), ``U`` independent loads per iteration, at B blocks of 256 threads per
  SM; lane 0 of every warp reads the SM clock (``clock64``) before the iteration's loads
  and again after a branch that uses their sum, so the difference is the loads' latency
  from issue to data (plus a few cycles of loop); a sample of iterations per warp
  (``NS`` evenly spaced) is kept in shared memory and stored once at the end;
* levels of load: one warp per SM, 1, 2, 4 and 8 blocks of 256 per SM with one load
  per warp in flight, then 8 blocks with 2 and 4 loads per iteration (16 and 32 lines a
  warp-slot: the "16 and 32 blocks per SM" an SM cannot hold, 2,048 threads at most);
* states: ``cold`` (a 64 MiB array, the L2 emptied of it by reading a 256 MiB buffer),
  ``warm`` (the same kernel and index space over an 8 MiB array read just before, every
  load an L2 hit: the control) and ``mixed`` (even warps stream the cold array, odd warps
  read the warm one: do L2 hits slow down beside a DRAM stream?  If they do, the queue
  is on the path both take, the SM-to-L2 crossbar or the L2's tag stage; if not, it is
  on the DRAM side: the L2's fill path, the memory controller or the HBM).

Counters (Nsight Compute, application replay, so each pass sees the script's own flush):
the DRAM (``dram__throughput``, ``dram__cycles_active``, bytes), the L2's fills
(``lts__d_sectors_fill_*``), its tag stage (``lts__t_sectors*``), its data stage, and
every crossbar/NoC counter the installed ncu lists for the device (``lts__xbar2lts*``,
``lts__lts2xbar*``, ``ltc*``, ``xbar*``, ``gpc*`` matched in ``--query-metrics``).

    python -m calibration.loaded_latency_probe --device cuda --child OUT [--tag clock]
    python -m calibration.loaded_latency_probe --metrics-from ALL.txt   # the ncu list
    python -m calibration.loaded_latency_probe --report OUT [--md F.md]

calibration/loaded_latency_probe.sh runs the whole GPU side on the lent machine.
"""
from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import re
import sys

import numpy as np

NS = 32                                   # latency samples kept per warp
HEAD = 7                                  # smid, role (1: warm warp of mixed), samples, g0, g1, c0, c1
REC = HEAD + NS
COLD_WORDS = 1 << 24                      # 64 MiB of int32: the stream_limits GPU read
WARM_WORDS = 1 << 21                      # 8 MiB: L2-resident (the L2 is 50 MB, two halves)
SMS = 132
PEAK_GBPS = 3352.0                        # HBM3, 5 stacks (h100.toml)
#: (level, blocks per SM, threads per block, loads per iteration)
LEVELS = [("w1", 1, 32, 1), ("b1", 1, 256, 1), ("b2", 2, 256, 1), ("b4", 4, 256, 1),
          ("b8", 8, 256, 1), ("b8u2", 8, 256, 2), ("b8u4", 8, 256, 4)]
STATES = ("cold", "warm", "mixed", "dirty")
WARPS = "warps:"                          # key prefix: a subset's warp indices in the grid

SOURCE = r"""
#define NS %d
#define REC %d
__device__ __forceinline__ long long clk() {
    long long c; asm volatile("mov.u64 %%0, %%%%clock64;" : "=l"(c) :: "memory"); return c;
}
__device__ __forceinline__ long long gtime() {
    long long t; asm volatile("mov.u64 %%0, %%%%globaltimer;" : "=l"(t) :: "memory"); return t;
}
// Warps with role 1 (odd warps when mixed) read `warm` (index & warm_mask), the others
// `cold` (index & cold_mask); all run the same n / (U x grid threads) iterations.
template <int U>
__device__ void probe(const int* cold, int cold_mask, const int* warm, int warm_mask,
                      int mixed, int n, int every, long long* rec, int* out) {
    __shared__ long long lat[8][NS];
    __shared__ long long head[8][4];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int role = mixed && (w & 1);
    const int* src = role ? warm : cold;
    const int mask = role ? warm_mask : cold_mask;
    const int stride = gridDim.x * blockDim.x;
    int kept = 0, acc = 0, it = 0;
    if (lane == 0) { head[w][0] = gtime(); head[w][2] = clk(); }
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += U * stride, it++) {
        long long c0 = clk();
        int v = 0;
#pragma unroll
        for (int u = 0; u < U; u++) v += src[(i + u * stride) & mask];
        if (v == 0x7fffffff) out[1] = i;      // uses the data: the next clock read waits
        long long c1 = clk();
        acc += v;
        if (lane == 0 && it %% every == 0 && kept < NS) lat[w][kept++] = c1 - c0;
    }
    if (lane == 0) { head[w][3] = clk(); head[w][1] = gtime(); }
    __syncwarp();
    kept = __shfl_sync(0xffffffff, kept, 0);
    unsigned smid; asm volatile("mov.u32 %%0, %%%%smid;" : "=r"(smid));
    long long* r = rec + (long long)(blockIdx.x * (blockDim.x >> 5) + w) * REC;
    for (int k = lane; k < REC; k += 32)
        r[k] = k == 0 ? (long long)smid : k == 1 ? (long long)role : k == 2 ? (long long)kept
             : k < 7 ? head[w][k - 3] : lat[w][k - 7];
    if (acc == 0x7fffffff) out[0] = acc;
}
#define ENTRY(U) extern "C" __global__ void __launch_bounds__(256) probe_u##U(           \
    const int* cold, int cold_mask, const int* warm, int warm_mask, int mixed, int n,    \
    int every, long long* rec, int* out) {                                               \
    probe<U>(cold, cold_mask, warm, warm_mask, mixed, n, every, rec, out); }
ENTRY(1) ENTRY(2) ENTRY(4)
""" % (NS, REC)


def iterations(blocks_per_sm: int, threads: int, loads: int) -> int:
    """Iterations of every thread's loop (n is a multiple of the grid's threads x U)."""
    return COLD_WORDS // (SMS * blocks_per_sm * threads * loads)


def child(out: pathlib.Path, tag: str, repeats: int, states=STATES[:3]) -> None:
    """The GPU side: every level in each of ``states``, ``repeats`` times; the records of
    each go to OUT/records-TAG.npz, the launches' order and the arrays' addresses to
    OUT/launches-TAG.json (under ncu, the same launches for its counters)."""
    import cupy as cp
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=None)
    flush = cp.ones(64 << 20, cp.int32)                  # 256 MiB: five times the L2
    cold = cp.arange(COLD_WORDS, dtype=cp.int32)
    warm = cp.arange(WARM_WORDS, dtype=cp.int32)
    scratch = cp.zeros(2, cp.int32)
    int(flush.sum())                                     # its lines clean from now on
    records = {}
    for r in range(repeats):
        for level, bps, threads, loads in LEVELS:
            fn = mod.get_function(f"probe_u{loads}")
            grid = SMS * bps
            every = max(1, iterations(bps, threads, loads) // NS)
            rec = cp.zeros(grid * threads // 32 * REC, cp.int64)
            for state in states:
                src, mask = (warm, WARM_WORDS - 1) if state == "warm" else (cold, COLD_WORDS - 1)
                if state == "dirty":                     # the L2 full of dirty lines: every
                    flush.fill(1)                        # fill evicts one, DRAM writes as
                else:                                    # many bytes as it reads, fills alike
                    int(flush.sum())                     # the L2 holds the flush buffer
                int(warm.sum())                          # and then the warm array
                fn((grid,), (threads,), (src, np.int32(mask), warm, np.int32(WARM_WORDS - 1),
                                         np.int32(state == "mixed"), np.int32(COLD_WORDS),
                                         np.int32(every), rec, scratch))
                cp.cuda.Device().synchronize()
                records[f"{level}|{state}|{r}"] = rec.get()
    np.savez_compressed(out / f"records-{tag}.npz", **records)
    (out / f"launches-{tag}.json").write_text(json.dumps({
        "launches": [[lv[0], s] for lv in LEVELS for s in states],
        "cold_base": cold.data.ptr, "warm_base": warm.data.ptr}))


# ---- the ncu metric list ---------------------------------------------------------------

WANTED = [
    "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "dram__cycles_active.max.pct_of_peak_sustained_elapsed",
    "lts__t_sectors.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sectors.max.pct_of_peak_sustained_elapsed",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
    "lts__t_sectors_srcunit_ltcfabric.sum",
    "lts__t_sector_hit_rate.pct",
    "lts__d_sectors.avg.pct_of_peak_sustained_elapsed",
    "lts__d_sectors_fill_device.sum", "lts__d_sectors_fill_sysmem.sum",
    "lts__d_sectors_fill_device.avg.pct_of_peak_sustained_elapsed",
    "lts__d_sectors_fill.avg.pct_of_peak_sustained_elapsed",
    "lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "lts__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "l1tex__m_xbar2l1tex_read_sectors.sum",
    "l1tex__m_xbar2l1tex_read_bytes.sum.pct_of_peak_sustained_elapsed",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
]
#: Further counters found by name in the device's list: the NoC/crossbar, the L2's
#: fabric, fill path and queues, the frame buffer.
DISCOVER = re.compile(r"^(lts__(xbar|lts2xbar|d_sectors_fill|t_sectors_srcunit_ltcfabric|"
                      r"\w*(queue|latency|stall|backpressure|credit|fbp))|ltc__|xbar__|gpc__\w*xbar|lrc__\w*xbar|"
                      r"fbpa__|fbp__|dram__(cycles_active|sectors_read))\w*"
                      r"\.(sum|avg\.pct_of_peak_sustained_elapsed)$")
MAX_METRICS = 60


def metric_list(listing: str) -> list:
    """The metrics to collect: WANTED where the device has them, then DISCOVER's finds,
    MAX_METRICS in all (``listing``: ``ncu --query-metrics --query-metrics-mode all``)."""
    have = {line.split()[0] for line in listing.splitlines() if line.strip()}
    full = any("." in name for name in have if "__" in name)    # "all" mode: full names
    chosen = [m for m in WANTED if m in have or (not full and m.split(".")[0] in have)]
    for name in sorted(have):
        if len(chosen) >= MAX_METRICS:
            break
        if DISCOVER.match(name) and name not in chosen:
            chosen.append(name)
    return chosen


# ---- analysis ----------------------------------------------------------------------------

def warp_latencies(rec: np.ndarray) -> dict:
    """Records -> the SM clock (GHz: the warps' clock64 over globaltimer span), the kernel's
    span (first warp's start to last warp's end, us) and each role's sampled load
    latencies in ns (role 0: the cold array's warps, or all of a pure run)."""
    rec = rec.reshape(-1, REC)
    g0, g1 = rec[:, 3].astype(np.float64), rec[:, 4].astype(np.float64)
    cycles = (rec[:, 6] - rec[:, 5]).astype(np.float64)
    ok = (g1 - g0) > 2000
    ghz = float(np.median(cycles[ok] / (g1 - g0)[ok])) if ok.any() else float("nan")
    kept = rec[:, 2]
    by_role = {}
    for role in (0, 1):
        m = rec[:, 1] == role
        if m.any():
            samples = [rec[k, HEAD:HEAD + kept[k]] for k in np.flatnonzero(m)]
            by_role[role] = np.concatenate(samples).astype(np.float64) / ghz
    return {"ghz": ghz, "span_us": float((g1.max() - g0.min()) / 1e3), "lat_ns": by_role}


def summarize(records: dict) -> list:
    """One row per (level, state): pooled over repeats; latencies' median, p10, p90."""
    rows = []
    records = {k: v for k, v in records.items() if not k.startswith(WARPS)}
    keys = sorted({k.rsplit("|", 1)[0] for k in records})
    order = {lv[0]: i for i, lv in enumerate(LEVELS)}
    keys.sort(key=lambda k: (STATES.index(k.split("|")[1]), order[k.split("|")[0]]))
    for key in keys:
        level, state = key.split("|")
        runs = [warp_latencies(v) for k, v in records.items() if k.rsplit("|", 1)[0] == key]
        row = {"level": level, "state": state, "ghz": float(np.median([r["ghz"] for r in runs])),
               "span_us": float(np.median([r["span_us"] for r in runs]))}
        for role in (0, 1):
            lat = [r["lat_ns"][role] for r in runs if role in r["lat_ns"]]
            if lat:
                x = np.concatenate(lat)
                row[f"lat{role}"] = {p: float(np.percentile(x, p)) for p in (10, 50, 90)}
                row[f"mean{role}"] = float(x.mean())
        rows.append(row)
    return rows


def compact(records: dict, repeat: int = 0, warps_per_block: int = 0) -> dict:
    """The records of one repeat with the sample slots past each warp's kept samples zeroed
    (shared memory never written); with ``warps_per_block`` true, only the first two warps
    of every block (both roles of a mixed run), their grid indices under WARPS + key:
    what is committed."""
    shape = {lv[0]: lv[1:] for lv in LEVELS}
    out = {}
    for key, v in records.items():
        if not key.endswith(f"|{repeat}"):
            continue
        r = v.reshape(-1, REC).copy()
        r[:, HEAD:][np.arange(NS)[None, :] >= r[:, 2:3]] = 0
        if warps_per_block:
            per_block = shape[key.split("|")[0]][1] // 32
            keep = np.flatnonzero(np.arange(r.shape[0]) % per_block < 2)
            r, out[WARPS + key] = r[keep], keep
        out[key] = r.ravel()
    return out


#: A load at light load is "far" (through the other L2 half) above this: the light-load
#: latencies are two modes, 300-340 ns and 400-460 ns (l2-halves-h100.md: +185 cycles).
FAR_NS = 375.0
LIGHT = ("w1", "b1", "b2", "b4")


def sample_table(rec: np.ndarray, level: str, warps=None):
    """Every kept sample of a run: (SM, role, the 4 KiB chunks of its U loads in the cold
    array, latency ns).  Sample k of a warp is iteration k x every; lane 0's index there
    is the warp's first thread + iteration x U x the grid's threads (``warps``: each
    record's warp index in the grid, when the records are a subset)."""
    bps, threads, loads = {lv[0]: lv[1:] for lv in LEVELS}[level]
    grid_threads = SMS * bps * threads
    every = max(1, iterations(bps, threads, loads) // NS)
    ghz = warp_latencies(rec)["ghz"]
    rec = rec.reshape(-1, REC).astype(np.int64)
    kept = rec[:, 2]
    row, k = np.repeat(np.arange(rec.shape[0]), kept), np.concatenate([np.arange(n) for n in kept])
    warp = row if warps is None else np.asarray(warps)[row]
    index = warp * 32 + k * every * loads * grid_threads
    chunks = np.stack([((index + u * grid_threads) & (COLD_WORDS - 1)) * 4 // 4096
                       for u in range(loads)], axis=1)
    return rec[row, 0], rec[row, 1], chunks, rec[row, HEAD + k] / ghz


def near_far(records: dict, far_half: list, repeat: int = 0) -> dict:
    """Each run's cold loads split by whether they went through the far L2 half.  Which
    half each SM and each 4 KiB chunk (its home) is in is learned from the light-load
    cold samples (far = the SM's half differs from the chunk's home; a few rounds of
    majority votes from ``far_half``, the SMs l2-halves-h100.json puts in the other half).
    Returns {"agreement", "sm_half_changed", "chunks", key: {near: (n, mean, median),
    far: ...}}: near = all U loads of the sample near, far = any of them far."""
    runs = {k: sample_table(v, k.split("|")[0], records.get(WARPS + k))
            for k, v in records.items() if k.endswith(f"|{repeat}") and not k.startswith(WARPS)}
    light = [(sm[r == 0], ch[r == 0, 0], lat[r == 0]) for key, (sm, r, ch, lat) in runs.items()
             if key.split("|")[0] in LIGHT and key.split("|")[1] in ("cold", "mixed")]
    sm, ch, lat = (np.concatenate(x) for x in zip(*light))
    far = (lat > FAR_NS).astype(int)
    half = np.isin(np.arange(SMS), far_half).astype(int)
    start = half.copy()
    chunks = COLD_WORDS * 4 // 4096
    for _ in range(4):
        votes, seen = np.zeros(chunks), np.zeros(chunks)
        np.add.at(votes, ch, far ^ half[sm])
        np.add.at(seen, ch, 1)
        home = (votes > seen / 2).astype(int)
        votes_sm, seen_sm = np.zeros(SMS), np.zeros(SMS)
        np.add.at(votes_sm, sm, far ^ home[ch])
        np.add.at(seen_sm, sm, 1)
        half = (votes_sm > seen_sm / 2).astype(int)
    out = {"agreement": float(((half[sm] ^ home[ch]) == far).mean()),
           "sm_half_changed": int((half != start).sum()), "chunks": int((seen > 0).sum())}
    for key, (sm_, role, ch_, lat_) in runs.items():
        if key.split("|")[1] not in ("cold", "mixed", "dirty"):
            continue
        known = (role == 0) & (seen[ch_] > 0).all(axis=1)
        through = (half[sm_][:, None] ^ home[ch_]).sum(axis=1) > 0
        out[key] = {name: (int(m.sum()), float(lat_[m].mean()) if m.any() else float("nan"),
                           float(np.median(lat_[m])) if m.any() else float("nan"))
                    for name, m in (("near", known & ~through), ("far", known & through))}
    return out


def near_far_table(folder: pathlib.Path, halves: pathlib.Path) -> str:
    found = sorted(folder.glob("records-clock*.npz"))
    if not found or not halves.exists():
        raise SystemExit(f"need records-clock*.npz in {folder} and the halves JSON {halves}")
    records = dict(np.load(found[0]))
    split = near_far(records if any(k.startswith(WARPS) for k in records) else compact(records),
                     json.loads(halves.read_text())["summary"]["other_half"])
    lines = [f"{found[0].name}: light-load labels agree with {split['agreement']:.3f} of the "
             f"samples; {split['chunks']} chunks labelled; {split['sm_half_changed']} SMs "
             "moved from the JSON's halves.", "",
             "| run | near: samples, mean ns, median | far: samples, mean ns, median |",
             "|---|---|---|"]
    for key, v in split.items():
        if isinstance(v, dict):
            lines.append(f"| {key.rsplit('|', 1)[0]} | " + " | ".join(
                f"{v[s][0]:,}, {v[s][1]:.0f}, {v[s][2]:.0f}" for s in ("near", "far")) + " |")
    return "\n".join(lines)


def ncu_rows(text: str, keys=None) -> dict:
    """ncu's CSV -> {(level, state): metrics} in launch order (``keys``: the child's
    launches, one repeat; by default every level in the first three states)."""
    from simgpu_apps.gpu_tools.calibrate_gpu import parse_ncu
    launches = [x for x in parse_ncu(text) if x["kernel"].startswith("probe_u")]
    keys = [tuple(k) for k in keys] if keys else [(lv[0], s) for lv in LEVELS for s in STATES[:3]]
    if len(launches) != len(keys):
        raise SystemExit(f"ncu CSV has {len(launches)} probe launches, expected {len(keys)}: "
                         "was the child run with --repeats 1?")
    return {k: x["metrics"] for k, x in zip(keys, launches)}


def report(out: pathlib.Path) -> str:
    found = sorted(out.glob("records-clock*.npz"))     # the device's, or the committed subset
    if not found:
        raise SystemExit(f"no records-clock*.npz in {out}: run the GPU side first (--child)")
    rows = summarize(dict(np.load(found[0])))
    counters = {}
    order = out / "launches-ncu.json"
    keys = json.loads(order.read_text())["launches"] if order.exists() else None
    if (out / "ncu.csv").exists():
        counters = ncu_rows((out / "ncu.csv").read_text(), keys)
    elif (out / "ncu.csv.gz").exists():
        import gzip
        counters = ncu_rows(gzip.decompress((out / "ncu.csv.gz").read_bytes()).decode(), keys)
    shape = {lv[0]: lv[1:] for lv in LEVELS}
    lines = [f"Printed by calibration/loaded_latency_probe.py --report, "
             f"{datetime.date.today().isoformat()}.", "",
             "| level | state | warps per SM x loads | span us | SM GHz | load latency ns, "
             "median (p10-p90) | warm warps' latency (mixed) | GPU us (ncu) | DRAM GB/s | of peak |"
             " Little ns |", "|---|---|---|---:|---:|---|---|---:|---:|---:|---:|"]
    for r in rows:
        bps, threads, loads = shape[r["level"]]
        c = counters.get((r["level"], r["state"]), {})
        us = c.get("gpu__time_duration.sum", float("nan")) / 1e3
        gbs = c.get("dram__bytes_read.sum", float("nan")) / (us * 1e3)
        flight = SMS * bps * threads // 32 * loads * 128 * (0.5 if r["state"] == "mixed" else 1)
        little = flight / gbs if r["state"] in ("cold", "dirty") else float("nan")
        def lat(role):
            x = r.get(f"lat{role}")
            return f"{x[50]:.0f} ({x[10]:.0f}-{x[90]:.0f})" if x else "-"
        lines.append(f"| {r['level']} | {r['state']} | {bps * threads // 32} x {loads} | "
                     f"{r['span_us']:.1f} | {r['ghz']:.3f} | {lat(0)} | {lat(1)} | {us:.1f} | "
                     f"{gbs:,.0f} | {gbs / PEAK_GBPS:.2f} | {little:.0f} |")
    if counters:
        names = sorted({m for c in counters.values() for m in c})
        lines += ["", "Counters (ncu, application replay; each launch after the script's flush):", "",
                  "| metric | " + " | ".join(f"{lv}/{s}" for lv, s in counters) + " |",
                  "|---|" + "---:|" * len(counters)]
        for m in names:
            lines.append(f"| {m} | " + " | ".join(_fmt(c.get(m)) for c in counters.values()) + " |")
    return "\n".join(lines)


def _fmt(v) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cuda",), help="run the GPU side (with --child)")
    ap.add_argument("--child", type=pathlib.Path, help="folder for the records")
    ap.add_argument("--tag", default="clock")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--states", nargs="+", choices=STATES, default=list(STATES[:3]),
                    help="dirty: cold with the L2 full of dirty lines (DRAM writes as it reads)")
    ap.add_argument("--metrics-from", type=pathlib.Path,
                    help="print the metric list chosen from this ncu --query-metrics listing")
    ap.add_argument("--report", type=pathlib.Path, help="folder with records-clock.npz, ncu.csv")
    ap.add_argument("--md", type=pathlib.Path)
    ap.add_argument("--near-far", type=pathlib.Path,
                    help="folder with records-clock*.npz: the loads split by L2 half (--halves)")
    ap.add_argument("--halves", type=pathlib.Path, default=pathlib.Path("docs/calibration/l2-halves-h100.json"),
                    help="l2_halves' JSON: the SMs in the other half, the split's first guess")
    a = ap.parse_args(argv)
    if a.metrics_from:
        print(",".join(metric_list(a.metrics_from.read_text())))
    elif a.child:
        if a.device != "cuda":
            raise SystemExit("--child runs on the GPU: add --device cuda")
        a.child.mkdir(parents=True, exist_ok=True)
        child(a.child, a.tag, a.repeats, a.states)
    elif a.near_far:
        print(near_far_table(a.near_far, a.halves))
    elif a.report:
        text = report(a.report)
        if a.md:
            a.md.write_text(text + "\n")
        print(text)
    else:
        ap.print_help(sys.stderr)
        raise SystemExit(2)


if __name__ == "__main__":
    main()
