"""Cold caches two ways: what does a kernel pay after only its L2 data is gone?

``python -m simgpu_apps.gpu_tools.calibrate`` times its 'cold' cases with Nsight Compute's
``--cache-control all``, which flushes every GPU cache before each kernel.  This
script times the same microbenchmarks after flushing only the L2's data, by writing
and then reading a 256 MiB buffer between a warm-up launch and the measured one (under
``ncu --cache-control none``, so ncu flushes nothing).  Where the two 'cold' times
differ, the difference is what ncu's flush costs besides the L2's data (TLBs,
instruction and constant caches), which the simulator's cold state (an empty L2) does
not model.  Needs a GPU:

    ncu --clock-control none --cache-control none --csv --metrics gpu__time_duration.sum \\
        --log-file cold.csv python -m calibration.cold_l2_only --child
    python -m calibration.cold_l2_only --report cold.csv [--out F.md]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

from simgpu_apps import table_out

CASES = [("empty", 1056), ("copy", 1 << 18), ("copy", 1 << 20), ("copy", 1 << 22), ("read", 1 << 20),
         ("read", 1 << 22), ("gather", 1 << 18), ("gather", 1 << 20), ("gather", 1 << 22)]
REPEATS = 3


def child() -> None:
    import cupy as cp

    import simgpu
    from simgpu_apps.gpu_tools.calibrate_cases import Case, setup
    dev = simgpu.get_device("cuda")
    flush = cp.zeros(64 << 20, cp.int32)                 # 256 MiB: five times the L2
    for bench, n in CASES:
        kern, grid, block, args = setup(dev, Case(bench, n), np.random.default_rng(0))
        dev.launch(kern, grid, block, *args)             # warm-up: data, TLBs, code
        for _ in range(REPEATS):
            flush.fill(1)
            int(flush.sum())                             # the L2 now holds the flush buffer
            dev.launch(kern, grid, block, *args)         # measured: L2-cold, all else warm
            dev.launch(kern, grid, block, *args)         # and warm, for reference
        dev.synchronize()
        del args
        cp.get_default_memory_pool().free_all_blocks()


def report(csv_path: str) -> str:
    from simgpu_apps.gpu_tools.calibrate_cases import KERNELS
    from simgpu_apps.gpu_tools.calibrate_gpu import TIME, parse_ncu
    from cuda_backend.render import kernel_symbol
    launches = parse_ncu(pathlib.Path(csv_path).read_text())
    lines = ["| benchmark | n | L2-only cold us | warm us (same run) |", "|---|---:|---:|---:|"]
    symbols = {b: kernel_symbol(KERNELS[b]) for b, _ in CASES}
    mine = [x for x in launches if any(s == x["kernel"].split("(")[0] for s in symbols.values())]
    at = 0
    for bench, n in CASES:
        rows = mine[at:at + 1 + 2 * REPEATS]
        at += 1 + 2 * REPEATS
        if any(symbols[bench] != r["kernel"].split("(")[0] for r in rows):
            raise RuntimeError(f"launch order differs at {bench} n={n}")
        t = [r["metrics"][TIME] / 1e3 for r in rows[1:]]
        lines.append(f"| {bench} | {n:,} | {np.median(t[0::2]):.2f} | {np.median(t[1::2]):.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", action="store_true", help="run the launches (under ncu)")
    ap.add_argument("--report", help="ncu CSV of a --child run: print the table")
    ap.add_argument("--out", help="with --report: also write the table here")
    args = ap.parse_args(argv)
    if args.child:
        child()
        return 0
    if args.report:
        return table_out.emit(report(args.report), args.out)
    ap.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
