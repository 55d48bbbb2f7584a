"""Atomics and concurrent stores: serial semantics, checked against a plain Python loop."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import simgpu
from simgpu.ir.ops import AtomicOp
from simgpu.lang import (Array, atomic_add, blockDim, blockIdx, i32, kernel, shared_array,
                         syncthreads, threadIdx)
from simgpu.sim.atomics import atomic_update, store_winners

from . import kernels as K

PY_OPS = {
    AtomicOp.ADD: lambda a, b: a + b, AtomicOp.SUB: lambda a, b: a - b,
    AtomicOp.MIN: min, AtomicOp.MAX: max, AtomicOp.EXCH: lambda a, b: b,
    AtomicOp.AND: lambda a, b: a & b, AtomicOp.OR: lambda a, b: a | b,
    AtomicOp.XOR: lambda a, b: a ^ b,
}


def serial_reference(memory, op, index, value, compare, order, dtype):
    """One lane after another, in ``order``, with C's wrap-around on the element type."""
    mem = [int(x) for x in memory]
    old = [None] * len(index)
    info = np.iinfo(dtype)
    for lane in order:
        i = int(index[lane])
        old[lane] = mem[i]
        if op is AtomicOp.CAS:
            new = int(value[lane]) if mem[i] == int(compare[lane]) else mem[i]
        else:
            new = PY_OPS[op](mem[i], int(value[lane]))
        mem[i] = (new - info.min) % (1 << (8 * np.dtype(dtype).itemsize)) + info.min
    return np.array(old, dtype=dtype), np.array(mem, dtype=dtype)


@settings(max_examples=150, deadline=None)
@given(op=st.sampled_from(list(AtomicOp)),
       dtype=st.sampled_from([np.int32, np.uint32, np.int64, np.uint64]),
       size=st.integers(1, 6), lanes=st.integers(0, 70), seed=st.integers(0, 2**32 - 1),
       shuffle=st.booleans())
def test_atomic_update_is_serial(op, dtype, size, lanes, seed, shuffle):
    r = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    memory = r.integers(info.min, info.max, size, dtype=dtype, endpoint=True)
    index = r.integers(0, size, lanes)
    value = r.integers(info.min, info.max, lanes, dtype=dtype, endpoint=True)
    compare = np.where(r.random(lanes) < 0.5, memory[index], value)   # some CAS succeed
    order = r.permutation(lanes) if shuffle else np.arange(lanes)
    want_old, want_mem = serial_reference(memory, op, index, value, compare, order, dtype)
    mem = memory.copy()
    old = atomic_update(mem, op, index, value, compare.astype(dtype), order)
    assert np.array_equal(old, want_old)
    assert np.array_equal(mem, want_mem)


def test_float_atomic_add_follows_lane_order():
    mem = np.zeros(1, np.float32)
    vals = np.array([1e8, 1.0, -1e8, 1.0], np.float32)
    old = atomic_update(mem, AtomicOp.ADD, np.zeros(4, np.int64), vals, None, np.arange(4))
    acc, olds = np.float32(0), []
    for v in vals:
        olds.append(acc)
        acc = np.float32(acc + v)
    assert old.tolist() == olds and mem[0] == acc


def test_store_winner_is_last_in_order():
    index = np.array([5, 3, 5, 5, 3])
    assert sorted(store_winners(index, np.arange(5)).tolist()) == [3, 4]
    assert sorted(store_winners(index, np.array([3, 0, 4, 2, 1])).tolist()) == [1, 2]


def test_histogram_old_values_are_a_serial_order(dev, rng):
    n, bins = 3000, 7
    keys = rng.integers(0, bins, n).astype(np.int32)
    counts, old = dev.zeros(bins, np.int32), dev.zeros(n, np.int32)
    dev.launch(K.histogram, (n + 127) // 128, 128, dev.to_device(keys), counts, old, n)
    assert np.array_equal(counts.to_host(), np.bincount(keys, minlength=bins))
    # each bin hands out 0, 1, 2, ... exactly once, in lane order under the fixed schedule
    o = old.to_host()
    for b in range(bins):
        assert o[keys == b].tolist() == list(range(int((keys == b).sum())))


@pytest.mark.parametrize("schedule", ["fixed", "random"])
def test_min_max_exch_or(dev, rng, schedule):
    n, size = 500, 5
    keys = rng.integers(0, size, n).astype(np.int32)
    vals = rng.integers(-1000, 1000, n).astype(np.int32)
    big = np.iinfo(np.int32)
    mins, maxs = dev.full(size, big.max, np.int32), dev.full(size, big.min, np.int32)
    exch, ors = dev.full(size, -7, np.int32), dev.zeros(size, np.uint32)
    old_min, old_exch = dev.zeros(n, np.int32), dev.zeros(n, np.int32)
    dev.launch(K.atomic_ops, 4, 128, dev.to_device(keys), dev.to_device(vals), mins, maxs, exch,
               ors, old_min, old_exch, n, schedule=schedule, seed=9)
    for b in range(size):
        sel = keys == b
        assert mins.to_host()[b] == vals[sel].min()
        assert maxs.to_host()[b] == vals[sel].max()
        bits = np.bitwise_or.reduce((np.uint32(1) << (np.flatnonzero(sel) % 32).astype(np.uint32)))
        assert ors.to_host()[b] == bits
        # exchange: the old values and the final value form one chain through every lane
        chain = sorted(old_exch.to_host()[sel].tolist() + [int(exch.to_host()[b])])
        assert chain == sorted(vals[sel].tolist() + [-7])
        assert (old_min.to_host()[sel] >= mins.to_host()[b]).all()


@pytest.mark.parametrize("engine", ["lockstep", "warps"])
def test_cas_retry_loop(dev, engine):
    counter = dev.zeros(1, np.int32)
    dev.launch(K.cas_increment, 2, 64, counter, 100, engine=engine)
    assert counter.to_host()[0] == 100


@kernel
def shared_histogram(keys: Array[i32], bins: Array[i32], nbins: i32):
    h = shared_array(i32, 64)
    t = threadIdx.x
    if t < nbins:
        h[t] = 0
    syncthreads()
    atomic_add(h, keys[blockIdx.x * blockDim.x + t] % nbins, 1)
    syncthreads()
    if t < nbins:
        atomic_add(bins, t, h[t])


@pytest.mark.parametrize("engine", ["lockstep", "warps", "timed", "timed-block"])
def test_shared_atomics_are_counted_per_warp_instruction(engine):
    """rep.shared_atomics: warp-level shared-memory atomic instructions, beside the
    global atomics (2 blocks x 4 warps each run the histogram's one shared atomic)."""
    dev = simgpu.get_device("sim:h100")
    keys = np.random.default_rng(0).integers(0, 1000, 256).astype(np.int32)
    bins = dev.zeros(8, np.int32)
    rep = dev.launch(shared_histogram, 2, 128, dev.to_device(keys), bins, 8, engine=engine,
                     check="races,uninit")
    assert list(bins.to_host()) == list(np.bincount(keys % 8, minlength=8))
    assert rep.shared_atomics == 8
    assert rep.atomics.instructions == 2                # the global adds: one warp per block
    assert "8 atomics" in rep.table()
