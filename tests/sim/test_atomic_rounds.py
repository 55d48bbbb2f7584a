"""A warp's atomic lanes as the H100 does them (calibration/atomic_sectors.py, ncu, one
warp per launch; docs/calibration/atomic-sectors-h100.md): lanes on one word go one per
round, each round's sectors are sectors of their own; a warp-uniform atomic is done by
one lane (nvcc's aggregation). The GPU's counts are the reference, read from the
committed probe data."""
import pathlib

import numpy as np
import pytest

import simgpu
from calibration import atomic_sectors as AS
from simgpu.lang import Array, atomic_add, i32, kernel, threadIdx

DATA = pathlib.Path(__file__).parents[2] / "docs" / "calibration" / "atomic-sectors-h100"


@kernel
def red_lanes(a: Array[i32], idx: Array[i32]):
    atomic_add(a, idx[threadIdx.x], 1)          # calibration/atomic_sectors.py's RED


def gpu_rows():
    return AS.rows(DATA)


def hand_patterns():
    return [(name, words, v) for name, words, v in gpu_rows()
            if words is not None and not name.startswith("histogram")]


@pytest.mark.parametrize("engine", ["lockstep", "timed-block"])
def test_each_lane_pattern_has_the_gpus_sector_count(engine):
    dev = simgpu.get_device("sim:h100")
    rows = hand_patterns() + [r for r in gpu_rows() if r[0].startswith("histogram")][:24]
    exact = 0
    for name, words, v in rows:
        a = dev.zeros(4096, np.int32)
        idx = dev.to_device(np.asarray(words, dtype=np.int32))
        rep = dev.launch(red_lanes, 1, 32, a, idx, engine=engine)
        got = a.to_host()
        assert (got == np.bincount(np.asarray(words), minlength=4096)).all(), name
        assert rep.atomics.requests == 1
        assert rep.atomics.transactions == AS.max_same_word_per_sector(list(words)), name
        if not name.startswith("histogram"):     # the round rule: every hand pattern
            assert rep.atomics.transactions == v[AS.METRICS[1]], name
        exact += rep.atomics.transactions == v[AS.METRICS[1]]
    # the histogram's warps: the round rule, which the GPU exceeds by 1-2 in some
    assert exact >= len(hand_patterns()) + 12


def test_a_uniform_counter_reaches_memory_from_one_lane_where_the_compiler_aggregates():
    """The probe's one_counter (VOTEU.ANY, POPC, one REDG) and block_sum (a value by lane:
    VOTEU.ANY, REDUX.SUM, one REDG): 1 sector per warp on the H100; on the GTX 260
    (CUDA 2.x, no aggregation) every lane's add reaches memory."""
    counts = {n: v for n, w, v in gpu_rows() if w is None}
    vals = np.arange(1, 32769, dtype=np.int32)
    for device, lanes_per_warp in (("sim:h100", 1), ("sim:gtx260", 32)):
        dev = simgpu.get_device(device)
        for warps in (1, 1024):
            c = dev.zeros(1, np.int32)
            rep = dev.launch(AS.one_counter, warps, 32, c, warps * 32)
            assert c.to_host()[0] == warps * 32
            s = dev.zeros(1024, np.int32)
            rep2 = dev.launch(AS.block_sum, warps, 32, s, dev.to_device(vals), warps * 32)
            assert (s.to_host()[:warps] == vals[:warps * 32].reshape(warps, 32).sum(1)).all()
            for name, r in (("one_counter", rep), ("block_sum", rep2)):
                assert r.atomics.lanes == warps * lanes_per_warp
                if device == "sim:h100":
                    gpu = counts[f"{name}, {warps} warps"]
                    assert r.atomics.transactions == gpu[AS.METRICS[1]] == warps


def test_lanes_on_one_word_take_the_l2_one_round_each():
    """Timing follows the count: 32 lanes on one word are 32 operations one after the
    other at its slice; 32 lanes on 32 words of 4 sectors are 4 operations. The warp
    waits for its old values, so the kernel's time shows the difference (a warm L2 and
    TLBs: nothing else differs)."""
    dev = simgpu.get_device("sim:h100")
    dev.cache_control = "none"
    same = dev.config.atomics.same_address_serialization_cycles
    cycles, ops = {}, {}
    a, out = dev.zeros(64, np.int32), dev.zeros(32, np.int32)   # one place: one L2 home
    for name, words in (("one word", [0] * 32), ("4 sectors", list(range(32)))):
        idx = dev.to_device(np.asarray(words, dtype=np.int32))
        dev.launch(red_lanes_used, 1, 32, a, idx, out, engine="timed")   # L2, TLBs warm
        rep = dev.launch(red_lanes_used, 1, 32, a, idx, out, engine="timed")
        cycles[name], ops[name] = rep.cycles, rep.extra["atomic_operations"]
    assert ops == {"one word": 32, "4 sectors": 4}
    assert cycles["one word"] - cycles["4 sectors"] >= 0.9 * 28 * same


@kernel
def red_lanes_used(a: Array[i32], idx: Array[i32], out: Array[i32]):
    out[threadIdx.x] = atomic_add(a, idx[threadIdx.x], 1)
