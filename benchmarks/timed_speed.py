"""Speed of the timed engine per simulated list node (issue 18: the timed engine must
stay within 1.5x of its earlier speed per node).

    python benchmarks/timed_speed.py [--log2 16 17 18] [--engine timed-block] [--repeat 3]
                                     [--read-scheduling at-arrival fr-fcfs]

Ranks a random list (one list, random splitters, 64-bit packing) on sim:gtx260 with
the given timed engine and prints CPU seconds (time.process_time of this process,
fastest of --repeat runs) per node, with the simulated cycles so that runs of two
versions can be told apart from runs of one.

"all" is the whole rank() call; "kernels" is the method's own launches (RS1-RS5),
without the device-side input checks and validation that rank() has run since
issue 21 (device_input.py), so that it compares with versions before them (such as
9e0ad69, whose rank() ran RS1-RS5 only). "memory units" says whether the memory
pipeline ran compiled (``python -m simgpu.native build``) or from source.
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

import simgpu
from algorithms.list_ranking import rank
from simgpu.mem import native_load


def random_list(n: int, seed: int = 1) -> np.ndarray:
    order = np.random.default_rng(seed).permutation(n)
    succ = np.empty(n, dtype=np.int64)
    succ[order[:-1]] = order[1:]
    succ[order[-1]] = order[-1]
    return succ


def timed_rank(succ, device: str, engine: str, scheduling: str | None = None):
    """(CPU s of rank(), CPU s of the method's own launches, simulated ms of those);
    ``scheduling``: ``[dram] read_scheduling`` (None: the config's)."""
    dev = simgpu.get_device(device)              # a fresh device: its TLBs start empty
    if scheduling is not None and scheduling != dev.config.dram.read_scheduling:
        cfg = dev.config
        cfg = dataclasses.replace(cfg, dram=dataclasses.replace(cfg.dram,
                                                                read_scheduling=scheduling))
        dev = type(dev)(cfg, f"{dev.name}+{scheduling}")
    cpu, kernels, res = rank_cpu(dev, succ, launch_options={"engine": engine})
    times = [r.time_ms for r in res.launches]    # (None on the untimed lockstep engine)
    return cpu, kernels, None if None in times else sum(times)


def rank_cpu(dev, succ, **options):
    """rank(succ) on ``dev``: (CPU s of the call, CPU s of the method's own launches,
    its result)."""
    launch, spent = dev.launch, {}

    def timed_launch(kernel, *args, **kwargs):
        t0 = time.process_time()
        rep = launch(kernel, *args, **kwargs)
        spent[id(rep)] = time.process_time() - t0
        return rep

    dev.launch = timed_launch
    t0 = time.process_time()
    res = rank(succ, device=dev, **options)
    cpu = time.process_time() - t0
    return cpu, sum(spent[id(r)] for r in res.launches), res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", type=int, nargs="+", default=[16, 17, 18])
    ap.add_argument("--engine", default="timed-block")
    ap.add_argument("--device", default="sim:gtx260")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--read-scheduling", nargs="+", default=[None],
                    choices=["at-arrival", "fr-fcfs"],
                    help="[dram] read_scheduling to run with (default: the config's)")
    args = ap.parse_args()
    units = "compiled" if native_load.loaded() else "source"
    print("| n | engine | device | reads | memory units | CPU s, all | us per node | "
          "CPU s, kernels | us per node, kernels | simulated ms |")
    print("|---:|---|---|---|---|---:|---:|---:|---:|---:|")
    for k in args.log2:
        succ = random_list(1 << k)
        for mode in args.read_scheduling:
            runs = [timed_rank(succ, args.device, args.engine, mode)
                    for _ in range(args.repeat)]
            best = min(r[0] for r in runs)
            kernels = min(r[1] for r in runs)
            ms = runs[-1][2]
            print(f"| 2^{k} | {args.engine} | {args.device} | {mode or 'config'} | {units} | "
                  f"{best:.2f} | {best / (1 << k) * 1e6:.2f} | {kernels:.2f} | "
                  f"{kernels / (1 << k) * 1e6:.2f} | {'n/a' if ms is None else f'{ms:.4f}'} |",
                  flush=True)

if __name__ == "__main__":
    main()
