"""Which addresses share an L2 slice (and its memory channel) on the H100: the unit of
the GPU's address hash, measured two ways.  Needs a GPU, CuPy and Nsight Compute.

1. **Counters** (``--child OUT --tag ncu`` under ncu, cold L2): one kernel reads
   a span of bytes with one block, so from one SM (128 B to 64 KiB, at 4 KiB-aligned
   and unaligned offsets, at eight places in a buffer), and ncu reports the L2's
   sectors summed over its slices and in the busiest slice (``.sum`` / ``.max`` over
   the lts units), and the DRAM's over its units.  The sum over the max is how many
   slices (DRAM units) at least shared the span's sectors.
2. **Timelines** (``--child OUT``): the calibration's streaming copy, instrumented as
   ``calibration/dram_ramp.py`` does it (lane 0 of each warp stamps the SM clock after
   every iteration), with source and destination at offsets of 0, 512, 2048 and
   3584 B from a 2 MiB boundary (a GPU page: the offset is the physical one).  Warp
   w reads the 128 B at ``offset + 128 w`` (plus multiples of 264 x 4 KiB in later
   iterations), so a fixed unit of the address hash shows as adjacent warps whose
   latencies move together inside an aligned unit and not across its boundary, and
   the boundary moves with the offset, across blocks and SMs.  The read of the same
   source (dram_ramp's read probe) runs beside it.
3. **Home halves** (in ``--report``, from the timelines and the SMs' halves that
   ``calibration/l2_halves.py`` found on the same GPU, ``--groups``): each 4 KiB
   chunk's home half, from whether its warps were fast or slow for the half their SM
   sits beside; the address bits whose parity gives it; and each iteration's load
   latency, near and far, in the copy and in the read.

The kernels are raw CUDA (``%smid``, the clock and the instrumentation are no part of
simgpu's kernel language): this measures the hardware the model is calibrated against.

    ncu --clock-control none --cache-control all --csv --print-units base \\
        --metrics $(python -m calibration.l2_chunks --metrics) --log-file OUT/ncu.csv \\
        python -m calibration.l2_chunks --child OUT --tag ncu
    python -m calibration.l2_chunks --child OUT          # stamps -> OUT/stamps.npz
    python -m calibration.l2_halves --out OUT/l2-halves.md  # the SMs' halves
    python -m calibration.l2_chunks --report OUT [--groups OUT/l2-halves.json] [--md F.md]
"""
from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import sys

import numpy as np

from calibration import dram_ramp  # (the instrumented copy and its flush, shared)
from simgpu_apps import table_out

READ = r"""
// One block, so one SM (one L2 half's point of view): its 256 threads read n ints.
extern "C" __global__ void span_read(const int* src, int* out, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        if (src[i] < 0) out[0] = i;
}
"""
METRICS = ["lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_read.max",
           "lts__t_sectors_srcunit_tex_op_read.avg",
           "dram__sectors_read.sum", "dram__sectors_read.max", "dram__sectors_read.avg"]
PAGE = 2 << 20
#: (bytes read, offset from a 64 KiB boundary) for the counters; 0 bytes: the background
#: (the kernel's own code and parameters), subtracted place by place
SPANS = [(b, 0) for b in (0, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)] + \
        [(4096, o) for o in (1024, 2048, 3072)]
PLACES = 8                       # each span at 8 places, 256 KiB apart
OFFSETS = (0, 512, 2048, 3584)   # the copy's source and destination, from a 2 MiB boundary
N = 1 << 20                      # the calibration's 8 MiB copy: 2^20 int32 each way
GRID, BLOCK = 1056, 256
REPEATS = 2
KINDS = ("copy", "read")         # dram_ramp's probes: the copy, and the read of its source


def key(kind: str, offset: int, state: str, r: int) -> str:
    """The stamps' name in stamps.npz (the copy's without a prefix, as the first runs)."""
    return f"{offset}|{state}|{r}" if kind == "copy" else f"{kind}|{offset}|{state}|{r}"


def aligned(cp, nbytes: int):
    """An int32 view of fresh device memory starting on a 2 MiB (page) boundary (the
    view keeps the whole allocation alive)."""
    raw = cp.zeros(nbytes + PAGE, cp.int8)
    skip = (-raw.data.ptr) % PAGE
    return raw[skip:skip + nbytes].view(cp.int32)


def child(out: pathlib.Path, tag: str) -> None:
    import cupy as cp
    if tag == "ncu":                                     # the counters, cold under ncu
        fn = cp.RawModule(code=READ).get_function("span_read")
        src = aligned(cp, PLACES * (256 << 10) + (64 << 10))
        src.fill(1)
        sink = cp.zeros(1, cp.int32)
        order = []
        for nbytes, offset in SPANS:
            for place in range(PLACES):
                start = (place * (256 << 10) + offset) // 4
                n = nbytes // 4
                fn((1,), (256,), (src[start:], sink, np.int32(n)))
                order.append({"bytes": nbytes, "offset": offset, "place": place})
        cp.cuda.Device().synchronize()
        (out / "order.json").write_text(json.dumps(order))
        return
    mod = cp.RawModule(code=dram_ramp.SOURCE, options=("-std=c++17",))
    flush = cp.zeros(64 << 20, cp.int32)                 # 256 MiB: five times the L2
    rec = cp.zeros(GRID * BLOCK // 32 * dram_ramp.REC, cp.int64)
    stamps = {}
    for offset in OFFSETS:
        sbuf, dbuf = aligned(cp, 4 * N + PAGE), aligned(cp, 4 * N + PAGE)
        src, dst = sbuf[offset // 4:offset // 4 + N], dbuf[offset // 4:offset // 4 + N]
        src[:] = cp.arange(N, dtype=cp.int32)
        for kind in KINDS:                               # the copy's keys have no prefix
            probe = mod.get_function(f"{kind}_probe")
            args = (src, dst, np.int32(N), rec)
            for state in ("warm", "cold"):
                for r in range(REPEATS):
                    probe((GRID,), (BLOCK,), args)       # warm-up: data, TLBs, code
                    if state == "cold":
                        flush.fill(1)
                        int(flush.sum())                 # the L2 now holds the flush buffer
                    probe((GRID,), (BLOCK,), args)
                    cp.cuda.Device().synchronize()
                    stamps[key(kind, offset, state, r)] = rec.get()
        assert bool((dst == src).all())
        del sbuf, dbuf, src, dst
    np.savez_compressed(out / "stamps.npz", **stamps)


def counters_table(out: pathlib.Path) -> str:
    from simgpu_apps.gpu_tools.calibrate_gpu import parse_ncu
    order = json.loads((out / "order.json").read_text())
    rows = [x["metrics"] for x in parse_ncu((out / "ncu.csv").read_text())
            if x["kernel"].startswith("span_read")]
    if len(rows) != len(order):
        raise SystemExit(f"ncu.csv has {len(rows)} span_read launches, order.json {len(order)}")
    tex, dram = "lts__t_sectors_srcunit_tex_op_read", "dram__sectors_read"
    slices = round(np.median([r[f"{tex}.sum"] / r[f"{tex}.avg"] for r in rows if r.get(f"{tex}.avg")]))
    channels = round(np.median([r[f"{dram}.sum"] / r[f"{dram}.avg"] for r in rows if r.get(f"{dram}.avg")]))
    background = {o["place"]: r for r, o in zip(rows, order) if o["bytes"] == 0}
    lines = [f"ncu counts {slices} L2 slices and {channels} DRAM units (`.sum / .avg`). One block "
             f"(one SM) reads the span; medians over {PLACES} places. \"Busiest\" is the count of "
             "the unit with the most; \"spread over\" is the total over the busiest one's, the "
             "fewest units the sectors can have gone to. The DRAM's figures are net of the same "
             "kernel reading nothing at the same place (its code and parameters: "
             f"{np.median([r[f'{dram}.sum'] for r in background.values()]):.0f} sectors, "
             f"the busiest unit {np.median([r[f'{dram}.max'] for r in background.values()]):.0f}).", "",
             "| bytes read | offset from a 64 KiB boundary | L2 sectors from the SM | busiest slice "
             "| spread over | DRAM sectors (net) | busiest DRAM unit | spread over |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for nbytes, offset in SPANS:
        if nbytes == 0:
            continue
        sel = [(r, background[o["place"]]) for r, o in zip(rows, order)
               if (o["bytes"], o["offset"]) == (nbytes, offset)]
        t_sum = [r[f"{tex}.sum"] - b[f"{tex}.sum"] for r, b in sel]
        t_max = [r[f"{tex}.max"] for r, b in sel]
        d_sum = [r[f"{dram}.sum"] - b[f"{dram}.sum"] for r, b in sel]
        d_max = [r[f"{dram}.max"] for r, b in sel]
        lines.append(f"| {nbytes:,} | {offset:,} | {np.median(t_sum):.0f} | {np.median(t_max):.0f} | "
                     f"{np.median(np.divide(t_sum, t_max)):.1f} | {np.median(d_sum):.0f} | "
                     f"{np.median(d_max):.0f} | {np.median(np.divide(d_sum, d_max)):.1f} |")
    return "\n".join(lines)


def warp_latencies(rec: np.ndarray, iterations: int = 3) -> np.ndarray:
    """(warps, iterations) latency in ns of each warp's first iterations, from its stamps."""
    _, _, _, rel, ghz = dram_ramp.warp_clocks(rec)
    return np.diff(rel[:, :iterations + 1], axis=1) / ghz


def boundary_correlations(lat: np.ndarray, offset: int, unit: int, block_warps: int = 8) -> dict:
    """Correlation of adjacent warps' latencies (iterations 2 on; each warp's 128 B at
    offset + 128 w), the pairs split by what lies between their bytes: nothing, a
    boundary of an aligned ``unit``, or the edge of a block that is no unit boundary."""
    w = np.arange(lat.shape[0] - 1)
    crosses = (offset + 128 * (w + 1)) % unit == 0
    block_edge = (w + 1) % block_warps == 0
    groups = {"inside a unit, same block": ~crosses & ~block_edge,
              "inside a unit, next block": ~crosses & block_edge,
              "across a unit boundary": crosses}
    out = {}
    for name, m in groups.items():
        a, b = lat[w[m], 1:].ravel(), lat[w[m] + 1, 1:].ravel()
        out[name] = (float(np.corrcoef(a, b)[0, 1]) if m.sum() > 2 else float("nan"), int(m.sum()))
    return out


def stamps_table(out: pathlib.Path) -> str:
    data = np.load(out / "stamps.npz")
    units = (1024, 2048, 4096, 8192)
    lines = ["Correlation of adjacent warps' iteration latencies (iterations 2-3, both "
             "repeats pooled), pairs split by whether an aligned unit's boundary lies between "
             "their 128-B pieces. Block std: standard deviation of the blocks' mean "
             "latency in iteration 2.", "",
             "| offset B | state | block std ns | " + " | ".join(
                 f"{u} B unit: inside / across" for u in units) + " |",
             "|---:|---|---:|" + "---:|" * len(units)]
    at_4k = {}                                            # for the second table
    for offset in OFFSETS:
        for state in ("warm", "cold"):
            lats = [warp_latencies(data[key("copy", offset, state, r)]) for r in range(REPEATS)]
            cells = []
            for u in units:
                cs = [boundary_correlations(x, offset, u) for x in lats]
                if u == 4096:
                    at_4k[offset, state] = cs
                inside = np.mean([c["inside a unit, same block"][0] for c in cs])
                across = np.mean([c["across a unit boundary"][0] for c in cs])
                cells.append(f"{inside:.2f} / {across:.2f}")
            std = np.mean([x[:, 1].reshape(GRID, BLOCK // 32).mean(1).std() for x in lats])
            lines.append(f"| {offset} | {state} | {std:.0f} | " + " | ".join(cells) + " |")
    lines += ["", "At the 4 KiB unit, the pairs that straddle a block edge but no unit boundary:", "",
              "| offset B | state | inside a unit, same block | inside a unit, next block | across a unit boundary |",
              "|---:|---|---:|---:|---:|"]
    for offset in OFFSETS:
        for state in ("warm", "cold"):
            cs = at_4k[offset, state]
            cells = [f"{np.mean([c[k][0] for c in cs]):.2f} ({cs[0][k][1]} pairs)" for k in cs[0]]
            lines.append(f"| {offset} | {state} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


GROUPS = pathlib.Path(__file__).resolve().parent.parent / "docs/calibration/l2-halves-h100.json"
PAGE_CHUNKS = PAGE // 4096       # 4 KiB chunks in a 2 MiB page: address bits 12-20 inside it


def sm_halves(path: pathlib.Path) -> dict:
    """SM -> 0 (SM 0's L2 half) or 1, from calibration/l2_halves.py's JSON."""
    summary = json.loads(pathlib.Path(path).read_text())["summary"]
    return {**{s: 0 for s in summary["same_half_as_sm0"]}, **{s: 1 for s in summary["other_half"]}}


def iterations(rec: np.ndarray, offset: int, halves: dict):
    """Per warp and iteration of the grid-stride loop (those with data): (iteration,
    4 KiB chunk read, half of the warp's SM, latency ns)."""
    recs, _, _, rel, ghz = dram_ramp.warp_clocks(rec)
    warps = recs.shape[0]
    half = np.array([halves[int(s)] for s in recs[:, 0]])
    rows = []
    for k in range(dram_ramp.MAXIT):
        at = 128 * np.arange(warps) + k * GRID * BLOCK * 4
        m = at < 4 * N
        if not m.any():
            break
        lat = (rel[m, k + 1] - rel[m, k]) / ghz
        rows.append((np.full(m.sum(), k), (offset + at[m]) // 4096, half[m], lat))
    return [np.concatenate(c) for c in zip(*rows)]


def home_labels(rec, offset, halves) -> dict:
    """Chunk -> the half its loads were fast from, per (chunk, SM half) with four warps
    or more: a warp-iteration is fast when below the running median of its neighbours
    (so the trend over the kernel cancels); the chunk's home is the warps' half if
    their mean is fast, the other if slow.  Iterations after the first."""
    from scipy.ndimage import median_filter
    it, chunk, half, lat = iterations(rec, offset, halves)
    votes: dict = {}
    for k in range(1, it.max() + 1):
        m = it == k
        z = lat[m] - median_filter(lat[m], size=257, mode="nearest")
        for c, h, zz in zip(chunk[m], half[m], z):
            votes.setdefault((c, h), []).append(zz)
    out: dict = {}
    for (c, h), zs in votes.items():
        if len(zs) >= 4:
            out.setdefault(c, []).append(h if np.mean(zs) < 0 else 1 - h)
    return out


def parity(x, mask: int):
    return np.array([bin(int(v) & mask).count("1") & 1 for v in np.atleast_1d(x)])


def fit_mask(labels: dict):
    """The in-page bits whose parity best gives each chunk's home, with a free constant
    per 2 MiB page (the bits above it are physical, unseen here): [(agreement, mask of
    chunk-index bits)] best first."""
    chunks = np.array(sorted(labels))
    home = np.array([round(np.mean(labels[c])) for c in chunks])
    page, local = chunks // PAGE_CHUNKS, chunks % PAGE_CHUNKS
    fits = []
    for mask in range(1, PAGE_CHUNKS):
        p = parity(local, mask) ^ home
        agree = sum(max(p[page == g].mean(), 1 - p[page == g].mean()) * (page == g).sum()
                    for g in np.unique(page))
        fits.append((agree / len(chunks), mask))
    return sorted(fits, reverse=True)


def bits(mask: int, shift: int = 12) -> str:
    return ", ".join(str(b + shift) for b in range(mask.bit_length()) if mask >> b & 1)


def halves_table(out: pathlib.Path, groups: pathlib.Path) -> str:
    data = np.load(out / "stamps.npz")
    halves = sm_halves(groups)
    kinds = [k for k in KINDS if key(k, OFFSETS[0], "cold", 0) in data]
    lines = [f"SM halves from `{groups.name}` (calibration/l2_halves.py). A chunk's home, per "
             "cold copy: the half whose SMs' warps read it faster than their neighbours "
             "(iterations 2 on), kept where both repeats agree; the fit: the address bits "
             "inside a 2 MiB page whose parity gives that home, with a free constant per page.", "",
             "| offset B | chunks | repeats agree | best bits | agreement | next best bits | agreement |",
             "|---:|---:|---:|---|---:|---|---:|"]
    fitted = {}
    for offset in OFFSETS:
        per = [home_labels(data[key("copy", offset, "cold", r)], offset, halves)
               for r in range(REPEATS)]
        both = {c: per[0][c] + per[1][c] for c in per[0] if c in per[1]}
        agree = {c: v for c, v in both.items() if len(set(v)) == 1}
        fits = fit_mask(agree)
        fitted[offset] = (fits[0][1], agree)
        lines.append(f"| {offset} | {len(both)} | {len(agree) / max(len(both), 1):.2f} | "
                     f"{bits(fits[0][1])} | {fits[0][0]:.3f} | {bits(fits[1][1])} | {fits[1][0]:.3f} |")
    mask = max(set(m for m, _ in fitted.values()), key=[m for m, _ in fitted.values()].count)
    lines += ["", f"Load latency by the home of the chunk read (parity of address bits "
              f"{bits(mask)}, each page's constant from that offset's cold copy): median ns of "
              "the warps whose SM is in the chunk's home half (near) and the others (far), "
              "per iteration of the grid-stride loop, both repeats pooled.", "",
              "| kernel | offset B | state | " + " | ".join(f"iteration {k + 1} near / far"
                                                          for k in range(4)) + " |",
              "|---|---:|---|" + "---:|" * 4]
    for offset in OFFSETS:
        _, agree = fitted[offset]
        chunks = np.array(sorted(agree))
        home = np.array([agree[c][0] for c in chunks]) ^ parity(chunks % PAGE_CHUNKS, mask)
        const = {g: round(home[chunks // PAGE_CHUNKS == g].mean()) for g in np.unique(chunks // PAGE_CHUNKS)}
        for kind in kinds:
            for state in ("warm", "cold"):
                its = [iterations(data[key(kind, offset, state, r)], offset, halves)
                       for r in range(REPEATS)]
                it, chunk, half, lat = [np.concatenate(c) for c in zip(*its)]
                known = np.array([c // PAGE_CHUNKS in const for c in chunk])
                page_c = np.array([const.get(c // PAGE_CHUNKS, 0) for c in chunk])
                near = (parity(chunk % PAGE_CHUNKS, mask) ^ page_c) == half
                cells = []
                for k in range(4):
                    m = (it == k) & known
                    cells.append(f"{np.median(lat[m & near]):.0f} / {np.median(lat[m & ~near]):.0f}"
                                 if (m & near).any() and (m & ~near).any() else "-")
                lines.append(f"| {kind} | {offset} | {state} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", type=pathlib.Path, help="run the launches into this folder")
    ap.add_argument("--tag", default="", help="with --child: 'ncu' for the counters' launches")
    ap.add_argument("--metrics", action="store_true", help="print the ncu metric list")
    ap.add_argument("--report", type=pathlib.Path, help="folder of both --child runs: print the tables")
    ap.add_argument("--md", help="with --report: also write the text here")
    ap.add_argument("--groups", type=pathlib.Path, default=GROUPS,
                    help="with --report: calibration/l2_halves.py's JSON (which SMs share an L2 "
                         "half) from the same GPU")
    args = ap.parse_args(argv)
    if args.metrics:
        print(",".join(METRICS))
        return 0
    if args.child:
        args.child.mkdir(parents=True, exist_ok=True)
        child(args.child, args.tag)
        return 0
    if args.report:
        parts = [f"Script: `calibration/l2_chunks.py`, {datetime.date.today()}"]
        if (args.report / "ncu.csv").exists():
            parts += ["## Sectors of one span, by slice (ncu, cold L2)", counters_table(args.report)]
        if (args.report / "stamps.npz").exists():
            parts += ["## Latencies of neighbouring warps in the 8 MiB copy", stamps_table(args.report),
                      "## The chunks' L2 home half, and loads through the far half",
                      halves_table(args.report, args.groups)]
        if len(parts) == 1:
            raise SystemExit(f"{args.report} has neither ncu.csv nor stamps.npz: give the folder "
                             "of the --child runs (see this script's docstring)")
        return table_out.emit("\n\n".join(parts), args.md)
    ap.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
