"""Schedules: determinism under a seed, races exposed, race-free results unchanged."""
import numpy as np
import pytest

from simgpu.lang import Array, blockDim, blockIdx, i32, kernel, threadIdx

from . import kernels as K


@kernel
def racy_max_index(a: Array[i32], best: Array[i32], n: i32):
    # Read-compare-write without an atomic: lost updates depend on the interleaving.
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        if a[i] > a[best[0]]:
            best[0] = i


def run_scatter(dev, schedule, seed, engine=None):
    n = 256
    idx = dev.to_device((np.arange(n) % 8).astype(np.int32))     # 32 lanes per target
    out = dev.zeros(8, np.int32)
    rep = dev.launch(K.scatter, 2, 128, idx, dev.to_device(np.arange(n, dtype=np.int32)), out,
                     n, schedule=schedule, seed=seed, engine=engine)
    return out.to_host(), rep


def test_fixed_schedule_highest_lane_wins(dev):
    out, _ = run_scatter(dev, "fixed", 0)
    assert out.tolist() == [248 + k for k in range(8)]


def test_same_seed_same_everything(dev):
    a, ra = run_scatter(dev, "random", 42)
    b, rb = run_scatter(dev, "random", 42)
    assert np.array_equal(a, b)
    assert ra.to_dict() == rb.to_dict()


def test_random_winners_vary_with_seed_and_are_legal(dev):
    results = {tuple(run_scatter(dev, "random", s)[0]) for s in range(8)}
    assert len(results) > 1
    for r in results:
        assert all(v % 8 == k for k, v in enumerate(r))       # each winner wrote its own slot


def test_random_interleavings_expose_a_race(dev, rng):
    n = 512
    a = rng.permutation(n).astype(np.int32)
    outcomes = set()
    for seed in range(20):
        best = dev.zeros(1, np.int32)
        dev.launch(racy_max_index, 4, 128, dev.to_device(a), best, n, schedule="random", seed=seed)
        outcomes.add(int(best.to_host()[0]))
    assert len(outcomes) > 1            # the racy kernel's answer depends on the schedule


@pytest.mark.parametrize("seed", range(5))
def test_race_free_kernels_ignore_the_schedule(dev, rng, seed):
    n = 600
    a = rng.integers(-1000, 1000, n, dtype=np.int32)
    blocks = (n + K.BLOCK - 1) // K.BLOCK
    sums = dev.zeros(blocks, np.int64)
    rep = dev.launch(K.block_sums, blocks, K.BLOCK, dev.to_device(a), sums, n,
                     schedule="random", seed=seed)
    assert rep.engine == "warps" and rep.schedule == "random"
    padded = np.zeros(blocks * K.BLOCK, np.int64)
    padded[:n] = a
    assert np.array_equal(sums.to_host(), padded.reshape(blocks, K.BLOCK).sum(axis=1))


def test_bad_schedule_and_engine(dev):
    with pytest.raises(ValueError, match="schedule must be one of"):
        run_scatter(dev, "chaotic", 0)
    with pytest.raises(ValueError, match="engine must be one of"):
        run_scatter(dev, "fixed", 0, engine="quantum")
