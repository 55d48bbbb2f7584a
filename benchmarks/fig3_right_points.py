"""Fig. 3 right's simulated points, each in its own process, many at once: the same
``compute_sim`` a ``simgpu paper --size paper`` run computes for a point (list ranking,
sim:gtx260 by default), one JSON line per finished point in OUT (written as each point
ends, so that a run stopped early keeps what it finished).

    PYTHONPATH=. python3 benchmarks/fig3_right_points.py OUT rs64:40 rs64:46 rs48:58 ... [--jobs 16]

(``VARIANT:N`` with N in decimal millions of nodes, as the paper gives them.)
"""
import argparse
import json
import multiprocessing
import resource
import time

from simgpu_apps.experiments import list_ranking as L

M = 1_000_000


def one(args):
    variant, n, device = args
    t = time.process_time()
    res = L.compute_sim(L.point_params(variant, n), device)
    return dict(variant=variant, n=n, device=device, cpu_s=round(time.process_time() - t, 1),
                peak_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                result=L.jsonable(res))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("points", nargs="+", help="VARIANT:MILLIONS, e.g. rs64:46")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--device", default="sim:gtx260")
    args = ap.parse_args()
    work = [(v, int(m) * M, args.device) for v, m in (s.split(":") for s in args.points)]
    work.sort(key=lambda w: -w[1] * (1.6 if w[0] != "rs64" else 1.0))     # costliest first
    with multiprocessing.get_context("fork").Pool(args.jobs, maxtasksperchild=1) as pool, \
            open(args.out, "a") as f:
        for row in pool.imap_unordered(one, work):
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(row["variant"], row["n"], row["result"].get("time_ms"), row["cpu_s"],
                  row["peak_mib"], flush=True)


if __name__ == "__main__":
    main()
