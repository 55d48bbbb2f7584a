"""The GPU benchmarks' device-built inputs, checked with numpy standing in for CuPy (the
same RandomState, empty and int32)."""
import numpy as np

from algorithms.list_ranking.sequential import rank_sequential
from simgpu_apps.gpu_tools.inputs import random_list_gpu


def test_random_list_gpu_is_one_list_through_every_node():
    n = 1000
    succ = random_list_gpu(np, n, 7)
    assert succ.dtype == np.int32 and succ.shape == (n,)
    tails = np.flatnonzero(succ == np.arange(n))
    assert len(tails) == 1
    heads = np.setdiff1d(np.arange(n), succ[succ != np.arange(n)])
    assert len(heads) == 1
    ranks = rank_sequential(succ)
    assert sorted(ranks.tolist()) == list(range(n))        # every node once: no cycle
    assert np.array_equal(succ, random_list_gpu(np, n, 7))  # the same seed, the same list
    assert not np.array_equal(succ, random_list_gpu(np, n, 8))


def test_pointer_jumping_ranks_match_the_sequential_ranks():
    from simgpu_apps.gpu_tools.inputs import pointer_jumping_ranks
    rng = np.random.default_rng(3)
    forest = np.arange(300, dtype=np.int32)              # lists of 1 to 60 nodes, shuffled
    order, start = rng.permutation(300), 0
    for length in (1, 2, 60, 37, 100, 50, 50):
        part = order[start:start + length]
        forest[part[:-1]] = part[1:]
        start += length
    for succ in (random_list_gpu(np, 1000, 5), random_list_gpu(np, 1024, 6),
                 np.zeros(1, np.int32), forest):
        ranks = pointer_jumping_ranks(np, succ)
        assert ranks.dtype == np.int64
        assert np.array_equal(ranks, rank_sequential(succ))
