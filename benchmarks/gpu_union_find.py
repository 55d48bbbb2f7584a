"""The union-find kernels alone (uf_init .. uf_flatten) on the real GPU, by variant,
against one random int32 gather of 2^24 elements (g24) in the same run: issue 20's
union-find targets (<= 2.9x g24 on the uniform graph of 2^22 vertices / 2^24 edges,
<= 3.1x on Kronecker scale 21 / edge factor 16), with repeats to show the spread.

Each graph goes to the GPU once and its CSR is built once (build_csr, as label()
does); then every variant runs `repeats` times, interleaved (variant a, b, c, a, b,
c, ...), each run on fresh parent / worklist arrays.  A run's time is the sum of
its five launches' CUDA-event times, as benchmarks/gpu_end_to_end.py counts "union-
find kernels".  g24 (CuPy ``src[perm]``, median of 5) is measured before and after
the graphs; ratios use the median of all its measurements.  Every variant's labels
are checked against scipy's connected_components.

Variants (``--variants``): ``default`` (union_find_csr's defaults, whatever the
imported code has: run it from another tree's PYTHONPATH for a baseline) or
``CHUNK`` / ``CHUNK/LISTS``: hub_chunk (0: a block per whole hub vertex, ECL-CC's
split) and warp_lists (the warp list's parts, each with its own counter).

``python benchmarks/gpu_union_find.py [--variants default 0/1 2048/1] [--repeats 7]
[--out FILE]``; ``--sim`` runs it on sim:h100 at tiny sizes (a check of the script).
"""
from __future__ import annotations

import argparse
import datetime
import inspect

import numpy as np

from simgpu_apps.table_out import emit


def gather24(cp, n):
    from gpu_timing import cuda_time
    src = cp.arange(n, dtype=cp.int32)
    perm = cp.random.RandomState(1).permutation(n).astype(cp.int32)
    return cuda_time(cp, lambda: src[perm], 5)


def reference(n, edges):
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    e = np.asarray(edges, dtype=np.int64)
    g = coo_matrix((np.ones(len(e), np.int8), (e[:, 0], e[:, 1])), shape=(n, n))
    _, comp = connected_components(g, directed=False)
    first = np.full(comp.max() + 1, n, dtype=np.int64)
    np.minimum.at(first, comp, np.arange(n))
    return first[comp]


def variant_options(var):
    """union_find_csr's keyword arguments for a variant: "default" (none), "CHUNK"
    (hub_chunk) or "CHUNK/LISTS" (and warp_lists)."""
    if var == "default":
        return {}
    parts = var.split("/")
    if len(parts) > 2 or not all(p.isdigit() for p in parts):
        raise SystemExit(f"variant {var!r}: give default, CHUNK or CHUNK/LISTS (integers)")
    return dict(zip(("hub_chunk", "warp_lists"), map(int, parts)))


def cached(folder, key, make):
    """(n, edges) of make(), kept in folder (None: not kept) so that a second process
    (another tree's baseline) reads the same graph instead of generating it again."""
    import pathlib
    path = pathlib.Path(folder) / f"{key}.npz" \
        if folder else None
    if path is not None and path.exists():
        z = np.load(path)
        return int(z["n"]), z["edges"]
    n, edges = make()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, n=n, edges=edges)
    return n, edges


def time_graph(dev, name, n, edges, variants, repeats, sim):
    from algorithms.connected_components import union_find as uf
    from algorithms.connected_components.shiloach_vishkin import edge_input
    arr = edge_input(n, edges.astype(np.int32), dev)
    grid, block = uf.default_geometry(dev, max(n, len(arr)))
    uf_grid, _ = uf.vertex_geometry(n)
    off, adj, m = uf.build_csr(n, arr, dev, grid, block,
                               lambda k, *a: dev.launch(k, grid, block, *a))
    params = inspect.signature(uf.union_find_csr).parameters
    want = reference(n, edges)
    times = {v: [] for v in variants}
    per_kernel = {v: {} for v in variants}
    for _ in range(repeats):
        for var in variants:
            reports = []
            kw = variant_options(var)
            missing = set(kw) - set(params)
            if missing:
                raise SystemExit(f"variant {var}: this tree's union_find_csr has no "
                                 f"{', '.join(sorted(missing))}")
            labels = uf.union_find_csr(n, off, adj, dev, uf_grid, block,
                                       lambda k, *a: reports.append(
                                           dev.launch(k, uf_grid, block, *a)), **kw)
            dev.synchronize()
            times[var].append(sum((r.time_ms or 1e-3) if sim else r.time_ms for r in reports))
            for r in reports:
                per_kernel[var].setdefault(r.kernel, []).append(r.time_ms or 0.0)
            assert np.array_equal(labels.to_host(), want), f"{name}, {var}: labels differ"
    return times, per_kernel


def main():
    import simgpu
    from algorithms import generators as gen
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--variants", nargs="+", default=["default"])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--graph", type=int, nargs=2, default=[22, 24], help="log2 n, log2 m")
    p.add_argument("--kron", type=int, nargs=2, default=[21, 16], help="scale, edge factor")
    p.add_argument("--label", default="", help="a note for the table's title (the tree)")
    p.add_argument("--cache", help="a folder to keep the generated graphs in (and read them from)")
    p.add_argument("--sim", action="store_true")
    p.add_argument("--out")
    args = p.parse_args()
    for var in args.variants:                   # refused before any work
        variant_options(var)
    dev = simgpu.get_device("sim:h100" if args.sim else "cuda")
    cp = None
    if not args.sim:
        import cupy as cp
    g = [gather24(cp, 1 << 24)] if cp is not None else [1.0]
    (lg, lm), (scale, factor) = args.graph, args.kron
    graphs = [(f"uniform 2^{lg} / 2^{lm}", 2.9, f"uniform_{lg}_{lm}",
               lambda: gen.uniform_random_graph(1 << lg, 1 << lm, seed=1)),
              (f"Kronecker {scale}/{factor}", 3.1, f"kron_{scale}_{factor}",
               lambda: gen.rmat_graph(scale, factor, seed=1))]
    results = []
    for name, target, key, make in graphs:
        n, edges = cached(args.cache, key, make)
        results.append((name, target) + time_graph(dev, name, n, edges, args.variants,
                                                   args.repeats, args.sim))
        if cp is not None:
            g.append(gather24(cp, 1 << 24))
    g24 = float(np.median(g))
    lines = [f"# Union-find kernels by variant on {dev.gpu_name} — benchmarks/gpu_union_find.py, "
             f"{datetime.date.today()} {args.label}", "",
             f"g24 (one random int32 gather of 2^24, CUDA events, median of 5), measured "
             f"{len(g)} times: {', '.join(f'{x:.3f}' for x in g)} ms; ratios use {g24:.3f}. "
             f"Union-find kernels: sum of the five launches' CUDA-event times, {args.repeats} "
             "runs per variant, interleaved; labels checked against scipy.", "",
             "| graph | variant | median ms (x g24) | min .. max ms (x g24) | target | met "
             "(median / every run) | median per kernel (ms) |",
             "|---|---|---:|---:|---:|---|---|"]
    for name, target, times, per in results:
        for var in args.variants:
            t = np.array(times[var])
            med = float(np.median(t))
            kern = ", ".join(f"{k.replace('uf_', '')} {np.median(v):.3f}"
                             for k, v in per[var].items())
            lines.append(f"| {name} | {var} | {med:.3f} ({med / g24:.2f}) | {t.min():.3f} .. "
                         f"{t.max():.3f} ({t.min() / g24:.2f} .. {t.max() / g24:.2f}) | "
                         f"<= {target:.1f}x | {'yes' if med / g24 <= target else 'NO'} / "
                         f"{'yes' if t.max() / g24 <= target else 'NO'} | {kern} |")
        lines.append(f"|  | every run (ms): " + "; ".join(
            f"{var}: " + " ".join(f"{x:.3f}" for x in times[var]) for var in args.variants)
            + " | | | | | |")
    return emit("\n".join(lines), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
