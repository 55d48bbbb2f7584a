"""Per-bank refresh (simgpu/mem/dram_refresh.py, HBM3 REFpb): the schedule's rules
(each bank once a round, the bank free soonest first, never before it is due or
within tRC of the bank's activate), no activate on a bank while it refreshes, and
the cost it is there for: hidden when the sub-channel is idle, paid under load."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simgpu
from simgpu.configs import ConfigError
from simgpu.mem.dram_refresh import PerBankRefresh
from simgpu.mem.native_load import source_module

_dram_timing = source_module("simgpu.mem.dram_timing")
SubChannel, Timing = _dram_timing.SubChannel, _dram_timing.Timing

# sim:h100's pseudo-channel with the HBM3 figures of h100.toml's comment (memory cycles)
REFI_PB, RFC_PB = 638, 524


def h100(refresh: bool):
    cfg = simgpu.get_device("sim:h100").config
    if refresh:
        cfg = dataclasses.replace(cfg, dram=dataclasses.replace(cfg.dram, trefi_pb=REFI_PB,
                                                                trfc_pb=RFC_PB))
    return cfg


def sub_channel(cfg):
    return SubChannel(Timing(cfg), cfg.memory.dram_banks_per_partition // cfg.dram.subchannels)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 5000), min_size=16, max_size=16),
       st.lists(st.integers(-2, 3), min_size=16, max_size=16),
       st.integers(1, 5))
def test_each_round_refreshes_every_bank_once_free_banks_first(pre_ok, open_row, rounds):
    pb = PerBankRefresh(16, 100.0, 300.0, rp=20.0, rc=50.0)
    pb.log = []
    act_at = [p - 40.0 for p in pre_ok]
    pre, rows = list(pre_ok), list(open_row)
    for r in range(rounds):
        left = set(range(16))
        for k in range(16):
            due = pb.next_due
            before = dict(zip(range(16), pre))
            rows_before = list(rows)
            pb.due(due, rows, pre, act_at)
            start, bank = pb.log[-1]
            assert bank in left                                  # once a round
            assert before[bank] == min(before[b] for b in left)  # the bank free soonest
            left.discard(bank)
            assert start >= due and start >= act_at[bank] + 50.0
            if rows_before[bank] != -1:
                assert start >= pre[bank] + 20.0                 # precharged first
            assert pb.until[bank] == start + 300.0 and rows[bank] == -1
        assert not left
    assert pb.count == 16 * rounds


def test_bad_schedule_is_refused():
    with pytest.raises(ValueError, match="per-bank refresh needs"):
        PerBankRefresh(16, 0.0, 10.0, 1.0, 1.0)


def test_config_takes_one_kind_of_refresh_and_both_figures():
    cfg = simgpu.get_device("sim:gtx260").config
    assert cfg.dram.trefi_pb == 0 and cfg.dram.trfc_pb == 0      # GT200: all-bank only
    from simgpu.configs import load_config
    import pathlib
    import tempfile
    src = pathlib.Path(simgpu.__file__).parent / "configs" / "h100.toml"
    text = src.read_text()
    for changes, word in (({"trefi_pb": 638}, "go together"),
                          ({"trefi_pb": 638, "trfc_pb": 524, "trefi": 10000, "trfc": 500},
                           "not both")):
        t = text
        for k, v in changes.items():
            import re
            t = re.sub(rf"^({k}\s*=\s*)\d+", rf"\g<1>{v}", t, flags=re.M)
        with tempfile.TemporaryDirectory() as tmp:
            p = pathlib.Path(tmp) / "h.toml"
            p.write_text(t)
            with pytest.raises(ConfigError, match=word):
                load_config(str(p))


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 15), st.integers(0, 3), st.floats(0, 40.0)),
                min_size=20, max_size=200))
def test_no_activate_while_its_bank_refreshes(reads):
    cfg = h100(True)
    sc = sub_channel(cfg)
    sc.pb.log = []
    acts = []
    opened = sc._open

    def _open(bank, row, t):
        cmd = opened(bank, row, t)
        acts.append((sc.act_at[bank], bank))
        return cmd
    sc._open = _open
    t = 0.0
    for bank, row, gap in reads:
        t += gap
        sc.read(bank, row, 1, t)
    k = Timing(cfg).per_memory_cycle
    for start, bank in sc.pb.log:
        end = start + RFC_PB * k
        assert not [a for a, b in acts if b == bank and start - 1e-9 < a < end - 1e-9]


def _mean_latency(cfg, gap: float, n: int = 3000) -> float:
    """Reads of a stream over every bank (4 bursts a row per bank group, as the address
    map lays a stream out), one every ``gap`` SM cycles: mean cycles to data."""
    sc = sub_channel(cfg)
    total = 0.0
    for i in range(n):
        group, j = i % 4, i // 4
        bank = group * 4 + (j // 32) % 4           # a 1 KiB row: 32 bursts a bank
        row = j // 128
        t = i * gap
        end, _ = sc.read(bank, row, 1, t)
        total += end - t
    return total / n


def test_refresh_is_hidden_when_idle_and_paid_under_load():
    """A stream at a tenth of the bus's rate waits for no refresh (the controller
    refreshes the banks the stream is not using); at 95% of it, it does."""
    cfg = h100(False)
    burst = Timing(cfg).burst_slot
    light = _mean_latency(h100(True), 10 * burst) - _mean_latency(cfg, 10 * burst)
    heavy = _mean_latency(h100(True), 1.05 * burst) - _mean_latency(cfg, 1.05 * burst)
    base = _mean_latency(cfg, 10 * burst)
    # idle: within 5% of the latency either way (a refresh may even close a row the
    # stream has left, sparing its next activate the precharge); loaded: a cost, and
    # several times the idle difference
    assert abs(light) < 0.05 * base
    assert heavy > 0.1 * base and heavy > 5 * abs(light)
