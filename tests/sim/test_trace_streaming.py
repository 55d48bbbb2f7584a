"""trace-block records a wave as far as its blocks' replay asks (simgpu.sim.trace_record
.Wave.advance), so what it holds is bounded by how far the fastest block runs ahead of
the slowest, not by the wave's run.  At the sizes of the other tests every launch is
recorded whole before its timing starts (RECORD_AHEAD_LANES); here nothing is, so
the recording runs interleaved with the timing, as it does at the paper's sizes."""
import numpy as np
import pytest

import simgpu
import simgpu.sim.trace_compiled as trace_compiled
import simgpu.sim.trace_record as trace_record
import simgpu.sim.trace_replay as trace_replay
from tests.sim import trace_kernels as T
from tests.sim.test_trace_engine import DEVICES, assert_same, comparable, rank_both


@pytest.fixture
def nothing_ahead(monkeypatch):
    monkeypatch.setattr(trace_replay, "RECORD_AHEAD_LANES", 0)


@pytest.mark.parametrize("device,packing", [("sim:gtx260", 64), ("sim:gtx260", 48),
                                            ("sim:h100", 64)])
def test_list_ranking_identical_when_recorded_during_the_timing(nothing_ahead, device,
                                                                packing):
    a, b = rank_both(device, "random-splitter", packing, n=2048)
    np.testing.assert_array_equal(a.ranks, b.ranks)
    for ra, rb in zip(a.launches, b.launches):
        assert comparable(ra) == comparable(rb), ra.kernel
    assert b.launches[2].extra["engine_ran"] == "trace-block"       # the walk


@pytest.mark.parametrize("device", DEVICES)
def test_hand_kernels_identical_when_recorded_during_the_timing(nothing_ahead, device):
    rng = np.random.default_rng(11)
    a, b = (rng.integers(0, 100, 3000).astype(np.int32) for _ in range(2))
    assert_same(device, T.far_uses, (12, 1, 1), (256, 1, 1), lambda d: [
        d.to_device(a), d.to_device(b), d.zeros(3000, np.int32), np.int32(3000)])
    assert_same(device, T.shared_rotate, (40, 1, 1), (64, 1, 1), lambda d: [
        d.to_device(a), d.zeros(3000, np.int32), np.int32(3000), np.int32(5)])


def test_what_is_held_is_bounded_not_the_whole_run(nothing_ahead, monkeypatch):
    """A grid-stride loop of 200 turns in one wave of 4 blocks: the blocks replay at
    the same pace, so the queued entries stay a few turns' worth, far below the run's."""
    held = {"max": 0, "items": 0}
    advance = trace_record.Wave.advance

    def counting_advance(self):
        advance(self)
        if self.queues is None:         # the compiled replay's log (trace_log.LoggedWave):
            # its memory items (numbered count apart; a wait is no item there), and the
            # rows its blocks hold
            held["items"] = self.numbering[0] // self.count
            held["logged"] = True
            now = int((self.log.tail - self.log.head).sum())
        else:
            held["items"] = self.items
            now = sum(len(q) for q in self.queues)
        held["max"] = max(held["max"], now)

    monkeypatch.setattr(trace_record.Wave, "advance", counting_advance)
    n = 4 * 128 * 200
    dev = simgpu.get_device("sim:gtx260")
    src = dev.to_device(np.arange(n, dtype=np.int32))
    dst = dev.zeros(n, np.int32)
    rep = dev.launch(T.grid_stride_copy, (4, 1, 1), (128, 1, 1), src, dst, np.int32(n),
                     engine="trace-block")
    assert rep.extra["engine_ran"] == "trace-block"
    np.testing.assert_array_equal(dst.to_host(), 2 * np.arange(n))
    # every turn: a load, a wait for it, a store, for each of the 4 blocks; the
    # compiled replay (trace_compiled) records up to AHEAD entries a block further
    assert held["items"] >= (2 if held.get("logged") else 3) * 200
    ahead = trace_compiled.AHEAD if trace_compiled.ENABLED else 0
    assert held["max"] <= 4 * (3 * 10 + ahead), held


def test_random_shapes_identical_when_recorded_during_the_timing(nothing_ahead):
    from tests.sim.test_trace_engine import test_random_inputs_and_shapes_identical
    test_random_inputs_and_shapes_identical()      # (its hypothesis settings, nothing ahead)
