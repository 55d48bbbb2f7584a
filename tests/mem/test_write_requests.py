"""``[cache] l2_write_request_cycles``: what a store request costs its L2 slice, apart from a
load request's ``l2_request_cycles`` (calibration/partial_stores.py --set requests).
Relations between runs of one kernel on sim:h100 configs that differ in that key only."""
import dataclasses

import numpy as np
import pytest

import simgpu
from simgpu.lang import Array, blockDim, blockIdx, gridDim, i32, kernel, threadIdx


@kernel
def store_words(a: Array[i32], count: i32, stride: i32, lines: i32):
    """Sweep r stores word r of each ``stride``-word group: stride 32, one store per 128-B
    line (each a request of one sector); stride 1, coalesced (a request of four)."""
    for k in range(blockIdx.x * blockDim.x + threadIdx.x, count, gridDim.x * blockDim.x):
        a[(k % lines) * stride + (k // lines) % stride] = k


def run(write_request_cycles, stride: int, words: int = 1 << 18, sweeps: int = 32):
    dev = simgpu.get_device("sim:h100")
    c = dev.config.cache
    dev.config = dataclasses.replace(
        dev.config, cache=dataclasses.replace(c, l2_write_request_cycles=write_request_cycles))
    a = dev.zeros(words, np.int32)
    lines = words // stride
    rep = dev.launch(store_words, 132, 256, a, lines * sweeps if stride > 1 else words,
                     stride, lines if stride > 1 else words)
    return rep, a.to_host()


def test_unset_it_is_the_load_requests_cost():
    reads = simgpu.get_device("sim:h100").config.cache.l2_request_cycles
    a, out_a = run(None, 32)
    b, out_b = run(reads, 32)
    assert a.cycles == b.cycles and a.extra == b.extra
    np.testing.assert_array_equal(out_a, out_b)


def test_one_sector_requests_take_longer_at_a_higher_cost():
    cheap, out = run(1.2, 32)
    dear, out2 = run(2.83, 32)
    np.testing.assert_array_equal(out, out2)
    assert dear.cycles > 1.3 * cheap.cycles
    assert dear.stores == cheap.stores


@pytest.mark.parametrize("cost", [1.2, 2.83])
def test_coalesced_stores_are_bound_by_their_bytes(cost):
    """A request of four whole sectors takes its slice longer on the store byte budget
    (128 B at l2_store_bandwidth_gbps: about 5 cycles) than either request cost."""
    base, _ = run(1.2, 1)
    rep, _ = run(cost, 1)
    assert rep.cycles == base.cycles
