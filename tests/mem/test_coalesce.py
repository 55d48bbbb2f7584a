"""Tests of simgpu.mem.coalesce: the guide's worked cases, the H100's measured
sector counts, and hypothesis properties (coverage, legality, invariances,
batch == per-warp reference)."""
import time

import numpy as np
import pytest

from simgpu.lang.errors import ArgumentError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simgpu.mem.coalesce import Batch, coalesce_batch, transactions

ARCHS_1X = ["sm_10", "sm_11", "sm_12", "sm_13"]
ARCHS = ARCHS_1X + ["sm_20", "sm_35", "sm_70", "sm_80", "sm_90"]
WORD_SIZES = [1, 2, 4, 8, 16]


def seq(base, ws, n=32, stride=1):
    """Lane k reads word k*stride after base: the usual a[i*stride] pattern."""
    return [base + k * stride * ws for k in range(n)]


def cc(arch):
    return int(arch[3:])


# ---------------------------------------------------------------- CC 1.2/1.3

class TestRelaxedGuideCases:
    """CUDA C Programming Guide 2.x/3.x, G.3.2.2, with 4-byte words unless said."""

    def test_aligned_sequential_one_64B_per_half_warp(self):
        assert transactions(seq(0, 4), 4, "sm_13") == [(0, 64), (64, 64)]
        assert transactions(seq(128, 4), 4, "sm_12") == [(128, 64), (192, 64)]

    def test_misaligned_half_warp_crossing_128B_boundary(self):
        # Threads read 68..131. Lowest thread's segment [0,128) holds 68..127:
        # upper half only -> 64 B at 64; [64,128) uses both its 32 B halves, so it
        # stays 64 B. The rest, 128..131, is in segment [128,256): lower half
        # -> 64 B at 128, lower half again -> 32 B at 128. (Best Practices Guide:
        # "one 64-byte transaction and one 32-byte transaction".)
        assert transactions(seq(68, 4, n=16), 4, "sm_13") == [(64, 64), (128, 32)]

    def test_guide_figure_misaligned_sequential_warp(self):
        # The guide's example figure (G-1 in 3.x): a warp reading 132..259.
        # Half-warp 0 (132..195) uses both halves of [128,256) -> 128 B;
        # half-warp 1 (196..259): 64 B at 192, then 32 B at 256.
        assert transactions(seq(132, 4), 4, "sm_13") == [(128, 128), (192, 64), (256, 32)]

    def test_guide_figure_aligned_non_sequential(self):
        perm = [3, 0, 1, 2, 7, 6, 5, 4, 8, 9, 15, 14, 13, 12, 11, 10]
        addrs = [128 + 4 * p for p in perm] + [192 + 4 * p for p in perm]
        assert transactions(addrs, 4, "sm_13") == [(128, 64), (192, 64)]

    def test_scattered_one_32B_per_thread(self):
        addrs = [k * 128 + 8 for k in range(32)]          # each thread its own segment
        assert transactions(addrs, 4, "sm_13") == [(k * 128, 32) for k in range(32)]

    def test_issue_order_follows_lowest_unserviced_thread(self):
        # Thread 0 in segment 256, thread 1 in segment 0, thread 2 back in 256.
        assert transactions([256, 0, 260], 4, "sm_13") == [(256, 32), (0, 32)]

    def test_one_byte_words_32B_segments(self):
        assert transactions(list(range(32)), 1, "sm_13") == [(0, 32), (0, 32)]
        assert transactions([24 + k for k in range(16)], 1, "sm_13") == [(0, 32), (32, 32)]
        assert transactions([2 * k for k in range(32)], 1, "sm_13") == [(0, 32), (32, 32)]

    def test_two_byte_words_64B_segments(self):
        # 16 shorts in 0..31: lower half of the 64 B segment -> 32 B.
        assert transactions(seq(0, 2, n=16), 2, "sm_13") == [(0, 32)]
        # stride 2: 0..61, both halves -> 64 B.
        assert transactions(seq(0, 2, n=16, stride=2), 2, "sm_13") == [(0, 64)]
        # upper half of segment [192,256) -> 32 B at 224.
        assert transactions(seq(224, 2, n=16), 2, "sm_13") == [(224, 32)]
        assert transactions(seq(0, 2), 2, "sm_13") == [(0, 32), (32, 32)]

    def test_eight_byte_words_128B_per_half_warp(self):
        assert transactions(seq(0, 8), 8, "sm_13") == [(0, 128), (128, 128)]

    def test_sixteen_byte_words_two_128B_per_half_warp(self):
        assert transactions(seq(0, 16), 16, "sm_13") == [(0, 128), (128, 128), (256, 128), (384, 128)]

    def test_stride_two_int32_128B_per_half_warp(self):
        assert transactions(seq(0, 4, stride=2), 4, "sm_13") == [(0, 128), (128, 128)]

    def test_broadcast_one_32B_per_half_warp(self):
        assert transactions([100 * 4] * 32, 4, "sm_13") == [(384, 32), (384, 32)]

    def test_inactive_half_warp_issues_nothing(self):
        active = [True] * 16 + [False] * 16
        assert transactions(seq(0, 4), 4, "sm_13", active=active) == [(0, 64)]
        assert transactions(seq(0, 4), 4, "sm_13", active=[False] * 32) == []
        assert transactions([], 4, "sm_13") == []


# ---------------------------------------------------------------- CC 1.0/1.1

class TestStrictGuideCases:
    """G.3.2.1: all or nothing per half-warp; otherwise 32 B per thread."""

    def test_sequential_aligned_one_transaction_per_half_warp(self):
        assert transactions(seq(0, 4), 4, "sm_11") == [(0, 64), (64, 64)]
        assert transactions(seq(256, 8), 8, "sm_10") == [(256, 128), (384, 128)]
        assert transactions(seq(0, 16), 16, "sm_11") == [(0, 128), (128, 128), (256, 128), (384, 128)]

    def test_permutation_within_segment_uncoalesced(self):
        addrs = seq(0, 4)
        addrs[0], addrs[1] = addrs[1], addrs[0]           # swap in half-warp 0 only
        got = transactions(addrs, 4, "sm_11")
        assert got == [(0, 32)] * 8 + [(32, 32)] * 8 + [(64, 64)]

    def test_inactive_lanes_allowed(self):
        active = [k % 3 != 0 for k in range(32)]
        assert transactions(seq(0, 4), 4, "sm_11", active=active) == [(0, 64), (64, 64)]
        # a lone active thread reading its own word k still coalesces
        only5 = [k == 5 for k in range(32)]
        assert transactions(seq(0, 4), 4, "sm_11", active=only5) == [(0, 64)]

    def test_sequential_but_misaligned_one_per_thread(self):
        # the guide's figure: 132..259 -> 7, 8, 8, 8, 1 transactions of 32 B
        got = transactions(seq(132, 4), 4, "sm_11")
        assert got == [(a // 32 * 32, 32) for a in seq(132, 4)]
        assert [a for a, _ in got].count(128) == 7 and [a for a, _ in got].count(256) == 1

    def test_segment_must_be_aligned_to_16_words(self):
        # sequential, 64 B in one 64-aligned... but 8-byte words need 128 B alignment
        assert len(transactions(seq(64, 8, n=16), 8, "sm_11")) == 16
        assert transactions(seq(128, 8, n=16), 8, "sm_11") == [(128, 128)]

    def test_small_words_never_coalesce(self):
        assert transactions(list(range(16)), 1, "sm_11") == [(0, 32)] * 16
        assert transactions(seq(0, 2, n=16), 2, "sm_10") == [(0, 32)] * 16

    def test_broadcast_is_not_coalesced(self):
        assert transactions([64] * 16, 4, "sm_11") == [(64, 32)] * 16


# ---------------------------------------------------------------- CC 2.0+

class TestSectors:
    @pytest.mark.parametrize("arch", ["sm_70", "sm_80", "sm_90"])
    @pytest.mark.parametrize("stride,sectors", [(1, 4), (2, 8), (32, 32)])
    def test_ncu_sector_counts_int32(self, arch, stride, sectors):
        # GPU.md: l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum per request on an H100
        got = transactions(seq(1 << 20, 4, stride=stride), 4, arch)
        assert len(got) == sectors
        assert all(size == 32 for _, size in got)

    def test_eight_byte_stride_one_eight_sectors(self):
        assert transactions(seq(0, 8), 8, "sm_90") == [(32 * k, 32) for k in range(8)]

    def test_sixteen_byte_words(self):
        assert len(transactions(seq(0, 16), 16, "sm_90")) == 16

    def test_misaligned_run_touches_one_more_sector(self):
        assert len(transactions(seq(4, 4), 4, "sm_90")) == 5

    def test_broadcast_and_order(self):
        assert transactions([64] * 32, 4, "sm_20") == [(64, 32)]
        assert transactions([4096, 0, 2048], 4, "sm_35") == [(0, 32), (2048, 32), (4096, 32)]


# ---------------------------------------------------------------- errors

class TestErrors:
    @pytest.mark.parametrize("arch", ["sm13", "13", "compute_90", "sm_9", "sm_", "SM_90",
                                      "sm_90x", "", None, 90])
    def test_bad_arch(self, arch):
        with pytest.raises(ValueError, match="sm_NN"):
            transactions([0], 4, arch)
        with pytest.raises(ValueError, match="sm_NN"):
            coalesce_batch([0], [0], [0], 4, arch)

    def test_any_sm_nn_accepted(self):
        for arch in ["sm_10", "sm_50", "sm_86", "sm_89", "sm_100", "sm_120"]:
            assert transactions([0], 4, arch)

    @pytest.mark.parametrize("ws", [0, 3, 32, 4.0, None])
    def test_bad_word_size(self, ws):
        with pytest.raises(ValueError, match="word_size"):
            transactions([0], ws, "sm_13")

    @pytest.mark.parametrize("arch", ["sm_11", "sm_13", "sm_90"])
    def test_misaligned_names_lane_and_address(self, arch):
        addrs = seq(0, 4)
        addrs[3] = 14
        with pytest.raises(ValueError, match=r"lane 3: address 14 .*aligned"):
            transactions(addrs, 4, arch)
        with pytest.raises(ValueError, match=r"warp 7 lane 3: address 14 .*aligned"):
            coalesce_batch([7] * 32, list(range(32)), addrs, 4, arch)

    def test_misaligned_inactive_lane_is_ignored(self):
        addrs = seq(0, 8)
        addrs[3] = 13
        active = [k != 3 for k in range(32)]
        assert transactions(addrs, 8, "sm_13", active=active) == [(0, 128), (128, 128)]

    def test_shape_errors(self):
        with pytest.raises(ValueError, match="at most 32"):
            transactions(list(range(0, 132, 4)), 4, "sm_90")
        with pytest.raises(ValueError, match="active"):
            transactions([0, 4], 4, "sm_90", active=[True])
        with pytest.raises(ValueError, match="negative"):
            transactions([-4], 4, "sm_90")
        with pytest.raises(ArgumentError, match="must be integers"):
            transactions([0.5], 4, "sm_90")

    def test_batch_input_errors(self):
        with pytest.raises(ValueError, match="non-decreasing"):
            coalesce_batch([1, 0], [0, 0], [0, 0], 4, "sm_90")
        with pytest.raises(ValueError, match="twice"):
            coalesce_batch([0, 0, 0], [2, 1, 2], [0, 4, 8], 4, "sm_13")
        with pytest.raises(ValueError, match="0..31"):
            coalesce_batch([0], [32], [0], 4, "sm_13")
        with pytest.raises(ValueError, match="length"):
            coalesce_batch([0, 0], [0], [0], 4, "sm_13")


# ---------------------------------------------------------------- batch basics

class TestBatch:
    def test_fields_and_counts(self):
        warp = [0] * 32 + [5] * 16
        lane = list(range(32)) + list(range(16, 32))
        addrs = seq(0, 4) + seq(4096, 4, n=16)
        b = coalesce_batch(warp, lane, addrs, 4, "sm_13")
        assert isinstance(b, Batch)
        assert b.txn_warp.tolist() == [0, 0, 5]
        assert b.txn_address.tolist() == [0, 64, 4096]
        assert b.txn_size.tolist() == [64, 64, 64]
        assert (b.requests, b.transactions, b.bytes) == (3, 3, 192)   # 1.x: per half-warp
        b90 = coalesce_batch(warp, lane, addrs, 4, "sm_90")
        assert (b90.requests, b90.transactions, b90.bytes) == (2, 6, 192)  # 2.0+: per warp
        with pytest.raises(AttributeError):
            b.requests = 0                                           # frozen
        with pytest.raises(ValueError):
            b.txn_size[0] = 1                                        # read-only arrays

    @pytest.mark.parametrize("arch", ["sm_11", "sm_13", "sm_90"])
    def test_many_warps_far_apart(self, arch):
        # 40 warps spread over 2**62 bytes: too wide to pack (warp, sector) into
        # one int64 key, so the batch form must fall back to ranking addresses.
        per_warp = {w: seq((w % 3) * (1 << 61) + 4096 * w, 8, n=32, stride=w % 4) for w in range(40)}
        warp = [w for w in per_warp for _ in range(32)]
        lane = list(range(32)) * 40
        addrs = [a for w in per_warp for a in per_warp[w]]
        b = coalesce_batch(warp, lane, addrs, 8, arch)
        for w, a in per_warp.items():
            sel = b.txn_warp == w
            assert list(zip(b.txn_address[sel].tolist(), b.txn_size[sel].tolist())) == \
                transactions(a, 8, arch)

    def test_negative_address(self):
        with pytest.raises(ValueError, match="warp 2 lane 1: negative"):
            coalesce_batch([2, 2], [0, 1], [0, -8], 4, "sm_13")

    def test_empty(self):
        for arch in ["sm_11", "sm_13", "sm_90"]:
            b = coalesce_batch([], [], [], 4, arch)
            assert (b.requests, b.transactions, b.bytes) == (0, 0, 0)

    def test_speed_30000_lanes(self):
        # Goal: well under 5 ms on a quiet machine; the bound here is loose
        # so a loaded CI box does not fail it.
        rng = np.random.default_rng(1)
        n = 30_000
        warp, lane = np.arange(n) // 30, np.arange(n) % 30
        for arch in ["sm_13", "sm_90"]:
            for addrs in (np.arange(n) * 4, rng.integers(0, 1 << 26, n) * 4):
                coalesce_batch(warp, lane, addrs, 4, arch)
                best = min(_timed(coalesce_batch, warp, lane, addrs, 4, arch) for _ in range(5))
                assert best < 0.025, (arch, best)


def _timed(f, *args):
    t = time.perf_counter()
    f(*args)
    return time.perf_counter() - t


# ---------------------------------------------------------------- properties

@st.composite
def warp_access(draw, ws=None, max_lanes=32):
    """One warp's addresses and active mask: sequential/strided, clustered or scattered."""
    ws = draw(st.sampled_from(WORD_SIZES)) if ws is None else ws
    n = draw(st.integers(1, max_lanes))
    base = draw(st.integers(0, 1 << 14)) * draw(st.sampled_from([1, 16]))
    kind = draw(st.sampled_from(["strided", "cluster", "scatter"]))
    if kind == "strided":
        stride = draw(st.integers(0, 4))
        words = [base + k * stride for k in range(n)]
    else:
        spread = 48 if kind == "cluster" else 1 << 16
        words = [base + w for w in draw(st.lists(st.integers(0, spread), min_size=n, max_size=n))]
    active = draw(st.one_of(st.just([True] * n),
                            st.lists(st.booleans(), min_size=n, max_size=n)))
    return ws, [w * ws for w in words], active


def covers(txn, a, ws):
    start, size = txn
    return start <= a and a + ws <= start + size


def strict_coalescible(addrs, active, lanes, ws):
    act = [k for k in lanes if active[k]]
    seg = addrs[act[0]] - (act[0] % 16) * ws
    return (ws >= 4 and seg % (16 * ws) == 0
            and all(addrs[k] == seg + (k % 16) * ws for k in act))


FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(arch=st.sampled_from(ARCHS_1X), case=warp_access())
def test_1x_each_half_warp_covers_each_active_lane_exactly_once(arch, case):
    ws, addrs, active = case
    n = len(addrs)
    whole = transactions(addrs, ws, arch, active=active)
    per_half = []
    for h in (0, 1):
        lanes = range(16 * h, min(16 * h + 16, n))
        only = [active[k] and k in lanes for k in range(n)]
        got = transactions(addrs, ws, arch, active=only)
        per_half += got
        act = [k for k in lanes if active[k]]
        if not act:
            assert got == []
            continue
        if cc(arch) < 12 and not strict_coalescible(addrs, active, lanes, ws):
            # one 32 B transaction per active thread, in thread order
            assert got == [(addrs[k] // 32 * 32, 32) for k in act]
            continue
        for k in act:
            assert sum(covers(t, addrs[k], ws) for t in got) == 1
        if cc(arch) >= 12:   # and no transaction is wasted on nothing
            assert all(any(covers(t, addrs[k], ws) for k in act) for t in got)
    assert whole == per_half          # half-warps are independent


@FAST
@given(arch=st.sampled_from(ARCHS), case=warp_access())
def test_sizes_legal_and_aligned(arch, case):
    ws, addrs, active = case
    got = transactions(addrs, ws, arch, active=active)
    legal = {32, 64, 128} if cc(arch) < 20 else {32}
    for start, size in got:
        assert size in legal and start % size == 0
    if cc(arch) >= 20:
        starts = [s for s, _ in got]
        assert starts == sorted(set(starts))                     # distinct, ascending
        act = [a for a, on in zip(addrs, active) if on]
        assert all(any(covers(t, a, ws) for t in got) for a in act)
        assert all(any(covers(t, a, ws) for a in act) for t in got)


@FAST
@given(arch=st.sampled_from(["sm_12", "sm_13", "sm_20", "sm_70", "sm_90"]),
       case=warp_access(), data=st.data())
def test_permuting_lanes_within_half_warp_changes_nothing(arch, case, data):
    ws, addrs, active = case
    n = len(addrs)
    perm = []
    for h in (0, 1):
        lanes = list(range(16 * h, min(16 * h + 16, n)))
        perm += data.draw(st.permutations(lanes))
    p_addrs = [addrs[k] for k in perm]
    p_active = [active[k] for k in perm]
    assert sorted(transactions(p_addrs, ws, arch, active=p_active)) == \
        sorted(transactions(addrs, ws, arch, active=active))


@FAST
@given(arch=st.sampled_from(ARCHS), case=warp_access(), data=st.data())
def test_inactive_lanes_never_change_the_result(arch, case, data):
    ws, addrs, active = case
    junk = data.draw(st.lists(st.integers(0, 1 << 30), min_size=len(addrs), max_size=len(addrs)))
    other = [a if on else j for a, on, j in zip(addrs, active, junk)]   # may be misaligned
    assert transactions(other, ws, arch, active=active) == transactions(addrs, ws, arch, active=active)
    dropped = [a for a, on in zip(addrs, active) if on]
    if cc(arch) >= 20:   # on 2.0+ the lane number does not matter at all
        assert transactions(dropped, ws, arch) == transactions(addrs, ws, arch, active=active)


@st.composite
def many_warps(draw, huge=False):
    ws = draw(st.sampled_from(WORD_SIZES))
    n_warps = draw(st.integers(1, 8))
    warp_ids = sorted(draw(st.sets(st.integers(0, 1 << 20), min_size=n_warps, max_size=n_warps)))
    warps = []
    for w in warp_ids:
        _, addrs, active = draw(warp_access(ws=ws))
        if huge:   # spread warps over the whole address space (packing fallbacks)
            off = draw(st.integers(0, (1 << 62) // (16 * ws))) * 16 * ws
            addrs = [a + off for a in addrs]
        warps.append((w, addrs, active))
    return ws, warps


def check_batch_matches(arch, ws, warps, data):
    warp, lane, addr = [], [], []
    for w, addrs, active in warps:
        lanes = [k for k in range(len(addrs)) if active[k]]
        if data.draw(st.booleans()):
            lanes = data.draw(st.permutations(lanes))     # any lane order within a warp
        warp += [w] * len(lanes)
        lane += lanes
        addr += [addrs[k] for k in lanes]
    b = coalesce_batch(np.array(warp, dtype=np.int64), np.array(lane, dtype=np.int64),
                       np.array(addr, dtype=np.int64), ws, arch)
    requests = count = 0
    for w, addrs, active in warps:
        expect = transactions(addrs, ws, arch, active=active)
        sel = b.txn_warp == w
        assert list(zip(b.txn_address[sel].tolist(), b.txn_size[sel].tolist())) == expect
        count += len(expect)
        if cc(arch) >= 20:
            requests += any(active)
        else:
            requests += any(active[:16]) + any(active[16:])
    assert b.requests == requests
    assert b.transactions == count          # so no transaction names a warp not given
    assert b.bytes == int(b.txn_size.sum())


@settings(max_examples=80, deadline=None)
@given(arch=st.sampled_from(ARCHS), case=many_warps(), data=st.data())
def test_batch_equals_per_warp_reference(arch, case, data):
    ws, warps = case
    check_batch_matches(arch, ws, warps, data)


@settings(max_examples=40, deadline=None)
@given(arch=st.sampled_from(["sm_11", "sm_13", "sm_90"]), case=many_warps(huge=True), data=st.data())
def test_batch_equals_reference_over_whole_address_space(arch, case, data):
    ws, warps = case
    check_batch_matches(arch, ws, warps, data)


@settings(max_examples=60, deadline=None)
@given(arch=st.sampled_from(ARCHS), case=warp_access(), lane=st.integers(0, 31))
def test_misaligned_active_lane_always_rejected(arch, case, lane):
    ws, addrs, active = case
    if ws == 1 or lane >= len(addrs):
        return
    addrs = list(addrs)
    addrs[lane] += ws // 2
    active = list(active)
    active[lane] = True
    with pytest.raises(ValueError, match=f"lane {lane}: address {addrs[lane]} "):
        transactions(addrs, ws, arch, active=active)
