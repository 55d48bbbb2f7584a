"""The latency sim:h100's loads gain under load (docs/results/h100-loaded-latency.md): it
comes from the L2 slices' fill ports (``l2_fill_bandwidth_gbps``, fitted to the
calibration's cold streaming cases), the one queue that only DRAM data take. These tests
check the properties the fit relies on: the wait at a port grows with the load offered to
it and is small while the load is low, a lone miss pays nothing for it, a dense cold stream
pays it, and the configs without an L2 (the GT200 path) have no such queue."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import simgpu
from simgpu.mem.memory_system import MemorySystem

from ..sim.test_memory_timing import chunks_of


def memory(name: str = "sim:h100", fill_gbps="as configured") -> MemorySystem:
    cfg = simgpu.get_device(name).config
    if fill_gbps != "as configured":
        cfg = dataclasses.replace(cfg, cache=dataclasses.replace(cfg.cache,
                                                                 l2_fill_bandwidth_gbps=fill_gbps))
    return MemorySystem(cfg)


def mean_port_wait(load: float, seed: int, blocks: int = 400) -> float:
    """Mean wait (SM cycles) of ``blocks`` 64-B blocks back from DRAM at random times at one
    slice's fill port, offered at ``load`` x the port's rate."""
    s = memory().slices
    per_block = 64 / (s.fill_ports[0].capacity / 64.0 * 32)   # cycles the port takes a block
    span = blocks * per_block / load
    arrive = np.sort(np.random.default_rng(seed).uniform(0.0, span, blocks))
    filled = s._fill_ports([(0, i, 64, False) for i in range(blocks)],
                           lambda p, i: float(arrive[i]))
    return float(np.mean([filled[0, i] - arrive[i] for i in range(blocks)])), per_block


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_wait_at_a_fill_port_grows_with_the_load_offered(seed):
    waits = []
    for load in (0.2, 0.5, 0.8, 0.95):
        wait, per_block = mean_port_wait(load, seed)
        waits.append(wait)
    assert waits == sorted(waits) and waits[-1] > waits[0]
    # (the port books in windows of 64 cycles, fluid within one: a light load waits under a
    # block's own time on average, a load near the rate several times that)
    assert waits[0] < per_block
    assert waits[-1] > 2 * waits[1]


def test_a_lone_miss_does_not_depend_on_the_fill_rate():
    """At low load the fitted ports add nothing: one warp's cold miss costs the same with
    ports ten times faster (the unloaded latency stays the calibrated chase's)."""
    fast = 10 * memory().config.cache.l2_fill_bandwidth_gbps
    for sm in (0, 1):                       # (near and far homes: SM 1 sits by the other half)
        fitted = memory().access("load", [0, 32, 64, 96], [32] * 4, 0.0, sm=sm)
        assert fitted == memory(fill_gbps=fast).access("load", [0, 32, 64, 96], [32] * 4, 0.0,
                                                       sm=sm)


def test_a_dense_cold_stream_waits_at_the_fill_ports():
    """SMs of each half asking at once for many lines homed in the other half: slices 0 and
    1 write both their own blocks and the other's near copies (two channels' worth of DRAM
    data a port, more than its rate), so the same fills make the last data come later with
    ports at 4,600 GB/s (the calibration's fit, not kept in h100.toml) than with ports ten
    times faster."""
    def last(ms):
        half = ms.slices.sm_half
        chunks = {p: chunks_of(ms, p, 4 * 66) for p in (0, 1)}
        done, taken = 0.0, {0: 0, 1: 0}
        for sm in range(132):
            part = half[sm] ^ 1                  # homed in the other half: a far miss
            mine = chunks[part][taken[part]: taken[part] + 4]
            taken[part] += 4
            addresses = [c + 32 * j for c in mine for j in range(8)]
            done = max(done, ms.access("load", addresses, [32] * len(addresses), 0.0, sm=sm))
        return done, ms.slices.fill_port_bytes
    slow, nbytes = last(memory(fill_gbps=4600.0))
    fast, nbytes_fast = last(memory(fill_gbps=46000.0))
    assert nbytes == nbytes_fast > 0            # the same fills, booked on the ports
    assert slow > 1.05 * fast


@pytest.mark.parametrize("name", ["sim:gtx260", "sim:gtx280"])
def test_the_gt200_configs_have_no_fill_ports(name):
    """The fit changes sim:h100 only: a config without an L2 has no slices, so no port."""
    cfg = simgpu.get_device(name).config
    assert not cfg.cache.present
    assert MemorySystem(cfg).slices is None
