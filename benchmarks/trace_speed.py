"""Speed of the trace-driven engine (trace-block) against timed-block per list node.

    python benchmarks/trace_speed.py [--log2 16 18] [--packing 64 48] [--repeat 1]
                                     [--engines timed-block trace-block] [--profile]

Ranks a random list (one list, random splitters) on sim:gtx260 with each engine and
prints CPU seconds (time.process_time of this process, fastest of --repeat runs):
"all" is the whole rank() call, "kernels" the method's own launches (RS1-RS5), with
the simulated ms of those (equal for both engines: the same timing model), and
which kernels trace-block replayed.  "memory units" says whether the memory pipeline
ran compiled (``python -m simgpu.native build``) or from source (SIMGPU_NATIVE=0).
``--profile``: a cProfile of one trace-block run at the first size, by own time.
``--rss``: print the process's peak resident memory at the end (run one engine and
one size per process to compare engines: the peak only grows within a process).
"speed-up" is timed-block's CPU s of the kernels over trace-block's, where both ran.
``--shares``: per launch of one trace-block run at the first size, its CPU s and the
part of it in the recording pass (``Wave.advance``, timed around each call).
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import time

import simgpu
from simgpu.mem import native_load
from simgpu.sim import trace_record

from algorithms.list_ranking import rank
from timed_speed import random_list, rank_cpu


def run(succ, engine: str, packing: int):
    """(CPU s of rank(), CPU s of its method's launches, their simulated ms, replayed)."""
    dev = simgpu.get_device("sim:gtx260")        # a fresh device: its TLBs start empty
    cpu, kernels, res = rank_cpu(dev, succ, packing=packing, launch_options={"engine": engine})
    replayed = sorted({r.kernel for r in res.launches
                       if r.extra.get("engine_ran") == "trace-block"})
    return cpu, kernels, sum(r.time_ms for r in res.launches), replayed


def shares(succ, packing: int) -> None:
    """Per launch of one trace-block rank(): CPU s, and the recording pass's part."""
    spent = [0.0]
    advance = trace_record.Wave.advance

    def timed_advance(self):
        t0 = time.process_time()
        advance(self)
        spent[0] += time.process_time() - t0

    dev = simgpu.get_device("sim:gtx260")
    launch, rows = dev.launch, []

    def launch_counted(kernel, *a, **kw):
        r0, t0 = spent[0], time.process_time()
        rep = launch(kernel, *a, **kw)
        rows.append((rep.kernel, rep.extra.get("engine_ran"), time.process_time() - t0,
                     spent[0] - r0))
        return rep

    dev.launch = launch_counted
    trace_record.Wave.advance = timed_advance
    try:
        rank(succ, device=dev, packing=packing, launch_options={"engine": "trace-block"})
    finally:
        trace_record.Wave.advance = advance
    print("\n| launch | engine ran | CPU s | recording CPU s | recording share |")
    print("|---|---|---:|---:|---:|")
    for name, ran, cpu, rec in rows:
        print(f"| {name} | {ran} | {cpu:.3f} | {rec:.3f} | {100 * rec / cpu:.0f}% |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", type=int, nargs="+", default=[16, 18])
    ap.add_argument("--packing", type=int, nargs="+", default=[64, 48])
    ap.add_argument("--engines", nargs="+", default=["timed-block", "trace-block"])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--rss", action="store_true")
    ap.add_argument("--shares", action="store_true")
    args = ap.parse_args()
    units = "compiled" if native_load.loaded() else "source"
    print("| n | packing | engine | memory units | CPU s, all | us per node | CPU s, kernels | "
          "us per node, kernels | speed-up | simulated ms | replayed kernels |")
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---|")
    for k in args.log2:
        succ = random_list(1 << k)
        for packing in args.packing:
            base = None
            for engine in args.engines:
                runs = [run(succ, engine, packing) for _ in range(args.repeat)]
                best, kernels = min(r[0] for r in runs), min(r[1] for r in runs)
                ms, replayed = runs[-1][2], runs[-1][3]
                shown = ", ".join(replayed) if engine == "trace-block" else ""
                if engine == "timed-block":
                    base = kernels
                speedup = f"{base / kernels:.2f}x" if engine == "trace-block" and base else ""
                print(f"| 2^{k} | {packing} | {engine} | {units} | {best:.2f} | "
                      f"{best / (1 << k) * 1e6:.2f} | {kernels:.2f} | "
                      f"{kernels / (1 << k) * 1e6:.2f} | {speedup} | {ms:.4f} | {shown} |",
                      flush=True)
    if args.shares:
        shares(random_list(1 << args.log2[0]), args.packing[0])
    if args.profile:
        succ = random_list(1 << args.log2[0])
        prof = cProfile.Profile()
        prof.enable()
        run(succ, "trace-block", args.packing[0])
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    if args.rss:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS of this process: {peak:.0f} MiB ({', '.join(args.engines)})")


if __name__ == "__main__":
    main()
