"""Microbenchmarks that calibrate the memory model, run the same way on any device.

    python -m simgpu_apps.gpu_tools.calibrate --device cuda     --out gpu.json     # on the GPU machine
    python -m simgpu_apps.gpu_tools.calibrate --device sim:h100 --out sim.json     # the simulator
    python -m simgpu_apps.gpu_tools.calibrate --compare gpu.json sim.json [--md table.md]
    python -m simgpu_apps.gpu_tools.calibrate --report gpu.json                    # the GPU's sweep

On the GPU, ``--steps`` picks what runs (``what:plan`` pairs, default all of
the sweep; ``--steps warm:rw,cold:rw,graph:gpu`` was the second H100 run;
``cold:sim@reverse`` runs a plan's cases in another order, one of ORDERS);
the simulator runs the ``sim`` plan (``--benches`` to split it over
processes; JSON files given comma-separated to ``--compare`` are pooled:
the GPU's figure is the median over all their launches, and the table gives
the range of the figure over the runs and orders it was pooled from).

Each benchmark is a kernel of the kernel language, so the GPU and the
simulator run the very same code, on the same grid (one full wave of
blocks: sm_count x 2048 / 256 blocks of 256 threads, grid-stride loops):

* ``empty``: a kernel that does nothing (its time is the GPU's fixed cost
  per kernel: launch, block dispatch, completion);
* ``copy``: coalesced copy of n ints; GB/s counting read + write;
* ``read`` / ``write``: streaming read (a load compared, never stored) or
  write of n ints; GB/s;
* ``gather``: ``out[i] = src[idx[i]]`` with a random permutation; G elements/s,
  by footprint (the L2 holds small footprints, not large ones);
* ``chase``: one thread following a random cycle of n nodes for ``steps``
  dependent loads; the latency per load is the slope between two step counts
  (fixed costs cancel);
* ``atomic``: every thread adds 1 to one counter; atomics per ns;
* ``atomic_spread``: thread i adds 1 to ``counter[i & (2^20 - 1)]``
  (4 MiB of counters, L2-resident); atomics per ns.

Two cache states, on both devices:

* ``warm``: one warm-up launch, then the measured ones, on the same buffers
  (footprints under the L2's size are served from it);
* ``cold``: caches emptied before every measured launch (on the GPU Nsight
  Compute's ``--cache-control all``; on the simulator a fresh L2).

Device time on the GPU is Nsight Compute's ``gpu__time_duration`` per launch
(``--clock-control none``, median over launches), not CUDA events around one
launch, which add the host's launch overhead (about 20 us through CuPy).
The sweep runs from sizes that are all fixed cost to sizes where the rate no
longer changes with n, so it shows where a rate has converged. Beside it, a
CUDA graph of back-to-back launches timed with events (warm) checks the
ncu durations without a profiler attached.

On the simulator the time is the timed-block engine's cycles at the
config's clock (without ``kernel_launch_overhead_us``); they include the
model's fixed GPU-side cost per kernel, ``kernel_fixed_us`` in the config
(fitted to the GPU's empty kernel).  The comparison takes each side's time
net of its own empty kernel's (same grid), so the two fixed costs cancel;
both figures are in the table.

This file is the command line; the kernels, cases and the simulator's side are in
calibrate_cases.py, the GPU's side (ncu children, CUDA graphs) in calibrate_gpu.py,
the tables and loaders in calibrate_tables.py.
"""
from __future__ import annotations

import argparse
import datetime
import json
import pathlib

import simgpu

from .calibrate_cases import measure_sim, plan
from .calibrate_gpu import STEPS, child, measure_gpu, parse_steps
from .calibrate_tables import compare, gpu_sweep_tables, load_gpu, load_sim


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m simgpu_apps.gpu_tools.calibrate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", help="JSON file to write (GPU: its folder also gets ncu's CSVs)")
    p.add_argument("--plan", default=None, help="gpu (default on the GPU), sim (default on a "
                   "simulator) or quick")
    p.add_argument("--states", default="warm,cold", help="simulator: cache states to run")
    p.add_argument("--benches", help="simulator: only these benchmarks (comma-separated)")
    p.add_argument("--engine", default="timed-block", choices=("timed-block", "timed"),
                   help="simulator: the timed engine (default timed-block, the device's)")
    p.add_argument("--budget", type=int, default=420, help="GPU: seconds to stop starting steps")
    p.add_argument("--steps", default=STEPS, help="GPU: what:plan pairs (warm, cold: ncu sweeps; "
                   "graph: CUDA-graph times; counters-warm, counters-cold: ncu counters; a plan may "
                   "end in @reverse or @shuffle: its cases in that order); default "
                   + STEPS)
    p.add_argument("--compare", nargs=2, metavar=("GPU_JSON[,GPU_JSON...]", "SIM_JSON[,SIM_JSON...]"))
    p.add_argument("--md", help="with --compare or --report: also write the table here")
    p.add_argument("--report", metavar="GPU_JSON[,GPU_JSON...]")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--state", help=argparse.SUPPRESS)
    p.add_argument("--measured", type=int, default=3, help=argparse.SUPPRESS)
    p.add_argument("--tag", help=argparse.SUPPRESS)
    p.add_argument("--order", default="forward", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(pathlib.Path(args.child), args.plan, args.state, args.measured, args.tag, args.order)
    if args.compare or args.report:
        if args.compare:
            gpu, sim = load_gpu(args.compare[0]), load_sim(args.compare[1])
            text = compare(gpu, sim)
        else:
            text = gpu_sweep_tables(load_gpu(args.report))
        print(text)
        if args.md:
            pathlib.Path(args.md).write_text(text + "\n")
        return
    if args.device.startswith("sim:"):
        dev = simgpu.get_device(args.device)
        dev.default_engine = args.engine
        cases = [c for c in plan(args.plan or "sim") if not args.benches or c.bench in args.benches.split(",")]
        rows = measure_sim(dev, cases, tuple(args.states.split(",")))
        result = {"device": args.device, "config": dev.config.gpu.name,
                  "clock_mhz": dev.config.gpu.core_clock_mhz, "date": str(datetime.date.today()),
                  "engine": args.engine,
                  "script": f"python -m simgpu_apps.gpu_tools.calibrate --device {args.device}"
                            f" --engine {args.engine}", "rows": rows}
        if args.out:
            pathlib.Path(args.out).write_text(json.dumps(result, indent=1))
        return
    from cuda_backend.device import CudaUnavailable
    try:
        parse_steps(args.steps)
        simgpu.get_device(args.device)
    except (ValueError, CudaUnavailable) as exc:
        raise SystemExit(f"python -m simgpu_apps.gpu_tools.calibrate: {exc}") from None
    out = pathlib.Path(args.out or "calibration-gpu.json")
    result = measure_gpu(out, args.steps, args.budget)
    text = gpu_sweep_tables(result)
    out.with_suffix(".md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
