"""timed-block's lane groups per warp scheduler (``[issue] block_groups = "scheduler"``):
a block's warps run as one lockstep group per scheduler, warp w with the warps w mod
schedulers_per_sm, and the groups meet at syncthreads() (simgpu/sim/timed.py)."""
import numpy as np
import pytest

from simgpu.configs import ConfigError
from simgpu.lang.errors import KernelRuntimeError
from tests.sim.kernels import (arithmetic_only, barrier_in_a_branch, block_sums,
                               rotate_in_shared)
from tests.sim.test_memory_timing import variant


def grouped(tmp_path, value='"scheduler"', name="h100"):
    """A bundled config with ``block_groups`` set under [issue]."""
    schedulers = {"h100": 4, "gtx260": 1}[name]
    return variant(name, tmp_path, schedulers_per_sm=f"{schedulers}\nblock_groups = {value}")


def test_groups_meet_at_syncthreads_and_give_the_blocks_results(tmp_path):
    """Each thread reads a word that a warp of another group wrote before the barrier:
    right only if every group waits there for the others.  Counts are the block's."""
    rng = np.random.default_rng(3)
    a = rng.integers(-1000, 1000, 8 * 512, dtype=np.int32)
    want = (a * 3).reshape(8, 512)[:, (np.arange(512) + 200) % 512].ravel()
    reps = {}
    for name, dev in (("scheduler", grouped(tmp_path)), ("block", variant("h100", tmp_path))):
        out = dev.zeros(a.size, np.int32)
        reps[name] = dev.launch(rotate_in_shared, 8, 512, dev.to_device(a), out,
                                engine="timed-block")
        assert (out.to_host() == want).all(), name
    s, b = reps["scheduler"], reps["block"]
    assert (s.warp_instructions, s.loads, s.stores, s.shared_loads, s.shared_stores) == \
        (b.warp_instructions, b.loads, b.stores, b.shared_loads, b.shared_stores)


def test_a_reduction_with_many_barriers(tmp_path):
    """block_sums: seven barriers in a loop, 128 threads (a warp a group)."""
    dev = grouped(tmp_path)
    a = np.arange(1000, dtype=np.int32)
    sums = dev.zeros(8, np.int64)
    dev.launch(block_sums, 8, 128, dev.to_device(a), sums, 1000, engine="timed-block")
    want = [int(a[i * 128:(i + 1) * 128].sum()) for i in range(8)]
    assert sums.to_host().tolist() == want


def test_each_group_issues_on_its_own_scheduler(tmp_path):
    """Arithmetic only, one block of 16 warps: the four groups of four warps issue on the
    four schedulers at once, as the block's one group of 16 spreads over them, so the
    launch takes the same cycles either way (on one scheduler it would take four times
    the issue)."""
    cycles = {}
    for name, dev in (("scheduler", grouped(tmp_path)), ("block", variant("h100", tmp_path))):
        rep = dev.launch(arithmetic_only, 1, 512, dev.zeros(1, np.int32), 2000,
                         engine="timed-block")
        cycles[name] = rep.cycles
        assert rep.extra["sm_issue_utilization"] > 0
    assert cycles["scheduler"] == pytest.approx(cycles["block"], rel=0.01)


def test_a_barrier_only_some_lanes_of_a_group_reach_is_an_error(tmp_path):
    dev = grouped(tmp_path)
    a = dev.zeros(256, np.int32)
    with pytest.raises(KernelRuntimeError, match="only part of a block"):
        dev.launch(barrier_in_a_branch, 1, 256, a, engine="timed-block")


def test_gt200_has_one_scheduler_so_one_group(tmp_path):
    """On sim:gtx260 the setting changes nothing: one scheduler, the block is one group."""
    a = np.arange(4 * 512, dtype=np.int32)
    cycles = set()
    for dev in (grouped(tmp_path, name="gtx260"), variant("gtx260", tmp_path)):
        rep = dev.launch(rotate_in_shared, 4, 512, dev.to_device(a), dev.zeros(a.size, np.int32),
                         engine="timed-block")
        cycles.add(rep.cycles)
    assert len(cycles) == 1


def test_trace_block_says_it_does_not_replay_the_groups(tmp_path):
    """With reads booked at arrival (which trace-block replays), the groups alone send a
    race-free launch back to timed-block, and the report says why."""
    a = np.arange(1024, dtype=np.int32)
    ran = {}
    for name, value in (("scheduler", '"scheduler"'), ("block", '"block"')):
        dev = variant("h100", tmp_path, read_scheduling='"at-arrival"',
                      schedulers_per_sm=f"4\nblock_groups = {value}")
        rep = dev.launch(rotate_in_shared, 2, 512, dev.to_device(a), dev.zeros(1024, np.int32),
                         engine="trace-block")
        ran[name] = rep.extra["engine_ran"], rep.extra.get("trace_fallback", "")
    assert ran["block"] == ("trace-block", "")
    assert ran["scheduler"][0] == "timed-block" and "block_groups" in ran["scheduler"][1]


def test_an_unknown_grouping_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="block_groups"):
        grouped(tmp_path, '"warp"')
