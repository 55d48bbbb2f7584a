"""One job of a sweep over sim:h100 variants (config overrides): a stream-limits shape or
a calibration cold case, one line of Markdown out (docs/results/h100-loaded-latency.md).

    python -m calibration.loaded_latency_sweep VARIANT JOB [--log2n 24]
    python -m calibration.loaded_latency_sweep table OUTFILE      # sim/GPU per variant

VARIANT names a set of overrides of h100.toml (``VARIANTS``); JOB is a shape of
calibration/stream_limits.py (read1, read2, read4, read, wide, stride8, stride32) or
``case:KIND:N`` (a case of the calibration's simulator side, cold: copy, read, gather,
empty) or ``store:EXPERIMENT`` (a 64 MiB store pattern of calibration/partial_stores.py, as
calibration/write_queue_sweep.py runs it: full, sector_4_B, line_4_B, sector_16_B, spaces
as underscores). Run many at once on a machine with many CPUs (each job is one process).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time

import numpy as np

import simgpu
from calibration import stream_limits
from simgpu_apps.gpu_tools.calibrate_cases import Case, measure_sim

AT_ARRIVAL, FR_FCFS_32 = stream_limits.AT_ARRIVAL, stream_limits.FR_FCFS_32
FR_FCFS = {"read_scheduling": '"fr-fcfs"'}
# Each variant names every key it was run with, so that it stays the same model while
# h100.toml moves on ("base" is h100.toml as it is).
VARIANTS = {
    "base": {},
    # the L2 slices' fill ports (l2_fill_bandwidth_gbps, GB/s over the 80 slices): the
    # candidates of the fit of 2026-11-26, reads at arrival (as configured then: 9,370)
    "fill4200": {**AT_ARRIVAL, "l2_fill_bandwidth_gbps": 4200.0},
    "fill4600": {**AT_ARRIVAL, "l2_fill_bandwidth_gbps": 4600.0},
    "fill5070": {**AT_ARRIVAL, "l2_fill_bandwidth_gbps": 5070.0},
    # HBM3 per-bank refresh (simgpu/mem/dram_refresh.py; h100.toml's trefi_pb comment)
    "refpb": {**AT_ARRIVAL, "trefi_pb": 638, "trfc_pb": 524},
    "at-arrival": AT_ARRIVAL,
    # two HBM3 stack IDs per pseudo-channel (simgpu/mem/dram_timing.py; h100.toml's ranks)
    "ranks2": {**AT_ARRIVAL, "ranks": 2},
    # FR-FCFS over each pseudo-channel's read queue (docs/memory-model.md "FR-FCFS across
    # requests"), over 32 to 256 reads, and with the two stack IDs (h100.toml since
    # 2026-11-27: frfcfs_q128; docs/results/h100-dram-scheduling-2026-11-27.md)
    "frfcfs": FR_FCFS_32,
    "frfcfs_ranks2": {**FR_FCFS_32, "ranks": 2},
    "frfcfs_q64": {**FR_FCFS, "read_queue_depth": 64},
    "frfcfs_q128": {**FR_FCFS, "read_queue_depth": 128},
    "frfcfs_q256": {**FR_FCFS, "read_queue_depth": 256},
}

# The card's figures the sweep is scored against (NVIDIA H100 80GB HBM3, ncu, cold L2).
# Cold cases: net us (less the empty kernel), the five pooled runs of
# docs/calibration/calibration-h100.md, as h100-loaded-latency.md's fit table has them; the
# sim side is net of its own variant's empty kernel (case:empty:1056).
GPU_NET_US = {"copy n=1048576": 2.64, "copy n=4194304": 9.49, "read n=4194304": 7.86,
              "read n=16777216": 30.74, "gather n=1048576": 9.52, "gather n=4194304": 39.06}
# Stream-limits shapes: ncu's gpu__time_duration, mean of the two launches of
# docs/results/h100-stream-limits.md ("The probe's run", 2026-11-26), against the model's us
# with its fixed cost (read and read4 at --log2n 24, as the card ran them).
GPU_SHAPE_US = {"read": 33.4, "read4": 53.8, "wide": 26.05, "stride8": 13.9, "stride32": 27.6}
# The 64 MiB store patterns the DRAM write queue was fitted on: the card's times are read
# from docs/calibration/partial-stores-h100/ (write_queue_sweep.gpu_us) when scored.
STORES = ("full", "sector 4 B", "line 4 B", "sector 16 B")


def score(lines, store_gpu_us=None) -> dict:
    """{variant: {figure: sim/GPU time}} from the sweep's output lines (other lines skipped);
    ``store_gpu_us(experiment)``: the card's time of a store job (default: the committed run)."""
    if store_gpu_us is None:
        from calibration.write_queue_sweep import gpu_us as store_gpu_us
    cases, shapes, stores = {}, {}, {}
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1].endswith(" cold"):
            cases.setdefault(cells[0], {})[cells[1][:-5]] = float(cells[2])
        elif len(cells) == 4 and cells[1].startswith("store "):
            stores.setdefault(cells[0], {})[cells[1]] = float(cells[2])
        elif len(cells) > 4 and cells[1] in GPU_SHAPE_US:
            shapes.setdefault(cells[0], {})[cells[1]] = float(cells[3])
    out = {}
    for variant in sorted(set(cases) | set(shapes) | set(stores)):
        row, sim = {}, cases.get(variant, {})
        empty = sim.get("empty n=1056")
        for label, gpu in GPU_NET_US.items():
            if label in sim and empty is not None:
                row[label + " cold"] = (sim[label] - empty) / gpu
        for shape, us in shapes.get(variant, {}).items():
            row[shape] = us / GPU_SHAPE_US[shape]
        for label, us in stores.get(variant, {}).items():
            row[label] = us / store_gpu_us(label[len("store "):])
        out[variant] = row
    return out


def table(lines, store_gpu_us=None) -> str:
    """Markdown: each figure's sim/GPU time per variant, the count within 15% and the
    geometric-mean error (max(r, 1/r)) over the figures every variant has."""
    scores = score(lines, store_gpu_us)
    variants = list(scores)
    common = [f for f in [*(k + " cold" for k in GPU_NET_US), *GPU_SHAPE_US,
                          *("store " + s for s in STORES)]
              if all(f in scores[v] for v in variants)]
    out = ["| figure | " + " | ".join(variants) + " |", "|---|" + "---:|" * len(variants)]
    for f in common:
        out.append(f"| {f} | " + " | ".join(f"{scores[v][f]:.2f}" + (" *" if abs(
            np.log(scores[v][f])) > np.log(1.15) else "") for v in variants) + " |")
    errors = [[abs(np.log(scores[v][f])) for f in common] for v in variants]   # log(max(r, 1/r))
    within = [sum(e <= np.log(1.15) for e in err) for err in errors]
    gm = [np.exp(np.mean(err)) for err in errors]
    out.append("| within 15% | " + " | ".join(f"{w}/{len(common)}" for w in within) + " |")
    out.append("| geometric-mean error | " + " | ".join(f"{g:.3f}x" for g in gm) + " |")
    return "\n".join(out)


def main(argv=None) -> None:
    argv = argv if argv is not None else sys.argv[1:]
    if argv[:1] == ["table"] and len(argv) == 2:
        print(table(pathlib.Path(argv[1]).read_text().splitlines()))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variant", help=f"one of {', '.join(VARIANTS)}, or a JSON object of overrides")
    ap.add_argument("job")
    ap.add_argument("--log2n", type=int, default=24)
    args = ap.parse_args(argv)
    changes = VARIANTS.get(args.variant)
    if changes is None:
        try:
            changes = json.loads(args.variant)
        except json.JSONDecodeError:
            changes = None
        if not isinstance(changes, dict):
            ap.error(f"variant {args.variant!r}: give one of {', '.join(VARIANTS)}, or a JSON "
                     'object of h100.toml keys and values, e.g. \'{"ranks": 2}\'')
    with tempfile.TemporaryDirectory() as tmp:
        if args.job.startswith("case:"):
            _, kind, n = args.job.split(":")
            name = ("sim:" + stream_limits.variant_config(changes, pathlib.Path(tmp))
                    if changes else "sim:h100")
            t0 = time.process_time()
            rows = measure_sim(simgpu.get_device(name), [Case(kind, int(n))], states=("cold",))
            print(f"| {args.variant} | {kind} n={n} cold | {rows[0]['us']:.3f} | "
                  f"{time.process_time() - t0:.0f} |", flush=True)
            return
        if args.job.startswith("store:"):
            from calibration.write_queue_sweep import simulate
            experiment = args.job[len("store:"):].replace("_", " ")   # (store:line_4_B)
            if experiment not in STORES:
                ap.error(f"job {args.job!r}: the store patterns are "
                         + ", ".join("store:" + s.replace(" ", "_") for s in STORES))
            rep, c, cpu = simulate(changes, experiment)
            us = rep.cycles / c.gpu.core_clock_mhz
            print(f"| {args.variant} | store {experiment} | {us:.3f} | {cpu:.0f} |", flush=True)
            return
        stream_limits.VARIANTS[args.variant] = changes
        print(f"| {args.variant} " + stream_limits.run(args.job, args.variant, pathlib.Path(tmp),
                                                       args.log2n), flush=True)


if __name__ == "__main__":
    main()
