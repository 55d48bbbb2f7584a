"""The coalescer's vectorized rules for scattered accesses (issue 19) give exactly what
the reference rules give: per warp (``Coalescer.per_warp`` against ``transactions``,
the guide's one-warp reference) and for many warps (``Coalescer.batch`` against
``coalesce_batch``), for every arch family and word size, for scattered, partly
scattered, unsorted and misaligned accesses."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simgpu.lang.errors import ArgumentError
from simgpu.mem import coalescer as coalescer_module
from simgpu.mem.access import MemoryAccess
from simgpu.mem.coalesce import coalesce_batch, transactions
from simgpu.mem.coalescer import Coalescer

ARCHS = ["sm_10", "sm_11", "sm_12", "sm_13", "sm_20", "sm_35", "sm_90"]
WORD_SIZES = [1, 2, 4, 8, 16]
# where the lanes' words lie: a span so large that no two lanes of a warp share a
# segment (almost surely), spans where some or most do, and one at the top of the
# address space (packed keys no longer fit: the reference path)
SPANS = {"scattered": 1 << 34, "partly": 1 << 12, "crowded": 1 << 9, "top": 1 << 34}


@st.composite
def accesses(draw, ws=None):
    """(arch, ws, mode, warp, lane, address, broken) of a multi-warp access; ``broken``:
    how the input breaks warp_transactions' preconditions, or None."""
    arch = draw(st.sampled_from(ARCHS))
    ws = draw(st.sampled_from(WORD_SIZES)) if ws is None else ws
    mode = draw(st.sampled_from(sorted(SPANS)))
    low = (1 << 63) - (1 << 35) if mode == "top" else 0
    n_warps = draw(st.integers(1, 6))
    warp, lane, address = [], [], []
    w = draw(st.integers(0, 100))
    for _ in range(n_warps):
        w += draw(st.integers(1, 3))
        if draw(st.booleans()):                   # a run of lanes: lo..hi
            lo = draw(st.integers(0, 31))
            lanes = list(range(lo, draw(st.integers(lo, 31)) + 1))
        else:
            lanes = sorted(draw(st.sets(st.integers(0, 31), min_size=1, max_size=32)))
        seed = draw(st.integers(0, 2**32 - 1))
        words = np.random.default_rng(seed).integers(0, SPANS[mode] // ws, len(lanes))
        warp += [w] * len(lanes)
        lane += lanes
        address += [low + int(x) * ws for x in words]
    broken = draw(st.sampled_from([None, None, None, "unsorted", "misaligned", "negative"]))
    if broken == "unsorted":
        starts = [i for i in range(len(warp)) if i == 0 or warp[i] != warp[i - 1]]
        i = draw(st.sampled_from(starts))
        j = i + 1
        if j < len(warp) and warp[j] == warp[i]:             # swap two lanes of a warp
            lane[i], lane[j], address[i], address[j] = lane[j], lane[i], address[j], address[i]
        else:
            broken = None
    elif broken == "misaligned" and ws > 1:
        address[draw(st.integers(0, len(address) - 1))] += ws // 2
    elif broken == "negative":
        address[draw(st.integers(0, len(address) - 1))] = -ws
    elif broken == "misaligned":
        broken = None
    arrays = (np.array(x, dtype=np.int64) for x in (warp, lane, address))
    return (arch, ws, mode, *arrays, broken)


def record(warp, lane, address, ws) -> MemoryAccess:
    return MemoryAccess("load", "global", None, "a", warp, lane, address, ws)


def reference_per_warp(arch, ws, warp, lane, address):
    """(requests, addresses, sizes) of each warp by the guide's one-warp reference."""
    out = []
    for w in dict.fromkeys(warp.tolist()):
        mine = warp == w
        by_lane, active = [0] * 32, [False] * 32
        for k, a in zip(lane[mine].tolist(), address[mine].tolist()):
            by_lane[k], active[k] = a, True
        txns = transactions(by_lane, ws, arch, active=active)
        if int(arch[3:]) >= 20:
            requests = 1
        else:
            requests = any(active[:16]) + any(active[16:])
        out.append((requests, [a for a, _ in txns], [s for _, s in txns]))
    return out


@settings(max_examples=150, deadline=None)
@given(case=accesses())
def test_per_warp_equals_the_reference(case):
    arch, ws, _, warp, lane, address, broken = case
    coalescer = Coalescer(arch)
    if broken in ("misaligned", "negative"):
        with pytest.raises(ArgumentError):
            coalescer.per_warp(record(warp, lane, address, ws))
        return
    got = coalescer.per_warp(record(warp, lane, address, ws))
    expect = reference_per_warp(arch, ws, warp, lane, address)
    assert [(g.requests, g.addresses, g.sizes) for g in got] == expect
    assert [g.bytes for g in got] == [sum(sizes) for _, _, sizes in expect]


@settings(max_examples=150, deadline=None)
@given(case=accesses())
def test_batch_equals_coalesce_batch(case):
    arch, ws, _, warp, lane, address, broken = case
    coalescer = Coalescer(arch)
    if broken in ("misaligned", "negative"):
        with pytest.raises(ArgumentError):
            coalescer.batch(record(warp, lane, address, ws))
        return
    got = coalescer.batch(record(warp, lane, address, ws))
    expect = coalesce_batch(warp, lane, address, ws, arch)
    assert got.requests == expect.requests
    for field in ("txn_warp", "txn_address", "txn_size"):
        assert getattr(got, field).dtype == np.int64
        assert getattr(got, field).tolist() == getattr(expect, field).tolist()


@settings(max_examples=60, deadline=None)
@given(case=accesses())
def test_a_second_pass_from_a_used_coalescer_gives_the_same(case):
    """The per-warp engines call one Coalescer all run long: whichever way each access
    goes (the vectorized rules or the pattern cache), the answers do not change."""
    arch, ws, mode, warp, lane, address, broken = case
    if broken in ("misaligned", "negative"):
        return
    coalescer = Coalescer(arch)
    acc = record(warp, lane, address, ws)
    first = [(g.requests, g.addresses, g.sizes) for g in coalescer.per_warp(acc)]
    shift = -512 if mode == "top" else 512
    shifted = record(warp, lane, address + shift, ws)        # the same pattern, 512 B on
    coalescer.per_warp(shifted)
    assert [(g.requests, g.addresses, g.sizes) for g in coalescer.per_warp(acc)] == first


@pytest.mark.parametrize("arch", ["sm_12", "sm_13", "sm_20", "sm_90"])
@pytest.mark.parametrize("ws", WORD_SIZES)
@pytest.mark.parametrize("span", [1 << 30, 1 << 10])
def test_scattered_blocks_take_the_vectorized_rules_and_leave_the_cache_alone(arch, ws, span):
    """A block of 256 lanes reading random words (list ranking's walk) is coalesced
    without the per-lane loop (patched to fail here) and stores no pattern; with
    ``span`` = 1 KiB most half-warps share segments, which the rules handle too."""
    rng = np.random.default_rng(ws + span)
    t = np.arange(256)
    warp, lane = 40 + t // 32, t % 32
    address = rng.integers(1, span // ws, t.size) * ws
    address[1] = address[0] + 128 * ws               # not within 128 B: taken as scattered
    coalescer = Coalescer(arch)

    def no_loop(*args):
        raise AssertionError("the per-lane loop ran")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(coalescer_module, "warp_transactions", no_loop)
        got = coalescer.per_warp(record(warp, lane, address, ws))
    assert coalescer._patterns == {}
    expect = reference_per_warp(arch, ws, warp, lane, address)
    assert [(g.requests, g.addresses, g.sizes) for g in got] == expect
    if span == 1 << 30 and int(arch[3:]) < 20:      # every lane one 32-byte transaction
        assert all(g.sizes == [32] * 32 and g.requests == 2 for g in got)


@pytest.mark.parametrize("arch", ["sm_13", "sm_90"])
def test_coalesced_blocks_still_use_the_pattern_cache(arch):
    """Coalesced accesses recur, so they go through the pattern cache (one pattern per
    warp position within the 512-byte base), and give the reference's transactions."""
    t = np.arange(256)
    coalescer = Coalescer(arch)
    for start in (0, 4096, 8192):
        address = start + 8 * t
        got = coalescer.per_warp(record(40 + t // 32, t % 32, address, 8))
        expect = reference_per_warp(arch, 8, 40 + t // 32, t % 32, address)
        assert [(g.requests, g.addresses, g.sizes) for g in got] == expect
    assert 0 < len(coalescer._patterns) <= 2


def test_warps_out_of_order_go_to_the_reference_path():
    """Warp numbers that decrease (not what an engine emits) are not the vectorized
    rules' business: each run of one warp number is coalesced as before."""
    warp = np.array([7] * 4 + [3] * 4 + [5] * 4, dtype=np.int64)
    lane = np.array([0, 1, 2, 3] * 3, dtype=np.int64)
    address = np.arange(12, dtype=np.int64) * 4096
    for arch in ("sm_13", "sm_90"):
        got = Coalescer(arch).per_warp(record(warp, lane, address, 4))
        assert [g.addresses for g in got] == [address[i:i + 4].tolist() for i in (0, 4, 8)]


@pytest.mark.parametrize("arch", ["sm_13", "sm_90"])
def test_requests_count_the_half_warps_with_a_lane(arch):
    """Lanes 15 and 16 are the half-warps' edges (requests are per half-warp on CC 1.x)."""
    lane_sets = [list(range(17)), [16], [15], [15, 16], list(range(16)), list(range(16, 32))]
    warp = np.array([w for w, lanes in enumerate(lane_sets) for _ in lanes], dtype=np.int64)
    lane = np.array([k for lanes in lane_sets for k in lanes], dtype=np.int64)
    address = np.random.default_rng(5).integers(0, 1 << 27, lane.size) * 8
    got = Coalescer(arch).per_warp(record(warp, lane, address, 8))
    expect = reference_per_warp(arch, 8, warp, lane, address)
    assert [(g.requests, g.addresses, g.sizes) for g in got] == expect
    assert [g.requests for g in got] == ([2, 1, 1, 2, 1, 1] if arch == "sm_13" else [1] * 6)
    batch = Coalescer(arch).batch(record(warp, lane, address, 8))
    assert batch.requests == sum(r for r, _, _ in expect)


@pytest.mark.parametrize("arch", ["sm_11", "sm_13", "sm_90"])
def test_a_pattern_is_remembered_at_its_second_sighting(arch):
    """One warp's random pattern (the per-warp engines' pointer chasing) is not stored the
    first time; the same pattern met again (512 bytes on) is stored, then looked up."""
    rng = np.random.default_rng(7)
    lane = np.arange(32, dtype=np.int64)
    warp = np.full(32, 3, dtype=np.int64)
    address = rng.integers(0, 1 << 27, 32) * 8
    coalescer = Coalescer(arch)
    answers = []
    for shift in (0, 512, 1024):
        got = coalescer.per_warp(record(warp, lane, address + shift, 8))
        answers.append(got[0])
        assert len(coalescer._patterns) == (0 if shift == 0 else 1)
        expect = reference_per_warp(arch, 8, warp, lane, address + shift)
        assert [(g.requests, g.addresses, g.sizes) for g in got] == expect
    assert answers[1].sizes == answers[2].sizes


@pytest.mark.parametrize("arch", ["sm_13", "sm_90"])
@pytest.mark.parametrize("dtype", [np.int32, np.int16])
def test_narrow_warp_and_lane_arrays(arch, dtype):
    """Warp and lane numbers of a narrower integer type give the same answers (the
    packed keys are int64 whatever they come in)."""
    t = np.arange(200)
    warp, lane = (1000 + t // 25).astype(dtype), (t % 25).astype(dtype)
    address = np.random.default_rng(3).integers(0, 1 << 40, t.size) * 16
    expect = reference_per_warp(arch, 16, warp.astype(np.int64), lane.astype(np.int64),
                                address)
    got = Coalescer(arch).per_warp(record(warp, lane, address, 16))
    assert [(g.requests, g.addresses, g.sizes) for g in got] == expect
    batch = Coalescer(arch).batch(record(warp, lane, address, 16))
    ref = coalesce_batch(warp, lane, address, 16, arch)
    assert batch.txn_warp.tolist() == ref.txn_warp.tolist()
    assert batch.txn_address.tolist() == ref.txn_address.tolist()
    assert batch.requests == ref.requests


@pytest.mark.parametrize("arch", ["sm_13", "sm_90"])
@pytest.mark.parametrize("warps", [(0, (1 << 59) + 1), (-7, -6), ((1 << 41) - 1, 1 << 41)])
def test_warp_numbers_of_any_size(arch, warps):
    """Warp numbers whose packed keys would overflow, or negative ones, are the
    reference's business; the answers name the caller's warps either way."""
    rng = np.random.default_rng(11)
    warp = np.repeat(np.array(warps, dtype=np.int64), 16)
    lane = np.tile(np.arange(16, dtype=np.int64), 2)
    address = rng.integers(0, 1 << 30, 32) * 4
    got = Coalescer(arch).per_warp(record(warp, lane, address, 4))
    expect = reference_per_warp(arch, 4, warp, lane, address)
    assert [(g.requests, g.addresses, g.sizes) for g in got] == expect
    batch = Coalescer(arch).batch(record(warp, lane, address, 4))
    ref = coalesce_batch(warp, lane, address, 4, arch)
    assert batch.txn_warp.tolist() == ref.txn_warp.tolist()
    assert batch.txn_address.tolist() == ref.txn_address.tolist()


@pytest.mark.parametrize("arch", ["sm_13", "sm_90"])
@pytest.mark.parametrize("bad_lane", [32, -1])
def test_a_lane_out_of_range_is_refused(arch, bad_lane):
    t = np.arange(64)
    warp, lane = 3 + t // 32, t % 32
    lane[63] = bad_lane            # 32 as the last lane of warp 4: (warp, lane) still ascend
    address = np.random.default_rng(2).integers(0, 1 << 30, 64) * 8
    for method in ("per_warp", "batch"):
        with pytest.raises(ArgumentError, match="lane"):
            getattr(Coalescer(arch), method)(record(warp, lane, address, 8))
