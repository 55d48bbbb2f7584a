"""The cache structures of the timing model, against hand-worked sequences."""
import pytest
from hypothesis import given, settings, strategies as st

from simgpu.mem.caches import L1Cache, SectorCache


def test_l2_sector_lru_and_write_back():
    # 4 sets x 16 ways of 32 B sectors = 2 KiB; sector s lives in set s % 4.
    c = SectorCache(2048, 32)
    assert c.sets == 4 and c.WAYS == 16
    set0 = [s * 4 * 32 for s in range(17)]          # 17 sectors of set 0
    for i, a in enumerate(set0[:16]):
        assert c.find(a) is None
        c.fill(a, 0.0, dirty=(i % 2 == 0))          # even ones written (dirty)
    assert c.misses == 16 and c.hits == 0
    assert c.find(set0[0]) is not None              # a hit makes sector 0 most recent
    c.fill(set0[16], 0.0)                           # evicts the LRU: sector 1 (clean)
    assert c.writebacks == 0 and c.evicted == []
    assert c.find(set0[1]) is None                  # gone
    c.fill(set0[1], 0.0)                            # evicts sector 2 (dirty): a write-back
    assert c.writebacks == 1 and c.evicted == [set0[2]]
    assert c.find(set0[0]) is not None and c.hits == 2


def test_l2_lookup_marks_writes_dirty():
    c = SectorCache(1024, 32)                       # 2 sets x 16 ways
    assert not c.lookup(0, write=True)              # miss, allocated dirty
    assert c.lookup(0) and c.dirty_sectors() == 1
    for k in range(1, 17):                          # 16 more sectors of set 0
        c.lookup(k * 64)
    assert c.writebacks == 1 and c.evicted == [0]


def test_l1_lines_sets_and_sector_valid_bits():
    c = L1Cache(size_bytes=4 * 2 * 128, line_bytes=128, sector_bytes=32, sets=4)
    assert (c.set_count, c.ways, c.per_line) == (4, 2, 4)
    line, k = c.find(4 * 128 * 3 + 64 + 8)          # line 12 (set 0), sector 2
    assert k == 2 and line == [None] * 4
    line[k] = 100.0                                 # the memory system fills the sector
    again, k2 = c.find(4 * 128 * 3 + 64)            # the same line: sector 2 valid
    assert again is line and again[k2] == 100.0
    assert c.find(4 * 128 * 3)[0][0] is None        # sector 0 of that line: not yet
    c.find(0)                                       # line 0, set 0: set 0 is full now
    c.find(4 * 128 * 5)                             # line 20, set 0: evicts line 12 (LRU)
    assert c.find(4 * 128 * 3)[0] == [None] * 4


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 200), min_size=1, max_size=300))
def test_l2_matches_a_reference_lru(sectors):
    """Against an independent model: per set, a list in recency order."""
    c = SectorCache(4 * 16 * 32, 32)
    ref = {s: [] for s in range(4)}
    writebacks = 0
    dirty = set()
    for i, s in enumerate(sectors):
        write = i % 3 == 0
        ways = ref[s % 4]
        hit = s in ways
        if hit:
            ways.remove(s)
        elif len(ways) == 16:
            victim = ways.pop(0)
            if victim in dirty:
                writebacks += 1
                dirty.discard(victim)
        ways.append(s)
        if write:
            dirty.add(s)
        assert c.lookup(s * 32, write=write) == hit
    assert c.writebacks == writebacks
    assert c.dirty_sectors() == len(dirty)


@pytest.mark.parametrize("size, sets", [(229376, 4), (1024, 8)])
def test_l1_ways_follow_from_size(size, sets):
    c = L1Cache(size, 128, 32, sets)
    assert c.ways == size // (128 * sets)


def test_l2_dirty_limit_writes_the_oldest_dirty_sector_back_and_keeps_it():
    c = SectorCache(2048, 32, dirty_bytes=64)       # at most 2 dirty sectors
    for a in (0, 32, 64):                           # three sectors written
        c.lookup(a, write=True)
    assert c.evicted == [0] and c.writebacks == 1   # the oldest goes back to DRAM ...
    assert c.find(0) is not None and c.dirty_sectors() == 2   # ... and stays, clean
    c.lookup(32, write=True)                        # already dirty: nothing new
    assert c.writebacks == 1 and c.dirty_count == 2
    c.lookup(0, write=True)                         # dirty again: now 32 is the oldest
    assert c.evicted == [0, 32] and c.dirty_count == 2 == c.dirty_sectors()


def test_without_a_dirty_limit_written_sectors_stay_dirty():
    c = SectorCache(2048, 32)
    for a in range(0, 32 * 40, 32):
        c.lookup(a, write=True)
    assert c.writebacks == 0 and c.dirty_sectors() == c.dirty_count == 40
