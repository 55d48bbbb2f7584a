"""No GPU: the model's side of a choice, sim:h100 with the L1 pipeline's queue
(``[cache] l1_pipe_queue_cycles``) at several depths, on the shapes of
calibration/l1_throughput.py whose cost the pipeline's rules cover (L1 hits in distinct
data banks, ``diag``, and requests of at most four lines), against the card's figures on
that probe's page (132 SMs).  Prints each depth's ratios and geometric-mean error.

    python -m calibration.l1_queue_sweep [--depths 64 256 1024] [--jobs 2]

The other shapes are left out on purpose: hits on one data bank (not modelled) and the
132-SM stores (bound by the L2's store requests, not by the L1) would pull the choice
towards what the pipeline does not model.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pathlib
from concurrent.futures import ProcessPoolExecutor

from calibration.l1_throughput import ITERS, UNROLL, WARPS

PAGE = (pathlib.Path(__file__).resolve().parent.parent
        / "docs/calibration/l1-throughput-h100/l1.json")
SHAPES = (("ca", "packed", 1), ("ca", "packed", 4), ("ca", "diag", 8), ("ca", "diag", 16),
          ("ca", "diag", 32))


def one(job) -> float:
    """The model's cycles per request of one shape at one queue depth."""
    import simgpu
    from simgpu.device import SimDevice
    from calibration import l1_throughput_sim
    depth, (mode, pattern, L) = job
    cfg = simgpu.get_device("sim:h100").config
    cfg = dataclasses.replace(cfg, cache=dataclasses.replace(cfg.cache,
                                                             l1_pipe_queue_cycles=depth))
    dev = SimDevice(cfg, "sim:h100")
    dev.default_engine = "timed-block"
    return l1_throughput_sim.run(dev, mode, pattern, L, iters=4) / (WARPS * ITERS * UNROLL)


def gpu_figures() -> dict:
    rows = json.loads(PAGE.read_text())["rows"]
    return {(r["mode"], r["pattern"], r["L"]): r["cycles"] / (WARPS * ITERS * UNROLL)
            for r in rows if r["blocks"] == 132}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depths", type=float, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    gpu = gpu_figures()
    jobs = [(d, s) for d in a.depths for s in SHAPES]
    with ProcessPoolExecutor(a.jobs) as pool:
        model = dict(zip(jobs, pool.map(one, jobs)))
    print("| depth | " + " | ".join(f"{m} {p} {L}" for m, p, L in SHAPES)
          + " | geometric-mean error |")
    print("|---:|" + "---:|" * (len(SHAPES) + 1))
    for d in a.depths:
        ratios = [model[(d, s)] / gpu[s] for s in SHAPES]
        err = math.exp(sum(abs(math.log(r)) for r in ratios) / len(ratios))
        print(f"| {d:g} | " + " | ".join(f"{r:.2f}" for r in ratios) + f" | {err:.3f}x |",
              flush=True)


if __name__ == "__main__":
    main()
