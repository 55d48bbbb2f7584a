"""How much of a kernel's work hides under its fixed cost on the GPU: one thread of one
block does k dependent loads, in a full wave of otherwise empty blocks.  Needs a GPU,
CuPy and Nsight Compute.

The calibration takes a kernel's time net of an empty kernel's on the same grid
(1.99 us + 0.59 ns per block on the H100), and the model lets the blocks' work run
while later blocks are still handed out. Here the work is a chain of k loads
(``calibrate_cases.py``'s chase: a random cycle through 64 MiB, so every load misses the L2
when it is cold) in block 0, the middle block or the last one of the calibration's
1,056 x 256 grid, k = 0 .. 16; if none of it hid under the fixed cost, the net time
would be k load latencies; what hides shows as a smaller net time, and as a
dependence on which block does the work.

    ncu --clock-control none --cache-control all|none --csv --print-units base \\
        --metrics gpu__time_duration.sum --log-file OUT/ncu-cold|warm.csv \\
        python -m calibration.kernel_overlap --child OUT
    python -m calibration.kernel_overlap --report OUT [--md F.md]
    python -m calibration.kernel_overlap --sim [--md F.md]       # the model's side
"""
from __future__ import annotations

import datetime
import json
import pathlib
import sys

import numpy as np

from calibration.kernel_overlap_setup import BLOCK, GRID, NODES, REPEATS, STEPS, WHO, cycle, table
from calibration import probe_cli
from simgpu_apps import table_out

SOURCE = r"""
extern "C" __global__ void chase_in_block(const int* nxt, int* out, int steps, int who) {
    if (blockIdx.x != who || threadIdx.x != 0) return;
    int j = 0;
    for (int k = 0; k < steps; k++) j = nxt[j];
    out[0] = j;
}
"""
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


def report(out: pathlib.Path) -> str:
    from simgpu_apps.gpu_tools.calibrate_gpu import TIME, parse_ncu
    table_out.need(out, "order.json", "ncu-warm.csv", "ncu-cold.csv")
    order = json.loads((out / "order.json").read_text())
    lines = [f"Script: `calibration/kernel_overlap.py`, {datetime.date.today()}. One thread of "
             f"block 'who' of a {GRID} x {BLOCK} grid does k dependent loads through a random "
             f"cycle of {NODES * 4 >> 20} MiB; ncu `gpu__time_duration`, median of {REPEATS}; "
             "net: less the same grid with k = 0 (all blocks empty).", ""]
    us = {}
    for state in ("warm", "cold"):
        rows = parse_ncu((out / f"ncu-{state}.csv").read_text())
        times = [r["metrics"][TIME] / 1e3 for r in rows if r["kernel"].startswith("chase_in_block")]
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
    """The model's side: the same chain, as calibrate_cases.py's chase kernel run by one block
    of the grid (the kernel language's version below), on sim:h100."""
    from calibration import kernel_overlap_sim
    return kernel_overlap_sim.simulate()


def main(argv=None) -> int:
    return probe_cli.probe_main(
        __doc__, argv, help_file=sys.stderr,
        child=probe_cli.action("run the launches (under ncu)", lambda a: child(a.child), mkdir=True),
        report=probe_cli.table("folder with order.json, ncu-warm.csv, ncu-cold.csv: print the table",
                               lambda a: report(a.report)),
        sim=probe_cli.table("run the model's counterpart", lambda a: simulate(), action="store_true"),
        md=probe_cli.setting("with --report or --sim: also write the text here"))


if __name__ == "__main__":
    raise SystemExit(main())
