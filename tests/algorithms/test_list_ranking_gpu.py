"""rank() on a real GPU (marked gpu; skipped where there is none): CuPy arrays in and
out against the sequential ranking, RS4 in place and in rounds, and damaged lists
refused with the host's message, where the walks truly run concurrently (the
fused walk's checks: random_splitter.py, "Validation in the walk")."""
import numpy as np
import pytest

from algorithms import list_ranking as LR
from algorithms.generators import random_forest, random_list
from algorithms.list_ranking import random_splitter
from algorithms.list_ranking.sequential import rank_sequential

from .test_list_ranking_walk_checks import damaged, host_verdict


@pytest.mark.gpu
@pytest.mark.parametrize("make", [lambda: random_list(1 << 21, 3),
                                  lambda: random_forest(1 << 21, 500, 4)], ids=["list", "forest"])
@pytest.mark.parametrize("factor", [8, 0], ids=["in-place", "rounds"])
def test_cupy_in_cupy_out_both_rs4(gpu, make, factor, monkeypatch):
    import cupy as cp
    monkeypatch.setattr(random_splitter, "IN_PLACE_RESIDENT_FACTOR", factor)
    succ = make()
    src = cp.asarray(succ.astype(np.int32))
    r = LR.rank(src, device=gpu)                        # p = n / 64 = 32,768 > 16,384 slots
    assert isinstance(r.ranks, cp.ndarray)
    np.testing.assert_array_equal(cp.asnumpy(r.ranks), rank_sequential(succ))
    want = ["rs4_jump_in_place"] if factor else ["wylie_jump"]
    assert [x.kernel for x in r.launches if x.extra["step"] == "RS4"][:1] == want


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1000, 100_000])
def test_damaged_lists_refused_like_the_host_on_the_gpu(gpu, n):
    refused = 0
    for seed in range(40):
        succ = damaged(n, seed, 1 + seed % 2)
        want = host_verdict(succ)
        if want is None:
            np.testing.assert_array_equal(LR.rank(succ, device=gpu, threads=64).ranks,
                                          rank_sequential(succ))
            continue
        refused += 1
        with pytest.raises(ValueError) as got:
            LR.rank(succ, device=gpu, threads=64)
        assert str(got.value) == want
    assert refused > 20


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_ids_out_of_range_and_no_tail_refused_on_the_gpu(gpu, dtype):
    # the one-list attempt is queued before the range check is read: it must not touch
    # memory outside the arrays (its kernels do nothing where the counters say so)
    import cupy as cp
    succ = random_list(1 << 20, 5).astype(dtype)
    bad = succ.copy()
    bad[12345] = 1 << 20
    with pytest.raises(ValueError, match="out of range"):
        LR.rank(cp.asarray(bad), device=gpu)
    ring = np.roll(np.arange(1 << 20), -1).astype(dtype)
    with pytest.raises(ValueError, match="no tail"):
        LR.rank(cp.asarray(ring), device=gpu, validate=False)
    np.testing.assert_array_equal(cp.asnumpy(LR.rank(cp.asarray(succ), device=gpu).ranks),
                                  rank_sequential(succ))


@pytest.mark.gpu
@pytest.mark.parametrize("make", [lambda: random_list(1 << 21, 6),
                                  lambda: random_forest(1 << 21, 300, 7)], ids=["list", "forest"])
def test_stale_device_memory_does_not_change_the_ranks(gpu, make):
    """The random splitter's words, slot arrays and flags are allocated without a memset
    (every word is written by a kernel before one reads it): blocks of CuPy's memory pool
    that held all-ones bytes before give the same ranks, and a damaged list is still
    refused."""
    import cupy as cp
    succ = make()
    src = cp.asarray(succ.astype(np.int32))
    n = len(succ)
    p = LR.default_threads(gpu, n)
    sizes = [8 * n, 4 * (p + 1), 16 * (p + 2), 16 * p, 4 * (p + 2), 8 * (p + 2), 4 * 64, 40]
    for _ in range(2):
        junk = [cp.full(b, 0xFF, cp.uint8) for b in sizes]     # the pool reuses these blocks
        del junk
        r = LR.rank(src, device=gpu)
        np.testing.assert_array_equal(cp.asnumpy(r.ranks), rank_sequential(succ))
        del r
    refused = 0
    for seed in range(6):                     # one successor changed: merges and cycles
        bad = damaged(n, seed, 1)
        want = host_verdict(bad)
        junk = [cp.full(b, 0xFF, cp.uint8) for b in sizes]
        del junk
        if want is None:
            continue
        refused += 1
        with pytest.raises(ValueError) as got:
            LR.rank(cp.asarray(bad.astype(np.int32)), device=gpu)
        assert str(got.value) == want
    assert refused >= 3
