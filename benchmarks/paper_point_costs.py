"""Host seconds of one `simgpu paper` point on sim:gtx260, at two sizes per kind: the
coefficients of simgpu_apps/experiments/costs.py come from this table (process CPU
time; rerun it on the machine whose estimate you want).  The table's first line says
which memory units ran (the numba core, a mypyc build, or the source).

    PYTHONPATH=. python3 benchmarks/paper_point_costs.py [--lists 13 15] [--graphs 11 13]
"""
import argparse
import time

from simgpu_apps.experiments import connected_components as C, list_ranking as L


def units() -> str:
    from simgpu.mem import native_load
    from simgpu.mem.fast_jit import ENABLED
    return ("numba core" if ENABLED else "no numba core") + ", " + (
        "mypyc build" if native_load.loaded() else "source units")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lists", type=int, nargs="*", default=[13, 15], help="log2 of the list sizes")
    ap.add_argument("--graphs", type=int, nargs="*", default=[11, 13], help="log2 of the edge counts")
    ap.add_argument("--variants", nargs="*", default=["rs64", "rs48", "even48", "wylie"])
    args = ap.parse_args()
    print(f"sim:gtx260, list ranking on {L.make_device.__defaults__[0]}, graphs on timed-block; "
          f"{units()}\n")
    print("| point | size | process CPU s | s per node/edge |\n|---|---|---|---|")
    for v in args.variants:
        for n in (1 << k for k in args.lists):
            p = L.point_params(v, n)
            t = time.process_time()
            L.compute_sim(p, "sim:gtx260")
            dt = time.process_time() - t
            print(f"| lr {v} | {n} | {dt:.2f} | {dt / n:.3g} |", flush=True)
    for g, a in (("lists", 1), ("trees", 2), ("random", 0.01)):
        for m in (1 << k for k in args.graphs):
            p = dict(graph=g, arg=a, m=m, seed=1, blocks=None, engine="timed-block", components=4)
            t = time.process_time()
            C.compute_sim(p, "sim:gtx260")
            dt = time.process_time() - t
            print(f"| cc {g} | {m} | {dt:.2f} | {dt / m:.3g} |", flush=True)


if __name__ == "__main__":
    main()
