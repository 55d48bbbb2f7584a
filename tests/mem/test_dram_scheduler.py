"""FR-FCFS across requests (simgpu.mem.dram_scheduler.FrFcfs): the order it serves reads
in, its starvation bound, and the DRAM timing rules on every schedule it makes, checked
here from its log against the config's [dram] figures (memory cycles x SM cycles per
memory cycle), not against the sub-channel's own state."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simgpu
from simgpu.configs import ConfigError, load_config
from simgpu.mem.dram_scheduler import FrFcfs
from simgpu.mem.dram_timing import SubChannel, Timing


def config(name="gtx260", **dram):
    cfg = load_config(name)
    return dataclasses.replace(cfg, dram=dataclasses.replace(cfg.dram, **dram)) if dram else cfg


def scheduler(name="gtx260", window=None, cap=None, **dram):
    """A scheduler of a closed sub-channel (every bank precharged) of a bundled config."""
    cfg = config(name, **dram)
    sc = SubChannel(Timing(cfg), cfg.memory.dram_banks_per_partition // cfg.dram.subchannels)
    sc.open_row = [-1] * sc.banks
    s = FrFcfs(sc, cfg.dram.read_queue_depth if window is None else window,
               cfg.dram.frfcfs_cap if cap is None else cap)
    s.log = []
    return s, cfg


def served_order(s) -> list[int]:
    return [entry[0] for entry in s.log]


# --------------------------------------------------------------------------- the order

def test_a_later_row_hit_is_served_before_an_older_row_miss():
    """Bank 0 opens row 1 for A; B (row 2) arrives, then C (row 1): C hits the open row
    and goes first. Booked at arrival (SubChannel.read), B is placed before C."""
    reads = [(0.0, 0, 1, 1), (1.0, 0, 2, 1), (2.0, 0, 1, 1)]     # A, B, C
    s, cfg = scheduler()
    done = s.run(reads)
    assert served_order(s) == [0, 2, 1]
    assert [hit for _, _, _, hit, *_ in s.log] == [False, True, False]
    assert done[2] < done[1]
    booked, _ = scheduler()
    ends = [booked.sub.read(b, r, n, t)[0] for t, b, r, n in reads]
    assert ends[1] < ends[2]                     # first come, first served
    assert max(done) < max(ends)                 # one activate fewer


def test_with_a_cap_of_zero_each_bank_is_first_come_first_served():
    reads = [(0.0, 0, 1, 1), (1.0, 0, 2, 1), (2.0, 0, 1, 1)]
    s, _ = scheduler(cap=0)
    s.run(reads)
    assert served_order(s) == [0, 1, 2]


def test_no_read_is_passed_by_more_than_cap_younger_reads():
    """A opens row 1, B (row 2) waits while 40 younger hits on row 1 are queued: exactly
    ``cap`` of them pass B, then B is served, then the rest (row 1 opened again)."""
    cap = 5
    reads = [(0.0, 0, 1, 1), (1.0, 0, 2, 1)] + [(2.0 + i, 0, 1, 1) for i in range(40)]
    s, _ = scheduler(window=64, cap=cap)
    s.run(reads)
    order = served_order(s)
    assert order[:cap + 2] == [0] + list(range(2, 2 + cap)) + [1]
    assert order[cap + 2:] == list(range(2 + cap, 42))
    assert s.passed_max == cap


def test_only_the_window_is_seen():
    """With a window of 2, C arrives while A and B fill it: B's miss goes first (it was
    there); with a window of 3, C is seen and passes B."""
    reads = [(0.0, 0, 1, 1), (1.0, 0, 2, 1), (2.0, 0, 1, 1)]
    narrow, _ = scheduler(window=1)
    narrow.run(reads)
    assert served_order(narrow) == [0, 1, 2]
    assert narrow.window_wait > 0
    wide, _ = scheduler(window=3)
    wide.run(reads)
    assert served_order(wide) == [0, 2, 1]


def test_a_bad_window_or_cap_is_refused():
    sc = SubChannel(Timing(config()), 8)
    with pytest.raises(ValueError, match="window of at least 1"):
        FrFcfs(sc, 0, 16)
    with pytest.raises(ValueError, match="cap >= 0"):
        FrFcfs(sc, 16, -1)


def test_a_negative_cap_in_a_config_is_refused(tmp_path):
    import pathlib
    import simgpu.configs as configs
    text = (pathlib.Path(configs.__file__).parent / "gtx260.toml").read_text()
    path = tmp_path / "mygpu.toml"
    path.write_text(text.replace("frfcfs_cap = 16", "frfcfs_cap = -1"))
    with pytest.raises(ConfigError, match="frfcfs_cap"):
        load_config(str(path))


# ------------------------------------------------------------------ streams, one partition

@pytest.mark.parametrize("device", ["sim:h100", "sim:gtx260"])
def test_one_stream_keeps_its_rate(device):
    """One sequential stream has nothing to reorder: the same fraction of the peak as
    booked at arrival, near the peak."""
    from benchmarks.dram_streams import fraction
    cfg = simgpu.get_device(device).config
    fr, hits = fraction(cfg, 1, 1024, scheduler="fr-fcfs")
    booked, booked_hits = fraction(cfg, 1, 1024)
    assert fr == pytest.approx(booked, abs=0.005)
    assert hits == booked_hits
    assert fr > 0.95


def test_a_scheduler_name_is_checked():
    from benchmarks.dram_streams import fraction
    with pytest.raises(ValueError, match="scheduler must be"):
        fraction(config("h100"), 1, 64, scheduler="fifo")


# ------------------------------------------------------------------- properties

def check_schedule(s, cfg, reads, done):
    """Every read once, no sooner than a row hit's latency, and the timing rules on the
    commands the log shows (reads of one burst: column commands are single bursts)."""
    d = cfg.dram
    k = cfg.gpu.core_clock_mhz / cfg.memory.memory_clock_mhz
    burst = d.burst_length / cfg.memory.data_rate * k
    eps = 1e-6
    assert sorted(served_order(s)) == list(range(len(reads)))
    for (arrival, _, _, n), end in zip(reads, done):
        assert end >= arrival + d.tcl * k + n * burst - eps
    per_group = s.sub.banks // d.bank_groups
    acts = sorted((act, bank) for _, bank, _, hit, act, *_ in s.log if not hit)
    by_bank: dict = {}
    for _, bank, row, hit, act, command, start, end in s.log:
        by_bank.setdefault(bank, []).append((row, hit, act, command))
        assert start == pytest.approx(command + d.tcl * k)
    for bank, seq in by_bank.items():
        last_act, last_col, row_open = None, None, None
        for row, hit, act, command in sorted(seq, key=lambda x: x[3]):
            if hit:
                assert row == row_open
            else:
                assert command >= act + d.trcd * k - eps                  # tRCD
                if last_act is not None:
                    assert act >= last_act + d.trc * k - eps              # tRC
                    assert act >= last_act + (d.tras + d.trp) * k - eps   # tRAS + tRP
                    assert act >= last_col + (d.trtp + d.trp) * k - eps   # tRTP + tRP
                last_act, row_open = act, row
            last_col = command
    for (a, ba), (b, bb) in zip(acts, acts[1:]):                           # tRRD(_L)
        same = ba // per_group == bb // per_group
        assert b - a >= (d.trrd_l if same else d.trrd) * k - eps
    if d.tfaw:
        for j in range(len(acts) - 4):                                     # tFAW
            assert acts[j + 4][0] - acts[j][0] >= d.tfaw * k - eps
    columns = sorted((command, bank // per_group) for _, bank, _, _, _, command, _, _ in s.log)
    for j, (a, ga) in enumerate(columns):                                  # tCCD(_L)
        for b, gb in columns[j + 1:]:
            assert b - a >= (d.tccd_l if ga == gb else d.tccd) * k - eps
    data = sorted((start, end) for *_, start, end in s.log)
    for (_, e), (b, _) in zip(data, data[1:]):                             # one bus
        assert b >= e - eps


def trace(banks: int):
    return st.lists(st.tuples(st.floats(0, 400, allow_nan=False), st.integers(0, banks - 1),
                              st.integers(0, 3), st.integers(1, 2)), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None)
@given(trace(8), st.integers(1, 16), st.integers(0, 8))
def test_gddr3_schedules_keep_the_timing_rules(reads, window, cap):
    s, cfg = scheduler("gtx260", window=window, cap=cap)
    done = s.run(reads)
    check_schedule(s, cfg, reads, done)
    assert s.passed_max <= cap


@settings(max_examples=40, deadline=None)
@given(trace(16), st.integers(1, 32), st.integers(0, 8))
def test_hbm3_schedules_keep_the_timing_rules(reads, window, cap):
    s, cfg = scheduler("h100", window=window, cap=cap)
    done = s.run(reads)
    check_schedule(s, cfg, reads, done)
    assert s.passed_max <= cap


@settings(max_examples=25, deadline=None)
@given(trace(8))
def test_cap_zero_serves_each_bank_in_arrival_order(reads):
    s, _ = scheduler("gtx260", cap=0)
    s.run(reads)
    for bank in range(8):
        mine = [i for i in served_order(s) if reads[i][1] == bank]
        assert mine == sorted(mine, key=lambda i: (reads[i][0], i))


@pytest.mark.parametrize("name", ["h100", "gtx260"])
def test_schedule_reads_of_lone_reads_match_booking_at_arrival(name):
    """Reads far apart have nothing to reorder: a 64-B fill (on the H100, a burst in
    each pseudo-channel) takes the same time as Dram.serve gives it, and both count
    it once."""
    from simgpu.mem.dram import Dram
    from simgpu.mem.dram_scheduler import schedule_reads
    cfg = load_config(name)
    reads = [(i * 3000.0, a) for i, a in enumerate((0, 64 * 1024, 128, 8 << 20))]
    booked, scheduled = Dram(cfg), Dram(cfg)
    amap = booked.amap
    located = [(t, *amap.where(a)[1:], 64, a) for t, a in reads if amap.where(a)[0] == 0]
    assert len(located) >= 2
    ends = [booked.serve(0, [txn[1:]], txn[0]) for txn in located]
    assert schedule_reads(scheduled, 0, located) == pytest.approx(ends)
    assert scheduled.parts[0].transactions == booked.parts[0].transactions == len(located)
    assert scheduled.parts[0].bytes == booked.parts[0].bytes
