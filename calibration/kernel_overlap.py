"""How much of a kernel's work hides under its fixed cost on the GPU: one thread of one
block does k dependent loads, in a full wave of otherwise empty blocks.  Needs a GPU,
CuPy and Nsight Compute.

The calibration takes a kernel's time net of an empty kernel's on the same grid
(1.99 us + 0.59 ns per block on the H100), and the model lets the blocks' work run
while later blocks are still handed out. Here the work is a chain of k loads
(``calibrate.py``'s chase: a random cycle through 64 MiB, so every load misses the L2
when it is cold) in block 0, the middle block or the last one of the calibration's
1,056 x 256 grid, k = 0 .. 16; if none of it hid under the fixed cost, the net time
would be k load latencies; what hides shows as a smaller net time, and as a
dependence on which block does the work.

    ncu --clock-control none --cache-control all|none --csv --print-units base \\
        --metrics gpu__time_duration.sum --log-file OUT/ncu-cold|warm.csv \\
        python benchmarks/kernel_overlap.py --child OUT
    python benchmarks/kernel_overlap.py --report OUT [--md F.md]
    python benchmarks/kernel_overlap.py --sim [--md F.md]       # the model's side
"""
from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import table_out  # noqa: E402

SOURCE = r"""
extern "C" __global__ void chase_in_block(const int* nxt, int* out, int steps, int who) {
    if (blockIdx.x != who || threadIdx.x != 0) return;
    int j = 0;
    for (int k = 0; k < steps; k++) j = nxt[j];
    out[0] = j;
}
"""
GRID, BLOCK = 1056, 256
NODES = 1 << 24                  # 64 MiB of int32: more than the L2
STEPS = (0, 1, 2, 4, 8, 16)
WHO = (0, 528, 1055)
REPEATS = 3


def cycle(n: int) -> np.ndarray:
    order = np.random.default_rng(0).permutation(n).astype(np.int32)
    nxt = np.empty(n, np.int32)
    nxt[order] = np.roll(order, -1)
    return nxt


def child(out: pathlib.Path) -> None:
    import cupy as cp
    fn = cp.RawModule(code=SOURCE).get_function("chase_in_block")
    nxt = cp.asarray(cycle(NODES))
    sink = cp.zeros(1, cp.int32)
    order = []
    for who in WHO:
        for steps in STEPS:
            for r in range(REPEATS):
                args = (nxt, sink, np.int32(steps), np.int32(who))
                fn((GRID,), (BLOCK,), args)              # warm-up (the warm state's data)
                fn((GRID,), (BLOCK,), args)              # measured
                order += [{"who": who, "steps": steps, "repeat": r, "measured": m}
                          for m in (False, True)]
    cp.cuda.Device().synchronize()
    (out / "order.json").write_text(json.dumps(order))


def table(us: dict) -> list:
    """The table's lines from each (state, who)'s kernel time in us by k (the GPU's
    and the model's alike): net of k = 0, and the slope from k = 4 to 16."""
    lines = ["| state | who | " + " | ".join(f"k = {k} net us" for k in STEPS[1:]) +
             " | k = 0 us | slope ns per load (k 4 -> 16) |",
             "|---|---:|" + "---:|" * (len(STEPS) + 1)]
    for (state, who), t in us.items():
        net = [f"{t[k] - t[0]:.2f}" for k in STEPS[1:]]
        slope = (t[16] - t[4]) / 12 * 1e3
        lines.append(f"| {state} | {who} | " + " | ".join(net) + f" | {t[0]:.2f} | {slope:.0f} |")
    return lines


def report(out: pathlib.Path) -> str:
    from cuda_backend import calibrate as C
    table_out.need(out, "order.json", "ncu-warm.csv", "ncu-cold.csv")
    order = json.loads((out / "order.json").read_text())
    lines = [f"Script: `benchmarks/kernel_overlap.py`, {datetime.date.today()}. One thread of "
             f"block 'who' of a {GRID} x {BLOCK} grid does k dependent loads through a random "
             f"cycle of {NODES * 4 >> 20} MiB; ncu `gpu__time_duration`, median of {REPEATS}; "
             "net: less the same grid with k = 0 (all blocks empty).", ""]
    us = {}
    for state in ("warm", "cold"):
        rows = C.parse_ncu((out / f"ncu-{state}.csv").read_text())
        times = [r["metrics"][C.TIME] / 1e3 for r in rows if r["kernel"].startswith("chase_in_block")]
        if len(times) != len(order):
            raise SystemExit(f"ncu-{state}.csv has {len(times)} launches, order.json {len(order)}")
        got = {}
        for o, t in zip(order, times):
            if o["measured"]:
                got.setdefault((o["who"], o["steps"]), []).append(t)
        for who in WHO:
            us[state, who] = {k: float(np.median(got[who, k])) for k in STEPS}
    return "\n".join(lines + table(us))


def simulate() -> str:
    """The model's side: the same chain, as calibrate.py's chase kernel run by one block
    of the grid (the kernel language's version below), on sim:h100."""
    import kernel_overlap_sim
    return kernel_overlap_sim.simulate()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", type=pathlib.Path, help="run the launches (under ncu)")
    ap.add_argument("--report", type=pathlib.Path, help="folder with order.json, ncu-warm.csv, "
                                                         "ncu-cold.csv: print the table")
    ap.add_argument("--sim", action="store_true", help="run the model's counterpart")
    ap.add_argument("--md", help="with --report or --sim: also write the text here")
    args = ap.parse_args(argv)
    if args.child:
        args.child.mkdir(parents=True, exist_ok=True)
        child(args.child)
        return 0
    if args.report:
        return table_out.emit(report(args.report), args.md)
    if args.sim:
        return table_out.emit(simulate(), args.md)
    ap.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
