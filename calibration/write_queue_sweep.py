"""The model's side of a fit of the DRAM write queue (``[dram] write_queue_depth``,
``write_drain_high``, ``write_drain_low``) on the store cases of
calibration/partial_stores.py that go past the L2 (64 MiB), against the card's times
on docs/calibration/partial-stores-h100.md.  One job per process:

    python -m calibration.write_queue_sweep DEPTH EXPERIMENT     # one line of Markdown

DEPTH is the queue's depth per pseudo-channel; it drains from 7/8 of it down to 1/2 of it
(GPGPU-Sim's 64:56:32).  EXPERIMENT is a store pattern of partial_stores (its "then read"
experiments are left out: they depend on the L2's replacement, not on the queue).
"""
from __future__ import annotations

import argparse
import pathlib
import tempfile
import time

import numpy as np

from calibration.partial_stores import PATTERNS, gpu_results, run_on_model
from calibration.stream_limits import variant_config

MIB = 64
GPU_RUN = pathlib.Path(__file__).resolve().parents[1] / "docs/calibration/partial-stores-h100"


def queue(depth: int) -> dict:
    return {"write_queue_depth": depth, "write_drain_high": depth * 7 // 8,
            "write_drain_low": depth // 2}


def gpu_us(experiment: str) -> float:
    """The card's time of a 64 MiB experiment, from the committed run."""
    return gpu_results(GPU_RUN)[(MIB, experiment)]["gpu__time_duration.sum"] / 1e3


def simulate(changes: dict, experiment: str):
    """The 64 MiB ``experiment`` on sim:h100 with ``changes`` to h100.toml: (its report, the
    config, CPU seconds)."""
    import simgpu
    with tempfile.TemporaryDirectory() as tmp:     # (loaded, so checked, as any config)
        dev = simgpu.get_device("sim:" + variant_config(changes, pathlib.Path(tmp)))
    dev.default_engine = "timed-block"
    words = (MIB << 20) // 4
    mode, share = PATTERNS[experiment]
    a = dev.zeros(words, np.int32)
    t0 = time.process_time()
    rep = run_on_model(dev, a, None, MIB, [("store_pattern", mode, int(words * share))])
    return rep, dev.config, time.process_time() - t0


def run(depth: int, experiment: str) -> str:
    rep, c, cpu = simulate(queue(depth), experiment)
    us, gpu = rep.cycles / c.gpu.core_clock_mhz, gpu_us(experiment)
    x = rep.extra
    return (f"| {depth} | {experiment} | {gpu:.2f} | {us:.2f} | {us / gpu:.2f} | "
            f"{x.get('bus_utilization', 0):.2f} | {x.get('row_hit_rate', 0):.2f} | "
            f"{cpu:.0f} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("depth", type=int)
    ap.add_argument("experiment", choices=list(PATTERNS))
    args = ap.parse_args(argv)
    if args.depth < 8 or args.depth % 8:
        ap.error(f"depth {args.depth}: give a multiple of 8, at least 8 (the queue drains "
                 "from 7/8 of it to 1/2)")
    print(run(args.depth, args.experiment), flush=True)


if __name__ == "__main__":
    main()
