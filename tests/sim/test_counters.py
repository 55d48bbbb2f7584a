"""The traffic counter's shortcuts agree with the coalescer run on everything."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simgpu.mem.access import MemoryAccess
from simgpu.mem.coalesce import coalesce_batch
from simgpu.sim.counters import TrafficCounter


def access(warp, lane, address, ws):
    return MemoryAccess("load", "global", None, "a", np.asarray(warp, np.int64),
                        np.asarray(lane, np.int64), np.asarray(address, np.int64), ws)


@settings(max_examples=200, deadline=None)
@given(arch=st.sampled_from(["sm_11", "sm_13", "sm_90"]), ws=st.sampled_from([1, 2, 4, 8, 16]),
       first_lane=st.integers(0, 31), count=st.integers(1, 400), base=st.integers(0, 300),
       break_at=st.one_of(st.none(), st.integers(0, 399)))
def test_contiguous_shortcut_equals_coalescer(arch, ws, first_lane, count, base, break_at):
    g = first_lane + np.arange(count)
    warp, lane = g // 32, g % 32
    address = (base + np.arange(count)) * ws
    if break_at is not None and break_at < count:
        address[break_at:] += ws                      # not contiguous any more
    acc = access(warp, lane, address, ws)
    got = TrafficCounter(arch).coalesce(acc)
    want = coalesce_batch(warp, lane, address, ws, arch)
    assert got.requests == want.requests
    for f in ("txn_warp", "txn_address", "txn_size"):
        assert np.array_equal(np.sort(getattr(got, f)), np.sort(getattr(want, f)))


@pytest.mark.parametrize("arch", ["sm_13", "sm_90"])
def test_single_warp_pattern_cache(arch):
    counter = TrafficCounter(arch)
    r = np.random.default_rng(1)
    for _ in range(50):
        base = int(r.integers(0, 1 << 20)) * 4
        stride = int(r.integers(1, 5))
        lanes = np.sort(r.choice(32, int(r.integers(1, 33)), replace=False))
        address = base + lanes * 4 * stride
        acc = access(np.full(len(lanes), 7), lanes, address, 4)
        got, want = counter.coalesce(acc), coalesce_batch(acc.warp, lanes, address, 4, arch)
        assert got.requests == want.requests
        assert np.array_equal(got.txn_address, want.txn_address)
        assert np.array_equal(got.txn_size, want.txn_size)
        assert np.array_equal(got.txn_warp, want.txn_warp)


@settings(max_examples=300, deadline=None)
@given(arch=st.sampled_from(["sm_10", "sm_11", "sm_12", "sm_13", "sm_20", "sm_90"]),
       ws=st.sampled_from([1, 2, 4, 8, 16]), data=st.data())
def test_python_warp_coalescer_equals_the_batch_coalescer(arch, ws, data):
    """The timed engines' per-warp coalescer (plain Python) against coalesce_batch."""
    from simgpu.mem.coalesce import warp_transactions
    lanes = sorted(data.draw(st.lists(st.integers(0, 31), min_size=1, max_size=32, unique=True)))
    kind = data.draw(st.sampled_from(["random", "sequential", "strided", "same"]))
    first = data.draw(st.integers(0, 400))
    if kind == "random":
        words = data.draw(st.lists(st.integers(0, 3000), min_size=len(lanes), max_size=len(lanes)))
    elif kind == "sequential":
        words = [first + k for k in lanes]
    elif kind == "strided":
        step = data.draw(st.integers(1, 40))
        words = [first + k * step for k in lanes]
    else:
        words = [first] * len(lanes)
    address = np.array(words, dtype=np.int64) * ws
    want = coalesce_batch(np.zeros(len(lanes), np.int64), np.array(lanes), address, ws, arch)
    got = warp_transactions(address.tolist(), lanes, ws, int(arch[3:]))
    assert got == (want.requests, want.txn_address.tolist(), want.txn_size.tolist())


def test_python_warp_coalescer_declines_what_it_does_not_check():
    from simgpu.mem.coalesce import warp_transactions
    assert warp_transactions([0, 4], [1, 0], 4, 13) is None        # lanes not ascending
    assert warp_transactions([0, 6], [0, 1], 4, 90) is None        # misaligned: the reference raises
