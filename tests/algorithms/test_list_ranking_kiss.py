"""KISS99 on the device (algorithms.kiss device functions) against the host side, bit for bit."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import simgpu
from algorithms.kiss import (DEFAULT_STATE, KissStreams, kiss_below, kiss_next,
                             kiss_seed_device, seed_words_array, uniform_below)
from simgpu.lang import Array, blockDim, blockIdx, gridDim, i32, i64, kernel, threadIdx, u32, u64

EIP1057_FIRST = [769445856, 742012328, 2121196314, 2805620942]   # from Marsaglia's defaults


@kernel
def kiss_draws(state: Array[u32], out: Array[u32], below: Array[i64], seed: u64,
               first: i32, count: i32, steps: i32, bound: i64):
    """Generator g (g < count, striding) is seeded as thread first + g of `seed`
    and draws `steps` values: out[j*count + g]; below[...] = kiss_below of each draw."""
    for g in range(blockIdx.x * blockDim.x + threadIdx.x, count, gridDim.x * blockDim.x):
        kiss_seed_device(state, g, seed, u64(first + g))
        for j in range(steps):
            x = kiss_next(state, g)
            out[j * count + g] = x
            below[j * count + g] = kiss_below(x, bound)


@kernel
def kiss_continue(state: Array[u32], out: Array[u32], count: i32, steps: i32):
    """Draws from states already in `state` (no seeding)."""
    for g in range(blockIdx.x * blockDim.x + threadIdx.x, count, gridDim.x * blockDim.x):
        for j in range(steps):
            out[j * count + g] = kiss_next(state, g)


def device_draws(dev, seed, count, steps, first=0, bound=1 << 32, grid=2, block=64, opts=None):
    state = dev.zeros(4 * count, np.uint32)
    out = dev.zeros(count * steps, np.uint32)
    below = dev.zeros(count * steps, np.int64)
    dev.launch(kiss_draws, grid, block, state, out, below, seed % 2**64, first, count, steps,
               bound, **(opts or {}))
    return (out.to_host().reshape(steps, count), below.to_host().reshape(steps, count),
            state.to_host().reshape(count, 4))


def host_draws(seed, count, steps, first=0):
    ks = KissStreams(seed, count, first_thread=first)
    draws = np.stack([ks.next() for _ in range(steps)]) if steps else np.zeros((0, count), np.uint32)
    return draws, np.stack([ks.z, ks.w, ks.jsr, ks.jcong], axis=1)


def test_marsaglia_default_state_on_device():
    dev = simgpu.get_device("sim:gtx260")
    state = dev.to_device(np.array(DEFAULT_STATE * 3, dtype=np.uint32))
    out = dev.zeros(3 * 4, np.uint32)
    dev.launch(kiss_continue, 1, 32, state, out, 3, 4)
    got = out.to_host().reshape(4, 3)
    for g in range(3):
        assert got[:, g].tolist() == EIP1057_FIRST


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**63 + 17, 2**64 - 1, -5])
def test_seeding_matches_seed_words(seed):
    dev = simgpu.get_device("sim:gtx260")
    _, _, state = device_draws(dev, seed, 200, 0, first=7)
    words = np.stack(seed_words_array(seed % 2**64, np.arange(7, 207)), axis=1)
    assert np.array_equal(state, words)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), count=st.integers(1, 300), steps=st.integers(1, 6),
       first=st.integers(0, 2**31 - 400), bound=st.integers(1, 2**32))
def test_device_draws_match_kiss_streams(seed, count, steps, first, bound):
    dev = simgpu.get_device("sim:gtx260")
    out, below, state = device_draws(dev, seed, count, steps, first=first, bound=bound)
    want, want_state = host_draws(seed, count, steps, first=first)
    assert np.array_equal(out, want)
    assert np.array_equal(state, want_state)
    assert np.array_equal(below, uniform_below(want, bound))


def test_device_draws_under_random_schedules():
    dev = simgpu.get_device("sim:gtx260")
    want, _ = host_draws(99, 70, 3)
    for s in range(3):
        out, _, _ = device_draws(dev, 99, 70, 3, grid=3, block=32,
                                 opts=dict(schedule="random", seed=s))
        assert np.array_equal(out, want)
