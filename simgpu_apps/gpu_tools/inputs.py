"""Inputs the GPU benchmarks build on the device itself (a host generator is too slow at
2^26 nodes), one definition so that every script times the same lists."""


def random_list_gpu(cp, n, seed):
    """succ of one random list through all ``n`` nodes (int32), built with ``cp`` (CuPy; any
    module with numpy's ``random.RandomState``, ``empty`` and ``int32``): the nodes in
    the order of a random permutation, the last one its own successor (the tail)."""
    order = cp.random.RandomState(seed).permutation(n).astype(cp.int32)
    succ = cp.empty(n, cp.int32)
    succ[order[:-1]] = order[1:]
    succ[order[-1]] = order[-1]
    return succ
