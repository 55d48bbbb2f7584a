"""List ranking on the simulator: every method x engine x packing against the sequential reference."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import simgpu
from algorithms import list_ranking as LR
from algorithms.generators import blocked_list, random_forest, random_list
from algorithms.kiss import KissStreams
from algorithms.list_ranking import cpu
from algorithms.list_ranking.random_splitter import MAX_THREADS_48
from algorithms.list_ranking.sequential import rank_sequential
from simgpu.testing import strategies as gst

# (method, packing, splitters) of every device configuration
DEVICE_CONFIGS = [("wylie", 64, "random"), ("wylie-single-block", 64, "random")] + [
    ("random-splitter", pk, sp) for pk in (64, 48) for sp in ("random", "even")]
HOST_METHODS = ["sequential", "cpu-random-splitter"]

RS_STEPS = ["RS1", "RS2", "RS3", "RS4", "RS5"]


def ids(cfg):
    m, pk, sp = cfg
    return m if m.startswith("wylie") else f"{m}-{pk}-{sp}"


@st.composite
def forests(draw, max_n):
    """succ arrays from the generators (lists, forests, blocked lists) or built
    directly from a hypothesis permutation cut into lists (shrinks well)."""
    kind = draw(st.sampled_from(["list", "forest", "blocked", "direct"]))
    small = draw(st.booleans())
    n = draw(st.integers(1, min(64, max_n)) if small else st.integers(1, max_n))
    seed = draw(st.integers(0, 2**32 - 1))
    if kind == "list":
        return random_list(n, seed)
    if kind == "forest":
        return random_forest(n, draw(st.integers(1, n)), seed)
    if kind == "blocked":
        return blocked_list(n, draw(st.integers(1, max(1, n // 2))), seed)
    return draw(gst.forests(max_n=min(n, 64)))       # simgpu.testing: shrinks well


def check(result, ref):
    assert result.ranks.dtype == np.int64
    assert np.array_equal(result.ranks, ref)


# --------------------------------------------------------------------------
# correctness against the reference
# --------------------------------------------------------------------------

@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(succ=forests(5000), seed=st.integers(0, 2**32 - 1), threads=st.sampled_from([None, 32, 200]))
def test_every_method_lockstep(succ, seed, threads):
    ref = rank_sequential(succ)
    for method, packing, splitters in DEVICE_CONFIGS:
        r = LR.rank(succ, method=method, packing=packing, splitters=splitters, seed=seed,
                    threads=threads)
        check(r, ref)
        assert all(rep.engine == "lockstep" for rep in r.launches)
    for method in HOST_METHODS:
        check(LR.rank(succ, method=method, seed=seed), ref)


@pytest.mark.parametrize("cfg", DEVICE_CONFIGS, ids=ids)
def test_largest_inputs_lockstep(cfg):
    method, packing, splitters = cfg
    k = DEVICE_CONFIGS.index(cfg)
    succ = [random_list(5000, k), random_forest(5000, 17, k), blocked_list(5000, 64, k)][k % 3]
    check(LR.rank(succ, method=method, packing=packing, splitters=splitters),
          rank_sequential(succ))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(succ=forests(300), seed=st.integers(0, 2**32 - 1), sched=st.integers(0, 2**31))
def test_every_method_warps_engine_random_schedule(succ, seed, sched):
    ref = rank_sequential(succ)
    for method, packing, splitters in DEVICE_CONFIGS:
        r = LR.rank(succ, method=method, packing=packing, splitters=splitters, seed=seed,
                    threads=64, block=32, launch_options=dict(schedule="random", seed=sched))
        check(r, ref)
        assert all(rep.engine == "warps" and rep.schedule == "random" for rep in r.launches)


@pytest.mark.parametrize("packing", [64, 48])
def test_random_splitter_many_schedules_with_collisions(packing):
    # 96 splitters on 60 nodes: many slots collide, so RS2's winners and the
    # losers' empty sublists change from schedule to schedule.
    succ = random_forest(60, 3, 5)
    ref = rank_sequential(succ)
    for s in range(12):
        r = LR.rank(succ, packing=packing, threads=96, block=32, seed=7,
                    launch_options=dict(schedule="random", seed=s))
        check(r, ref)
        assert r.stats["collisions"] > 0


@pytest.mark.parametrize("cfg", DEVICE_CONFIGS, ids=ids)
def test_lockstep_random_schedules_many_seeds(cfg):
    method, packing, splitters = cfg
    succ = random_forest(1500, 4, 11)
    ref = rank_sequential(succ)
    for s in range(8):
        threads = 256 if method == "wylie-single-block" else 700      # one block holds <= 512
        r = LR.rank(succ, method=method, packing=packing, splitters=splitters, threads=threads,
                    seed=s, launch_options=dict(engine="lockstep", schedule="random", seed=s))
        check(r, ref)


@pytest.mark.parametrize("cfg", DEVICE_CONFIGS, ids=ids)
@pytest.mark.parametrize("n", [0, 1, 2])
def test_tiny_inputs(cfg, n):
    method, packing, splitters = cfg
    succ = random_list(n, 0) if n else np.empty(0, np.int64)
    r = LR.rank(succ, method=method, packing=packing, splitters=splitters)
    check(r, rank_sequential(succ))
    if n == 0:
        assert r.launches == []


def test_host_methods_tiny_and_lists_of_lone_tails():
    for succ in (np.empty(0, np.int64), np.array([0]), np.arange(7)):
        ref = rank_sequential(succ)
        for m in LR.METHODS:
            check(LR.rank(succ, method=m), ref)


def test_other_device_and_device_object():
    succ = blocked_list(3000, 50, 2)
    ref = rank_sequential(succ)
    h100 = simgpu.get_device("sim:h100")
    for method, packing, splitters in DEVICE_CONFIGS:
        r = LR.rank(succ, method=method, device=h100, packing=packing, splitters=splitters)
        check(r, ref)
        assert all(rep.device == "sim:h100" for rep in r.launches)


def test_sequential_compiled_walk():
    # with numba it is compiled; without it the same function runs as Python
    for succ in (random_forest(500, 9, 1), random_list(1, 0), np.empty(0, np.int64)):
        assert np.array_equal(cpu.rank_sequential_compiled(succ), rank_sequential(succ))
    assert ("sequential-compiled" in LR.METHODS) == cpu.HAVE_NUMBA


# --------------------------------------------------------------------------
# Wylie
# --------------------------------------------------------------------------

def wylie_rounds(succ):
    longest = int(rank_sequential(succ).max())      # links from a head to its tail
    return math.ceil(math.log2(longest)) if longest > 1 else 0


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 9, 16, 17, 33, 100, 1025])
def test_wylie_round_count_single_lists(n):
    succ = random_list(n, n)
    want = wylie_rounds(succ)
    assert want == (math.ceil(math.log2(n - 1)) if n > 2 else 0)
    r = LR.rank(succ, method="wylie")
    assert r.stats["rounds"] == want
    assert [rep.kernel for rep in r.launches] == ["wylie_init"] + ["wylie_jump"] * want
    r1 = LR.rank(succ, method="wylie-single-block")
    assert r1.stats["rounds"] == want
    assert len(r1.launches) == 1 and r1.launches[0].grid == (1, 1, 1)


@settings(max_examples=15, deadline=None)
@given(succ=forests(2000))
def test_wylie_round_count_is_log2_of_longest_list(succ):
    want = wylie_rounds(succ)
    for method in ("wylie", "wylie-single-block"):
        assert LR.rank(succ, method=method).stats["rounds"] == want


def test_wylie_jump_strides_and_moves_64_bit_words():
    succ = random_list(4000, 3)
    r = LR.rank(succ, method="wylie", threads=1000)       # 4 nodes per thread
    jump = r.kernel_reports("wylie_jump")
    assert len(jump) == 12 and all(rep.grid[0] * rep.block[0] == 1024 for rep in jump)
    # one 64-bit load of the own word (coalesced), one random 64-bit load, one
    # coalesced 64-bit store per node per round
    for rep in jump:
        assert rep.loads.bytes_requested == 2 * 8 * 4000
        assert rep.stores.bytes_requested >= 8 * 4000


@pytest.mark.parametrize("method", ["wylie", "wylie-single-block"])
def test_wylie_without_validation_refuses_cycles_instead_of_hanging(method):
    with pytest.raises(RuntimeError, match="not a forest"):
        LR.rank(np.array([1, 2, 3, 0, 4]), method=method, validate=False)


# --------------------------------------------------------------------------
# random splitter
# --------------------------------------------------------------------------

def test_random_splitter_without_validation_fails_loudly_on_cycles():
    for packing in (64, 48):
        with pytest.raises((RuntimeError, simgpu.lang.KernelRuntimeError)):
            LR.rank(np.array([1, 2, 3, 0, 4]), packing=packing, validate=False)
    with pytest.raises(RuntimeError):
        LR.rank(np.array([1, 2, 3, 0, 4]), method="cpu-random-splitter", validate=False)


@pytest.mark.parametrize("packing", [64, 48])
def test_random_splitter_kernels_and_reports(packing):
    r = LR.rank(random_list(2000, 4), packing=packing, threads=128)
    assert [rep.extra["step"] for rep in r.launches] == RS_STEPS
    suffix = f"_{packing}"
    assert [rep.kernel for rep in r.launches] == [
        "rs1_init" + suffix, "rs2_choose" + suffix, "rs3_walk" + suffix, "rs4_rank_splitters",
        "rs5_final" + suffix]
    assert r.kernel_reports("rs4_rank_splitters")[0].grid == (1, 1, 1)
    rs3, rs5 = r.launches[2], r.launches[4]
    # RS3 follows the list (scattered), RS5 strides in array order (coalesced)
    assert rs3.loads.efficiency < rs5.loads.efficiency


@pytest.mark.parametrize("make", [lambda: random_list(50_000, 5),
                                  lambda: random_forest(50_000, 300, 6)])
@pytest.mark.parametrize("in_place", [True, False])
def test_many_splitters_rank_the_splitter_list_with_multi_kernel_pointer_jumping(
        make, in_place, monkeypatch):
    # more slots than one block should rank (SINGLE_BLOCK_SLOTS): RS4 becomes one
    # rs4_jump_in_place while the slots fit the resident threads (sim:h100: 270,336),
    # else ceil(log2(r + 1)) wylie_jump launches and one rs4_splitter_ranks
    from algorithms.list_ranking import random_splitter
    from algorithms.list_ranking.random_splitter import SINGLE_BLOCK_SLOTS
    if not in_place:
        monkeypatch.setattr(random_splitter, "IN_PLACE_RESIDENT_FACTOR", 0)
    succ = make()
    r = LR.rank(succ, threads=SINGLE_BLOCK_SLOTS + 3000, device="sim:h100", seed=2)
    np.testing.assert_array_equal(r.ranks, rank_sequential(succ))
    rs4 = [rep for rep in r.launches if rep.extra["step"] == "RS4"]
    slots = r.stats["slots"] + 1
    if in_place:
        assert [rep.kernel for rep in rs4] == ["rs4_jump_in_place"]
        assert r.stats["rs4_rounds"] == 1
    else:
        assert [rep.kernel for rep in rs4] == ["wylie_jump"] * (slots.bit_length()) + [
            "rs4_splitter_ranks"]
        assert r.stats["rs4_rounds"] == slots.bit_length()
    assert all(rep.grid[0] > 1 for rep in rs4)


def test_rs3_traffic_per_node_matches_the_paper():
    # 64-bit: per node walked one 64-bit word read (successor and splitter mark) and
    # one 64-bit write over it (128 bits); 48-bit: 32-bit succ + 16-bit owner reads,
    # 16 + 32-bit writes (96 bits)
    succ = random_list(3000, 8)
    for packing, per_node in ((64, 16), (48, 12)):
        r = LR.rank(succ, packing=packing, threads=64)
        rs3 = r.launches[2]
        walked = 3000 - r.stats["sublists"]                       # non-splitter nodes
        moved = rs3.loads.bytes_requested + rs3.stores.bytes_requested
        assert per_node * walked <= moved <= per_node * walked + 40 * r.stats["slots"] + 8 * 4000


def test_random_splitters_are_kiss_draws_plus_heads():
    succ = random_forest(5000, 6, 3)
    heads = cpu.heads_of(succ)
    p, seed = 300, 1234
    draws = KissStreams(seed, p).next_below(5000)
    for packing in (64, 48):
        r = LR.rank(succ, packing=packing, threads=p, seed=seed)
        assert set(r.stats["splitter_nodes"].tolist()) == set(draws.tolist()) | set(heads.tolist())
        assert r.stats["collisions"] == p + len(heads) - r.stats["sublists"]


def test_sublist_stats_random_and_even():
    succ = random_list(5000, 21)
    r = LR.rank(succ, threads=250, seed=3)
    st_ = r.stats
    hist = st_["histogram"]
    assert sum(hist["counts"]) == st_["sublists"]
    assert abs(st_["mean"] * st_["sublists"] - 5000) < 1e-6
    assert st_["max"] < hist["bins"][-1][1] and st_["max"] >= hist["bins"][-1][0]
    assert abs(st_["expected_sublists"] - st_["sublists"]) < 25        # ~250 - collisions
    assert 0.8 < st_["mean"] / st_["expected_mean"] < 1.25
    assert 0.4 < st_["max"] / st_["expected_max"] < 2.5
    assert len(hist["expected"]) == len(hist["counts"])
    assert abs(sum(hist["expected"]) - st_["expected_sublists"]) < 0.05 * st_["expected_sublists"]
    even = LR.rank(succ, threads=250, splitters="even").stats
    assert even["collisions"] == 0 and even["max"] == 20 and even["sublists"] == 250
    assert st_["max"] > even["max"]
    cpu_stats = LR.rank(succ, method="cpu-random-splitter").stats
    assert sum(cpu_stats["histogram"]["counts"]) == cpu_stats["sublists"]


def test_48_bit_thread_limit():
    succ = random_list(1000, 1)
    with pytest.raises(ValueError, match=r"at most 16,384 threads"):
        LR.rank(succ, packing=48, threads=MAX_THREADS_48 + 1)
    small = random_list(200, 1)
    check(LR.rank(small, packing=48, threads=MAX_THREADS_48), rank_sequential(small))
    check(LR.rank(small, packing=64, threads=MAX_THREADS_48 + 1), rank_sequential(small))
    assert LR.default_threads(simgpu.get_device("sim:h100"), 10**9, packing=48) == MAX_THREADS_48


def test_48_bit_refuses_more_splitters_than_16_bit_owners():
    lone = np.arange(70000)                      # 70,000 one-node lists: 70,000 heads
    with pytest.raises(ValueError, match="16-bit owner"):
        LR.rank(lone, packing=48, threads=32)


def test_default_threads():
    dev = simgpu.get_device("sim:gtx260")
    assert LR.default_threads(dev, 10**8) == 27 * 1024 // 8
    p = LR.default_threads(dev, 5000)
    assert 32 <= p and p * math.log2(p) <= 5000 < 2 * p * math.log2(2 * p)
    assert LR.default_threads(dev, 1) == 32


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------

@pytest.mark.parametrize("succ, msg", [
    ([1, 5, 2], r"out of range \[0, 3\) at node\(s\) 1"),
    ([-1, 0], r"out of range .* at node\(s\) 0"),
    ([2, 2, 2, 0], r"node\(s\) 2 have two or more predecessors: node 2 is the successor of nodes 0, 1"),
    ([1, 0], r"no tail .* cycle 0 -> 1 -> 0"),
    ([1, 2, 0], r"no tail"),
    ([0, 2, 3, 1], r"3 node\(s\) lie on a cycle and reach no tail: nodes 1, 2, 3"),
    ([[0, 1]], r"1-D"),
    ([0.0, 1.0], "integer dtype"),
])
@pytest.mark.parametrize("method", LR.METHODS)
def test_validation_errors(succ, msg, method):
    with pytest.raises(ValueError, match=msg):
        LR.rank(np.array(succ), method=method)


def test_argument_errors():
    succ = random_list(10, 0)
    for kwargs, msg in ((dict(method="nope"), "unknown method"), (dict(packing=32), "packing"),
                        (dict(splitters="odd"), "splitters"), (dict(threads=0), "threads")):
        with pytest.raises(ValueError, match=msg):
            LR.rank(succ, **kwargs)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_cpu_random_splitter_on_several_processes_matches_the_reference(workers):
    for succ in (random_list(20_000, 11), random_forest(20_000, 40, 12), random_list(3, 1)):
        r = LR.rank(succ, method="cpu-random-splitter", workers=workers, seed=5)
        np.testing.assert_array_equal(r.ranks, rank_sequential(succ))
        one = LR.rank(succ, method="cpu-random-splitter", workers=1, seed=5)
        assert r.stats["sublists"] == one.stats["sublists"] and r.stats["max"] == one.stats["max"]


def test_cpu_random_splitter_workers_must_be_positive():
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        LR.rank(random_list(10, 1), method="cpu-random-splitter", workers=0)
