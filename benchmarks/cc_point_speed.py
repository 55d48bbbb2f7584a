"""CPU seconds of one connected-components point of `simgpu paper` (Shiloach-Vishkin on
sim:gtx260, timed-block, as simgpu_apps.experiments.connected_components.compute_sim
runs it) with two source trees, alternated, and whether their results are identical.

    PYTHONPATH=. python3 benchmarks/cc_point_speed.py --before /path/to/old/tree \\
        [--after .] [--graphs trees lists random] [--log2 15 17] [--repeat 2]

Every run is a process of its own, with PYTHONPATH set to its tree: it builds the graph
(untimed), then times compute_sim with time.process_time, and hands back the point's
result as JSON (every count, cycle, time and report field the paper's figures use).
The runs alternate before/after (before first, then after first on the next repeat),
so that a shared machine's load falls on both alike; each row prints per tree the median
(and range) of the --repeat runs' CPU times, the speed-up as the median (and range) of
the repeats' ratios before/after (each pair ran back to back), the after tree's CPU per
edge (median), and "identical" when all the runs' JSON were byte-equal.
Each tree's numba cache is warmed by a 2^10 point first (untimed).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from statistics import median

ARGS = {"lists": 1, "trees": 2, "random": 0.01}     # connected_components.FAMILIES' k, d

CHILD = r"""
import json, sys, time
from simgpu_apps.experiments import connected_components as C
graph, m, arg = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
arg = int(arg) if arg == int(arg) else arg
p = dict(graph=graph, arg=arg, m=m, seed=1, blocks=None, engine="timed-block", components=4)
C.graph_and_labels(graph, m, arg, 1, 4)
t = time.process_time()
out = C.compute_sim(p, "sim:gtx260")
cpu = time.process_time() - t
print(json.dumps({"cpu": cpu, "result": out}, sort_keys=True))
"""


def run(tree: str, graph: str, m: int) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
    out = subprocess.run([sys.executable, "-c", CHILD, graph, str(m), str(ARGS[graph])],
                         env=env, capture_output=True, text=True, check=True,
                         cwd=str(Path(tree).resolve())).stdout.strip().splitlines()[-1]
    got = json.loads(out)
    digest = hashlib.sha256(json.dumps(got["result"], sort_keys=True).encode()).hexdigest()
    return got["cpu"], digest


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="the tree to compare against (e.g. main)")
    ap.add_argument("--after", default=".", help="the tree under test")
    ap.add_argument("--graphs", nargs="*", default=["trees", "lists", "random"])
    ap.add_argument("--log2", type=int, nargs="*", default=[15, 17])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    trees = {"before": args.before, "after": args.after}
    for tree in trees.values():
        run(tree, "trees", 1 << 10)                  # warm numba's cache, imports
    print("| graph | m | before CPU s, median (range) | after CPU s, median (range) "
          "| speed-up before/after, median (range) | after s/edge | results |\n"
          "|---|---|---:|---:|---:|---:|---|", flush=True)
    for graph in args.graphs:
        for k in args.log2:
            m = 1 << k
            cpu = {"before": [], "after": []}
            digests = set()
            for r in range(args.repeat):
                for name in (("before", "after") if r % 2 == 0 else ("after", "before")):
                    t, d = run(trees[name], graph, m)
                    cpu[name].append(t)
                    digests.add(d)
            b, a = cpu["before"], cpu["after"]
            ratio = [x / y for x, y in zip(b, a)]
            print(f"| {graph} | 2^{k} | {spread(b)} | {spread(a)} | {spread(ratio, 'x')} | "
                  f"{median(a) / m:.3g} | {'identical' if len(digests) == 1 else 'DIFFER'} |",
                  flush=True)


def spread(values: list, unit: str = "") -> str:
    """The median and range of ``values``: '1.23x (1.01-1.40x)'."""
    return f"{median(values):.2f}{unit} ({min(values):.2f}-{max(values):.2f}{unit})"


if __name__ == "__main__":
    main()
