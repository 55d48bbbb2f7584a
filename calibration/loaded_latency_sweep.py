"""One job of a sweep over sim:h100 variants (config overrides): a stream-limits shape or
a calibration cold case, one line of Markdown out (docs/results/h100-loaded-latency.md).

    python -m calibration.loaded_latency_sweep VARIANT JOB [--log2n 24]

VARIANT names a set of overrides of h100.toml (``VARIANTS``); JOB is a shape of
calibration/stream_limits.py (read1, read2, read4, read, wide, stride8, stride32) or
``case:KIND:N`` (a case of the calibration's simulator side, cold: copy, read, gather,
empty). Run many at once on a machine with many CPUs (each job is one process).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import tempfile
import time

import simgpu
from calibration import stream_limits
from simgpu_apps.gpu_tools.calibrate_cases import Case, measure_sim

# the L2 slices' fill ports (l2_fill_bandwidth_gbps, GB/s over the 80 slices): as configured
# (9,370, Accel-Sim's 160 banks x 32 B x 1.83 GHz) and the candidates of the fit
VARIANTS = {
    "base": {},
    "fill4200": {"l2_fill_bandwidth_gbps": 4200.0},
    "fill4600": {"l2_fill_bandwidth_gbps": 4600.0},
    "fill5070": {"l2_fill_bandwidth_gbps": 5070.0},
    # HBM3 per-bank refresh (simgpu/mem/dram_refresh.py; h100.toml's trefi_pb comment)
    "refpb": {"trefi_pb": 638, "trfc_pb": 524},
    # two HBM3 stack IDs per pseudo-channel (simgpu/mem/dram_timing.py; h100.toml's ranks)
    "ranks2": {"ranks": 2},
}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variant", help=f"one of {', '.join(VARIANTS)}, or a JSON object of overrides")
    ap.add_argument("job")
    ap.add_argument("--log2n", type=int, default=24)
    args = ap.parse_args(argv)
    changes = VARIANTS.get(args.variant)
    if changes is None:
        changes = json.loads(args.variant)
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
        stream_limits.VARIANTS[args.variant] = changes
        print(f"| {args.variant} " + stream_limits.run(args.job, args.variant, pathlib.Path(tmp),
                                                       args.log2n), flush=True)


if __name__ == "__main__":
    main()
