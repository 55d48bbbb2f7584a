"""Connected components on the real GPU against scipy and against its floor (issue 6's bar).

On a uniform random graph (default 2^22 vertices, 2^24 edges), in one run:
  - scipy.sparse.csgraph.connected_components on the host CPU (the peer), timed
    from the numpy edge array (building its sparse matrix included) to labels;
  - simgpu's Shiloach-Vishkin on the "cuda" device: the sum of its kernels'
    CUDA-event times (the SV kernels, and the helper kernels that build the
    edge array and the labels on the device), and end to end: the wall time
    of ``connected_components.label(n, edges, device=...)`` from the numpy
    edges on the host to the int64 labels on the host (copies, checks, the
    host round loop and every launch's host overhead included);
  - the floor: one random int32 gather per edge endpoint per round, i.e.
    rounds x the time of gathering 2m elements (CuPy ``src[idx]``), against
    the SV kernels' time;
  - the copies alone: the input edge array to the GPU and n int64 labels
    back, as the cuda device makes them (page-locked for the copy, see
    cuda_backend/device.py) and from pageable memory (CuPy's asarray and
    asnumpy), wall time: the part of end to end that no kernel can remove.
Labels are checked against scipy's.  Run:
``python benchmarks/gpu_connected_components.py [--log2n 22 --log2m 24] [--out FILE]``.
"""
from __future__ import annotations

import argparse
import datetime
import time

import numpy as np

from gpu_timing import algorithm_time, cuda_time
from simgpu_apps.table_out import emit


def wall_ms(cp, fn, repeats=3):
    """Median wall time of fn() in ms, the GPU synchronized (after one warm-up call)."""
    fn()
    cp.cuda.runtime.deviceSynchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        cp.cuda.runtime.deviceSynchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def pinned_copy_ms(cp, host):
    """(register + copy + unregister, copy alone) in ms: the input copied from
    page-locked host memory (cudaHostRegister on the numpy array in place), a
    reference for what a pinned upload path could reach; None if it fails."""
    try:
        rt = cp.cuda.runtime
        t0 = time.perf_counter()
        rt.hostRegister(host.ctypes.data, host.nbytes, 0)
        t1 = time.perf_counter()
        try:
            copy = wall_ms(cp, lambda: cp.asarray(host))
        finally:
            t2 = time.perf_counter()
            rt.hostUnregister(host.ctypes.data)
            t3 = time.perf_counter()
        return (t1 - t0 + t3 - t2) * 1e3 + copy, copy
    except Exception as exc:       # a reference only: report, do not fail the benchmark
        print(f"pinned copy not measured: {exc}")
        return None


def main():
    import cupy as cp
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components as scipy_cc

    import simgpu
    from algorithms import connected_components, generators
    from algorithms.connected_components import kernels as K
    from algorithms.connected_components.shiloach_vishkin import raw_edges
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--log2n", type=int, default=22)
    p.add_argument("--log2m", type=int, default=24)
    p.add_argument("--threads", type=int, nargs="+", default=[32768, 270336])
    p.add_argument("--dtypes", nargs="+", default=["int64", "int32"],
                   help="dtypes of the input edge array (the generator's is int64)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    n, m = 1 << args.log2n, 1 << args.log2m
    t0 = time.perf_counter()
    nv, edges64 = generators.uniform_random_graph(n, m, seed=1)
    gen_s = time.perf_counter() - t0
    dev = simgpu.get_device("cuda")
    src = cp.arange(2 * m, dtype=cp.int32)
    idx = cp.random.RandomState(2).randint(0, 2 * m, 2 * m, dtype=cp.int32)
    gather_ms = cuda_time(cp, lambda: src[idx])
    del src, idx
    labels_gpu = dev.zeros(nv, np.int64)
    d2h_ms = wall_ms(cp, labels_gpu.to_host)                     # as label() copies them
    d2h_pageable_ms = wall_ms(cp, lambda: cp.asnumpy(labels_gpu._data))
    del labels_gpu
    lines = [f"# Connected components on {dev.gpu_name} — benchmarks/gpu_connected_components.py, "
             f"{datetime.date.today()}", "",
             f"Uniform random graph: n = 2^{args.log2n} vertices, m = 2^{args.log2m} edges "
             f"(generated in {gen_s:.1f} s as int64; each input dtype below is that array "
             "converted before any timing, and scipy gets the same array).", "",
             "| input | what | p | rounds | kernel ms (SV + helpers) | end-to-end ms | "
             "scipy / end-to-end | scipy / kernels | SV kernels / floor |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    notes = []
    for dtype in args.dtypes:
        edges = edges64.astype(dtype)
        t0 = time.perf_counter()
        graph = sp.coo_matrix((np.ones(len(edges), np.int8), (edges[:, 0], edges[:, 1])),
                              shape=(nv, nv))
        count, scipy_labels = scipy_cc(graph, directed=False)
        scipy_ms = (time.perf_counter() - t0) * 1e3
        del graph
        first = np.full(count, nv, np.int64)           # scipy numbers components 0..c-1
        np.minimum.at(first, scipy_labels, np.arange(nv))
        expected = first[scipy_labels]
        h2d_ms = wall_ms(cp, lambda: dev.to_device(raw_edges(edges)))   # as label() does
        h2d_pageable_ms = wall_ms(cp, lambda: cp.asarray(edges))
        lines.append(f"| {dtype} | scipy connected_components (host CPU) | | | | {scipy_ms:.1f} | "
                     "1.0 | | |")
        for threads in args.threads:
            runs = []

            def run():
                runs.append(connected_components.label(nv, edges, device=dev, threads=threads))
                return runs[-1]
            r = run()                                                   # warm-up
            k, e, r = algorithm_time(run)
            if not all(np.array_equal(x.labels, expected) for x in runs):
                raise SystemExit(f"labels differ from scipy's ({dtype}, p = {threads})")
            timed = runs[1:]
            sv_ms = float(np.median([sum(rep.time_ms for rep in x.launches
                                         if rep.kernel in K.ALL_KERNELS) for x in timed]))
            helper_ms = float(np.median([sum(rep.time_ms for rep in x.launches
                                             if rep.kernel not in K.ALL_KERNELS) for x in timed]))
            rounds = sorted({x.rounds for x in timed})
            floor = float(np.median([x.rounds for x in timed])) * gather_ms
            lines.append(f"| {dtype} | Shiloach-Vishkin on the GPU | {threads:,} | "
                         f"{'/'.join(map(str, rounds))} | {k:.2f} ({sv_ms:.2f} + {helper_ms:.2f}) | "
                         f"{e:.1f} | {scipy_ms / e:.0f} | {scipy_ms / k:.0f} | {sv_ms / floor:.1f} |")
            print(lines[-1], flush=True)
            rest = e - k - h2d_ms - d2h_ms
            notes.append(f"{dtype}, p = {threads:,}: {len(r.launches)} launches; end to end {e:.1f} "
                         f"ms = kernels {k:.1f} + copies {h2d_ms + d2h_ms:.1f} (measured alone) + "
                         f"the rest {rest:.1f} (host work and launch overhead)")
        pinned = pinned_copy_ms(cp, edges)
        notes.append(f"{dtype} input: scipy {scipy_ms:.0f} ms; the {edges.nbytes / 2**20:.0f} MiB "
                     f"edge array to the GPU {h2d_ms:.1f} ms ({edges.nbytes / h2d_ms / 1e6:.1f} GB/s, "
                     f"as label() copies it, page-locking included; from pageable memory "
                     f"{h2d_pageable_ms:.1f} ms) + the labels back {d2h_ms:.1f} ms (pageable "
                     f"{d2h_pageable_ms:.1f} ms): with zero-time kernels, end to end could be at "
                     f"most {scipy_ms / (h2d_ms + d2h_ms):.0f}x scipy"
                     + (f"; the copy alone from already page-locked memory takes "
                        f"{pinned[1]:.1f} ms" if pinned else ""))
    lines += ["", f"floor: rounds x {gather_ms:.3f} ms (a random int32 gather of 2m elements, "
              "CUDA events); SV kernels / floor: the SV kernels' time over it (the helpers "
              "that build E and the labels are not counted there). kernel ms: sum of the "
              "CUDA-event times of all launches, median of 3 runs (SV and helpers: medians of "
              "their sums); rounds: as seen in those runs (concurrent writes on the GPU can "
              "change them). end-to-end: wall time of connected_components.label from the "
              "numpy edges to the int64 labels on the host, median of 3 runs after a warm-up. "
              "scipy: one run, building its matrix from the same array included. The bar: "
              "scipy / end-to-end >= 100.", "",
              f"Copies alone (wall time, median of 3): {nv:,} int64 labels back "
              f"{d2h_ms:.1f} ms as label() copies them (page-locked), {d2h_pageable_ms:.1f} ms "
              "from pageable memory (CuPy's asnumpy)."] + [""] + [f"- {x}" for x in notes]
    emit("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
