"""The validation the fused 64-bit walk does itself (random_splitter.py, "Validation
in the walk"): RS3 flags a node reached twice and ends that walk, RS5 flags a node
no walk reached and a single list's head whose rank is not n - 1.  Each check is
tested on its kernel with hand-made words, and the whole against the host's
sequential checks on inputs that are lists with one or two successors changed
(merges, cycles beside and inside the list), with few splitters so that the walks,
not the splitters, meet the damage, under random schedules too."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import simgpu
from algorithms import list_ranking as LR
from algorithms.generators import random_forest, random_list
from algorithms.list_ranking.random_splitter_kernels import (
    HEAD_RANK, SPLIT_HIGH, UNOWNED, UNWALKED, WALKED_TWICE, rs1_init_64, rs3_walk_64,
    rs5_final_64)
from algorithms.list_ranking.sequential import rank_sequential, validate_succ

DEV = "sim:gtx260"


def words_after_rs1(dev, succ):
    word = dev.empty(len(succ), np.uint64)
    dev.launch(rs1_init_64, 1, 64, dev.to_device(np.asarray(succ, np.int32)), word, len(succ))
    return word


def splitter(word_host, node, slot):
    word_host[node] = (np.uint64(SPLIT_HIGH | slot) << np.uint64(32)) | \
        (word_host[node] & np.uint64(0xFFFFFFFF))


def test_rs1_marks_every_node_unwalked():
    dev = simgpu.get_device(DEV)
    succ = np.array([1, 2, 2])
    got = words_after_rs1(dev, succ).to_host()
    np.testing.assert_array_equal(got, np.uint64(UNWALKED) | succ.astype(np.uint64))


@pytest.mark.parametrize("engine", ["lockstep", "warps"])
def test_a_walk_into_a_cycle_stops_and_flags_it(engine):
    # 0 -> 1 -> 2 -> 3 -> 1 (a cycle no splitter is on), 4 a tail; one splitter, node 0:
    # without the check the walk would go round the cycle for ever
    dev = simgpu.get_device(DEV)
    succ = [1, 2, 3, 1, 4]
    host = words_after_rs1(dev, succ).to_host()
    splitter(host, 0, 0)
    word = dev.to_device(host)
    err = dev.zeros(3, np.int32)
    spw = dev.zeros(4, np.uint64)
    dev.launch(rs3_walk_64, 1, 32, word, dev.to_device(np.array([0], np.int32)), spw, 1, err,
               0, engine=engine)
    assert err.to_host().tolist() == [1, 0, 0] and WALKED_TWICE == 0
    assert int(spw.to_host()[0]) & 0xFFFFFFFF == 4        # 0, 1, 2, 3 walked, then the stop


def test_two_walks_into_one_node_flag_it():
    # 0 -> 2 and 1 -> 2 -> 3 (tail); splitters 0 and 1, one walk after the other (one
    # thread takes both slots): the second finds node 2 walked
    dev = simgpu.get_device(DEV)
    host = words_after_rs1(dev, [2, 2, 3, 3]).to_host()
    splitter(host, 0, 0)
    splitter(host, 1, 1)
    err = dev.zeros(3, np.int32)
    dev.launch(rs3_walk_64, 1, 1, dev.to_device(host), dev.to_device(np.array([0, 1], np.int32)),
               dev.zeros(6, np.uint64), 2, err, 0)
    assert err.to_host()[WALKED_TWICE] == 1


def test_a_valid_walk_flags_nothing():
    dev = simgpu.get_device(DEV)
    succ = random_list(300, 3)
    r = LR.rank(succ, device=dev, threads=32)            # validated by the walk's checks
    np.testing.assert_array_equal(r.ranks, rank_sequential(succ))
    assert not any(rep.extra["step"] == "validate" for rep in r.helper_launches)


def test_rs5_flags_an_unowned_node_and_a_wrong_head_rank():
    dev = simgpu.get_device(DEV)
    # node 0: splitter of slot 0; node 1: walked by slot 0, local rank 1; node 2: unowned
    words = np.array([(np.uint64(SPLIT_HIGH) << np.uint64(32)) | np.uint64(1),
                      np.uint64(1), np.uint64(UNWALKED) | np.uint64(2)], np.uint64)
    sp_rank = dev.to_device(np.array([5, 0], np.int32))
    for head, last, want in [(0, 5, [0, 1, 0]), (0, 2, [0, 1, 1]), (-1, 2, [0, 1, 0])]:
        word = dev.to_device(words)
        err = dev.zeros(3, np.int32)
        dev.launch(rs5_final_64, 1, 32, word, sp_rank, 3, err, 0, head, last,
                   dev.zeros(5, np.int64), 0)
        assert err.to_host().tolist() == want, (head, last)
        assert word.to_host().view(np.int64).tolist() == [5, 4, -1]
    assert (UNOWNED, HEAD_RANK) == (1, 2)


def scan_counters(dev, succ):
    from algorithms.list_ranking import device_input
    ctx = LR._Context(dev, 256, None)
    stats, succ32 = device_input.scan(ctx, dev.to_device(np.asarray(succ, np.int32)))
    return stats


@pytest.mark.parametrize("succ, one", [([1, 2, 3, 3], True),        # one list, head 0
                                       ([1, 1, 3, 3], False),       # two tails
                                       ([1, 7, 3, 3], False),       # an id out of range
                                       ([1, 3, 3, 3], False)])      # head sum out of range
def test_rs2_and_rs5_for_a_guessed_single_list(succ, one):
    # one_list=1: the head comes from the scan's counters; where succ is not one list RS2
    # marks no splitter and RS5 leaves the words and raises NOT_ONE_LIST.  Either way RS2
    # writes every sp_node (0 where it marks nothing) and zeroes the flag words, which the
    # host allocates without a memset
    from algorithms.list_ranking.random_splitter_kernels import NOT_ONE_LIST, rs2_choose_64
    dev = simgpu.get_device(DEV)
    stats = scan_counters(dev, succ)
    word = dev.to_device(np.uint64(UNWALKED) | np.array(succ, np.uint64))
    sp_node = dev.to_device(np.array([5, 5], np.int32))         # stale values
    flags = dev.to_device(np.full(37, 9, np.int32))              # more words than threads
    dev.launch(rs2_choose_64, 1, 32, word, sp_node, dev.zeros(6, np.uint64),
               dev.zeros(4, np.uint32), sp_node, 7, 1, 2, 4, -1, stats, 1, flags, 36)
    marked = np.flatnonzero(word.to_host() >= np.uint64(1 << 63))
    assert (0 in marked) == one and (len(marked) > 0) == one
    assert flags.to_host().tolist() == [0] * 36 + [9]
    chosen = sp_node.to_host()                # slot 0 random, slot 1 the head (node 0)
    assert chosen[1] == 0 and 0 <= chosen[0] < 4 and (one or chosen[0] == 0)
    err = dev.zeros(4, np.int32)
    before = word.to_host()
    dev.launch(rs5_final_64, 1, 32, word, dev.zeros(3, np.int32), 4, err, 0, -1, 3, stats, 1)
    assert err.to_host()[NOT_ONE_LIST] == (0 if one else 1)
    if not one:
        np.testing.assert_array_equal(word.to_host(), before)


def damaged(n, seed, changes):
    """A random list of n nodes with ``changes`` successors set to random nodes."""
    rng = np.random.default_rng(seed)
    succ = random_list(n, seed)
    for _ in range(changes):
        succ[rng.integers(n)] = rng.integers(n)
    return succ


def host_verdict(succ):
    try:
        validate_succ(succ)
    except ValueError as exc:
        return str(exc)
    return None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 400), seed=st.integers(0, 2**31), changes=st.integers(1, 2),
       forest=st.booleans())
def test_damaged_lists_are_refused_like_the_host(n, seed, changes, forest):
    succ = damaged(n, seed, changes)
    if forest:                       # several tails: the in-degrees and unowned nodes tell
        succ[np.random.default_rng(seed + 1).integers(n)] = n - 1
        succ[n - 1] = n - 1
    want = host_verdict(succ)
    if want is None:
        np.testing.assert_array_equal(LR.rank(succ, threads=32).ranks, rank_sequential(succ))
        return
    with pytest.raises(ValueError) as got:
        LR.rank(succ, threads=32)
    assert str(got.value) == want
    if (succ == np.arange(n)).sum() <= 1:   # one tail (or none): complete without validation
        with pytest.raises((ValueError, RuntimeError)):     # (no tail: the range scan's)
            LR.rank(succ, threads=32, validate=False)


@pytest.mark.parametrize("seed", range(6))
def test_damaged_lists_under_random_schedules(seed):
    succ = damaged(500, seed, 1 + seed % 2)
    want = host_verdict(succ)
    opts = dict(engine="warps", schedule="random", seed=seed)
    if want is None:
        np.testing.assert_array_equal(LR.rank(succ, threads=64, launch_options=opts).ranks,
                                      rank_sequential(succ))
    else:
        with pytest.raises(ValueError, match="predecessors|cycle"):
            LR.rank(succ, threads=64, launch_options=opts)


def test_many_lists_and_a_cycle_without_a_splitter():
    succ = random_forest(2000, 30, seed=5)
    cyc = np.array([2000, 2001, 2002])
    succ = np.concatenate([succ, cyc[[1, 2, 0]]])       # 2000 -> 2001 -> 2002 -> 2000
    with pytest.raises(ValueError, match="3 node\\(s\\) lie on a cycle"):
        LR.rank(succ, threads=32)
    with pytest.raises(RuntimeError, match="not a forest"):
        LR.rank(succ, threads=32, validate=False)


def slot_chain(m, seed):
    """Slot words of a random list of m - 1 slots ending at the sentinel m - 1, and the
    splitter ranks they give (sp_rank = nodes to the tail - 1)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(m - 1)
    nxt = np.empty(m, np.int64)
    nxt[order[:-1]] = order[1:]
    nxt[order[-1]] = nxt[m - 1] = m - 1
    length = rng.integers(0, 5, m)
    length[m - 1] = 0
    words = (((nxt == m - 1).astype(np.uint64) << np.uint64(63))
             | (nxt.astype(np.uint64) << np.uint64(32)) | length.astype(np.uint64))
    want = np.zeros(m, np.int64)
    want[order] = np.cumsum(length[order][::-1])[::-1]
    return words, want - 1


@pytest.mark.parametrize("engine, schedule", [("lockstep", "fixed"), ("warps", "random"),
                                              ("lockstep", "random")])
def test_rs4_in_place_ranks_the_slots_under_any_schedule(engine, schedule):
    from algorithms.list_ranking.random_splitter_kernels import rs4_jump_in_place
    dev = simgpu.get_device(DEV)
    for seed in range(3):
        words, want = slot_chain(700, seed)
        spw, sp_rank, flags = dev.to_device(words), dev.zeros(700, np.int32), dev.zeros(1, np.int32)
        before = dev.zeros(700, np.uint64)
        dev.launch(rs4_jump_in_place, 3, 96, spw, sp_rank, flags, 700, 4 * 700, before,
                   engine=engine, schedule=schedule, seed=seed)
        np.testing.assert_array_equal(sp_rank.to_host(), want)
        np.testing.assert_array_equal(before.to_host(), words)     # as RS3 left them
        assert flags.to_host()[0] == 0


def test_rs4_in_place_gives_up_on_a_cycle_of_splitters():
    from algorithms.list_ranking.random_splitter_kernels import rs4_jump_in_place
    dev = simgpu.get_device(DEV)
    words, _ = slot_chain(300, 1)
    nxt = ((words >> np.uint64(32)) & np.uint64(0x7FFFFFFF)).astype(np.int64)
    last = int(np.flatnonzero(nxt == 299)[0])          # the slot before the sentinel
    words[last] = (np.uint64(nxt[last] and 0) << np.uint64(32)) | np.uint64(1)   # -> slot 0
    flags = dev.zeros(1, np.int32)
    dev.launch(rs4_jump_in_place, 2, 160, dev.to_device(words), dev.zeros(300, np.int32), flags,
               300, 4 * 300, dev.zeros(300, np.uint64))
    assert flags.to_host()[0] == 1


def test_race_detector_finds_only_annotated_races(monkeypatch):
    # RS4 in place forced (more slots than the one-block limit, patched down): its reads of
    # words other threads write are races by design, each annotated in the source
    from algorithms.list_ranking import random_splitter
    monkeypatch.setattr(random_splitter, "SINGLE_BLOCK_SLOTS", 8)
    succ = random_list(600, 1)
    r = LR.rank(succ, device=DEV, threads=64, launch_options=dict(check="races"))
    np.testing.assert_array_equal(r.ranks, rank_sequential(succ))
    assert [x.kernel for x in r.launches if x.extra["step"] == "RS4"] == ["rs4_jump_in_place"]
    races = [x for rep in r.launches + r.helper_launches for x in (rep.races or [])]
    assert any(x.benign and x.benign.startswith("annotated: any (slot") for x in races)
    assert all(x.benign for x in races), [x for x in races if not x.benign][:2]
