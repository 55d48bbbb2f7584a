"""The trace-driven engine (engine="trace-block", simgpu.sim.trace_replay): the same
timing model as timed-block, so every launch it replays must give timed-block's
cycles, time, counts, every extra field, samples and outputs; launches whose results
could depend on the order of the blocks run on timed-block instead, and say so."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simgpu
from algorithms.list_ranking import rank
from simgpu_apps.mechanism_kernels import sb_chain_2, sb_loads_4, sb_stores_sync, sb_unused_load
from tests.sim import kernels as K
from tests.sim import replayed
from tests.sim import trace_kernels as T

TRACE_KEYS = ("engine_ran", "trace_fallback", "trace_waves_held_max")
DEVICES = ("sim:gtx260", "sim:h100")


def comparable(rep) -> dict:
    d = rep.to_dict()
    d.pop("engine")
    d["extra"] = {k: v for k, v in d["extra"].items() if k not in TRACE_KEYS}
    d["samples"] = {k: {f: (v.tolist() if isinstance(v, np.ndarray) else v)
                        for f, v in s.items()} for k, s in rep.samples.items()}
    return d


def launch_both(device, kernel, grid, block, make_args):
    """(timed-block's report and outputs, trace-block's), each on a fresh device."""
    out = []
    for engine in ("timed-block", "trace-block"):
        dev = replayed.device(device)
        args = make_args(dev)
        rep = dev.launch(kernel, grid, block, *args, engine=engine)
        out.append((rep, [a.to_host() for a in args if hasattr(a, "to_host")]))
    return out


def assert_same(device, kernel, grid, block, make_args, replayed=True):
    (ra, oa), (rb, ob) = launch_both(device, kernel, grid, block, make_args)
    assert rb.extra["engine_ran"] == ("trace-block" if replayed else "timed-block"), \
        rb.extra.get("trace_fallback")
    assert comparable(ra) == comparable(rb)
    assert ra.cycles == rb.cycles and ra.time_ms == rb.time_ms
    for x, y in zip(oa, ob):
        np.testing.assert_array_equal(x, y)
    return rb


RNG = np.random.default_rng(7)
N = 3000
A = RNG.integers(0, 100, N).astype(np.int32)
B = RNG.integers(0, 100, N).astype(np.int32)


@pytest.mark.parametrize("device", DEVICES)
def test_hand_kernels_identical(device):
    f = np.float32
    assert_same(device, K.scale_add, (24, 1, 1), (128, 1, 1), lambda d: [
        d.to_device(A.astype(f)), d.to_device(B.astype(f)), d.zeros(N, f), f(2), np.int32(N)])
    assert_same(device, K.copy_strided, (24, 1, 1), (128, 1, 1), lambda d: [
        d.to_device(A), d.zeros(N, np.int32), np.int32(7), np.int32(N)])
    # shared memory and syncthreads(); divergent loops; a device function on shared
    assert_same(device, K.block_sums, (23, 1, 1), (128, 1, 1), lambda d: [
        d.to_device(A), d.zeros(23, np.int64), np.int32(N - 50)])
    assert_same(device, K.collatz_steps, (10, 1, 1), (128, 1, 1), lambda d: [
        d.to_device(np.arange(1, 1281, dtype=np.int64)), d.zeros(1280, np.int32), np.int32(1280)])
    assert_same(device, K.reverse_in_shared, (30, 1, 1), (64, 1, 1), lambda d: [
        d.to_device(A[:1920]), d.zeros(1920, np.int32)])
    # per-lane break/continue; a device function with early returns; 2-D blocks
    assert_same(device, K.first_multiple, (2, 1, 1), (64, 1, 1), lambda d: [
        d.to_device(A[:2400]), d.zeros(100, np.int32), np.int32(7), np.int32(24), np.int32(100)])
    assert_same(device, K.clamp_all, (12, 1, 1), (256, 1, 1), lambda d: [
        d.to_device(A.astype(np.int64)), np.int32(N), np.int64(20), np.int64(70)])
    assert_same(device, T.transpose_2d, (4, 3, 1), (16, 8, 1), lambda d: [
        d.to_device(A[:60 * 20]), d.zeros(60 * 20, np.int32), np.int32(60), np.int32(20)])
    # loads used far from their issue, and a mix of pending values in branches
    assert_same(device, T.far_uses, (12, 1, 1), (256, 1, 1), lambda d: [
        d.to_device(A), d.to_device(B), d.zeros(N, np.int32), np.int32(N)])
    assert_same(device, T.shared_rotate, (40, 1, 1), (64, 1, 1), lambda d: [
        d.to_device(A), d.zeros(N, np.int32), np.int32(N), np.int32(5)])


@pytest.mark.parametrize("device", DEVICES)
def test_scoreboard_kernels_identical(device):
    a = np.arange(1 << 16, dtype=np.int32)
    for k in (sb_loads_4, sb_unused_load):
        nargs = 4 if k is sb_loads_4 else 1
        assert_same(device, k, (3, 1, 1), (64, 1, 1), lambda d: [
            *(d.to_device(a) for _ in range(nargs)), d.zeros(4, np.int32), np.int32(12)])
    assert_same(device, sb_chain_2, (3, 1, 1), (64, 1, 1), lambda d: [
        d.to_device(a), d.to_device(a % 1000), d.zeros(4, np.int32), np.int32(12)])
    assert_same(device, sb_stores_sync, (1, 1, 1), (64, 1, 1), lambda d: [
        d.zeros(1 << 16, np.int32), np.int32(12)])


def rank_both(device, method, packing, n=4096):
    succ = np.random.default_rng(3).permutation(n)
    order = succ.copy()
    succ = np.empty(n, np.int64)
    succ[order[:-1]] = order[1:]
    succ[order[-1]] = order[-1]
    return [rank(succ, device=replayed.device(device), method=method, packing=packing,
                 launch_options={"engine": e}) for e in ("timed-block", "trace-block")]


@pytest.mark.parametrize("device,method,packing", [
    ("sim:gtx260", "random-splitter", 64), ("sim:gtx260", "random-splitter", 48),
    ("sim:gtx260", "wylie", 64), ("sim:h100", "random-splitter", 64)])
def test_list_ranking_identical(device, method, packing):
    a, b = rank_both(device, method, packing)
    np.testing.assert_array_equal(a.ranks, b.ranks)
    assert len(a.launches) == len(b.launches)
    ran = {}
    for ra, rb in zip(a.launches, b.launches):
        assert comparable(ra) == comparable(rb), ra.kernel
        ran[rb.kernel] = rb.extra["engine_ran"]
    if method == "wylie":
        assert ran["wylie_jump"] == "trace-block"
    else:
        walk = f"rs3_walk_{packing}"
        assert ran[walk] == ran[f"rs5_final_{packing}"] == "trace-block"
        # RS2's splitter picks race for a node (random_splitter_kernels.py): not replayed
        assert ran[f"rs2_choose_{packing}"] == "timed-block"


def test_atomics_fall_back():
    rep = assert_same("sim:gtx260", K.sum_atomic, (4, 1, 1), (128, 1, 1), lambda d: [
        d.to_device(np.arange(1000, dtype=np.int64)), d.zeros(1, np.int64), np.int32(1000)],
        replayed=False)
    assert "atomics" in rep.extra["trace_fallback"]


def test_blocks_sharing_written_elements_fall_back_with_data_restored():
    # every thread writes out[0] with its own value: the last block to write wins, which
    # depends on the order of the blocks; found midway, the launch reruns on timed-block
    rep = assert_same("sim:gtx260", K.scatter, (32, 1, 1), (128, 1, 1), lambda d: [
        d.to_device(np.zeros(4096, np.int32)), d.to_device(np.arange(4096, dtype=np.int32)),
        d.zeros(4096, np.int32), np.int32(4096)], replayed=False)
    assert "different values" in rep.extra["trace_fallback"]
    # a permutation: no element shared, replayed
    perm = np.random.default_rng(0).permutation(4096).astype(np.int32)
    assert_same("sim:gtx260", K.scatter, (32, 1, 1), (128, 1, 1), lambda d: [
        d.to_device(perm), d.to_device(np.arange(4096, dtype=np.int32)),
        d.zeros(4096, np.int32), np.int32(4096)])


def test_fr_fcfs_and_checks_fall_back():
    import dataclasses
    dev = simgpu.get_device("sim:gtx260")
    cfg = dev.config
    cfg = dataclasses.replace(cfg, dram=dataclasses.replace(cfg.dram, read_scheduling="fr-fcfs"))
    dev = type(dev)(cfg, "sim:gtx260+fr")
    rep = dev.launch(K.copy_strided, (4, 1, 1), (128, 1, 1), dev.to_device(A[:512]),
                     dev.zeros(512, np.int32), np.int32(3), np.int32(512), engine="trace-block")
    assert rep.extra["engine_ran"] == "timed-block" and "fr-fcfs" in rep.extra["trace_fallback"]
    dev = simgpu.get_device("sim:gtx260")
    rep = dev.launch(K.copy_strided, (4, 1, 1), (128, 1, 1), dev.to_device(A[:512]),
                     dev.zeros(512, np.int32), np.int32(3), np.int32(512), engine="trace-block",
                     check="races")
    assert rep.extra["engine_ran"] == "timed-block"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("blocks", [217, 300, 1500])
def test_more_blocks_than_resident_slots_identical(device, blocks):
    """A slot that runs a second block: the compiled loop once replayed the previous
    block's end (its unconsumed T_END entry) as the new block's first event, so every
    block after the first wave took no time (sim:gtx260, 216 slots: transpose_2d with
    one live lane a block, 1500 blocks, 3713 cycles for timed-block's 5470)."""
    from simgpu.sim import trace_compiled
    n = blocks
    a = np.arange(n, dtype=np.int32) % 201
    runs = trace_compiled.RUNS[0]
    assert_same(device, T.transpose_2d, (1, n, 1), (32, 1, 1), lambda d: [
        d.to_device(a), d.zeros(n, np.int32), np.int32(1), np.int32(n)])
    if device == "sim:gtx260" and trace_compiled.ENABLED:
        assert trace_compiled.RUNS[0] > runs        # the compiled loop timed it


@settings(max_examples=16, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), device=st.sampled_from(DEVICES))
def test_random_inputs_and_shapes_identical(data, device):
    n = data.draw(st.integers(1, 1500))
    a = np.array(data.draw(st.lists(st.integers(0, 200), min_size=n, max_size=n)), np.int32)
    b = np.array(data.draw(st.lists(st.integers(0, 200), min_size=n, max_size=n)), np.int32)
    threads = data.draw(st.sampled_from([32, 64, 96, 256]))
    blocks = data.draw(st.integers(1, 12))
    kernel = data.draw(st.sampled_from(["far_uses", "grid_stride_copy", "shared_rotate",
                                        "transpose_2d"]))
    if kernel == "shared_rotate":
        turns = data.draw(st.integers(0, 6))
        assert_same(device, T.shared_rotate, (blocks, 1, 1), (64, 1, 1), lambda d: [
            d.to_device(a), d.zeros(n, np.int32), np.int32(n), np.int32(turns)])
    elif kernel == "transpose_2d":
        w = data.draw(st.integers(1, n))
        h = n // w
        bx, by = data.draw(st.sampled_from([(32, 1), (16, 4), (8, 8), (4, 24)]))
        assert_same(device, T.transpose_2d, (-(-w // bx), -(-h // by), 1), (bx, by, 1),
                    lambda d: [d.to_device(a), d.zeros(n, np.int32), np.int32(w), np.int32(h)])
    elif kernel == "far_uses":
        assert_same(device, T.far_uses, (blocks, 1, 1), (threads, 1, 1), lambda d: [
            d.to_device(a), d.to_device(b), d.zeros(n, np.int32), np.int32(n)])
    else:
        assert_same(device, T.grid_stride_copy, (blocks, 1, 1), (threads, 1, 1), lambda d: [
            d.to_device(a), d.zeros(n, np.int32), np.int32(n)])


@pytest.mark.parametrize("method", ["shiloach-vishkin", "union-find"])
def test_connected_components_identical(method):
    from algorithms.connected_components import label
    edges = np.random.default_rng(5).integers(0, 600, (900, 2))
    a, b = (label(600, edges, method=method, device="sim:gtx260",
                  launch_options={"engine": e}) for e in ("timed-block", "trace-block"))
    np.testing.assert_array_equal(a.labels, b.labels)
    assert [comparable(r) for r in a.launches] == [comparable(r) for r in b.launches]
    ran = {r.extra["engine_ran"] for r in b.launches}
    assert ran == {"trace-block", "timed-block"}     # some replayed, the racy ones not


@pytest.mark.parametrize("ahead", [0, None])
def test_a_conflict_found_midway_restores_data_and_caches(monkeypatch, ahead):
    """On sim:h100 (an L2 kept across launches): a warm-up launch, a launch whose
    conflict shows up after the timing began (nothing recorded ahead) or before it,
    and a launch after it give timed-block's reports and data."""
    import simgpu.sim.trace_replay as tr
    if ahead is not None:
        monkeypatch.setattr(tr, "RECORD_AHEAD_LANES", ahead)
    same = np.zeros(4096, np.int32)
    reports, outputs = [], []
    for engine in ("timed-block", "trace-block"):
        dev = replayed.device("sim:h100")
        src = dev.to_device(np.arange(4096, dtype=np.int32))
        out = dev.zeros(4096, np.int32)
        reps = [dev.launch(K.copy_strided, (32, 1, 1), (128, 1, 1), src, out, np.int32(5),
                           np.int32(4096), engine=engine),
                dev.launch(K.scatter, (32, 1, 1), (128, 1, 1), dev.to_device(same), src, out,
                           np.int32(4096), engine=engine),
                dev.launch(K.copy_strided, (32, 1, 1), (128, 1, 1), src, out, np.int32(3),
                           np.int32(4096), engine=engine)]
        reports.append([comparable(r) for r in reps])
        outputs.append(out.to_host())
        if engine == "trace-block":
            assert [r.extra["engine_ran"] for r in reps] == ["trace-block", "timed-block",
                                                             "trace-block"]
    assert reports[0] == reports[1]
    np.testing.assert_array_equal(outputs[0], outputs[1])


@pytest.mark.parametrize("seed", [0, 1])
def test_samples_are_the_lowest_warps_in_both_engines(seed):
    """The teaching view's sample of an instruction is the lowest-numbered warp that runs
    it. (It was the first warp met in simulated time: on sim:h100, far_uses' warps 4 and 6
    issue line 27 one ulp of a cycle apart, in a different order in the two engines.)"""
    rng = np.random.default_rng(seed)
    n = 271
    a, b = (rng.integers(0, 201, n).astype(np.int32) for _ in range(2))
    (ra, _), (rb, _) = launch_both("sim:h100", T.far_uses, (8, 1, 1), (32, 1, 1), lambda d: [
        d.to_device(a), d.to_device(b), d.zeros(n, np.int32), np.int32(n)])
    assert comparable(ra) == comparable(rb)
    lowest = min(w for w in range(8) if (a[32 * w:32 * w + 32] > 50).any())
    assert ra.samples[(27, "load")]["warp"] == lowest
