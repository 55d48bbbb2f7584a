"""Host seconds of one `simgpu paper` point on sim:gtx260 (timed-block), at two
sizes per kind: the coefficients of simgpu_apps/experiments/costs.py come from
this table (process CPU time; rerun it on the machine whose estimate you want).

    PYTHONPATH=. python3 benchmarks/paper_point_costs.py
"""
import time

from simgpu_apps.experiments import connected_components as C, list_ranking as L


def main():
    print("| point | size | process CPU s | s per node/edge |\n|---|---|---|---|")
    for v in ("rs64", "rs48", "even48", "wylie"):
        for n in (1 << 13, 1 << 15):
            p = dict(L.GPU_VARIANTS[v], n=n, input_seed=1)
            if p["method"] == "random-splitter":
                p.update(threads=None, seed=0)
            t = time.process_time()
            L.compute_sim(p, "sim:gtx260")
            dt = time.process_time() - t
            print(f"| lr {v} | {n} | {dt:.2f} | {dt / n:.3g} |", flush=True)
    for g, a in (("lists", 1), ("trees", 2), ("random", 0.01)):
        for m in (1 << 11, 1 << 13):
            p = dict(graph=g, arg=a, m=m, seed=1, blocks=None, engine="timed-block", components=4)
            t = time.process_time()
            C.compute_sim(p, "sim:gtx260")
            dt = time.process_time() - t
            print(f"| cc {g} | {m} | {dt:.2f} | {dt / m:.3g} |", flush=True)


if __name__ == "__main__":
    main()
