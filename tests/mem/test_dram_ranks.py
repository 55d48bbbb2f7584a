"""Ranks (HBM3 stack IDs) in a DRAM sub-channel (``[dram] ranks``, simgpu/mem/dram_timing.py).

An 8-high HBM3 stack has two stack IDs per pseudo-channel, each with its own 4 bank
groups x 4 banks; JEDEC counts tRRD and tFAW per stack ID (Ramulator 2's HBM3 model,
JESD238A: its "rank" level), and the stack IDs share the pseudo-channel's data bus.
Checked here against the config's figures, independently of the booking code: the
activate rules per rank (hypothesis), that the second rank's activates are *not*
held by the first's, the address map one to one over the doubled banks, and that a
config with one rank books exactly as before."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simgpu.configs import ConfigError, load_config
from simgpu.mem.native_load import source_module

from .test_dram_booking_rules import recording as booking_recording

_dram_timing = source_module("simgpu.mem.dram_timing")
SubChannel, Timing = _dram_timing.SubChannel, _dram_timing.Timing


def with_ranks(cfg, ranks):
    return dataclasses.replace(cfg, dram=dataclasses.replace(cfg.dram, ranks=ranks))


def h100(ranks=2):
    return with_ranks(load_config("h100"), ranks)


def recording(cfg):
    """A sub-channel of ``cfg`` whose activates are recorded as (time, bank), and its
    bank count (test_dram_booking_rules.recording)."""
    sc, acts = booking_recording(cfg)
    return sc, acts, sc.banks


def rank_and_group(cfg, bank, banks):
    """(rank, bank group) of a sub-channel's bank, from the map's rule: bank j of a
    group's numbers lies in rank j % ranks."""
    per_group = banks // cfg.dram.bank_groups
    return bank % per_group % cfg.dram.ranks, bank // per_group


def check_rules(cfg, acts, banks):
    d = cfg.dram
    k = cfg.gpu.core_clock_mhz / cfg.memory.memory_clock_mhz
    eps = 1e-6
    for rank in range(d.ranks):
        mine = sorted((a, b) for a, b in acts if rank_and_group(cfg, b, banks)[0] == rank)
        for (a, ba), (b, bb) in zip(mine, mine[1:]):
            same = rank_and_group(cfg, ba, banks) == rank_and_group(cfg, bb, banks)
            assert b - a >= (d.trrd_l if same else d.trrd) * k - eps
        for j in range(len(mine) - 4):
            assert mine[j + 4][0] - mine[j][0] >= d.tfaw * k - eps
    for bank in range(banks):
        times = sorted(a for a, b in acts if b == bank)
        for a, b in zip(times, times[1:]):
            assert b - a >= d.trc * k - eps


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 20), st.integers(0, 31), st.integers(0, 3)),
                min_size=1, max_size=120))
def test_each_rank_keeps_its_activate_rules(steps):
    cfg = h100()
    sc, acts, banks = recording(cfg)
    assert banks == 32
    sc.open_row = [-1] * banks
    t = 0.0
    starts = []
    for gap, bank, row in steps:
        t += gap
        end, _ = sc.read(bank, row, 1, t)
        starts.append(end - sc.burst)
    check_rules(cfg, acts, banks)
    starts.sort()
    for a, b in zip(starts, starts[1:]):                 # one data bus for both ranks
        assert b - a >= sc.burst - 1e-6


def test_the_second_rank_activates_while_the_first_is_held_by_trrd():
    """Row misses to eight banks at once, in eight bank groups of two ranks: each rank
    spaces its own four activates tRRD apart (HBM3: 3 x tRRD > tFAW), so the last comes
    3 x tRRD after the first; in one rank, eight banks of its four groups take 7 x tRRD."""
    cfg = h100()
    k = cfg.gpu.core_clock_mhz / cfg.memory.memory_clock_mhz
    trrd = cfg.dram.trrd * k
    sc, acts, banks = recording(cfg)
    sc.open_row = [-1] * banks
    per_group = banks // cfg.dram.bank_groups
    rank0 = [g * per_group for g in range(4)]            # bank 0 of each group, rank 0
    rank1 = [g * per_group + 1 for g in range(4)]        # bank 1 of each group, rank 1
    for b in rank0 + rank1:
        sc.read(b, 5, 1, 0.0)
    times = sorted(a for a, _ in acts)
    assert len(times) == 8
    assert times[-1] - times[0] <= 3 * trrd + 1e-6
    one, acts1, banks1 = recording(h100(1))
    one.open_row = [-1] * banks1
    for b in range(8):                                   # two banks of each of its groups
        one.read(b % 4 * (banks1 // 4) + b // 4, 5, 1, 0.0)
    times1 = sorted(a for a, _ in acts1)
    assert times1[-1] - times1[0] >= 7 * trrd - 1e-6


def test_the_address_map_spreads_rows_over_both_ranks_one_to_one():
    from simgpu.mem.dram import AddressMap
    cfg = h100()
    amap = AddressMap(cfg.memory, cfg.dram)
    assert amap.banks == 2 * cfg.memory.dram_banks_per_partition
    a = np.arange(0, amap.n * amap.interleave * 512, 32, dtype=np.int64)
    p, b, r = amap.locate(a)
    assert b.max() == amap.banks - 1
    rows = np.unique(np.stack([p, b, r]), axis=1, return_counts=True)[1]
    assert rows.min() == rows.max() == amap.bursts_per_row
    # consecutive rows of a bank group go to alternate ranks
    per_group = amap.banks_per_sub // cfg.dram.bank_groups
    ranks = (b % per_group) % 2
    assert 0.45 < ranks.mean() < 0.55


def test_traffic_of_one_rank_books_as_a_sub_channel_of_one_rank():
    """Reads and writes to rank 0's banks only: a two-rank sub-channel books them exactly
    as a one-rank sub-channel of the same 16 banks (rank 1 idle changes nothing; with
    one rank the banks and their rules are those of the model before ranks)."""
    rng = np.random.default_rng(7)
    steps = list(zip(rng.exponential(3, 400), rng.integers(0, 16, 400),
                     rng.integers(0, 4, 400), rng.random(400) < 0.3))
    results = []
    for ranks in (1, 2):
        cfg = h100(ranks)
        banks = 16 * ranks
        sc = SubChannel(Timing(cfg), banks)
        per_group = banks // 4
        t, out = 0.0, []
        for gap, bank, row, write in steps:
            t += gap
            g, j = int(bank) // 4, int(bank) % 4             # group, bank in the group
            b = g * per_group + j * ranks                    # rank 0's j-th bank there
            out.append((sc.write if write else sc.read)(b, int(row), 1, t))
        out.append(sc.flush())
        results.append((out, list(sc.acts), sc.busy, sc.activations, sc.row_hits))
    assert results[0] == results[1]
    assert results[0][3] > 50                                # (row misses were booked)


def test_interleaved_streams_gain_from_the_second_rank():
    """benchmarks/dram_streams.py, 8 streams of fills into one partition booked at
    arrival: twice the banks to hold their rows, and twice the activates per tFAW."""
    from benchmarks.dram_streams import fraction
    one, _ = fraction(load_config("h100"), 8, 1024)
    two, _ = fraction(h100(), 8, 1024)
    assert two > 1.2 * one
    alone, _ = fraction(h100(), 1, 1024)                 # one stream: as before, at the peak
    assert alone > 0.95


def test_gt200_keeps_one_rank_and_the_compiled_core():
    from simgpu.mem import fast_memory
    from simgpu.mem.memory_system import MemorySystem
    cfg = load_config("gtx260")
    assert cfg.dram.ranks == 1
    reason = "the DRAM has several ranks (stack IDs)"
    assert fast_memory.supported(MemorySystem(cfg)) != reason
    if fast_memory.ENABLED:
        assert fast_memory.supported(MemorySystem(with_ranks(cfg, 2))) == reason


def test_a_rank_count_below_one_is_refused(tmp_path):
    import pathlib

    import simgpu.configs as configs
    text = (pathlib.Path(configs.__file__).parent / "h100.toml").read_text()
    path = tmp_path / "mygpu.toml"
    assert text.count("\nranks = 1 ") == 1
    path.write_text(text.replace("\nranks = 1 ", "\nranks = 0 ", 1))
    with pytest.raises(ConfigError, match="ranks"):
        load_config(str(path))
