"""Connected components on the real GPU against scipy and against its floor (issue 6's bar).

On a uniform random graph (default 2^22 vertices, 2^24 edges), in one run:
  - scipy.sparse.csgraph.connected_components on the host CPU (the peer);
  - simgpu's Shiloach-Vishkin on the "cuda" device: the sum of its kernels'
    CUDA-event times, and end to end (with copies and the host round loop);
  - the floor: one random int32 gather per edge endpoint per round, i.e.
    rounds x the time of gathering 2m elements (CuPy ``src[idx]``).
Labels are checked against scipy's.  Run:
``python benchmarks/gpu_connected_components.py [--log2n 22 --log2m 24] [--out FILE]``.
"""
from __future__ import annotations

import argparse
import datetime
import pathlib
import time

import numpy as np

from gpu_timing import algorithm_time, cuda_time


def main():
    import cupy as cp
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components as scipy_cc

    import simgpu
    from algorithms import connected_components, generators
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--log2n", type=int, default=22)
    p.add_argument("--log2m", type=int, default=24)
    p.add_argument("--threads", type=int, nargs="+", default=[32768, 270336])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    n, m = 1 << args.log2n, 1 << args.log2m
    t0 = time.perf_counter()
    nv, edges = generators.uniform_random_graph(n, m, seed=1)
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph = sp.coo_matrix((np.ones(len(edges), np.int8), (edges[:, 0], edges[:, 1])), shape=(nv, nv))
    count, scipy_labels = scipy_cc(graph, directed=False)
    scipy_ms = (time.perf_counter() - t0) * 1e3
    dev = simgpu.get_device("cuda")
    src = cp.arange(2 * m, dtype=cp.int32)
    idx = cp.random.RandomState(2).randint(0, 2 * m, 2 * m, dtype=cp.int32)
    gather_ms = cuda_time(cp, lambda: src[idx])
    lines = [f"# Connected components on {dev.gpu_name} — benchmarks/gpu_connected_components.py, "
             f"{datetime.date.today()}", "",
             f"Uniform random graph: n = 2^{args.log2n} vertices, m = 2^{args.log2m} edges "
             f"({count:,} components; generated in {gen_s:.1f} s).", "",
             "| what | p | rounds | kernel ms | end-to-end ms | scipy / this | vs floor |",
             "|---|---:|---:|---:|---:|---:|---:|",
             f"| scipy connected_components (host CPU) | | | | {scipy_ms:.1f} | 1.0 | |"]
    for threads in args.threads:
        r = connected_components.label(nv, edges, device=dev, threads=threads)   # warm-up
        # labels: smallest vertex id per component; scipy numbers components 0..c-1
        first = np.full(count, nv, np.int64)
        np.minimum.at(first, scipy_labels, np.arange(nv))
        if not np.array_equal(r.labels, first[scipy_labels]):
            raise SystemExit(f"labels differ from scipy's (p = {threads})")
        k, e, r = algorithm_time(lambda: connected_components.label(nv, edges, device=dev,
                                                                    threads=threads))
        floor = r.rounds * gather_ms
        lines.append(f"| Shiloach-Vishkin on the GPU | {threads:,} | {r.rounds} | {k:.2f} | {e:.1f} | "
                     f"{scipy_ms / e:.0f} (kernels: {scipy_ms / k:.0f}) | {k / floor:.1f} |")
        print(lines[-1], flush=True)
    lines += ["", f"floor: rounds x {gather_ms:.3f} ms (a random int32 gather of 2m elements); "
              "vs floor: kernel ms / floor. scipy / this: scipy's time over the end-to-end time "
              "(and over the kernel time). The bar: >= 100x."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
