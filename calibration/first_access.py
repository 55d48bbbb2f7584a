"""What a warp's first global load of a kernel costs on the GPU, over its later ones, and
whether a later warp on the same SM pays it again.  Needs a GPU and CuPy.

``calibration/dram_ramp.py`` found every warp's first iteration 100-300 ns slower than its
later ones, also with one warp per SM and nothing else in flight.  Here one warp per
block, and a block asks for so much shared memory that an SM holds one at a time: the
grid's 4 x 132 blocks run in four waves, a block of wave k starting on an SM where one
of wave k - 1 has just finished.  Each warp streams 8 iterations of dram_ramp's read
(its lane 0 stamps the SM clock after each; the clock read waits for the load's
data), warm (a launch before, the data in the L2) and cold (the L2 flushed).

    python -m calibration.first_access --child OUT        # stamps -> OUT/first.npz
    python -m calibration.first_access --report OUT [--md F.md]
"""
from __future__ import annotations

import datetime
import pathlib
import sys

import numpy as np

from calibration import dram_ramp  # (the instrumented read, the stamps' reading)
from calibration import probe_cli
from simgpu_apps import table_out

WAVES = 4
ITERATIONS = 8
SHARED = 200 << 10               # dynamic shared memory per block: one block per SM
REPEATS = 3


def child(out: pathlib.Path) -> None:
    import cupy as cp
    mod = cp.RawModule(code=dram_ramp.SOURCE, options=("-std=c++17",))
    fn = mod.get_function("read_probe")
    fn.max_dynamic_shared_size_bytes = SHARED
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    grid = WAVES * sms
    n = grid * 32 * ITERATIONS
    src = cp.arange(n, dtype=cp.int32)
    sink = cp.zeros(1, cp.int32)
    rec = cp.zeros(grid * dram_ramp.REC, cp.int64)
    flush = cp.zeros(64 << 20, cp.int32)
    stamps = {}
    for state in ("warm", "cold"):
        for r in range(REPEATS):
            fn((grid,), (32,), (src, sink, np.int32(n), rec), shared_mem=SHARED)   # warm-up
            if state == "cold":
                flush.fill(1)
                int(flush.sum())
            fn((grid,), (32,), (src, sink, np.int32(n), rec), shared_mem=SHARED)
            cp.cuda.Device().synchronize()
            stamps[f"{state}|{r}"] = rec.get()
    np.savez_compressed(out / "first.npz", sms=np.int64(sms), **stamps)


def report(out: pathlib.Path) -> str:
    table_out.need(out, "first.npz")
    data = np.load(out / "first.npz")
    sms = int(data["sms"])
    lines = [f"Script: `calibration/first_access.py`, {datetime.date.today()}. One warp per block, "
             f"one block per SM at a time ({SHARED >> 10} KiB of shared memory each), "
             f"{WAVES} x {sms} blocks, {ITERATIONS} iterations of a streaming read each; medians "
             f"over the wave's warps and {REPEATS} launches. Start: the wave's first warp start "
             "to its median one (global timer, from the launch's first warp).", "",
             "| state | wave | warps start, us | SMs the wave's blocks ran on | first iteration ns "
             "| later iterations ns | first - later ns |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for state in ("warm", "cold"):
        for wave in range(WAVES):
            first, later, starts, where = [], [], [], set()
            for r in range(REPEATS):
                rec, g0, _, rel, ghz = dram_ramp.warp_clocks(data[f"{state}|{r}"])
                m = np.arange(rec.shape[0]) // sms == wave
                lat = np.diff(rel[m, :ITERATIONS + 1], axis=1) / ghz
                first += lat[:, 0].tolist()
                later += lat[:, 1:].ravel().tolist()
                starts += ((g0[m] - g0.min()) / 1e3).tolist()
                where |= set(rec[m, 0].tolist())
            f, l_ = np.median(first), np.median(later)
            lines.append(f"| {state} | {wave} | {np.median(starts):.2f} | {len(where)} | {f:.0f} | "
                         f"{l_:.0f} | {f - l_:.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    return probe_cli.probe_main(
        __doc__, argv, help_file=sys.stderr,
        child=probe_cli.action("run the launches; stamps to this folder",
                               lambda a: child(a.child), mkdir=True),
        report=probe_cli.table("folder of a --child run: print the table",
                               lambda a: report(a.report)),
        md=probe_cli.setting("with --report: also write the text here"))


if __name__ == "__main__":
    raise SystemExit(main())
