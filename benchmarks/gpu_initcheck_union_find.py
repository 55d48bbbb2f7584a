"""union-find's uninitialized buffers under compute-sanitizer (a GPU run):

    compute-sanitizer --tool initcheck --error-exitcode 3 python3 benchmarks/gpu_initcheck_union_find.py

label(method="union-find") on two small graphs (Kronecker 12/8, uniform 2^12 / 2^14), from
CuPy int32 and int64 edges and numpy edges, and union_find() with low degree thresholds and
small hub chunks (every worklist used); labels checked against the host reference.  Run on
an H100 on 2026-11-26 (docs/results/e2e-2026-11-26/initcheck-union-find-call2-4cf6a1d.log:
0 errors); the lines below are the ones that ran there, this docstring added after.
"""
import numpy as np, cupy as cp, simgpu
from algorithms import connected_components as cc, generators as gen
from algorithms.connected_components import union_find as uf
from algorithms.connected_components.sequential import label_sequential
d = simgpu.get_device("cuda")
for n, e in [gen.rmat_graph(12, 8, seed=1), gen.uniform_random_graph(4096, 16384, seed=2)]:
    want = label_sequential(n, e)
    for src in (cp.asarray(e.astype(np.int32)), e, cp.asarray(e)):
        r = cc.label(n, src, method="union-find", device=d)
        got = cp.asnumpy(r.labels) if isinstance(r.labels, cp.ndarray) else r.labels
        assert np.array_equal(got, want)
    labels, _, _, _ = uf.union_find(n, cp.asarray(e), d, warp_degree=2, block_degree=6, hub_chunk=5)
    assert np.array_equal(labels.to_host(), want)
    print("ok", n, len(e), "max degree", np.bincount(e.ravel()).max(), flush=True)
print("initcheck script done")
