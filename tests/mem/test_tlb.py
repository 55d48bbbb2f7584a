"""Address translation (simgpu.mem.tlb): the TLB levels on their own, the walker, and the
walks' reads as memory traffic; the footprint property of issue 18 on sim:gtx260."""
import dataclasses

import numpy as np

import simgpu
from simgpu.configs import load_config
from simgpu.lang import Array, i32, kernel
from simgpu.mem.address_space import PageTables
from simgpu.mem.memory_system import MemorySystem
from simgpu.mem.request import Request
from simgpu.mem.tlb import TlbLevel, TlbState, Translator

GTX = load_config("gtx260")


def config(**tlb):
    """gtx260 with some [tlb] keys changed."""
    return dataclasses.replace(GTX, tlb=dataclasses.replace(GTX.tlb, **tlb))


# --------------------------------------------------------------------------- one level

def test_a_level_hits_what_it_holds_and_evicts_the_least_recently_used():
    tlb = TlbLevel(4, 4)                        # fully associative, 4 entries
    for vpn in (1, 2, 3, 4):
        assert tlb.find(vpn) is None
        tlb.fill(vpn, 10.0 * vpn)
    assert tlb.find(1) == 10.0                  # 1 is now the most recently used
    tlb.fill(5, 50.0)                           # evicts 2, the least recently used
    assert 2 not in tlb and all(v in tlb for v in (1, 3, 4, 5))
    assert tlb.find(2) is None and tlb.find(3) == 30.0
    assert (tlb.hits, tlb.misses) == (2, 5)


def test_a_set_associative_level_evicts_within_the_set():
    tlb = TlbLevel(8, 2)                        # 4 sets of 2 ways: pages 0, 4, 8 share set 0
    for vpn in (0, 4, 1, 5):
        tlb.fill(vpn, 0.0)
    tlb.fill(8, 0.0)                            # set 0 is full: 0 goes, set 1 keeps 1 and 5
    assert 0 not in tlb and {4, 8, 1, 5} <= {v for v in (0, 1, 4, 5, 8) if v in tlb}
    assert len(tlb) == 4


def test_reach_is_entries_times_page_size():
    """Cycling over k pages: every lookup hits while k <= entries, none once k > entries
    (LRU over a cycle), the knee at the reach (GT200's L1 TLB: 16 x 512 KiB = 8 MiB)."""
    t = GTX.tlb
    assert t.l1_entries * t.page_bytes == 8 << 20 and t.l2_entries * t.page_bytes == 32 << 20
    for pages, hit_rate in ((t.l1_entries, 1.0), (t.l1_entries + 1, 0.0)):
        tlb = TlbLevel(t.l1_entries, t.l1_ways)
        for vpn in range(pages):
            tlb.find(vpn) or tlb.fill(vpn, 0.0)
        tlb.hits = tlb.misses = 0
        for _ in range(3):
            for vpn in range(pages):
                if tlb.find(vpn) is None:
                    tlb.fill(vpn, 0.0)
        assert tlb.hits / (tlb.hits + tlb.misses) == hit_rate


# --------------------------------------------------------------------------- the walker

class Reads:
    """A memory system that answers every read ``latency`` cycles later and records it."""

    def __init__(self, latency=50):
        self.latency, self.log = latency, []

    def __call__(self, address, nbytes, t):
        self.log.append((address, nbytes, t))
        return t + self.latency


def translator(cfg=GTX, latency=50):
    reads = Reads(latency)
    return Translator(cfg, TlbState(cfg), PageTables.for_config(cfg), reads), reads


def req(address, t=0.0, sm=0):
    return Request("load", sm, t, [address], [32])


def test_a_miss_in_both_levels_walks_the_page_tables_at_their_addresses():
    tr, reads = translator()
    t, tables = GTX.tlb, PageTables.for_config(GTX)
    address = 700 << 20                          # in the second 512 MiB region
    done = tr.translate(req(address, t=100.0))
    # The L2 TLB is looked up (l2_hit_cycles), then the walker (walk_cycles) reads the
    # PDE, then the PTE, each 50 cycles here.
    start = 100.0 + t.l2_hit_cycles + t.walk_cycles
    assert reads.log == [(tables.pde_address(address), 8, start),
                         (tables.pte_address(address), t.pte_bytes, start + 50)]
    assert done == start + 100
    assert tables.pde_address(address) == tables.pd_base + 8          # PDE 1 of 512 MiB each
    assert tables.pte_address(address) == tables.pt_base + (700 << 20) // t.page_bytes * 8
    assert tables.base + tables.bytes <= GTX.memory.global_memory_bytes
    # Now both levels hold it: the same SM's next access costs nothing.
    assert tr.translate(req(address + 64, t=1000.0)) == 1000.0
    assert tr.summary()["tlb_walks"] == 1 and tr.summary()["tlb_walk_reads"] == 2


def test_the_l1_tlb_is_shared_by_an_sm_group_and_the_l2_tlb_by_all():
    tr, reads = translator()
    tr.translate(req(0, sm=0))
    assert tr.translate(req(0, t=500.0, sm=2)) == 500.0                # SM 2: same TPC
    l2_hit = GTX.tlb.l2_hit_cycles
    assert tr.translate(req(0, t=500.0, sm=3)) == 500.0 + l2_hit       # next TPC: L2 TLB
    s = tr.summary()
    assert (s["tlb_l1_hits"], s["tlb_l1_misses"], s["tlb_l2_hits"], s["tlb_walks"]) == (1, 2, 1, 1)


def test_concurrent_misses_to_one_page_share_its_walk():
    tr, reads = translator()
    first = tr.translate(req(0, t=0.0, sm=0))
    second = tr.translate(req(32, t=5.0, sm=3))       # another TPC, while the walk runs
    assert second == first and tr.summary()["tlb_walks"] == 1 and len(reads.log) == 2


def test_walks_wait_for_a_free_walker():
    cfg = config(walkers=1, pde_cache_entries=0)
    tr, reads = translator(cfg)
    page = cfg.tlb.page_bytes
    a = tr.translate(req(0, t=0.0, sm=0))
    b = tr.translate(req(page, t=0.0, sm=0))          # another page, same time: waits
    walk = cfg.tlb.walk_cycles + 2 * 50
    assert a == cfg.tlb.l2_hit_cycles + walk and b == a + walk
    assert tr.summary()["tlb_walker_wait_cycles"] == a - cfg.tlb.l2_hit_cycles
    cfg2 = config(walkers=2, pde_cache_entries=0)
    tr2, _ = translator(cfg2)
    assert tr2.translate(req(0)) == tr2.translate(req(page)) == a     # two walkers: together


def test_the_pde_cache_spares_the_pde_read_within_a_region_only():
    tr, reads = translator()                          # gtx260: one PDE kept
    page, region = GTX.tlb.page_bytes, GTX.tlb.pde_span_bytes
    for address in (0, page, 2 * page, region, region + page, 0 + 3 * page):
        tr.translate(req(address, t=10_000.0 * len(reads.log)))
    # walks: 0 (PDE + PTE), page, 2 pages (PTE only), region (PDE + PTE), region + page
    # (PTE), 3 pages (back in region 0: PDE + PTE)
    assert tr.summary()["tlb_walks"] == 6 and tr.summary()["tlb_walk_reads"] == 9


def test_a_request_over_two_pages_translates_each():
    tr, reads = translator()
    page = GTX.tlb.page_bytes
    r = Request("load", 0, 0.0, [page - 32, page], [32, 32])
    tr.translate(r)
    assert tr.summary()["tlb_walks"] == 2 and r.translated > 0


# --------------------------------------------------------------------------- in the pipeline

def test_a_walks_reads_are_dram_traffic_and_cost_its_time():
    """On the GTX 260 (no caches) the walk's PDE and PTE reads are DRAM transactions at
    the page tables' partitions, and the load waits for them."""
    tables = PageTables.for_config(GTX)
    plain = MemorySystem(GTX)                      # no TLBs given: no translation
    translated = MemorySystem(GTX, tlbs=TlbState(GTX))
    t_plain = plain.access("load", [4096], [32], 0.0)
    t_walk = translated.access("load", [4096], [32], 0.0)
    s = translated.summary(t_walk)
    assert s["tlb_walks"] == 1 and s["tlb_walk_reads"] == 2
    assert sum(s["partition_transactions"]) == 1 + 2 == sum(plain.summary(t_plain)
                                                              ["partition_transactions"]) + 2
    assert s["dram_bytes"] == 3 * GTX.memory.min_access_bytes
    for address in (tables.pde_address(4096), tables.pte_address(4096)):
        part = translated.locate(address)[0]
        assert translated.parts[part].transactions >= 1
    assert t_walk > t_plain + GTX.tlb.l2_hit_cycles + GTX.tlb.walk_cycles


def test_h100_walks_read_through_the_l2():
    cfg = load_config("h100")
    ms = MemorySystem(cfg, tlbs=TlbState(cfg))
    ms.access("load", [1 << 30], [32], 0.0, sm=5)
    s = ms.summary(10_000.0)
    assert s["tlb_walk_reads"] == 2
    assert ms.l2.hits + ms.l2.misses >= 3           # the load and the walk's two reads


@kernel
def lcg_chase(a: Array[i32], out: Array[i32], steps: i32, n: i32, seed: i32):
    x = seed
    j = 0
    for k in range(steps):
        x = x * 1103515245 + 12345 + a[j]       # the load's value feeds the next address
        j = ((x >> 1) & 0x3FFFFFFF) % n
    out[0] = j


def chase_cycles(dev, mib, steps=(100, 300)):
    """Cycles per dependent load of a random one-thread chase over ``mib`` MiB (the slope
    between two launches after a warm-up one). The array is never written: numpy's zeros
    are calloc'ed, so only the pages the chase touches take host memory."""
    n = int(mib * 2**20) // 4
    a, out = dev.zeros(n, np.int32), dev.zeros(1, np.int32)
    dev.launch(lcg_chase, 1, 1, a, out, steps[-1], n, 1, engine="timed")
    c = [dev.launch(lcg_chase, 1, 1, a, out, s, n, seed, engine="timed")
         for seed, s in enumerate(steps, start=2)]
    return (c[1].cycles - c[0].cycles) / (steps[1] - steps[0]), c[1]


def test_a_chase_over_768_mb_costs_more_per_load_than_over_1_mb():
    """Issue 18's property: on sim:gtx260 a random pointer chase over 768 MB costs per
    load at least 1.2x one over 1 MB (TLB misses and walks), with the same counts."""
    small, rep_small = chase_cycles(simgpu.get_device("sim:gtx260"), 1)
    large, rep_large = chase_cycles(simgpu.get_device("sim:gtx260"), 768)
    assert large >= 1.2 * small, (small, large)
    assert rep_large.loads == rep_small.loads       # translation changes time, not counts
    assert rep_small.extra["tlb_walks"] == 0 and rep_large.extra["tlb_walks"] > 250
