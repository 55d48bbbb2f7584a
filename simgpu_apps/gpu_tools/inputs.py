"""Inputs the GPU benchmarks build on the device itself (a host generator is too slow at
2^26 nodes), one definition so that every script times the same lists, and the ranks of
such a list by pointer jumping on the device (the CuPy peer the benchmarks time and the
reference they check against)."""
import numpy as np


def random_list_gpu(cp, n, seed):
    """succ of one random list through all ``n`` nodes (int32), built with ``cp`` (CuPy; any
    module with numpy's ``random.RandomState``, ``empty`` and ``int32``): the nodes in
    the order of a random permutation, the last one its own successor (the tail)."""
    order = cp.random.RandomState(seed).permutation(n).astype(cp.int32)
    succ = cp.empty(n, cp.int32)
    succ[order[:-1]] = order[1:]
    succ[order[-1]] = order[-1]
    return succ


def pointer_jumping_ranks(cp, succ):
    """Each node's distance to the tail of its list (int64), by Wylie's pointer jumping in
    ``cp`` (CuPy, or numpy): rank = 0 at a tail, else 1; then ceil(log2 n) rounds (at
    least one) of rank += rank[succ], succ = succ[succ], each a few whole-array operations
    on the device.  No checks: ``succ`` must be a valid list or forest (no cycle)."""
    n = succ.size
    rank = (succ != cp.arange(n, dtype=cp.int32)).astype(cp.int64)
    s = succ.copy()
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))))):
        rank = rank + rank[s]
        s = s[s]
    return rank
