"""The random splitter's RS3 walks: the paper's access pattern (walk="paper") and the
project's fused 64-bit word (walk="fused"), against the sequential ranking and
against the per-node accesses the paper states (section on Fig. 3 right):
64-bit: a 64-bit read, a 32-bit read and a 64-bit write; 48-bit: a 16-bit read,
a 16-bit write, a 32-bit write and a 32-bit read."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from algorithms import list_ranking as LR
from algorithms.generators import random_forest, random_list
from algorithms.list_ranking.sequential import rank_sequential

from .test_list_ranking import check, forests

WALKS = [(64, "paper"), (64, "fused"), (48, "paper")]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(succ=forests(3000), seed=st.integers(0, 2**32 - 1),
       threads=st.sampled_from([None, 32, 200]), splitters=st.sampled_from(["random", "even"]))
def test_paper_walks_rank_like_the_sequential_walk(succ, seed, threads, splitters):
    ref = rank_sequential(succ)
    for packing, walk in WALKS:
        check(LR.rank(succ, packing=packing, walk=walk, splitters=splitters, seed=seed,
                      threads=threads), ref)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(succ=forests(300), seed=st.integers(0, 2**32 - 1), sched=st.integers(0, 2**31),
       device=st.sampled_from(["sim:gtx260", "sim:h100"]))
def test_paper_walk_random_schedules_and_devices(succ, seed, sched, device):
    ref = rank_sequential(succ)
    for engine in ("lockstep", "warps"):
        r = LR.rank(succ, packing=64, walk="paper", seed=seed, threads=96, block=32,
                    device=device, launch_options=dict(engine=engine, schedule="random",
                                                       seed=sched))
        check(r, ref)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_paper_walk_tiny_inputs(n):
    succ = random_list(n, 0) if n else np.empty(0, np.int64)
    check(LR.rank(succ, packing=64, walk="paper"), rank_sequential(succ))


def test_paper_walk_kernels_and_timed_engine():
    succ = random_forest(2000, 5, 2)
    r = LR.rank(succ, packing=64, walk="paper", threads=128,
                launch_options=dict(engine="timed-block"))
    check(r, rank_sequential(succ))
    assert [rep.kernel for rep in r.launches] == [
        "rs1_init_64p", "rs2_choose_64p", "rs3_walk_64p", "rs4_rank_splitters", "rs5_final_64p"]
    assert all(rep.time_ms and rep.time_ms > 0 for rep in r.launches)
    assert r.stats["walk"] == "paper"


@pytest.mark.parametrize("succ", [random_list(3000, 8), random_forest(3000, 20, 3)],
                         ids=["list", "forest"])
@pytest.mark.parametrize("packing,walk", WALKS)
def test_rs3_accesses_per_node_are_the_papers(succ, packing, walk):
    """RS3's counted lane accesses and bytes, exactly: per walked node the pattern
    of the walk, plus what each slot costs (its splitter, its end, its RS4 word)."""
    r = LR.rank(succ, packing=packing, walk=walk, threads=64)
    rs3 = r.launches[2]
    n, slots, sub = len(succ), r.stats["slots"], r.stats["sublists"]
    lists = int(np.sum(succ == np.arange(n)))
    walked = n - sub                        # nodes a walk writes (every node but the splitters)
    at_splitter = sub - lists               # walks that end by reading the next splitter
    # per walked node: (load lanes, load bytes, store lanes, store bytes)
    node = {(64, "paper"): (2, 8 + 4, 1, 8),       # 64-bit read, 32-bit read, 64-bit write
            (64, "fused"): (1, 8, 1, 8),           # one word read and written
            (48, "paper"): (2, 2 + 4, 2, 2 + 4)}[(packing, walk)]   # 16/32-bit each way
    # per slot: sp_node (4 B) and the splitter's mark (8 or 2 B); a winner reads its
    # splitter's successor (paper walks: 4 B from succ); a walk that ends at the next
    # splitter reads its mark; every slot writes its 8-byte RS4 word
    mark = 2 if packing == 48 else 8
    start_succ = 4 if walk == "paper" else 0
    loads_lanes = node[0] * walked + 2 * slots + (sub if start_succ else 0) + at_splitter
    loads_bytes = (node[1] * walked + (4 + mark) * slots + start_succ * sub + mark * at_splitter)
    assert rs3.loads.lanes == loads_lanes
    assert rs3.loads.bytes_requested == loads_bytes
    assert rs3.stores.lanes == node[2] * walked + slots
    assert rs3.stores.bytes_requested == node[3] * walked + 8 * slots
    # the paper's bits per node: 160 (64-bit) and 96 (48-bit)
    if walk == "paper":
        assert 8 * (node[1] + node[3]) == {64: 160, 48: 96}[packing]


def test_paper_walk_output_reuses_the_succ_buffer():
    # the 64-bit paper walk allocates one word array beside succ and writes the ranks
    # into succ's buffer: RS5's stores are 32-bit
    succ = random_list(1000, 3)
    r = LR.rank(succ, packing=64, walk="paper", threads=64)
    rs5 = r.launches[4]
    assert rs5.stores.lanes == 1000 and rs5.stores.bytes_requested == 4 * 1000


def test_walk_argument_errors():
    succ = random_list(100, 1)
    with pytest.raises(ValueError, match="walk='fused'.*packing=64"):
        LR.rank(succ, packing=48, walk="fused")
    with pytest.raises(ValueError, match="walk must be one of paper, fused"):
        LR.rank(succ, walk="nope")
