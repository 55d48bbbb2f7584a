"""rank() with device arrays in and out, and its checks on the device
(device_input.py): the results equal the sequential reference, the caller's
device array is never written, every kind of invalid input is refused with the
host's message (the diagnosis runs only then), and the helper kernels are right
under random schedules."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import simgpu
from algorithms import list_ranking as LR
from algorithms.generators import random_forest, random_list
from algorithms.list_ranking import device_input
from algorithms.list_ranking.sequential import rank_sequential
from simgpu.testing import strategies as gst

CONFIGS = [dict(method="wylie"), dict(method="wylie-single-block"),
           dict(method="random-splitter"), dict(method="random-splitter", walk="paper"),
           dict(method="random-splitter", packing=48),
           dict(method="random-splitter", splitters="even")]


def cid(cfg):
    return "-".join(str(v) for v in cfg.values())


@pytest.mark.parametrize("cfg", CONFIGS, ids=cid)
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64"])
def test_device_array_in_device_array_out(cfg, dtype):
    dev = simgpu.get_device("sim:gtx260")
    succ = random_forest(700, 9, seed=4)
    src = dev.to_device(succ.astype(dtype))
    before = src.to_host().copy()
    r = LR.rank(src, device=dev, threads=64, **cfg)
    assert isinstance(r.ranks, simgpu.DeviceArray) and r.ranks.device is dev
    assert r.ranks.dtype == np.int64
    np.testing.assert_array_equal(r.ranks.to_host(), rank_sequential(succ))
    np.testing.assert_array_equal(src.to_host(), before)          # the input is not written


@pytest.mark.parametrize("cfg", CONFIGS, ids=cid)
def test_numpy_in_numpy_out(cfg):
    succ = random_list(500, 2)
    r = LR.rank(succ, threads=64, **cfg)
    assert isinstance(r.ranks, np.ndarray) and r.ranks.dtype == np.int64
    np.testing.assert_array_equal(r.ranks, rank_sequential(succ))


def test_host_methods_read_a_device_array():
    dev = simgpu.get_device("sim:gtx260")
    succ = random_forest(200, 5, seed=1)
    r = LR.rank(dev.to_device(succ.astype(np.int32)), method="sequential")
    np.testing.assert_array_equal(r.ranks, rank_sequential(succ))


def test_an_array_of_another_device_is_refused():
    a = simgpu.get_device("sim:gtx260").to_device(np.array([1, 1], np.int32))
    with pytest.raises(ValueError, match="lives on sim:gtx260, not on sim:h100"):
        LR.rank(a, device="sim:h100")


INVALID = [
    ([1, 5, 2], r"out of range \[0, 3\) at node\(s\) 1"),
    ([2, 2, 2, 0], r"two or more predecessors: node 2 is the successor of nodes 0, 1"),
    ([1, 0], r"no tail .* cycle 0 -> 1 -> 0"),
    ([0, 2, 3, 1], r"3 node\(s\) lie on a cycle and reach no tail: nodes 1, 2, 3"),
    # one tail, a node with two predecessors: only rank[head] == n - 1 can tell
    ([1, 2, 2, 2], r"two or more predecessors"),
    ([3, 3, 3, 3, 3], r"two or more predecessors"),
    # several tails, a cycle beside them: only the ranks' consistency can tell
    ([0, 1, 3, 4, 2], r"3 node\(s\) lie on a cycle"),
    # one tail, a cycle beside the list (the head sum lands on a cycle node)
    ([1, 1, 3, 2], r"lie on a cycle"),
]


@pytest.mark.parametrize("succ, msg", INVALID)
@pytest.mark.parametrize("cfg", CONFIGS[:5], ids=cid)
def test_invalid_device_input_named_as_on_the_host(succ, msg, cfg):
    dev = simgpu.get_device("sim:gtx260")
    src = dev.to_device(np.array(succ, dtype=np.int32))
    with pytest.raises(ValueError, match=msg):
        LR.rank(src, device=dev, **cfg)
    np.testing.assert_array_equal(src.to_host(), succ)


@pytest.mark.parametrize("succ", [[1, 5, 2], [-1, 0], [1, 2, 0]])
def test_out_of_range_and_no_tail_refused_even_without_validation(succ):
    with pytest.raises(ValueError):
        LR.rank(np.array(succ), validate=False)


def test_validation_is_kernels_and_off_skips_them():
    succ = random_forest(3000, 40, seed=7)
    # the fused walk validates in RS3 and RS5; it first tries RS2..RS5 for one list,
    # which do nothing on a forest ("one list?")
    for kw, first, extra in [(dict(walk="paper"), [], ["output", "validate"]),
                             (dict(packing=48), [], ["output", "validate"]),
                             (dict(), ["one list?"] * 4, [])]:
        on = LR.rank(succ, threads=64, **kw)
        off = LR.rank(succ, threads=64, validate=False, **kw)
        np.testing.assert_array_equal(on.ranks, off.ranks)
        steps_on = [rep.extra["step"] for rep in on.helper_launches]
        steps_off = [rep.extra["step"] for rep in off.helper_launches]
        assert steps_on == ["check"] + first + ["heads", "heads", "heads"] + extra, kw
        # (off: the 32-bit ranks are widened on the host, no "output" launch)
        assert steps_off == ["check"] + first + ["heads", "heads", "heads"], kw
        assert [rep.extra["step"] for rep in on.launches] == ["RS1", "RS2", "RS3", "RS4",
                                                               "RS5"], kw
    single = LR.rank(random_list(3000, 1), threads=64, walk="paper")   # one list: no scatter
    assert [rep.extra["step"] for rep in single.helper_launches] == ["check", "output",
                                                                      "validate"]
    single = LR.rank(random_list(3000, 1), threads=64)
    assert [rep.extra["step"] for rep in single.helper_launches] == ["check"]


@pytest.mark.parametrize("seed", range(4))
def test_helpers_under_random_schedules(seed):
    succ = random_forest(900, 30, seed=seed)
    r = LR.rank(succ, threads=64, launch_options=dict(schedule="random", seed=seed))
    np.testing.assert_array_equal(r.ranks, rank_sequential(succ))
    assert all(rep.schedule == "random" for rep in r.helper_launches)


def test_heads_on_the_device_equal_the_hosts():
    dev = simgpu.get_device("sim:gtx260")
    succ = random_forest(5000, 300, seed=3)
    ctx = LR._Context(dev, 256, None)
    info = device_input.prepare(ctx, dev.to_device(succ.astype(np.int32)), True, True)
    want = np.flatnonzero(np.bincount(succ[succ != np.arange(len(succ))],
                                      minlength=len(succ)) == 0)
    assert info.n_heads == len(want) and info.tails == len(want)
    np.testing.assert_array_equal(info.heads.to_host()[:info.n_heads], want)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(succ=gst.forests(max_n=80), dtype=st.sampled_from([np.int32, np.int64]))
def test_hypothesis_forests_from_device_arrays(succ, dtype):
    dev = simgpu.get_device("sim:gtx260")
    r = LR.rank(dev.to_device(succ.astype(dtype)), device=dev, threads=32)
    np.testing.assert_array_equal(r.ranks.to_host(), rank_sequential(succ))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(succ=gst.arrays(np.int32, min_size=1, max_size=12,
                       elements=st.integers(0, 11)))
def test_hypothesis_any_array_is_ranked_or_refused_like_the_host(succ):
    succ = np.asarray(succ)
    try:
        want = rank_sequential(succ)
    except ValueError as exc:
        with pytest.raises(ValueError) as got:
            LR.rank(succ, threads=32)
        assert str(got.value) == str(exc)
        return
    np.testing.assert_array_equal(LR.rank(succ, threads=32).ranks, want)


def record_device_calls(monkeypatch, dev):
    """Record what a call asks of ``dev``, in order: each launch (the kernel's name),
    host read ("read"), and allocation or copy made through the Device API (its name
    and the lengths of the arrays it made; an API call made inside another is not
    listed): "zeros", "empty" (zeroed: a memset on a GPU), "uninitialized" (no memset),
    "uninitialized_arrays" (several, one allocation on a GPU), "copy", "to_device"
    (a copy up)."""
    events = []
    depth = [0]

    def wrap(name, real):
        def call(*args):
            depth[0] += 1
            try:
                out = real(*args)
            finally:
                depth[0] -= 1
            if depth[0] == 0:
                made = out if isinstance(out, list) else [out]
                events.append((name, [a.size for a in made]))
            return out
        return call

    for name in ("zeros", "empty", "uninitialized", "uninitialized_arrays", "copy",
                 "to_device"):
        if hasattr(dev, name):
            monkeypatch.setattr(dev, name, wrap(name, getattr(dev, name)))
    real_launch, real_to_host = dev.launch, dev._to_host
    monkeypatch.setattr(dev, "launch", lambda k, *a, **o: events.append((k.name, None)) or
                        real_launch(k, *a, **o))
    monkeypatch.setattr(dev, "_to_host", lambda arr: events.append(("read", None)) or
                        real_to_host(arr))
    return events


def test_one_list_from_a_device_array_allocates_little_and_reads_once(monkeypatch):
    """Issue 20 (rank() from device arrays within 1.15x its kernels): on a GPU the host's
    cost of every allocation and launch before RS3 is time the GPU idles (RS3 is the
    first kernel long enough to hide the host), and a memset is GPU time beside the
    kernels (zeroing the 128 MB of words at 2^24 nodes idled an H100 0.044 ms).  So the
    default method from a device array holding one list: the scan's counters zeroed (5
    int64), the words and the five slot arrays in two allocations without a memset, six
    launches, one host read (the walk's flags, after RS5 is queued)."""
    dev = simgpu.get_device("sim:gtx260")
    n = 3000
    succ = random_list(n, 5)
    src = dev.to_device(succ.astype(np.int32))
    events = record_device_calls(monkeypatch, dev)
    r = LR.rank(src, device=dev, threads=64)
    monkeypatch.undo()
    np.testing.assert_array_equal(r.ranks.to_host(), rank_sequential(succ))
    assert [name for name, _ in events] == [
        "zeros", "lr_scan_i32", "uninitialized", "rs1_init_64", "uninitialized_arrays",
        "rs2_choose_64", "rs3_walk_64", "copy", "rs4_rank_splitters", "rs5_final_64", "read"]
    assert events[0][1] == [5] and events[2][1] == [n]          # the counters; the words
    assert len(events[4][1]) == 5 and max(events[4][1]) < n     # the slot arrays


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("make", [lambda: random_list(3000, 5),
                                  lambda: random_forest(3000, 7, seed=5)], ids=["list", "forest"])
def test_device_array_call_zeroes_nothing_of_n(monkeypatch, make, dtype):
    """No zero-filled array of n elements per call (each is a memset on a GPU), but, for
    several lists, the in-degrees of the head finding (its atomics count from zero) and,
    for int64 input, the int32 copy that lr_scan_i64 writes only where an id is in range
    (the other ids make the ranking refuse the input)."""
    dev = simgpu.get_device("sim:gtx260")
    succ = make()
    n = len(succ)
    src = dev.to_device(succ.astype(dtype))
    events = record_device_calls(monkeypatch, dev)
    r = LR.rank(src, device=dev, threads=64)
    monkeypatch.undo()
    np.testing.assert_array_equal(r.ranks.to_host(), rank_sequential(succ))
    zeroed_n = [name for name, sizes in events if name in ("zeros", "empty")
                and max(sizes) >= n]
    several = len(np.flatnonzero(succ == np.arange(n))) > 1
    assert zeroed_n == ["empty"] * (dtype == np.int64) + ["zeros"] * several


@pytest.mark.parametrize("rs4", ["single block", "in place", "rounds"])
@pytest.mark.parametrize("cfg", CONFIGS[2:], ids=cid)
def test_no_kernel_reads_a_word_before_it_is_written(monkeypatch, cfg, rs4):
    """The buffers the random splitter allocates uninitialized (no memset on a GPU: the
    words, the slot arrays but the flags where RS2 does not zero them, RS4's copies, the
    int64 output): under check="uninit" a read of a word nothing wrote yet is an error.
    One list and a forest; RS4 in each of its three forms (a few slots made "many")."""
    from algorithms.list_ranking import random_splitter
    if rs4 != "single block":
        monkeypatch.setattr(random_splitter, "SINGLE_BLOCK_SLOTS", 8)
    if rs4 == "rounds":
        monkeypatch.setattr(random_splitter, "IN_PLACE_RESIDENT_FACTOR", 0)
    dev = simgpu.get_device("sim:gtx260")
    for succ in (random_list(400, 3), random_forest(400, 6, seed=3)):
        r = LR.rank(dev.to_device(succ.astype(np.int32)), device=dev, threads=32,
                    launch_options=dict(engine="warps", check="uninit"), **cfg)
        np.testing.assert_array_equal(r.ranks.to_host(), rank_sequential(succ))
        want = {"single block": "rs4_rank_splitters", "in place": "rs4_jump_in_place",
                "rounds": "wylie_jump"}[rs4]
        assert want in [x.kernel for x in r.launches]


@pytest.mark.parametrize("kw", [dict(packing=48), dict(walk="paper")])
def test_the_paper_walks_ranks_are_widened_where_the_caller_wants_them(kw):
    """The paper's walks leave 32-bit ranks on the device: a host caller gets them
    widened on the host (the device holds no 8-byte copy: the paper's 48-bit run at 64M
    nodes fits the 896 MB card by that), a device caller on the device."""
    succ = random_list(5000, 3)
    want = rank_sequential(succ)
    dev = simgpu.get_device("sim:gtx260")
    host = LR.rank(succ, threads=64, validate=False, device=dev, **kw)
    assert host.ranks.dtype == np.int64 and isinstance(host.ranks, np.ndarray)
    np.testing.assert_array_equal(host.ranks, want)
    assert "output" not in [rep.extra["step"] for rep in host.helper_launches]
    on_dev = LR.rank(dev.to_device(succ.astype(np.int32)), threads=64, validate=False,
                     device=dev, **kw)
    assert on_dev.ranks.dtype == np.int64
    np.testing.assert_array_equal(on_dev.ranks.to_host(), want)
    assert "output" in [rep.extra["step"] for rep in on_dev.helper_launches]


def test_the_48_bit_walk_holds_ten_bytes_per_node():
    """succ (4 bytes), owner (2) and local rank (4) per node, and the splitters' slots:
    nothing of 8 bytes per node (measured by the paper run's footprint tracker)."""
    from simgpu_apps.experiments.measure import Footprint
    n = 1 << 15
    dev = simgpu.get_device("sim:gtx260")
    fp = Footprint(dev)
    LR.rank(random_list(n, 5), threads=256, validate=False, device=dev, packing=48)
    assert 10 * n <= fp.peak < 12 * n          # (it was 18 bytes per node: 8 more)
