"""How many cycles an SM's L1 takes for one warp's load or store, by the 128-B lines and
32-B sectors it touches.  Needs a GPU and CuPy for ``--gpu``;
calibration/l1_throughput_sim.py runs the model.

The model charges an L1 its latency only: a warp load touching 32 lines costs the SM's
L1 no more time than one touching one line (docs/fidelity.md, "Not modeled").  The
GPU's L1 looks up a request's lines one after another (Nsight Compute's "wavefronts"),
so a scattered warp load holds the SM's L1 pipeline for many cycles.  This probe asks
how many, for hits (``ca``: ``ld.global.ca``, a 64 KiB region per block read once
first), for loads past the L1 (``cg``: ``ld.global.cg``, the region in the L2) and for
stores (``st``); and, as a mixed stream, both: loads and stores alternate in the eight
requests (``mix_ca`` with hits, ``mix_cg`` with loads past the L1; the stores go into
another array than the loads read), to ask whether an SM's loads and stores share one
pipeline (their cycles add up) or pass side by side.

One block of 1,024 threads per SM (132 blocks; then 8 blocks, so that what one SM's
L1 takes shows apart from what all SMs together take of the L2), each warp issuing 8 independent
requests per iteration for 32 iterations, the SM's clock read around the loop.  Lane
j touches line ``j % L`` of the request's L lines (consecutive lines from a per-warp,
per-request start), at word:

* ``packed``: ``j // L`` -- the line's words contiguous (one sector for L >= 8);
* ``spread``: ``(j // L) * L`` -- spread over the line's four sectors where it can;
* ``diag``: ``j`` -- every lane a different word, so a different L1 data bank.

    python -m calibration.l1_throughput --gpu OUT          # OUT/l1.json
    python -m calibration.l1_throughput_sim OUT            # OUT/l1_sim.json (sim:h100)
    python -m calibration.l1_throughput --report OUT [--md F.md]
"""
from __future__ import annotations

import datetime
import json
import pathlib
import sys

import numpy as np

from calibration import probe_cli
from simgpu_apps import table_out

LINES = 512                      # a block's region: 512 lines of 128 B (64 KiB)
THREADS, ITERS, UNROLL = 1024, 32, 8
WARPS = THREADS // 32
LS = (1, 2, 4, 8, 16, 32)
PATTERNS = ("packed", "spread", "diag")
MODES = ("ca", "cg", "st", "mix_ca", "mix_cg")
REPEATS = 3
FEW = 8                          # the second run's blocks: 8 SMs busy, the L2 nearly idle

SOURCE = r"""
template <int MODE>
__device__ __forceinline__ int ld(const int* p) {
    if (MODE == 1 || MODE == 4) return __ldcg(p);
    return __ldca(p);
}

template <int MODE>
__device__ void body(const int* src, int* dst, int L, int pattern, long long* clk) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int* base = src + (size_t)blockIdx.x * LINES * 32;
    int* out = dst + (size_t)blockIdx.x * LINES * 32;
    int word = pattern == 0 ? lane / L : pattern == 1 ? (lane / L) * L : lane;
    int mine = lane % L;
    int acc = 0;
    for (int i = threadIdx.x; i < LINES * 32; i += blockDim.x) acc += ld<MODE>(base + i);
    __syncthreads();
    long long t0 = clock64();
    for (int it = 0; it < ITERS; ++it) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            int first = (warp * 131 + (it * UNROLL + u) * 61) & (LINES - 1);
            int idx = ((first + mine) & (LINES - 1)) * 32 + word;
            if (MODE == 2 || (MODE >= 3 && (u & 1))) out[idx] = lane + it;
            else acc += ld<MODE>(base + idx);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) clk[blockIdx.x] = clock64() - t0;
    if (acc == 0x7fffffff) out[0] = acc;       // keeps the loads
}

#define PROBE(NAME, MODE) extern "C" __global__ void NAME(const int* s, int* d, int L, int p, \
                                                       long long* c) { body<MODE>(s, d, L, p, c); }
PROBE(probe_ca, 0)
PROBE(probe_cg, 1)
PROBE(probe_st, 2)
PROBE(probe_mix_ca, 3)
PROBE(probe_mix_cg, 4)
""".replace("LINES", str(LINES)).replace("ITERS", str(ITERS)).replace("UNROLL", str(UNROLL))


def lines_and_sectors(L: int, pattern: str) -> tuple[int, int]:
    """The 128-B lines and 32-B sectors one warp request touches."""
    words = {"packed": lambda j: j // L, "spread": lambda j: (j // L) * L,
             "diag": lambda j: j}[pattern]
    sectors = {(j % L, words(j) // 8) for j in range(32)}
    return L, len(sectors)


def gpu(out: pathlib.Path) -> None:
    import cupy as cp
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",))
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    words = sms * LINES * 32
    src = cp.arange(words, dtype=cp.int32)
    dst = cp.zeros(words, cp.int32)
    clk = cp.zeros(sms, cp.int64)
    rows = []
    for blocks in (sms, FEW):
        for mode in MODES:
            fn = mod.get_function(f"probe_{mode}")
            for pattern in PATTERNS:
                for L in LS:
                    args = (src, dst, np.int32(L), np.int32(PATTERNS.index(pattern)), clk)
                    fn((blocks,), (THREADS,), args)                    # warm-up
                    cycles, ms = [], []
                    for _ in range(REPEATS):
                        a, b = cp.cuda.Event(), cp.cuda.Event()
                        a.record()
                        fn((blocks,), (THREADS,), args)
                        b.record()
                        b.synchronize()
                        ms.append(cp.cuda.get_elapsed_time(a, b))
                        cycles.append(float(np.median(clk.get()[:blocks])))
                    rows.append({"blocks": blocks, "mode": mode, "pattern": pattern, "L": L,
                                 "cycles": float(np.median(cycles)), "ms": float(np.median(ms))})
                    print(rows[-1], flush=True)
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    (out / "l1.json").write_text(json.dumps({"device": name, "sms": sms, "date":
                                             str(datetime.date.today()), "rows": rows}, indent=1))


def report(out: pathlib.Path) -> str:
    table_out.need(out, "l1.json")
    g = json.loads((out / "l1.json").read_text())
    s = json.loads((out / "l1_sim.json").read_text()) if (out / "l1_sim.json").exists() else None
    model = {(r["mode"], r["pattern"], r["L"]): r["cycles"] for r in s["rows"]} if s else {}
    per_sm = WARPS * ITERS * UNROLL
    model_run = f"{s['device']}, {s['date']}" if s else "-"
    head = (f"GPU: {g['device']}, {g['date']}; model: {model_run}. "
            f"Cycles of the SM's clock per warp request ({per_sm:,} requests per SM, median over "
            f"the SMs busy and {REPEATS} launches); per line: that over the request's lines. The "
            f"model's column: sim:h100 on {g['sms']} SMs, timed-block, 4 iterations scaled to "
            f"{ITERS}.")
    lines = [head, "", "| SMs | mode | pattern | lines | sectors | GPU cycles / request "
             "| GPU / line | model cycles / request | model / GPU |",
             "|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in g["rows"]:
        L, sectors = lines_and_sectors(r["L"], r["pattern"])
        c = r["cycles"] / per_sm
        m = model.get((r["mode"], r["pattern"], r["L"])) if r["blocks"] == g["sms"] else None
        mc = f"{m / per_sm:.2f}" if m is not None else "-"
        ratio = f"{m / r['cycles']:.2f}" if m is not None else "-"
        lines.append(f"| {r['blocks']} | {r['mode']} | {r['pattern']} | {L} | {sectors} "
                     f"| {c:.2f} | {c / L:.2f} | {mc} | {ratio} |")
    mix = mix_table(g, model, per_sm)
    return "\n".join(lines + (["", mix] if mix else []))


def mix_table(g: dict, model: dict, per_sm: int) -> str:
    """The mixed streams against their parts: a load and a store of the same shape cost,
    together, ``pair / sum`` of what the two cost apart (1: one pipeline, their cycles
    add up; ``max / sum``: side by side).  "" when the run has no mixed stream."""
    gpu = {(r["blocks"], r["mode"], r["pattern"], r["L"]): r["cycles"] / per_sm
           for r in g["rows"]}
    lines = ["Loads and stores alternating (`mix_ca`, `mix_cg`) against the same loads and "
             "stores apart, cycles per warp request; pair / sum: a load and a store together "
             "over the two apart (1.00: their cycles add up), max / sum: what side by side "
             "would give.", "",
             "| SMs | loads | pattern | lines | load | store | mixed | pair / sum | max / sum "
             "| model: pair / sum |", "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (blocks, mode, pattern, L), mixed in gpu.items():
        if not mode.startswith("mix_"):
            continue
        loads = mode[4:]
        ld, st = gpu.get((blocks, loads, pattern, L)), gpu.get((blocks, "st", pattern, L))
        if ld is None or st is None:
            continue
        parts = [model.get((m, pattern, L)) for m in (loads, "st", mode)]
        sim = ("-" if blocks != g["sms"] or None in parts else
               f"{2 * parts[2] / (parts[0] + parts[1]):.2f}")
        lines.append(f"| {blocks} | {loads} | {pattern} | {L} | {ld:.2f} | {st:.2f} | "
                     f"{mixed:.2f} | {2 * mixed / (ld + st):.2f} | {max(ld, st) / (ld + st):.2f} "
                     f"| {sim} |")
    return "\n".join(lines) if len(lines) > 4 else ""


def main(argv=None) -> int:
    return probe_cli.probe_main(
        __doc__, argv,
        gpu=probe_cli.action("run the probe on the GPU, files to here", lambda a: gpu(a.gpu),
                             mkdir=True),
        report=probe_cli.table("folder of a --gpu run (and of l1_throughput_sim's)",
                               lambda a: report(a.report)),
        md=probe_cli.setting("with --report: also write the table here"))


if __name__ == "__main__":
    sys.exit(main())
