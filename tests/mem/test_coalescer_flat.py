"""The coalescer's transactions as arrays (``Coalescer.flat``, what the trace recorder
keeps: ``FlatWarps``) are per_warp's transactions: the same per warp, in the same
order, with the same requests, checked against the guide's one-warp reference; and
``TrafficCounter.add_traced`` counts what ``add_timed`` counts."""
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simgpu.mem.coalescer import Coalescer, FlatWarps
from simgpu.sim.counters import TrafficCounter
from tests.mem.test_coalescer_scattered import ARCHS, accesses, record, reference_per_warp


def check_flat(arch, ws, warp, lane, address, must=False):
    found = Coalescer(arch).flat(record(warp, lane, address, ws))
    if found is None:
        assert not must
        return
    requests, flat = found
    assert isinstance(flat, FlatWarps)
    expect = reference_per_warp(arch, ws, warp, lane, address)
    assert requests == sum(r for r, _, _ in expect)
    n = len(expect)
    assert flat.cuts.size == n + 1
    assert flat.warps(0, n) == [(a, s) for _, a, s in expect]
    for lo in range(n):                     # any run of warps, as a block's are cut out
        for hi in range(lo + 1, n + 1):
            assert flat.warps(lo, hi) == [(a, s) for _, a, s in expect[lo:hi]]


@settings(max_examples=150, deadline=None)
@given(case=accesses())
def test_flat_equals_the_reference(case):
    arch, ws, _, warp, lane, address, broken = case
    if broken is None:
        check_flat(arch, ws, warp, lane, address)


@settings(max_examples=60, deadline=None)
@given(arch=st.sampled_from(ARCHS), ws=st.sampled_from([4, 8, 16]),
       first_lane=st.integers(0, 31), n=st.integers(128, 700), base=st.integers(0, 1 << 20),
       first_warp=st.integers(0, 50))
def test_contiguous_runs_are_flat_and_equal_the_reference(arch, ws, first_lane, n, base,
                                                          first_warp):
    # a grid-stride loop's access: lane k of warp w reads the word after lane k - 1's
    t = first_lane + np.arange(n)
    warp, lane = first_warp + t // 32, t % 32
    address = base * ws + np.arange(n, dtype=np.int64) * ws
    check_flat(arch, ws, warp.astype(np.int64), lane.astype(np.int64), address, must=True)


@settings(max_examples=80, deadline=None)
@given(case=accesses())
def test_add_traced_counts_as_add_timed(case):
    arch, ws, _, warp, lane, address, broken = case
    if broken is not None:
        return
    node = SimpleNamespace(loc=SimpleNamespace(file="k.py", line=3, source="a[i]"),
                           uniform=False)
    a, b = TrafficCounter(arch), TrafficCounter(arch)
    acc = [record(warp, lane, address, ws) for _ in range(2)]
    for x in acc:
        x.__dict__["node"] = node
    timed = a.add_timed(acc[0])
    traced = b.add_traced(acc[1])
    assert a.totals == b.totals
    if isinstance(traced, FlatWarps):
        traced = traced.warps(0, traced.cuts.size - 1)
    assert traced == timed
