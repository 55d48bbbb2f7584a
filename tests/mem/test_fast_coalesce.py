"""The compiled CC 1.2/1.3 coalescing (simgpu.mem.fast_coalesce) gives the coalescer's
transactions, in its order, and the counts the traffic counter takes from them: against
``Coalescer.per_warp`` (itself held to the guide's reference rules), on random, crowded,
scattered, unsorted, misaligned and negative accesses; and it declines (None) exactly
where the reference path must judge the input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from simgpu.mem import fast_coalesce  # noqa: E402
from simgpu.mem.access import MemoryAccess  # noqa: E402
from simgpu.mem.coalescer import Coalescer  # noqa: E402
from simgpu.mem.fast_coalesce import packed_warps, unpack  # noqa: E402
from simgpu.sim.counters import TrafficCounter  # noqa: E402
from tests.mem.test_coalescer_scattered import accesses  # noqa: E402

pytestmark = pytest.mark.skipif(not fast_coalesce.ENABLED, reason="SIMGPU_NUMBA=0")


class Node:                       # the IR node a MemoryAccess names (only .loc is read)
    class loc:
        file, line, source = "k.py", 1, "x = a[i]"


def access(warp, lane, address, ws, kind="load"):
    acc = object.__new__(MemoryAccess)
    acc.__dict__.update(kind=kind, space="global", node=Node, array="a",
                        warp=np.asarray(warp, np.int64), lane=np.asarray(lane, np.int64),
                        address=np.asarray(address, np.int64), word_size=ws, ready=0.0)
    return acc


def reference(acc, arch):
    """(per-warp lists, warps, requests, transactions, bytes) from the coalescer's path."""
    warps = Coalescer(arch).per_warp(acc)
    return ([(w.addresses, w.sizes) for w in warps], len(warps), sum(w.requests for w in warps),
            sum(len(w.sizes) for w in warps), sum(w.bytes for w in warps))


def check(acc, arch):
    cc = int(arch[3:])
    found = packed_warps(acc, cc)
    lanes_ok = all(
        acc.lane[i] > acc.lane[i - 1] for i in range(1, acc.lane.size)
        if acc.warp[i] == acc.warp[i - 1]) and (acc.lane >= 0).all() and (acc.lane < 32).all()
    valid = lanes_ok and (acc.address >= 0).all() and not (acc.address % acc.word_size).any()
    assert (found is not None) == valid          # declines exactly the reference's cases
    if found is None:
        return
    packed, warps, requests, transactions, moved = found
    lists, *counts = reference(acc, arch)
    assert unpack(packed.packed, packed.n) == lists == packed.lists()
    assert [warps, requests, transactions, moved] == counts
    assert packed.n == transactions and len(packed) == 0      # no lists until asked


@settings(max_examples=300, deadline=None)
@given(accesses(), st.sampled_from(["sm_12", "sm_13"]))
def test_same_transactions_as_the_coalescer(case, arch):
    _, ws, _mode, warp, lane, address, _broken = case
    check(access(warp, lane, address, ws), arch)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 4, 8, 16]),
       st.sampled_from([1 << 9, 1 << 12, 1 << 30]), st.floats(0.05, 1.0))
def test_a_whole_block_of_lanes(seed, ws, span, active):
    """A timed-block instruction: 8 warps of a 256-thread block, some lanes inactive."""
    rng = np.random.default_rng(seed)
    keep = rng.random(256) < active
    keep[rng.integers(256)] = True
    tid = np.flatnonzero(keep)
    address = (rng.integers(0, span // ws, tid.size) * ws) + (1 << 20)
    check(access(40 + tid // 32, tid % 32, address, ws), "sm_13")


def test_declines_other_archs_word_sizes_and_empty_accesses():
    acc = access([0, 0], [0, 1], [0, 4], 4)
    assert packed_warps(acc, 20) is None and packed_warps(acc, 11) is None
    assert packed_warps(access([0], [0], [0], 3), 13) is None
    assert packed_warps(access([], [], [], 4), 13) is None


def test_the_counter_counts_the_same(monkeypatch):
    """TrafficCounter.add_packed and add_timed leave the same totals."""
    rng = np.random.default_rng(5)
    tid = np.arange(256)
    accs = [access(tid // 32, tid % 32, rng.integers(0, 1 << 16, 256) * 4, 4),
            access(tid // 32, tid % 32, 4096 + tid * 8, 8, kind="store")]
    a, b = TrafficCounter("sm_13"), TrafficCounter("sm_13")
    for acc in accs:
        assert a.add_packed(acc) is not None
        b.add_timed(acc)
    assert a.totals == b.totals and a.by_line == b.by_line
    monkeypatch.setattr(fast_coalesce, "USE", False)
    assert a.add_packed(accs[0]) is None
