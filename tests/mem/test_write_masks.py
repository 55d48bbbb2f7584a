"""An L2 that keeps which bytes of a sector were written (``[cache] l2_write_masks``):
a partly written sector holds no data for its other bytes, so a load of it misses and
its write-back reads it from DRAM first (calibration/partial_stores.py)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simgpu.lang import Array, blockDim, blockIdx, i32, kernel, threadIdx
from simgpu.mem.access import MemoryAccess
from simgpu.mem.caches import SectorCache
from simgpu.sim.sm import store_masks
from tests.sim.test_memory_timing import variant

FULL = (1 << 32) - 1


def test_a_partly_written_sector_is_merged_when_filled_and_read_before_its_write_back():
    c = SectorCache(2048, 32)                          # 4 sets x 16 ways
    e = c.fill(0, 5.0, dirty=True, mask=0xF)           # one 4-B word written
    assert e == [5.0, True, 0xF] and c.dirty_count == 1
    again = c.fill(0, 9.0)                             # its DRAM data come: merged in place
    assert again is e and e == [9.0, True, FULL] and c.dirty_count == 1
    c.fill(64 * 32, 0.0, dirty=True, mask=0xF0)        # set 0 again, written in part
    for k in range(2, 18):                             # 16 more sectors of set 0 evict both
        c.fill(k * 4 * 32 * 16, 0.0)
    assert c.evicted == [0, 64 * 32] and c.merge_reads == [64 * 32]


def test_the_dirty_limit_writes_a_partial_sector_back_with_a_read_first():
    c = SectorCache(2048, 32, dirty_bytes=32)          # one dirty sector at most
    first = c.fill(0, 0.0, dirty=True, mask=0xF)
    c.fill(32, 0.0, dirty=True)                        # whole: the first goes back
    assert c.evicted == [0] and c.merge_reads == [0]
    assert first[1] is False and first[2] == FULL      # clean, and whole after the merge
    c.fill(64, 0.0, dirty=True, mask=0xF)              # the whole one goes back: no read
    assert c.evicted == [0, 32] and c.merge_reads == [0]


def access(addresses, warps, word_size):
    a = np.asarray(addresses, np.int64)
    return MemoryAccess("store", "global", None, "x", np.asarray(warps, np.int64),
                        np.arange(a.size) % 32, a, word_size)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([1, 2, 4, 8, 16]), st.data())
def test_store_masks_are_the_bytes_each_warp_writes(size, data):
    n = data.draw(st.integers(1, 64))
    words = data.draw(st.lists(st.integers(0, 255), min_size=n, max_size=n))
    warps = sorted(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    got = store_masks(access([w * size for w in words], warps, size), len(set(warps)), 32)
    for masks, warp in zip(got, sorted(set(warps))):
        want: dict = {}
        for w, lane_warp in zip(words, warps):
            if lane_warp == warp:
                for b in range(w * size, (w + 1) * size):       # byte by byte
                    want[b - b % 32] = want.get(b - b % 32, 0) | 1 << (b % 32)
        assert masks == want


@kernel
def store_strided(dst: Array[i32], n: i32, stride: i32, offset: i32):
    i = (blockIdx.x * blockDim.x + threadIdx.x) * stride + offset
    if i < n:
        dst[i] = i


@kernel
def read_all(src: Array[i32], out: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        out[i] = src[i] + 1


def one_l2(tmp_path, masks, dirty=16777216, **values):
    """sim:h100 with one L2 of 50 MB (not two halves), write masks on or off."""
    return variant("h100", tmp_path, l2_write_masks=str(masks).lower(), l2_dirty_bytes=dirty,
                   l2_halves=None, l2_far_latency_cycles=None, l2_fabric_bandwidth_gbps=None,
                   **values)


def test_a_load_of_a_partly_written_sector_reads_dram(tmp_path):
    """One int of each 32-B sector stored, then the whole array read: with write masks
    the read misses on every sector (its 64-B blocks come from DRAM), without them it
    hits; after all eight ints of each sector were stored, it hits either way."""
    n, sectors = 4096, 512
    for masks in (True, False):
        for offsets in ([0], range(8)):
            dev = one_l2(tmp_path, masks)
            dst, out = dev.zeros(n, np.int32), dev.zeros(n, np.int32)
            for k in offsets:
                dev.launch(store_strided, 2, 256, dst, n, 8, k, engine="timed")
            rep = dev.launch(read_all, 16, 256, dst, out, n, engine="timed")
            assert (out.to_host() == dst.to_host() + 1).all()
            read = rep.extra["dram_bytes"]
            assert read == (sectors * 32 if masks and len(offsets) == 1 else 0), (masks, offsets)


def test_a_partial_write_back_reads_its_sector_first(tmp_path):
    """One int of each sector stored with a 1 KiB dirty limit (32 sectors): 480 of the
    512 sectors go back during the launch, each read from DRAM first with write masks
    (twice the DRAM bytes), written only without them; the launch lasts longer."""
    n = 4096
    reps = {}
    for masks in (False, True):
        dev = one_l2(tmp_path, masks, 1024)
        reps[masks] = dev.launch(store_strided, 2, 256, dev.zeros(n, np.int32), n, 8, 0,
                                 engine="timed")
    for masks, rep in reps.items():
        x = rep.extra
        assert x["l2_writebacks"] == 480
        assert x["dram_bytes"] == 480 * 32 * (2 if masks else 1)
    assert reps[True].cycles > reps[False].cycles


@kernel
def load_then_store(dst: Array[i32], out: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        v = dst[i]
        dst[i] = i                              # into the sector its load is still fetching
        out[i] = v


@pytest.mark.parametrize("scheduling", ["at-arrival", "fr-fcfs"])
def test_whole_sector_stores_time_the_same_with_and_without_masks(tmp_path, scheduling):
    """Where every store writes whole sectors, the masks change nothing: the same cycles
    and report, launch after launch (stores hitting sectors still on their way too)."""
    reports = {}
    for masks in (False, True):
        dev = one_l2(tmp_path, masks, 2048, read_scheduling=f'"{scheduling}"')
        n = 8192
        dst, out = dev.zeros(n, np.int32), dev.zeros(n, np.int32)
        reps = [dev.launch(load_then_store, 32, 256, dst, out, n, engine="timed"),
                dev.launch(read_all, 32, 256, dst, out, n, engine="timed"),
                dev.launch(store_strided, 32, 256, dst, n, 1, 0, engine="timed-block")]
        reports[masks] = [(r.cycles, r.extra) for r in reps]
    assert reports[True] == reports[False]
