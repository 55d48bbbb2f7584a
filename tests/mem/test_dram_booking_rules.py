"""Reads booked at their arrival (SubChannel.read, the timed engines' path) keep the
activate rules (tRRD, tRRD_L, tFAW, tRC) and tCCD_L however far ahead a bank's row
misses are booked: each activate is recorded as it is placed and the rules are checked
here from the config's [dram] figures. (Before 2026-11-26 the sub-channel forgot the
activates more than tRRD_L + tFAW twice over before the latest one it placed, so a
bank's chain of misses booked far ahead hid the present ones; both tests here fail
there. docs/memory-model.md, "FR-FCFS across requests", gives the counts.)"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import simgpu
from simgpu.configs import load_config
from simgpu.mem.native_load import source_module

# the source module even where simgpu.native compiled it (its _open is wrapped here)
_dram_timing = source_module("simgpu.mem.dram_timing")
SubChannel, Timing = _dram_timing.SubChannel, _dram_timing.Timing


def recording(cfg):
    """A sub-channel (of every rank's banks) whose activates are recorded:
    (sub-channel, [(time, bank)])."""
    sc = SubChannel(Timing(cfg), cfg.memory.dram_banks_per_partition * cfg.dram.ranks
                    // cfg.dram.subchannels)
    acts: list = []
    opened = sc._open

    def _open(bank, row, t):
        cmd = opened(bank, row, t)
        acts.append((sc.act_at[bank], bank))
        return cmd
    sc._open = _open
    return sc, acts


def check_activates(cfg, acts, banks):
    d = cfg.dram
    k = cfg.gpu.core_clock_mhz / cfg.memory.memory_clock_mhz
    per_group = banks // d.bank_groups
    eps = 1e-6
    acts = sorted(acts)
    for (a, ba), (b, bb) in zip(acts, acts[1:]):
        same = ba // per_group == bb // per_group
        assert b - a >= (d.trrd_l if same else d.trrd) * k - eps
    if d.tfaw:
        for j in range(len(acts) - 4):
            assert acts[j + 4][0] - acts[j][0] >= d.tfaw * k - eps
    for bank in range(banks):
        mine = [a for a, b in acts if b == bank]
        for a, b in zip(mine, mine[1:]):
            assert b - a >= d.trc * k - eps


def test_interleaved_streams_booked_at_arrival_keep_the_activate_rules():
    """The dram_streams trace (8 streams into one partition of sim:h100): every
    pseudo-channel's activates keep tRRD and tFAW."""
    cfg = simgpu.get_device("sim:h100").config
    from simgpu.mem.dram import AddressMap
    amap = AddressMap(cfg.memory, cfg.dram)
    per_part = cfg.memory.peak_bandwidth_gbps * 1e9 / cfg.memory.partitions / \
        (cfg.gpu.core_clock_mhz * 1e6)
    streams, fills = 8, 512
    lists = []
    for s in range(streams):
        addr, mine = s * (1 << 26), []
        while len(mine) < fills // streams:
            if amap.where(addr)[0] == 0:
                mine.append(addr)
            addr += 64
        lists.append(mine)
    order = [lists[i % streams][i // streams] for i in range(fills)]
    banks = amap.banks_per_sub
    sc, acts = recording(cfg)
    for i, a in enumerate(order):
        _, bank, row = amap.where(a)            # the fill's burst in pseudo-channel 0
        sc.read(bank % banks, row, 1, i * 64 / per_part)
    assert len(acts) > 100
    check_activates(cfg, acts, banks)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 20), st.integers(0, 15), st.integers(0, 3)),
                min_size=1, max_size=120),
       st.sampled_from(["h100", "gtx260"]))
def test_reads_booked_at_arrival_keep_the_activate_rules_and_tccd(steps, name):
    """Reads arriving in time order (each some cycles after the last) to random banks
    and rows: activates and the bursts of one bank group keep the rules."""
    cfg = load_config(name)
    banks = cfg.memory.dram_banks_per_partition // cfg.dram.subchannels
    sc, acts = recording(cfg)
    sc.open_row = [-1] * banks
    t, starts = 0.0, []
    for gap, bank, row in steps:
        t += gap
        end, _ = sc.read(bank % banks, row, 1, t)
        starts.append((end - sc.burst, (bank % banks) // sc.per_group))
    check_activates(cfg, acts, banks)
    k = cfg.gpu.core_clock_mhz / cfg.memory.memory_clock_mhz
    starts.sort()
    for (a, _), (b, _) in zip(starts, starts[1:]):          # one data bus
        assert b - a >= sc.burst - 1e-6
    if sc.group_spacing:
        for j, (a, g) in enumerate(starts):
            for b, h in starts[j + 1:]:
                if g == h:
                    assert b - a >= cfg.dram.tccd_l * k - 1e-6
