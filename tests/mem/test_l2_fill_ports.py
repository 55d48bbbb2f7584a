"""The L2 slices' fill ports (simgpu/mem/l2_slices.py, ``l2_fill_bandwidth_gbps``): what DRAM
returns for a load miss is written into its home slice (and, homed in the far half, into
the near one) through a port of the slice's own, when the data are back, not through the
budgets that hits and read-outs take (GPGPU-Sim's fill port apart from its data port)."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simgpu
from simgpu.configs import ConfigError
from simgpu.mem.interconnect import WINDOW
from simgpu.mem.memory_system import MemorySystem

from ..sim.test_memory_timing import chunks_of, dram_load_cycles, variant, without_l1_pipe


def memory(fill_gbps="as configured") -> MemorySystem:
    """A fresh sim:h100 memory system; ``fill_gbps``: the fill ports' rate (None: none)."""
    cfg = without_l1_pipe(simgpu.get_device("sim:h100").config)
    if fill_gbps != "as configured":
        cfg = dataclasses.replace(cfg, cache=dataclasses.replace(cfg.cache,
                                                                 l2_fill_bandwidth_gbps=fill_gbps))
    return MemorySystem(cfg)


def sm_beside(ms, half: int) -> int:
    return ms.slices.sm_half.index(half)


def test_a_miss_books_its_read_out_on_the_slice_and_its_block_on_the_fill_ports():
    ms = memory()
    s = ms.slices
    fill = s.l2_fill                                   # 64 B on the H100
    done = ms.access("load", [0], [32], 0.0, sm=sm_beside(ms, 0))   # partition 0: home half 0
    # the sector's read-out (32 B) is all the combined budget carries; the block goes in
    # through slice 0's fill port
    assert s.l2_free[0] == pytest.approx(32 / s.l2_bytes_per_cycle) and s.l2_free[1] == 0
    assert s.slice_bytes == 32 and s.fill_port_bytes == fill
    # an idle port adds no wait: the miss costs what it did without ports
    assert done == pytest.approx(dram_load_cycles(simgpu.get_device("sim:h100")))
    ms.access("load", [256], [32], 0.0, sm=sm_beside(ms, 0))        # partition 1: far
    # homed in the far half: its home slice (1) and the near copy's (0) both write the
    # block; the sector leaves for the SM from the near slice
    assert s.fill_port_bytes == 3 * fill and s.slice_bytes == 64
    assert s.l2_free[1] == 0 and s.l2_free[0] == pytest.approx(64 / s.l2_bytes_per_cycle)


def test_without_fill_ports_a_fill_takes_the_combined_budget():
    """The model before the ports (and any config without the key): the block is booked on
    its slices' combined budget when the miss is issued."""
    ms = memory(None)
    s = ms.slices
    assert s.fill_ports is None
    ms.access("load", [0], [32], 0.0, sm=sm_beside(ms, 0))
    assert s.l2_free[0] == pytest.approx((s.l2_fill + 32) / s.l2_bytes_per_cycle)
    assert s.fill_port_bytes == 0 and s.slice_bytes == s.l2_fill + 32


def test_hits_do_not_wait_behind_fills():
    """64 misses of one slice, then a hit there: with fill ports the hit waits only for the
    misses' read-outs ahead of it; without them, for their blocks too."""
    def hit_time(fill_gbps):
        ms = memory(fill_gbps)
        sm = sm_beside(ms, 0)
        chunks = chunks_of(ms, 0, 65)
        ms.access("load", chunks[:64], [32] * 64, 0.0, sm=sm)
        ms.l2.lookup(chunks[64], half=0)                 # resident, clean
        return ms.access("load", [chunks[64]], [32], 0.0, sm=sm), ms.slices
    with_ports, s = hit_time("as configured")
    without, _ = hit_time(None)
    per_cycle = s.l2_bytes_per_cycle
    request = s.l2_request_cycles
    # the hit's slice work: 64 read-outs and its own sector at the combined rate, or the
    # 65 requests ahead of it where those bind
    slice_done = max(65 * 32 / per_cycle, 65 * request)
    assert with_ports == pytest.approx(slice_done + s.l2_latency)
    assert without == pytest.approx(max((64 * (32 + s.l2_fill) + 32) / per_cycle, 65 * request)
                                    + s.l2_latency)
    assert without > with_ports


def test_a_slow_fill_port_delays_the_data_by_its_rate():
    """With a port far slower than the DRAM, blocks back at nearly the same time leave it
    one block time apart: the last sector is the SM's a lone miss's time plus the other 15
    blocks' fill time after the first."""
    ms = memory(80.0)                                  # 1 GB/s a slice
    s = ms.slices
    sm = sm_beside(ms, 0)
    chunks = chunks_of(ms, 0, 16)
    block_cycles = s.l2_fill / (80.0 / s.n * 1e3 / ms.config.gpu.core_clock_mhz)
    alone = memory().access("load", chunks[:1], [32], 0.0, sm=sm)
    done = ms.access("load", chunks, [32] * 16, 0.0, sm=sm)
    # (the port books in windows of interconnect.WINDOW cycles, fluid within one)
    assert done >= alone + 15 * block_cycles - WINDOW
    assert done <= alone + 16 * block_cycles + WINDOW
    assert ms.slices.fill_ports[0].waited > 0


def test_fills_booked_out_of_time_order_fill_the_earlier_gap():
    """Fills are booked when their DRAM time is computed, not in time order: one due early,
    booked after one due much later, does not queue behind it."""
    s = memory().slices
    late = s._fill_ports([(0, 0, 64, False)], lambda p, i: 100_000.0)
    early = s._fill_ports([(0, 0, 64, False)], lambda p, i: 100.0)
    assert late[0, 0] == pytest.approx(100_000.0) and early[0, 0] == pytest.approx(100.0)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, (1 << 20) // 32 - 1), min_size=1, max_size=64, unique=True),
       st.integers(0, 1))
def test_cold_loads_book_their_read_outs_on_the_slices_and_their_blocks_on_the_ports(sectors, half):
    """For any cold load: the combined budgets carry 32 B per sector asked for, the fill
    ports each DRAM block once at its home and once more as the near copy when the home is
    the far half (counted independently from the address map)."""
    ms = memory()
    s = ms.slices
    addresses = [k * 32 for k in sectors]
    ms.access("load", addresses, [32] * len(addresses), 0.0, sm=sm_beside(ms, half))
    blocks = {a - a % s.l2_fill for a in addresses}
    expected = sum(s.l2_fill * (2 if ms.amap.where(b)[0] & 1 != half else 1) for b in blocks)
    assert s.slice_bytes == 32 * len(addresses)
    assert s.fill_port_bytes == expected
    assert ms.summary(1000.0)["l2_fill_port_bytes"] == expected


def test_a_fill_rate_must_be_positive_and_needs_an_l2(tmp_path):
    with pytest.raises(ConfigError, match="l2_fill_bandwidth_gbps"):
        variant("h100", tmp_path, l2_fill_bandwidth_gbps=-5.0)
    with pytest.raises(ConfigError, match="l2_fill_bandwidth_gbps.*present = false"):
        variant("gtx260", tmp_path, present="false\nl2_fill_bandwidth_gbps = 100.0")
