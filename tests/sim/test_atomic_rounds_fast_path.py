"""TrafficCounter._rounds (simgpu/sim/counters.py), its test without a sort included,
against the round rule written record by record in plain Python: on random atomic
records, with and without a warp on one word twice, the same regrouped records, and
its None agrees with a plain count of each warp's words."""
import numpy as np
from hypothesis import given, settings, strategies as st

from simgpu.mem.access import MemoryAccess
from simgpu.sim.counters import TrafficCounter, _no_warp_has_a_word_twice


def rounds_reference(acc: MemoryAccess):
    """The round rule in plain Python, record by record: a lane's round is how many lanes
    of its warp on its word come before it (by lane, then by place in the record); the
    result lists the records by (warp * 32 + round, lane, place), or None if every round
    is 0."""
    recs = list(zip(acc.warp.tolist(), acc.lane.tolist(), acc.address.tolist()))
    rank = [sum(1 for j, (w2, l2, a2) in enumerate(recs) if (w2, a2) == (w, a) and (l2, j) < (l, i))
            for i, (w, l, a) in enumerate(recs)]
    if not any(rank):
        return None
    key = [w * 32 + r for (w, _, _), r in zip(recs, rank)]
    order = sorted(range(len(recs)), key=lambda i: (key[i], recs[i][1], i))
    return {"warp": np.array([key[i] for i in order], dtype=np.int64),
            "lane": np.array([recs[i][1] for i in order], dtype=np.int64),
            "address": np.array([recs[i][2] for i in order], dtype=np.int64)}


def a_warp_has_a_word_twice(acc: MemoryAccess) -> bool:
    seen = set()
    for w, a in zip(acc.warp.tolist(), acc.address.tolist()):
        if (w, a) in seen:
            return True
        seen.add((w, a))
    return False


SHAPES = ("rising", "falling", "strided", "uniform", "few words", "many words")


@st.composite
def atomic_records(draw):
    """A block's atomic: warps in order (or, rarely, shuffled as a whole record may not
    be), each with a random set of active lanes, on words of one shape."""
    warps = draw(st.integers(1, 6))
    ids = np.cumsum(draw(st.lists(st.integers(0, 3), min_size=warps, max_size=warps)))
    warp, lane = [], []
    for w in ids.tolist():
        active = draw(st.lists(st.integers(0, 31), min_size=1, max_size=32, unique=True))
        if draw(st.booleans()):
            active.sort()
        warp += [w] * len(active)
        lane += active
    n = len(warp)
    shape = draw(st.sampled_from(SHAPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    base = int(rng.integers(0, 1 << 20)) * 4
    words = {"rising": np.arange(n), "falling": np.arange(n)[::-1],
             "strided": np.arange(n) * int(rng.integers(0, 4)),   # stride 0: all one word
             "uniform": np.zeros(n, dtype=np.int64),
             "few words": rng.integers(0, 8, n),
             "many words": rng.integers(0, 1 << 16, n)}[shape]
    warp, lane = np.asarray(warp, dtype=np.int64), np.asarray(lane, dtype=np.int64)
    disorder = draw(st.sampled_from(["none"] * 8 + ["shuffled", "lane-major"]))
    if disorder != "none":     # outside MemoryAccess's contract: a warp comes back later
        perm = rng.permutation(n) if disorder == "shuffled" else np.lexsort((warp, lane))
        warp, lane = warp[perm], lane[perm]
    return MemoryAccess(kind="atomic", space="global", node=None, array="a", warp=warp,
                        lane=lane, address=base + 4 * words.astype(np.int64), word_size=4)


@settings(max_examples=300, deadline=None)
@given(atomic_records())
def test_rounds_are_each_words_lanes_one_per_round(acc):
    got, want = TrafficCounter._rounds(acc), rounds_reference(acc)
    assert (got is None) == (want is None) == (not a_warp_has_a_word_twice(acc))
    if want is not None:
        for field in ("warp", "lane", "address"):
            assert np.array_equal(getattr(got, field), want[field]), field
        assert got.__dict__.keys() == acc.__dict__.keys() and got.kind == acc.kind


@settings(max_examples=300, deadline=None)
@given(atomic_records())
def test_the_test_without_a_sort_never_misses_a_repeated_word(acc):
    if _no_warp_has_a_word_twice(acc.warp, acc.address):
        assert not a_warp_has_a_word_twice(acc)


def test_the_common_shapes_take_the_fast_path():
    """Each shape the test is for: a thread-indexed atomic, an aggregated uniform one
    (one lane a warp, the warps of a block on one word)."""
    warp = np.repeat(np.arange(8), 32)
    assert _no_warp_has_a_word_twice(warp, 4 * np.arange(256) + 4096)
    assert _no_warp_has_a_word_twice(np.arange(16), 4 * (np.arange(16) // 8))
    assert _no_warp_has_a_word_twice(warp, 4 * np.tile(np.arange(32), 8))   # lane-indexed
    assert not _no_warp_has_a_word_twice(warp, np.zeros(256, dtype=np.int64))
    # warps out of order: warp 0 comes back to its word after warp 1
    assert not _no_warp_has_a_word_twice(np.array([0, 1, 0]), np.array([8, 8, 8]))
