"""The DRAM address map's lanes (``[dram] lane_bytes``, simgpu/mem/dram.py).

A partition's bursts rotate over its sub-channels and bank groups (its lanes).  With
``lane_bytes`` the map keeps that many consecutive bytes in one lane, in one bank's row,
before moving on, so a 64-B access of HBM3 opens one row in one pseudo-channel instead
of one row in each.  Checked here: the map stays one to one for every lane size, a run
of ``lane_bytes`` lies in one row, ``pieces`` merges exactly the bursts that share a row,
random 64-B reads open one row each instead of two, a config without the key books as
before, and sizes the map cannot keep are refused."""
from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simgpu.configs as configs
from simgpu.configs import ConfigError, load_config
from simgpu.mem.dram import AddressMap, Dram


def h100(lane_bytes, swizzle=False):
    cfg = load_config("h100")
    return dataclasses.replace(cfg, dram=dataclasses.replace(cfg.dram, lane_bytes=lane_bytes,
                                                             lane_swizzle=swizzle))


@settings(max_examples=16, deadline=None)
@given(st.sampled_from([0, 32, 64, 128, 256, 1024]), st.integers(0, 1 << 20), st.booleans())
def test_the_map_is_one_to_one_and_a_run_stays_in_one_row(lane_bytes, base_line, swizzle):
    cfg = h100(lane_bytes, swizzle)
    amap = AddressMap(cfg.memory, cfg.dram)
    span = amap.n * amap.row_bytes * amap.banks        # every row of every bank, once
    a = np.arange(0, span, amap.burst, dtype=np.int64)
    p, b, r = amap.locate(a)
    rows = np.unique(np.stack([p, b, r]), axis=1, return_counts=True)[1]
    assert rows.min() == rows.max() == amap.bursts_per_row
    run = max(lane_bytes, amap.burst)
    if run > amap.interleave:                          # (a run then spans partitions)
        return
    start = base_line * run                            # any aligned run, far out too
    where = {amap.where(start + k) for k in range(0, run, amap.burst)}
    assert len(where) == 1
    (part, bank, _), = where
    nxt = amap.where(start + run)
    if lane_bytes >= amap.burst and nxt[0] == part and not swizzle:   # the next lane
        assert nxt[1] // amap.banks_per_group != bank // amap.banks_per_group


def lanes_used(amap, addresses):
    """How many of a partition's reads each lane (sub-channel, bank group) takes."""
    p, b, _ = amap.locate(addresses)
    b = b[p == 0]
    return np.bincount(b // amap.banks_per_group, minlength=amap.lanes)


@pytest.mark.parametrize("stride", [64, 128, 256, 512, 2048, 1 << 14])
def test_the_swizzle_spreads_power_of_two_strides_over_every_lane(stride):
    """64-B reads every ``stride`` bytes (the fills of a strided read): with the plain
    rotation of 64-B runs, 128 B and wider strides leave lanes idle (at 128 B every read
    is in pseudo-channel 0); with the swizzle each lane takes its eighth within 5%."""
    a = np.arange(0, 1 << 30, stride, dtype=np.int64)[: 1 << 20]
    plain = lanes_used(AddressMap(h100(64).memory, h100(64).dram), a)
    mixed = lanes_used(AddressMap(h100(64, True).memory, h100(64, True).dram), a)
    assert mixed.max() <= 1.05 * mixed.mean() and mixed.min() >= 0.95 * mixed.mean()
    if stride >= 128:
        assert plain.min() == 0
    if stride == 128:
        amap = AddressMap(h100(64).memory, h100(64).dram)
        assert plain.reshape(amap.subs, amap.groups)[1].sum() == 0   # sub-channel 1 idle


def test_pieces_merge_the_bursts_of_one_row():
    split, kept = (AddressMap(c.memory, c.dram) for c in (h100(0), h100(64)))
    for a in (0, 4096, 123 * 64):
        one = kept.pieces(a, 64)
        assert len(one) == 1 and one[0][2] == 2
        two = split.pieces(a, 64)
        assert [n for _, _, n in two] == [1, 1]
        assert two[0][0] // split.banks_per_sub != two[1][0] // split.banks_per_sub
    whole = kept.pieces(0, 128)                        # two runs: two lanes
    assert [n for _, _, n in whole] == [2, 2] and whole[0][0] != whole[1][0]


def random_reads(cfg, count=2000, seed=3):
    """Random 64-B reads over 1 GiB of one partition, eight a cycle (far more than its
    banks can take): activations per read and when the last is done."""
    dram = Dram(cfg, AddressMap(cfg.memory, cfg.dram))
    rng = np.random.default_rng(seed)
    txns = []
    for a in rng.integers(0, 1 << 24, 400 * count) * 64:
        part, bank, row = dram.amap.where(int(a))
        if part == 0:
            txns.append((bank, row, 64, int(a)))
    assert len(txns) >= count
    last = 0.0
    for i in range(0, count, 8):
        last = max(last, dram.serve(0, txns[i:i + 8], i / 8, [])[0])
    p = dram.parts[0]
    return p.activations / p.transactions, last


def test_a_random_64_byte_read_opens_one_row_not_two():
    two_rows, slow = random_reads(h100(0))
    one_row, fast = random_reads(h100(64))
    assert two_rows > 1.8 and one_row < 1.05
    assert fast < 0.75 * slow                          # activates bind random reads


def test_without_the_key_the_map_is_the_burst_rotation():
    default = load_config("h100")
    assert default.dram.lane_bytes in (0, 64)
    a = np.arange(0, 1 << 22, 32, dtype=np.int64)
    base = AddressMap(h100(0).memory, h100(0).dram).locate(a)
    one = AddressMap(h100(32).memory, h100(32).dram).locate(a)   # one burst: the same
    for x, y in zip(base, one):
        assert np.array_equal(x, y)


def test_a_lane_size_the_map_cannot_keep_is_refused(tmp_path):
    text = (pathlib.Path(configs.__file__).parent / "h100.toml").read_text()
    marker = "\nlane_bytes = 0 "
    assert text.count(marker) == 1
    for bad in (48, 3072):                             # not whole bursts; not in a row
        path = tmp_path / f"lanes{bad}.toml"
        path.write_text(text.replace(marker, f"\nlane_bytes = {bad} ", 1))
        with pytest.raises(ConfigError, match="lane_bytes"):
            load_config(str(path))


@pytest.mark.parametrize("lane_bytes", [0, 64])
def test_a_fill_asked_for_by_its_upper_sector_reads_its_block_from_the_start(lane_bytes):
    """A load of the second 32-B sector of a 64-B block fills the block (l2_fill_bytes):
    the DRAM reads the block's two bursts, the rows of its first and second sector, not
    the sector asked for and the one after the block."""
    from simgpu.mem.memory_system import MemorySystem
    cfg = h100(lane_bytes)
    assert cfg.cache.l2_fill_bytes == 64
    ms = MemorySystem(cfg)
    base = 64 * 1237
    ms.access("load", [base + 32], [4], 0.0, 0)
    part = ms.amap.where(base)[0]
    p = ms.dram.parts[part]
    assert p.bytes == 64 and sum(q.bytes for q in ms.dram.parts) == 64
    opened = {(i * ms.amap.banks_per_sub + b, r)
              for i, sc in enumerate(p.subs) for b, r in enumerate(sc.open_row) if r >= 0}
    want = {ms.amap.where(base + k)[1:] for k in (0, 32)}
    assert opened == want
    assert p.activations == (1 if lane_bytes else 2)
