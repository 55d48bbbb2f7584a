"""The H100's hashed address map (simgpu/mem/slice_hash.py) against what the probes
measured on the card, and its own promises: one to one, even over any aligned block,
power-of-two strides spread, the same answer for an int and a numpy array."""
from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simgpu.configs as configs
from simgpu.configs import load_config
from simgpu.mem.caches import L2
from simgpu.mem.dram import AddressMap
from simgpu.mem.slice_hash import mix, parity

H100 = load_config("h100")
MASK_BITS = (12, 13, 16, 17, 19)          # calibration/l2_chunks.py's fit
#: the probed hash (h100.toml's commented lines: judged once, not kept; see there)
HASH = dict(partition_hash_unit_bytes=4096, partition_half_mask=0xB3000,
            partition_hash_page_bytes=2 << 20)


def amap(**memory):
    cfg = H100
    return AddressMap(dataclasses.replace(cfg.memory, **(HASH | memory)), cfg.dram)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, (1 << 63) - 1))
def test_mix_and_parity_agree_on_ints_and_int64_arrays(x):
    assert int(mix(np.array([x], np.int64))[0]) == mix(x) < 1 << 32
    assert parity(x) == bin(x).count("1") % 2 == int(parity(np.array([x], np.int64))[0])


def test_aligned_pieces_match_the_slice_probe():
    """calibration/l2_slice_map.py: an aligned 1 KiB is 2 slices, 2 KiB 4, 4 KiB 8, the
    1 KiB from 512 four; and a 4 KiB lies in one L2 half (l2_chunks.py)."""
    m = amap()
    for base in (0, 3 << 12, 977 << 12, 5 << 30):
        for start, size, parts in ((0, 1024, 2), (0, 2048, 4), (0, 4096, 8), (512, 1024, 4),
                                   (2048, 2048, 4)):
            got = {m.where(base + a)[0] for a in range(start, start + size, 32)}
            assert len(got) == parts, (base, start, size)
        assert len({m.where(base + a)[0] % 2 for a in range(0, 4096, 256)}) == 1


def test_the_half_is_the_parity_of_the_probed_bits_within_a_page():
    """Within a 2 MiB page, two 4 KiB chunks share a home half exactly when bits 12, 13,
    16, 17 and 19 have the same parity; the constant differs between pages."""
    m, l2 = amap(), L2.for_config(H100.cache)
    assert H100.cache.l2_halves == 2
    flips = set()
    for page in range(8):
        base = page << 21
        homes = [l2.home(m.where(base + (u << 12))[0]) for u in range(512)]
        bits = [sum((u << 12) >> b & 1 for b in MASK_BITS) % 2 for u in range(512)]
        flips.add(homes[0] ^ bits[0])
        assert all(h ^ b == homes[0] ^ bits[0] for h, b in zip(homes, bits))
    assert flips == {0, 1}


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 1 << 24), st.integers(1, 6))
def test_one_to_one_and_even_over_aligned_blocks(block, blocks):
    """Each (partition, bank, row) of any aligned run of 40 KiB blocks holds its bursts
    once (no two addresses share a place), and each partition gets the same share."""
    m = amap()
    span = m.hashed.block * m.hashed.unit                   # 10 units of 4 KiB
    a = block * span + np.arange(0, blocks * span, 32, dtype=np.int64)
    p, b, r = m.locate(a)
    _, local = m.hashed.locate(a)
    assert len(np.unique(np.stack([p, local]), axis=1)[0]) == len(a)
    counts = np.bincount(p, minlength=m.n)
    assert counts.min() == counts.max() == len(a) // m.n


def test_rows_hold_whole_rows_of_bursts():
    m = amap()
    a = np.arange(0, m.n * m.interleave * 512, 32, dtype=np.int64)
    rows = np.unique(np.stack(m.locate(a)), axis=1, return_counts=True)[1]
    assert rows.min() == rows.max() == m.bursts_per_row


@pytest.mark.parametrize("stride_bits", range(12, 22))
def test_power_of_two_strides_spread_over_the_slices(stride_bits):
    """A matrix column (2,048 addresses a power of two apart, 4 KiB to 2 MiB) reaches at
    least 60 of the 80 slices; round robin puts the 8 KiB one on 5."""
    a = (1 << 30) + 4 * 7 + (np.arange(2048, dtype=np.int64) << stride_bits)
    assert len(np.unique(amap().locate(a)[0])) >= 60
    if stride_bits == 13:
        assert len(np.unique(amap(partition_hash_unit_bytes=None).locate(a)[0])) == 5


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, H100.memory.global_memory_bytes - 1), min_size=1, max_size=40))
def test_an_array_and_its_ints_are_placed_alike(addresses):
    m = amap()
    p, b, r = m.locate(np.array(addresses, np.int64))
    assert [tuple(map(int, x)) for x in zip(p, b, r)] == [m.where(a) for a in addresses]


def _h100_text() -> str:
    """h100.toml with the hash's lines in force, commented or not."""
    import re
    text = (pathlib.Path(configs.__file__).parent / "h100.toml").read_text()
    for key in HASH:
        text = re.sub(rf"(?m)^# ({key} = )", r"\1", text)
    return text


def test_the_hash_s_lines_load():
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        p = pathlib.Path(tmp) / "hashed.toml"
        p.write_text(_h100_text())
        m = load_config(str(p)).memory
    assert {k: getattr(m, k) for k in HASH} == HASH


def _h100_with(tmp_path, old, new):
    text = _h100_text()
    assert old in text
    path = tmp_path / "mygpu.toml"
    path.write_text(text.replace(old, new))
    return str(path)


@pytest.mark.parametrize("old, new, message", [
    ("partition_hash_unit_bytes = 4096", "partition_hash_unit_bytes = 3072",
     "partition_hash_unit_bytes: 3072 is not a power of two"),
    ("partition_hash_unit_bytes = 4096", "partition_hash_unit_bytes = 256",
     "partition_hash_unit_bytes: 256 is not a power of two that holds whole"),
    ("partitions = 80", "partitions = 40",
     "do not divide the 40 partitions"),
    ("partition_hash_unit_bytes = 4096", "",
     "partition_half_mask: goes with the address hash"),
    ("partition_half_mask = 0xB3000", "partition_half_mask = 0xB2000",
     "partition_half_mask: 0xb2000 must set the bit of the hash's unit"),
    ("partition_half_mask = 0xB3000", "partition_half_mask = 0xB3800",
     "and no lower ones"),
    ("partition_hash_page_bytes = 2097152", "partition_hash_page_bytes = 4096",
     "partition_hash_page_bytes: 4096: give a power of two at least two units"),
])
def test_a_bad_hash_is_refused_by_name(tmp_path, old, new, message):
    with pytest.raises(configs.ConfigError, match=message.replace("(", r"\(")):
        load_config(_h100_with(tmp_path, old, new))


def test_a_half_mask_needs_an_l2_of_two_halves():
    import tomllib
    data = tomllib.loads(_h100_text())
    data["cache"] = {k: v for k, v in data["cache"].items()
                     if not k.startswith(("l2_far", "l2_fabric"))} | {"l2_halves": 1}
    with pytest.raises(configs.ConfigError, match="partition_half_mask: chooses an L2 half"):
        configs.parse_config(data, "mygpu.toml")
