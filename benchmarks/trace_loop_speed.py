"""CPU seconds and peak memory of list-ranking points (the paper run's compute_sim on
sim:gtx260, trace-block) from two source trees, alternated run by run, one process a
run: what the compiled trace-block replay (simgpu/sim/trace_loop.py) saves against a
tree without it, and a check that both trees give the same point, field for field.

    PYTHONPATH=. python3 benchmarks/trace_loop_speed.py --trees base=/path/to/main new=. \
        [--variants rs48 rs64] [--log2 20 22] [--repeat 2]

Each run is a fresh ``python3`` with PYTHONPATH set to its tree: it computes a 2^10-node
point first (imports, numba's cached code: untimed), then the point, and reports its
process CPU seconds (time.process_time around compute_sim), the peak resident memory
of the process (ru_maxrss), and digests of the point's result and of every launch's
full report (``LaunchReport.to_dict()`` with its samples).  A tree's column is the
fastest of its runs; "same" says whether every run of every tree gave the same digests.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r'''
import hashlib, json, resource, sys, time
import numpy as np
from simgpu_apps.experiments import list_ranking as L
from simgpu.sim.device import SimDevice
variant, log2 = sys.argv[1], int(sys.argv[2])
L.compute_sim(L.point_params(variant, 1 << 10), "sim:gtx260")
reports = hashlib.sha256()
launch = SimDevice.launch
def canon(x):
    if isinstance(x, dict):
        return sorted((repr(k), canon(v)) for k, v in x.items())
    if isinstance(x, (list, tuple, np.ndarray)):
        return [canon(v) for v in (x.tolist() if isinstance(x, np.ndarray) else x)]
    return x
def recording(self, kernel, *a, **kw):
    rep = launch(self, kernel, *a, **kw)
    reports.update(repr(canon([rep.to_dict(), rep.samples])).encode())
    return rep
SimDevice.launch = recording
t = time.process_time()
r = L.compute_sim(L.point_params(variant, 1 << log2), "sim:gtx260")
cpu = time.process_time() - t
print(json.dumps({"cpu": cpu, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "result": hashlib.sha256(json.dumps(r, sort_keys=True).encode()).hexdigest()[:16],
                  "reports": reports.hexdigest()[:16], "time_ms": r["time_ms"]}))
'''


def run(tree: Path, variant: str, log2: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    out = subprocess.run([sys.executable, "-c", CHILD, variant, str(log2)], env=env,
                         cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", nargs="+", required=True, help="name=path of a source tree")
    ap.add_argument("--variants", nargs="+", default=["rs48", "rs64"])
    ap.add_argument("--log2", type=int, nargs="+", default=[20, 22])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    trees = dict(t.split("=", 1) for t in args.trees)
    names = list(trees)
    head = " | ".join(f"{n} CPU s (runs) | {n} us/node | {n} peak MB" for n in names)
    print(f"| point | nodes | {head} | same |")
    print("|---|---|" + "---|---|---|" * len(names) + "---|")
    for log2 in args.log2:
        for v in args.variants:
            runs = {n: [] for n in names}
            for _ in range(args.repeat):          # alternated: base, new, base, new
                for n in names:
                    runs[n].append(run(Path(trees[n]), v, log2))
            digests = {(r["result"], r["reports"]) for rs in runs.values() for r in rs}
            cells = []
            for n in names:
                cpu = [r["cpu"] for r in runs[n]]
                cells.append(f"{min(cpu):.2f} ({', '.join(f'{c:.2f}' for c in cpu)}) | "
                             f"{min(cpu) / (1 << log2) * 1e6:.2f} | "
                             f"{max(r['peak_mb'] for r in runs[n]):,.0f}")
            print(f"| {v} | 2^{log2} | {' | '.join(cells)} | "
                  f"{'yes' if len(digests) == 1 else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
