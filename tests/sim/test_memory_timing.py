"""The timed engines' memory model: L1 hits, L2 write-backs, bank conflicts, PCIe
copies, and the speed-ups that must not change a single number."""
import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

import simgpu
from simgpu.configs import load_config
from simgpu.device import SimDevice
from simgpu.lang import Array, blockDim, blockIdx, gridDim, i32, kernel, shared_array, syncthreads, threadIdx
from simgpu.ir.nodes import Const, Special, Var
from simgpu.sim import fast_paths, timed
from simgpu.sim.lanes import Geometry, LaneGroup, WarpGroups

from . import kernels as K

CONFIGS = Path(simgpu.__file__).parent / "configs"


def variant(name, tmp_path, **values):
    """A bundled config with some [cache]/[memory] values replaced (None: removed)."""
    text = (CONFIGS / f"{name}.toml").read_text()
    for key, value in values.items():
        text, n = re.subn(rf"(?m)^{key}\s*=\s*[^#\n]*", "" if value is None else f"{key} = {value} ", text)
        assert n == 1, key
    path = tmp_path / f"{name}-variant.toml"
    path.write_text(text)
    return SimDevice(load_config(path), f"sim:{path}")


@kernel
def two_loads(a: Array[i32], out: Array[i32]):
    # One thread: the second load's address comes from the first (a dependent chain).
    x = a[0]
    out[0] = a[x]


@kernel
def nothing(out: Array[i32]):
    if threadIdx.x > 4096:                          # never: no memory access at all
        out[0] = 1


@kernel
def copy(src: Array[i32], dst: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        dst[i] = src[i]


@kernel
def fill(dst: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        dst[i] = i


@kernel
def reread(src: Array[i32], out: Array[i32], m: i32):
    # Every thread reads the same m words: after the first warp, the SM's L1 has them.
    acc = 0
    for j in range(m):
        acc += src[j]
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc


@kernel
def shared_stride(out: Array[i32], stride: i32):
    s = shared_array(i32, 1024)
    t = threadIdx.x
    s[t * stride] = t
    syncthreads()
    out[t] = s[t * stride]


# --------------------------------------------------------------------------- L1

def dram_load_cycles(dev, far=False):
    """An uncontended load that misses everywhere, by hand: out and back over the
    interconnect; at its bank (which has a row of an earlier launch open) a
    precharge, tRP to the activate, tRCD to the read command, CL to the data, and one burst (the L2's fill size spreads over the sub-channels,
    a burst each, read at once); ``far``: through the other half of a split L2 (the
    sector's home is there)."""
    m, d, cfg = dev.config.memory, dev.config.dram, dev.config
    k = cfg.gpu.core_clock_mhz / m.memory_clock_mhz          # SM cycles per memory cycle
    fill = cfg.cache.l2_fill_bytes or cfg.cache.sector_bytes
    burst_bytes = m.partition_width_bits // d.subchannels // 8 * d.burst_length
    assert fill <= burst_bytes * d.subchannels               # one burst per sub-channel
    burst = d.burst_length / m.data_rate * k
    return (m.interconnect_latency_cycles + (d.trp + d.trcd + d.tcl) * k + burst
            + (cfg.cache.l2_far_latency_cycles or 0 if far else 0))


@pytest.mark.parametrize("engine", ["timed", "timed-block"])
def test_l1_hit_costs_the_l1_latency(engine):
    """a[0] then a[a[0]]: with a[0] = 0 the second load hits the L1 line the first
    brought in; with a[0] = 64 (another line, partition 1, whose home is the other
    half of the L2 from SM 0's) it goes to DRAM through the far half.  The
    difference is one such DRAM load minus one L1 hit."""
    cycles = {}
    for second in (0, 64):
        dev = simgpu.get_device("sim:h100")
        a = np.zeros(128, np.int32)
        a[0] = second
        out = dev.zeros(1, np.int32)
        rep = dev.launch(two_loads, 1, 1, dev.to_device(a), out, engine=engine)
        assert out.to_host()[0] == a[second]
        assert rep.extra["l1_hit_rate"] == (0.5 if second == 0 else 0.0)
        cycles[second] = rep.cycles
    expect = dram_load_cycles(dev, far=True) - dev.config.cache.l1_latency_cycles
    assert abs((cycles[64] - cycles[0]) - expect) <= 1, (cycles, expect)


def test_l1_serves_a_blocks_rereads_and_counts_stay_l1_level(h100):
    m = 64
    src, out = h100.to_device(np.arange(m, dtype=np.int32)), h100.zeros(4 * 256, np.int32)
    rep = h100.launch(reread, 4, 256, src, out, m, engine="timed")
    lock = h100.launch(reread, 4, 256, src, out, m, engine="lockstep")
    assert np.all(out.to_host() == np.arange(m).sum())
    # 4 blocks on 4 SMs, 8 warps each, m broadcast loads per warp (1 sector each):
    # only each SM's first warp to reach a sector misses.
    assert rep.loads.transactions == 4 * 8 * m == lock.loads.transactions
    assert rep.loads == lock.loads                  # caches change time, never the counts
    assert rep.extra["l1_hit_rate"] >= 7 / 8
    assert rep.extra["l2_hit_rate"] <= 0.75          # the L1 filters what the L2 sees


def test_no_l1_and_no_cache_keys_on_the_gtx260(dev):
    src, out = dev.to_device(np.arange(64, dtype=np.int32)), dev.zeros(256, np.int32)
    rep = dev.launch(reread, 1, 256, src, out, 64, engine="timed")
    assert "l1_hit_rate" not in rep.extra and "l2_hit_rate" not in rep.extra
    # (and the page walks' reads of page-table entries: simgpu.mem.tlb)
    assert (sum(rep.extra["partition_transactions"]) == rep.loads.transactions
            + rep.stores.transactions + rep.extra["tlb_walk_reads"])


# --------------------------------------------------------------------------- L2 write-backs

def test_l2_write_backs_reach_dram(tmp_path):
    """A 2 KiB L2 (4 sets x 16 sectors) and 4096 ints stored: 512 dirty sectors,
    64 of which fit; the other 448 are evicted and written back to DRAM."""
    dev = variant("h100", tmp_path, l2_bytes=2048)
    n = 4096
    dst = dev.zeros(n, np.int32)
    rep = dev.launch(fill, 16, 256, dst, n, engine="timed")
    assert np.array_equal(dst.to_host(), np.arange(n))
    x = rep.extra
    assert rep.stores.transactions == 512
    assert x["l2_writebacks"] == 448
    assert sum(x["partition_transactions"]) == 448 and x["dram_bytes"] == 448 * 32
    # Loads of clean data evict without write-backs (the dirty ones left are written
    # back as the loads push them out: 64 of them).
    rep2 = dev.launch(copy, 16, 256, dev.to_device(np.arange(n, dtype=np.int32)),
                      dev.zeros(n, np.int32), n, engine="timed")
    assert rep2.extra["l2_writebacks"] >= 64


def test_stores_stay_in_a_big_l2(h100):
    n = 1 << 12
    rep = h100.launch(fill, 16, 256, h100.zeros(n, np.int32), n, engine="timed-block")
    assert rep.extra["dram_bytes"] == 0 and rep.extra["l2_writebacks"] == 0
    assert rep.extra["l2_hit_rate"] == 0.0            # every store allocated its sector


# --------------------------------------------------------------------------- bank conflicts

@pytest.mark.parametrize("name, stride, conflicts", [
    ("sim:h100", 1, 0), ("sim:h100", 2, 2 * 1), ("sim:h100", 32, 2 * 31),
    ("sim:gtx260", 1, 0), ("sim:gtx260", 2, 2 * 2), ("sim:gtx260", 16, 2 * 30)])
def test_bank_conflicts_are_counted_and_charged(name, stride, conflicts):
    """One warp stores and loads s[t * stride]: each access takes its passes (see
    tests/mem/test_banks.py); every pass beyond the ideal delays the warp by a pass
    time (1 cycle on sm_90, 2 on sm_13) -- on the H100 exactly, since the shared
    access is what the warp waits for; on the GTX 260 the model's 24-cycle ALU
    chain of the index arithmetic hides part of it."""
    runs = {}
    for s in (1, stride):
        dev = simgpu.get_device(name)
        out = dev.zeros(32, np.int32)
        runs[s] = dev.launch(shared_stride, 1, 32, out, s, engine="timed")
        assert np.array_equal(out.to_host(), np.arange(32))
    rep = runs[stride]
    assert rep.extra["shared_bank_conflicts"] == conflicts
    assert rep.extra["shared_conflict_degree_max"] == (1 + conflicts // 2 if name == "sim:h100"
                                                       else {1: 1, 2: 2, 16: 16}[stride])
    per_pass = dev.config.gpu.arch_number < 20 and 2 or 1
    delay = rep.cycles - runs[1].cycles
    if name == "sim:h100":
        assert delay == pytest.approx(conflicts * per_pass, abs=1)
    else:
        assert 0 <= delay <= conflicts * per_pass and (delay > 0) == (conflicts > 0)


# --------------------------------------------------------------------------- PCIe

def test_copies_are_timed_over_pcie():
    dev = simgpu.get_device("sim:gtx260")
    host = np.arange(1 << 20, dtype=np.int32)             # 4 MiB
    a = dev.to_device(host)
    dev.zeros(1000, np.int32)                              # made on the device: no copy
    a.copy_from(host[::-1].copy())
    back = a.to_host()
    assert back[0] == host[-1]
    # By hand: 10 us + 4,194,304 B / 6.0 GB/s = 10 us + 699.05 us per copy.
    one = 0.010 + 4194304 / 6.0e9 * 1e3
    assert [c.direction for c in dev.copies] == ["host_to_device", "host_to_device",
                                                 "device_to_host"]
    assert all(c.bytes == 4194304 and c.time_ms == pytest.approx(one) for c in dev.copies)
    assert dev.copy_time_ms == pytest.approx(3 * one)
    assert dev.copies[0].gbps == pytest.approx(4194304 / (one * 1e6))
    h100 = simgpu.get_device("sim:h100")
    h100.to_device(np.zeros(4, np.int32))
    p = h100.config.pcie
    assert h100.copy_time_ms == pytest.approx(p.latency_us / 1e3 + 16 / (p.bandwidth_gbps * 1e6))


# --------------------------------------------------------------------------- speed-ups are exact

def reports(device, engine, **kw):
    dev = simgpu.get_device(device)
    rng = np.random.default_rng(3)
    out = []
    src = dev.to_device(rng.integers(0, 4000, 4000).astype(np.int32))
    dst = dev.zeros(4000, np.int32)
    out.append(dev.launch(K.copy_strided, 32, K.BLOCK, src, dst, 7, 4000, engine=engine))
    st, steps = dev.to_device(rng.integers(1, 3000, 500).astype(np.int64)), dev.zeros(500, np.int32)
    out.append(dev.launch(K.collatz_steps, 4, K.BLOCK, st, steps, 500, engine=engine))
    sums = dev.zeros(4, np.int64)
    out.append(dev.launch(K.block_sums, 4, K.BLOCK, src, sums, 500, engine=engine))
    keys, cnt, old = (dev.to_device(rng.integers(0, 9, 600).astype(np.int32)),
                      dev.zeros(9, np.int32), dev.zeros(600, np.int32))
    out.append(dev.launch(K.histogram, 5, K.BLOCK, keys, cnt, old, 600, engine=engine))
    c = dev.to_device(rng.integers(-500, 500, 700).astype(np.int64))
    out.append(dev.launch(K.clamp_all, 6, K.BLOCK, c, 700, -9, 9, engine=engine))
    arrays = [dst, steps, sums, cnt, old, c]
    return [r.to_dict() for r in out], [a.to_host() for a in arrays]


@pytest.mark.parametrize("device", ["sim:gtx260", "sim:h100"])
@pytest.mark.parametrize("engine", ["timed", "timed-block"])
def test_skipping_the_event_queue_changes_nothing(device, engine, monkeypatch):
    fast = reports(device, engine)
    monkeypatch.setattr(timed, "SKIP_QUEUE", False)
    slow = reports(device, engine)
    assert fast[0] == slow[0]
    assert all(np.array_equal(a, b) for a, b in zip(fast[1], slow[1]))


@pytest.mark.parametrize("engine", ["timed", "lockstep", "warps"])
def test_compiled_fast_paths_change_nothing(engine, monkeypatch):
    """The memory-free parts of kernels run as compiled closures; with them off
    (every node through the generator methods) every number is the same."""
    fast = reports("sim:gtx260", engine)
    monkeypatch.setattr(fast_paths, "COMPILE_COMPOSITES", False)
    slow = reports("sim:gtx260", engine)
    for k in (K.copy_strided, K.collatz_steps, K.block_sums, K.histogram, K.clamp_all):
        compiled = fast_paths.compiled(k.ir)         # only the leaves ran compiled
        assert {type(compiled.seen[i]) for i in compiled.pure} <= {Const, Var, Special}
    assert fast[0] == slow[0]
    assert all(np.array_equal(a, b) for a, b in zip(fast[1], slow[1]))


@pytest.mark.parametrize("grid, block", [((5, 3, 2), (48, 2, 1)), ((7, 1, 1), (100, 1, 1)),
                                         ((3, 4, 1), (8, 8, 3))])
def test_warp_groups_equal_lanegroup_warp(grid, block):
    geom = Geometry(grid, block)
    groups = WarpGroups(geom)
    for b in range(geom.blocks):
        for w, g in enumerate(groups.block(b)):
            ref = LaneGroup.warp(geom, b, w, 0, 1)
            assert vars(g).keys() == vars(ref).keys()
            for k, v in vars(ref).items():
                got = vars(g)[k]
                if isinstance(v, dict):
                    assert v.keys() == got.keys()
                    for key in v:
                        assert np.array_equal(v[key], got[key]) and v[key].dtype == got[key].dtype
                elif isinstance(v, np.ndarray):
                    assert np.array_equal(v, got) and v.dtype == got.dtype, k
                else:
                    assert v == got, k


# --------------------------------------------------------------------------- DRAM and L2 model

def chunks_of(ms, part: int, count: int) -> list:
    """The first ``count`` interleave chunks (their addresses) of partition ``part``."""
    step = ms.amap.interleave
    out, a = [], 0
    while len(out) < count:
        if ms.amap.where(a)[0] == part:
            out.append(a)
        a += step
    return out


L1_PIPE_KEYS = ("l1_tag_lines_per_cycle", "l1_miss_line_cycles", "l1_miss_sector_cycles",
                "l1_store_line_cycles", "l1_store_partial_sector_cycles",
                "l1_store_bytes_per_cycle", "l1_pipe_queue_cycles")


def without_l1_pipe(cfg):
    """``cfg`` without the SM's L1 pipeline (a unit of its own: tests/mem/test_l1_pipe.py),
    so that a request reaches the L2 at the cycle it is made."""
    return dataclasses.replace(cfg, cache=dataclasses.replace(
        cfg.cache, **{k: None for k in L1_PIPE_KEYS}))


def memory(device="sim:h100", tmp_path=None, **values):
    """A fresh MemorySystem of a bundled config (some values replaced, given tmp_path),
    without the L1 pipeline: these tests time the units behind it."""
    from simgpu.mem.memory_system import MemorySystem
    cfg = variant(device.split(":")[1], tmp_path, **values).config if values else \
        simgpu.get_device(device).config
    return MemorySystem(without_l1_pipe(cfg))


def test_a_load_miss_fills_the_l2_block_in_one_transaction():
    ms = memory()                                   # l2_fill_bytes = 64 on the H100
    ms.access("load", [0], [32], 0.0)
    assert ms.parts[0].transactions == 1 and ms.parts[0].bytes == 64
    assert ms.l2.find(32) is not None               # the other sector came with it
    ms = memory()
    ms.access("load", [0, 32], [32, 32], 0.0)       # both sectors asked for: one block
    assert ms.parts[0].transactions == 1 and ms.parts[0].bytes == 64


def test_l2_loads_stores_and_both_have_their_own_bandwidth():
    """32 sectors of one partition, already in the L2, by one instruction each way."""
    sectors = [c + j * 32 for c in chunks_of(memory(), 0, 4) for j in range(8)]

    def one_way(kind):
        ms = memory()
        for a in sectors:
            ms.l2.lookup(a)                         # resident, clean
        return ms.access(kind, sectors, [32] * 32, 0.0) - ms.slices.l2_latency, ms

    loads, ms = one_way("load")
    assert loads == pytest.approx(32 * 32 / ms.slices.l2_load_per_cycle)
    stores, ms = one_way("store")
    assert stores == pytest.approx(32 * 32 / ms.slices.l2_store_per_cycle)
    # both at once, a load and a store in turn: the slice's combined budget binds
    # (each direction alone would go faster than half of it)
    ms = memory()
    for a in sectors:
        ms.l2.lookup(a)
    for a in sectors:
        ms.access("load", [a], [32], 0.0)
        ms.access("store", [a], [32], 0.0)
    both = max(ms.slices.l2_free[0], ms.slices.l2_free_dir[True][0], ms.slices.l2_free_dir[False][0])
    assert 2 / ms.slices.l2_bytes_per_cycle > max(1 / ms.slices.l2_load_per_cycle, 1 / ms.slices.l2_store_per_cycle)
    assert both == pytest.approx(64 * 32 / ms.slices.l2_bytes_per_cycle, abs=32 / ms.slices.l2_store_per_cycle)


def test_l2_atomics_hold_their_slice_per_sector_not_per_lane():
    ms = memory()
    for _ in range(100):                            # 100 warp requests on one counter
        ms.access("atomic", [0], [4], 0.0)
    assert ms.slices.l2_free[0] == pytest.approx(100 * ms.atomics.same_address)


def test_dirty_limit_write_backs_reach_dram_and_hold_up_the_kernel(tmp_path):
    """4096 ints stored into the H100's 50 MB L2: with a 1 KiB dirty limit (32
    sectors) 480 of the 512 written sectors go back to DRAM during the launch, and
    the launch lasts until the DRAM has taken them."""
    n = 4096
    reps = {}
    for limit in (16777216, 1024):
        # one L2 of 50 MB (not two halves, where far stores outlast the write-backs)
        dev = variant("h100", tmp_path, l2_dirty_bytes=limit, l2_halves=None,
                      l2_far_latency_cycles=None, l2_fabric_bandwidth_gbps=None)
        reps[limit] = dev.launch(fill, 16, 256, dev.zeros(n, np.int32), n, engine="timed")
    assert reps[16777216].extra["l2_writebacks"] == 0
    x = reps[1024].extra
    assert x["l2_writebacks"] == 480 and x["dram_bytes"] == 480 * 32
    assert reps[1024].cycles > reps[16777216].cycles


def test_the_gpu_fixed_cost_per_kernel(tmp_path):
    """report.cycles adds kernel_fixed_us to the kernel's body; time_ms adds the larger
    of it and the host's launch overhead to the body."""
    n, blocks = 4096, 16
    reps = {}
    for fixed in (0, 1.99, 20):
        dev = variant("h100", tmp_path, kernel_fixed_us=fixed, block_dispatch_ns=0.59)
        reps[fixed] = dev.launch(fill, blocks, 256, dev.zeros(n, np.int32), n, engine="timed")
    clock = simgpu.get_device("sim:h100").config.gpu.core_clock_mhz
    body = reps[0].cycles
    assert abs(reps[1.99].cycles - (body + 1.99 * clock)) <= 1                # rounding
    assert reps[1.99].time_ms == pytest.approx(reps[0].time_ms)               # hidden by the 5.1 us
    assert reps[20].time_ms == pytest.approx(reps[0].time_ms - 5.1e-3 + 20e-3, abs=1e-6)


def test_blocks_are_dispatched_one_at_a_time_while_earlier_ones_run(tmp_path):
    """An empty kernel takes block_dispatch_ns per block (the GPU's grid-dependence of
    an empty kernel, measured); a kernel with work overlaps its dispatch with it, so
    dispatching costs it less than blocks x block_dispatch_ns."""
    clock = simgpu.get_device("sim:h100").config.gpu.core_clock_mhz
    per_block = 0.59e-3 * clock                     # cycles
    cycles = {}
    for ns in (0, 0.59):
        dev = variant("h100", tmp_path, kernel_fixed_us=1.99, block_dispatch_ns=ns)
        empty = dev.launch(nothing, 1056, 256, dev.zeros(1, np.int32), engine="timed").cycles
        n = 1 << 18
        src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
        busy = dev.launch(copy, 1056, 256, src, dst, n, engine="timed-block").cycles
        cycles[ns] = (empty, busy)
    # (the empty blocks' own few cycles overlap the dispatch too)
    assert 1056 * per_block - 50 <= cycles[0.59][0] - cycles[0][0] <= 1056 * per_block + 1
    # With the DRAM's bank timing, blocks that start a little apart can even meet fewer
    # row conflicts than blocks that start together (2026-11-25: 6498 against 6534
    # cycles), so the dispatch's cost to a busy kernel is small either way, not positive.
    assert abs(cycles[0.59][1] - cycles[0][1]) < 0.5 * 1056 * per_block


def test_flush_caches_starts_the_l2_empty(h100):
    n = 4096
    src, dst = h100.to_device(np.arange(n, dtype=np.int32)), h100.zeros(n, np.int32)
    h100.launch(copy, 16, 256, src, dst, n, engine="timed-block")
    warm = h100.launch(copy, 16, 256, src, dst, n, engine="timed-block")
    h100.flush_caches()
    cold = h100.launch(copy, 16, 256, src, dst, n, engine="timed-block")
    assert warm.extra["l2_hit_rate"] == 1.0 and warm.extra["dram_bytes"] == 0
    assert cold.extra["dram_bytes"] > 0 and cold.cycles > warm.cycles


def test_cache_control_all_starts_every_launch_with_an_empty_l2(h100):
    """As ncu --cache-control all: each launch reads its data from DRAM again, and
    takes what a launch after flush_caches() takes; "none" keeps the L2 warm."""
    n = 4096
    src, dst = h100.to_device(np.arange(n, dtype=np.int32)), h100.zeros(n, np.int32)
    h100.launch(copy, 16, 256, src, dst, n, engine="timed-block")   # the SMs' TLBs warm
    h100.flush_caches()
    first = h100.launch(copy, 16, 256, src, dst, n, engine="timed-block")
    assert h100.cache_control == "none"
    assert h100.launch(copy, 16, 256, src, dst, n, engine="timed-block").extra["dram_bytes"] == 0
    h100.cache_control = "all"
    again = [h100.launch(copy, 16, 256, src, dst, n, engine="timed-block") for _ in range(2)]
    for r in again:
        assert r.extra["dram_bytes"] == first.extra["dram_bytes"] > 0
        assert r.cycles == first.cycles
    with pytest.raises(ValueError, match="cache_control must be one of"):
        h100.cache_control = "cold"


def _half_sms(ms):
    """An SM beside each half of a split L2."""
    return ms.slices.sm_half.index(0), ms.slices.sm_half.index(1)


def test_split_l2_far_hits_cost_the_far_latency_and_leave_a_near_copy():
    """The H100's L2 is two halves (calibration/l2_halves.py): a sector homed in one
    half, read by an SM beside the other, is a far hit (l2_far_latency_cycles more)
    the first time and a near hit once the copy is there; both halves then hold it."""
    ms = memory()
    assert ms.slices.split and len(ms.l2.halves) == 2
    sm0, sm1 = _half_sms(ms)
    a = 0                                            # partition 0: home is half 0
    assert ms.l2.home(ms.locate(a)[0]) == 0
    ms.l2.lookup(a, half=0)                          # resident at home, clean
    near = ms.access("load", [a], [32], 0.0, sm=sm0)
    far = ms.access("load", [a], [32], 1000.0, sm=sm1) - 1000.0
    again = ms.access("load", [a], [32], 2000.0, sm=ms.slices.sm_half.index(1, sm1 + 1)) - 2000.0
    assert near == pytest.approx(ms.slices.l2_latency + max(32 / ms.slices.l2_load_per_cycle, ms.slices.l2_request_cycles))
    assert far == pytest.approx(near + ms.slices.far_latency)
    assert again == pytest.approx(near)              # another SM of half 1: the copy
    assert ms.l2.find(a, half=1) is not None and ms.l2.find(a, half=0) is not None
    assert ms.slices.fabric_bytes == 32


def test_split_l2_stores_go_home_and_drop_the_other_halfs_copy():
    ms = memory()
    sm0, sm1 = _half_sms(ms)
    a = 0                                            # home: half 0
    ms.access("load", [a], [32], 0.0, sm=sm1)        # DRAM, through half 0: copy in half 1
    assert ms.l2.find(a, half=1) is not None
    ms.access("store", [a], [4], 5000.0, sm=sm0)     # written at home, beside its SM
    assert ms.l2.halves[0].find(a)[1] is True        # dirty at home
    assert ms.l2.halves[1].find(a) is None           # the stale copy is gone
    b = 256                                          # partition 1: home is half 1
    ms.access("store", [b], [4], 6000.0, sm=sm0)     # from half 0: crosses over
    assert ms.l2.halves[1].find(b)[1] is True and ms.l2.halves[0].find(b) is None


def test_split_l2_halves_each_hold_half_and_a_dram_miss_through_the_far_half_costs_more():
    ms = memory()
    cache = simgpu.get_device("sim:h100").config.cache
    assert all(h.sets * h.WAYS * h.sector == cache.l2_bytes // 2 for h in ms.l2.halves)
    sm0, _ = _half_sms(ms)
    near = ms.access("load", [0], [32], 0.0, sm=sm0)            # partition 0, home 0
    far = ms.access("load", [256], [32], 0.0, sm=sm0)           # partition 1, home 1
    assert far - near == pytest.approx(ms.slices.far_latency)


def test_split_l2_link_each_way_is_shared_by_stores_and_far_loads(tmp_path):
    """calibration/l2_fabric.py: the data of one half's SMs' far loads and of the other
    half's stores homed beside them cross the same link, at l2_fabric_bandwidth_gbps;
    the link the other way is another. A store's data are on it when it is issued; a
    far load's are left for the engine to book (MemorySystem.cross) once they are back."""
    def far_hit(ms, sm, a, t):
        ms.l2.lookup(a, half=ms.l2.home(ms.locate(a)[0]))     # resident at its home only
        done = ms.access("load", [a], [32], t, sm=sm)
        crossings, ms.crossings = ms.crossings, []
        assert len(crossings) == 1
        return max(done, ms.cross(crossings)) - t

    # 8000 sectors in partitions 0, 2, ..., 58 (homed in half 0); partition 70 (also
    # homed in half 0) and the odd ones (half 1) get none of them
    sectors = [256 * (2 * (k % 30) + 80 * (k // 30)) for k in range(8000)]
    ms = memory()
    sm0, sm1 = _half_sms(ms)
    alone = far_hit(ms, sm0, 256, 0.0)                        # partition 1, homed in half 1
    assert alone == pytest.approx(ms.slices.l2_latency + ms.slices.far_latency + 32 / ms.slices.fabric_per_cycle, abs=2)
    ms = memory()
    for a in sectors:                                          # half 1's SMs store into half 0
        ms.access("store", [a], [32], 0.0, sm=sm1)
    assert not ms.crossings                                    # stores are on the link at once
    link = len(sectors) * 32 / ms.slices.fabric_per_cycle
    assert ms.slices.fabric_free[0] == pytest.approx(link) and ms.slices.fabric_free[1] == 0
    assert link > max(ms.slices.l2_free)                              # the link binds, not the slices
    behind = far_hit(ms, sm0, 256, 0.0)                        # its data come the same way
    assert behind == pytest.approx(link + 32 / ms.slices.fabric_per_cycle + ms.slices.l2_latency + ms.slices.far_latency)
    other_way = far_hit(ms, sm1, 256 * 70, 0.0)               # homed in half 0, read from half 1
    assert other_way == pytest.approx(alone, abs=2)
    # without the limit the same stores leave the far load alone
    ms = memory("sim:h100", tmp_path, l2_fabric_bandwidth_gbps=None)
    for a in sectors:
        ms.access("store", [a], [32], 0.0, sm=sm1)
    ms.l2.lookup(256, half=1)
    assert ms.access("load", [256], [32], 0.0, sm=sm0) == pytest.approx(alone, abs=2)
    assert not ms.crossings


def test_a_far_miss_crosses_the_link_behind_what_reached_it_first():
    """First come, first served: a far load's data reach the link when they are back
    from DRAM, so the stores issued after the load but before that wait ahead of them
    (the H100's cold copy: its far loads 227-385 ns slower than its near ones, 109-124
    in a read; docs/calibration/l2-chunks-h100.md)."""
    ms = memory()
    sm0, sm1 = _half_sms(ms)
    done = ms.access("load", [256], [32], 0.0, sm=sm0)         # DRAM, through half 1
    (arrival, way, nbytes, after), = ms.crossings
    ms.crossings = []
    assert way == 0 and nbytes == 32 and after == ms.slices.far_latency
    assert done == pytest.approx(arrival + ms.slices.far_latency)     # the load's own path
    stores = [256 * (2 * (k % 30) + 80 * (k // 30)) for k in range(12000)]  # homed in half 0
    for a in stores:                                           # issued at 100, before it is back
        ms.access("store", [a], [32], 100.0, sm=sm1)
    ahead = 100 + len(stores) * 32 / ms.slices.fabric_per_cycle
    assert ahead > arrival
    assert ms.cross([(arrival, way, nbytes, after)]) == pytest.approx(
        ahead + 32 / ms.slices.fabric_per_cycle + ms.slices.far_latency)


def test_an_l2_of_one_half_takes_no_far_latency(tmp_path):
    from simgpu.configs import ConfigError
    ms = memory("sim:h100", tmp_path, l2_halves=None, l2_far_latency_cycles=None,
                l2_fabric_bandwidth_gbps=None)
    assert not ms.slices.split and len(ms.l2.halves) == 1
    with pytest.raises(ConfigError, match="l2_far_latency_cycles.*one half"):
        memory("sim:h100", tmp_path, l2_halves=None, l2_fabric_bandwidth_gbps=None)
    with pytest.raises(ConfigError, match="l2_fabric_bandwidth_gbps.*one half"):
        memory("sim:h100", tmp_path, l2_halves=None, l2_far_latency_cycles=None)
    with pytest.raises(ConfigError, match="l2_halves.*1 or 2"):
        memory("sim:h100", tmp_path, l2_halves=3)


def test_a_run_of_loads_then_stores_uses_the_combined_l2_budget():
    """The slice's budgets are separate queues: a warp's four load sectors then four
    store sectors finish at the combined rate, not at the load time plus the store time
    (as when each access waited for both budgets to be free: a copy then moved 4.6 TB/s
    through the model's L2, the H100 6.4)."""
    ms = memory()
    sm0, _ = _half_sms(ms)
    sectors = [j * 32 for j in range(4)]             # one line of partition 0 (home: half 0)
    for a in sectors:
        ms.l2.lookup(a, half=0)
    ms.access("load", sectors, [32] * 4, 0.0, sm=sm0)
    ms.access("store", sectors, [32] * 4, 0.0, sm=sm0)
    busy = max(ms.slices.l2_free[0], ms.slices.l2_free_dir[True][0], ms.slices.l2_free_dir[False][0])
    both, loads, stores = 256 / ms.slices.l2_bytes_per_cycle, 128 / ms.slices.l2_load_per_cycle, 128 / ms.slices.l2_store_per_cycle
    assert both > max(loads, stores)
    assert busy == pytest.approx(both) and busy < loads + stores


def test_a_dram_fill_takes_its_slices_bandwidth_but_no_one_waits_for_it(tmp_path):
    # (without fill ports; with them: tests/mem/test_l2_fill_ports.py)
    ms = memory("sim:h100", tmp_path, l2_fill_bandwidth_gbps=None)
    sm0, _ = _half_sms(ms)
    fill, out = ms.slices.l2_fill, 32                                  # the block in, the sector out
    done = ms.access("load", [0], [32], 0.0, sm=sm0)            # partition 0, home: half 0
    assert ms.slices.l2_free[0] == pytest.approx((fill + out) / ms.slices.l2_bytes_per_cycle) and ms.slices.l2_free[1] == 0
    assert done == pytest.approx(dram_load_cycles(simgpu.get_device("sim:h100")))
    ms.access("load", [256], [32], 0.0, sm=sm0)                 # partition 1: through half 1
    # the home slice (1) and the near copy's slice (0) both take the block; the sector
    # leaves for the SM from the near one
    assert ms.slices.l2_free[1] == pytest.approx(fill / ms.slices.l2_bytes_per_cycle)
    assert ms.slices.l2_free[0] == pytest.approx((2 * fill + 2 * out) / ms.slices.l2_bytes_per_cycle)


def test_a_misss_data_leaves_its_slice_as_a_hits_does():
    """A load miss's sector goes out to the SM through the near slice's load and combined
    budgets, like a hit's: on an idle slice the DRAM sets the time, behind a busy one the
    slice does (the H100's cold 8 MiB copy, whose fills, stores and read-outs keep its
    slices busier than its DRAM: docs/calibration/dram-ramp-h100.md)."""
    dram = dram_load_cycles(simgpu.get_device("sim:h100"))
    ms = memory()
    sm0, _ = _half_sms(ms)
    assert ms.access("load", [0], [32], 0.0, sm=sm0) == pytest.approx(dram)
    assert ms.slices.l2_free_dir[True][0] == pytest.approx(32 / ms.slices.l2_load_per_cycle)
    busy = 2 * dram
    ms = memory()
    ms.slices.l2_free_dir[True][0] = busy                  # loads queued at slice 0 until then
    done = ms.access("load", [0], [32], 0.0, sm=sm0)
    assert done == pytest.approx(busy + 32 / ms.slices.l2_load_per_cycle + ms.slices.l2_latency)


def test_random_sectors_are_bound_by_the_l2_request_rate(tmp_path):
    """32 sectors of one partition: in 8 requests of 4 (whole lines) the slice's bytes
    bind; in 32 requests of one sector (a random gather) its l2_request_cycles do."""
    ms = memory()
    assert ms.slices.l2_request_cycles > 32 / ms.slices.l2_load_per_cycle      # so a lone sector is request-bound
    chunks = chunks_of(ms, 0, 32)                      # chunks of partition 0
    lines = [c + j * 32 for c in chunks[:8] for j in range(4)]
    scattered = chunks                              # one sector per line
    sm0 = ms.slices.sm_half.index(0)

    def busy(sectors):
        m = memory()
        for a in sectors:
            m.l2.lookup(a, half=0)
        m.access("load", sectors, [32] * 32, 0.0, sm=sm0)
        return max(m.slices.l2_free_dir[True][0], m.slices.l2_request_free[0])

    assert busy(lines) == pytest.approx(32 * 32 / ms.slices.l2_load_per_cycle)
    assert busy(scattered) == pytest.approx(32 * ms.slices.l2_request_cycles)


def test_misses_are_looked_up_too():
    """A miss costs its slice a request as a hit does (and, homed in the far half, the
    home slice one more): the hits behind it wait."""
    ms = memory()
    sm0 = ms.slices.sm_half.index(0)
    ms.access("load", chunks_of(ms, 0, 8), [32] * 8, 0.0, sm=sm0)   # partition 0
    assert ms.slices.l2_request_free[0] == pytest.approx(8 * ms.slices.l2_request_cycles)
    ms.access("load", chunks_of(ms, 1, 8), [32] * 8, 0.0, sm=sm0)   # 1: far
    assert ms.slices.l2_request_free[1] == pytest.approx(8 * ms.slices.l2_request_cycles)       # home
    assert ms.slices.l2_request_free[0] == pytest.approx(16 * ms.slices.l2_request_cycles)      # near lookup


def test_an_atomic_on_a_sector_not_in_the_l2_waits_for_it_from_dram():
    """An atomic needs the old value: on a sector the L2 lacks it waits a load miss's
    round trip (its 64-B block read in one transaction) and then the unit; the block's
    other sector comes with it, so an atomic there waits for that block, not for a
    read of its own; once the sector is in, an atomic takes the unit's time only."""
    ms = memory()
    hold = max(32 / ms.slices.l2_bytes_per_cycle, ms.atomics.same_address)
    cold = ms.access("atomic", [0], [4], 0.0)
    load = memory().access("load", [0], [4], 0.0)          # a load miss of the same sector
    assert ms.parts[0].transactions == 1 and ms.parts[0].bytes == 64
    assert cold == pytest.approx(load + hold + ms.atomics.latency - ms.slices.l2_latency)
    assert cold > hold + ms.atomics.latency + ms.dram.timing.rcd   # more than a warm one: DRAM's
    assert ms.access("atomic", [32], [4], 0.0) == pytest.approx(cold)
    assert ms.parts[0].transactions == 1
    warm = ms.access("atomic", [0], [4], cold) - cold
    assert warm == pytest.approx(hold + ms.atomics.latency)


def test_a_warps_first_global_load_reaches_memory_warp_first_load_ns_late(tmp_path, monkeypatch):
    """A warp's first global load is issued warp_first_load_ns late (the H100's cost some
    70 ns, in every wave: calibration/first_access.py), before the memory system sees it;
    the loads after it come that much later too, but cost no more; a kernel that only
    stores pays nothing."""
    from simgpu.mem.memory_system import MemorySystem
    orig = MemorySystem.access
    clock = simgpu.get_device("sim:h100").config.gpu.core_clock_mhz
    seen, cycles, stores = {}, {}, {}
    for ns in (0, 100):
        log = seen[ns] = []
        monkeypatch.setattr(MemorySystem, "access", lambda self, kind, a, s, t, sm=0, log=log,
                            **kw: (log.append((kind, t)), orig(self, kind, a, s, t, sm, **kw))[1])
        dev = variant("h100", tmp_path, warp_first_load_ns=ns)
        cycles[ns] = dev.launch(two_loads, 1, 32, dev.to_device(np.array([1, 0], np.int32)),
                                dev.zeros(1, np.int32), engine="timed").cycles
        stores[ns] = dev.launch(fill, 4, 256, dev.zeros(4096, np.int32), 4096, engine="timed").cycles
    late = 100 * clock / 1e3
    (k0, first0), (_, second0) = seen[0][:2]
    (k1, first1), (_, second1) = seen[100][:2]
    assert k0 == k1 == "load"
    assert first1 - first0 == pytest.approx(late)
    assert second1 - second0 == pytest.approx(late)             # shifted, not delayed again
    assert abs(cycles[100] - cycles[0] - late) <= 1
    assert stores[100] == stores[0]
