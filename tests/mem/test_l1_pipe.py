"""The SM's L1 pipeline (simgpu.mem.l1_pipe): the cycles one warp instruction holds it,
by its lines and sectors, and what that does to whole launches
(calibration/l1_throughput.py measured the rates on the H100)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import simgpu
from simgpu.configs import ConfigError
from simgpu.mem.caches import L1Cache
from simgpu.mem.l1_pipe import L1Pipe
from simgpu_apps.gpu_tools.calibrate_cases import gather     # out[i] = src[idx[i]]
from tests.sim.test_memory_timing import L1_PIPE_KEYS as PIPE_KEYS, copy, variant

FULL = (1 << 32) - 1


def h100_pipe():
    return L1Pipe(simgpu.get_device("sim:h100").config)


def warp_sectors(lines, sectors_per_line):
    """Sector addresses of a warp request: ``lines`` lines 1 KiB apart, the first
    ``sectors_per_line`` sectors of each."""
    return [line * 1024 + 32 * k for line in range(lines) for k in range(sectors_per_line)]


def reference_load(lines, sectors, missed_lines, missed_sectors):
    """The probe's rule for a load, written out: the tag stage at 4 lines a cycle, the
    misses at a line a cycle and two sectors a cycle, whichever binds."""
    return max(lines / 4, missed_lines * 1.0, missed_sectors * 0.5)


@given(st.integers(1, 32), st.integers(1, 4))
@settings(max_examples=60, deadline=None)
def test_a_load_past_the_l1_costs_its_lines_or_its_sectors(lines, per_line):
    pipe = h100_pipe()
    a = warp_sectors(lines, per_line)
    assert pipe.cycles("load", a) == reference_load(lines, len(a), lines, len(a))


@given(st.integers(1, 32), st.integers(1, 4), st.data())
@settings(max_examples=60, deadline=None)
def test_l1_hits_cost_the_tag_stage_only(lines, per_line, data):
    """Lines the L1 holds (whole, or the sectors asked for) take no trip to the L2; the
    cache is only looked at (its LRU order and counts stay as they were)."""
    pipe = h100_pipe()
    cache = L1Cache(229376, 128, 32, 4)
    a = warp_sectors(lines, per_line)
    held = data.draw(st.sets(st.integers(0, lines - 1)))
    for line in held:
        entry, _ = cache.find(line * 1024)
        entry[:] = [0.0] * 4
    before = [dict(s) for s in cache.sets], cache.hits, cache.misses
    missed = [x for x in a if x // 1024 not in held]
    assert pipe.cycles("load", a, cache) == reference_load(
        lines, len(a), len({x // 1024 for x in missed}), len(missed))
    assert ([dict(s) for s in cache.sets], cache.hits, cache.misses) == before


def test_store_costs_lines_partial_sectors_and_bytes():
    pipe = h100_pipe()
    # the probe's shapes: 32 lines of one 4-B word; 8 lines of four sectors written in
    # part; one whole line (its 128 B bind: 4 cycles, not 1.1)
    one_word = warp_sectors(32, 1)
    masks = {a: 0xF for a in one_word}
    assert pipe.cycles("store", one_word, masks=masks) == pytest.approx(32 * 2.1)
    four = warp_sectors(8, 4)
    assert pipe.cycles("store", four, masks={a: 0xF0F for a in four}) == pytest.approx(8 * 1.1 + 32)
    whole = warp_sectors(1, 4)
    assert pipe.cycles("store", whole, masks={a: FULL for a in whole}) == pytest.approx(4.0)
    # without masks a store's sectors count as whole
    assert pipe.cycles("store", whole) == pytest.approx(4.0)
    assert pipe.cycles("store", one_word) == pytest.approx(32 * 1.1)
    assert pipe.cycles("atomic", whole) == 0.0


def test_the_pipeline_takes_one_request_after_another_per_sm():
    pipe = h100_pipe()
    assert pipe.enter(0, 10.0, 32.0) == (10.0, 42.0)
    assert pipe.enter(0, 12.0, 2.0) == (42.0, 44.0)     # waits for the one before
    assert pipe.enter(1, 12.0, 2.0) == (12.0, 14.0)     # another SM's is free
    assert pipe.enter(0, 100.0, 1.0) == (100.0, 101.0)
    assert pipe.busy == 37.0 and pipe.waited == 30.0


def test_the_sm_hands_over_its_next_request_while_the_queue_has_room():
    """MemorySystem.accepted: a request is taken at once while the pipeline has at most
    l1_pipe_queue_cycles (64 on sim:h100) of work ahead, later by the excess."""
    from simgpu.mem.memory_system import MemorySystem
    mem = MemorySystem(simgpu.get_device("sim:h100").config)
    scattered = warp_sectors(32, 1)             # 32 lines past the L1: 32 cycles each
    for k in range(4):
        mem.access("load", scattered, [32] * 32, 0.0, 0, l1=False)
        assert mem.accepted == max(0.0, 32.0 * (k + 1) - 64)
    assert mem.l1_pipe.busy == 128.0


def without_pipe(tmp_path):
    return variant("h100", tmp_path, **{k: None for k in PIPE_KEYS})


def test_a_scattered_gather_takes_longer_through_the_pipeline(tmp_path):
    """Four SMs gathering random words (32 lines a warp load, each a miss): the pipeline
    makes them much slower.  A coalesced copy (a line a warp instruction) is slowed by at
    most its pipelines' busy cycles per SM (its 32 warps' requests, issued together,
    wait for each other there).  Results and counts are the same either way."""
    n = 1 << 15
    rng = np.random.default_rng(1)
    src = rng.integers(0, 1 << 30, n, dtype=np.int32)
    idx = (rng.permutation(n) * 37 % n).astype(np.int32)
    reps = {}
    for name, dev in (("pipe", simgpu.get_device("sim:h100")), ("none", without_pipe(tmp_path))):
        s, i, o = dev.to_device(src), dev.to_device(idx), dev.zeros(n, np.int32)
        g = dev.launch(gather, 4, 1024, s, i, o, n, engine="timed-block")
        assert (o.to_host() == src[idx]).all()
        c = dev.launch(copy, 4, 1024, s, o, n, engine="timed-block")
        reps[name] = g, c
    (g, c), (g0, c0) = reps["pipe"], reps["none"]
    assert (g.loads, g.stores, c.loads, c.stores) == (g0.loads, g0.stores, c0.loads, c0.stores)
    assert "l1_pipe_cycles" not in g0.extra
    assert g.cycles > 1.2 * g0.cycles
    assert c0.cycles < c.cycles <= c0.cycles + c.extra["l1_pipe_cycles"] / 4


@pytest.mark.parametrize("key", PIPE_KEYS)
def test_a_negative_rate_is_refused(tmp_path, key):
    with pytest.raises(ConfigError, match=key):
        variant("h100", tmp_path, **{key: -1})
