"""A/B of the trace-block list ranking's CPU time: two checkouts of simgpu, run
interleaved in child processes (the same machine load for both), several repeats.

    python benchmarks/lr_speed_ab.py BASE_DIR NEW_DIR [--log2 18] [--repeat 3]
                                     [--cases rs64 rs48 wylie]

Each child imports simgpu from its checkout (PYTHONPATH), ranks one random list
(seed 1) per case on sim:gtx260 after a small warm-up (numba's cache loaded), and
prints the process CPU seconds of the method's own launches ("kernels", as
trace_speed.py counts them), of the whole rank() call, and the simulated ms and a
digest of the ranks (which must agree).  Prints one row per case: each side's median
and range, and the median of the per-repeat ratios base/new with their range.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import hashlib, json, sys, time
import numpy as np
import simgpu
sys.path.insert(0, "benchmarks")
from timed_speed import random_list, rank_cpu
log2, cases = int(sys.argv[1]), sys.argv[2].split(",")
spec = {"rs64": ("random-splitter", 64), "rs48": ("random-splitter", 48),
        "wylie": ("wylie", 64)}
for case in cases:                      # warm-up: numba's cached code loaded
    m, p = spec[case]
    rank_cpu(simgpu.get_device("sim:gtx260"), random_list(1 << 10), method=m, packing=p,
             launch_options={"engine": "trace-block"})
succ = random_list(1 << log2)
for case in cases:
    m, p = spec[case]
    cpu, kernels, res = rank_cpu(simgpu.get_device("sim:gtx260"), succ, method=m,
                                 packing=p, launch_options={"engine": "trace-block"})
    ms = sum(r.time_ms for r in res.launches)
    digest = hashlib.sha1(np.asarray(res.ranks).tobytes()).hexdigest()[:12]
    print(json.dumps({"case": case, "all": cpu, "kernels": kernels, "ms": ms,
                      "cycles": [r.cycles for r in res.launches], "ranks": digest}))
"""


def child(root: str, log2: int, cases: list) -> dict:
    env = dict(os.environ, PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-c", CHILD, str(log2), ",".join(cases)],
                         cwd=root, env=env, capture_output=True, text=True, check=True)
    rows = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    return {r["case"]: r for r in rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--log2", type=int, default=18)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", nargs="+", default=["rs64", "rs48", "wylie"])
    args = ap.parse_args()
    runs: dict = {"base": [], "new": []}
    for k in range(args.repeat):        # interleaved, the order alternating
        for side in (("base", "new") if k % 2 == 0 else ("new", "base")):
            runs[side].append(child(getattr(args, side), args.log2, args.cases))
            print(f"# repeat {k} {side}: " + ", ".join(
                f"{c} {r['kernels']:.2f}/{r['all']:.2f} s" for c, r in runs[side][-1].items()),
                flush=True)
    print(f"\n| case (2^{args.log2}) | what | base CPU s, median (range) | new CPU s, median "
          "(range) | speed-up base/new, median (range) | identical |")
    print("|---|---|---:|---:|---:|---|")
    for c in args.cases:
        same = all(r[c][f] == runs["base"][0][c][f] for side in runs.values() for r in side
                   for f in ("ms", "cycles", "ranks"))
        for what in ("kernels", "all"):
            b = [r[c][what] for r in runs["base"]]
            n = [r[c][what] for r in runs["new"]]
            q = [x / y for x, y in zip(b, n)]
            print(f"| {c} | {what} | {statistics.median(b):.2f} ({min(b):.2f}-{max(b):.2f}) | "
                  f"{statistics.median(n):.2f} ({min(n):.2f}-{max(n):.2f}) | "
                  f"{statistics.median(q):.2f}x ({min(q):.2f}-{max(q):.2f}) | "
                  f"{'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
