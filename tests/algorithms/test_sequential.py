"""Sequential references: list ranking against a naive ranking on random
forests, labels against scipy's connected_components, every ValueError path."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st
from scipy.sparse.csgraph import connected_components

from algorithms.connected_components.sequential import (INT32_MAX, label_sequential,
                                                        label_union_find, validate_edges)
from algorithms.list_ranking.sequential import (list_heads, rank_pointer_jumping,
                                                rank_sequential, validate_succ)


# --------------------------------------------------------------------------
# naive references, written independently of the module under test
# --------------------------------------------------------------------------

def naive_rank(succ):
    """Follow each node to its tail, memoizing; None if the input is not a
    forest of lists (bad range, a cycle, or a node with two predecessors)."""
    succ = [int(x) for x in succ]
    n = len(succ)
    if any(not 0 <= s < n for s in succ):
        return None
    preds = [0] * n
    for i, s in enumerate(succ):
        if s != i:
            preds[s] += 1
    if any(p > 1 for p in preds):
        return None
    rank = [None] * n
    for start in range(n):
        path, v = [], start
        while rank[v] is None and succ[v] != v:
            path.append(v)
            v = succ[v]
            if len(path) > n:
                return None  # cycle
        base = rank[v] if rank[v] is not None else 0
        rank[v] = base
        for k, u in enumerate(reversed(path), start=1):
            rank[u] = base + k
    return rank


def forest_from(order, cuts):
    """A forest that visits `order`, broken into lists after positions in cuts."""
    n = len(order)
    succ = np.empty(n, dtype=np.int64)
    ends = sorted(set(cuts) | {n - 1}) if n else []
    nxt = np.append(order[1:], -1)
    succ[order] = nxt
    for e in ends:
        succ[order[e]] = order[e]
    return succ


@st.composite
def forests(draw, max_n=2000):
    n = draw(st.integers(0, max_n))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)  # independent of the KISS generators
    order = rng.permutation(n)
    k = draw(st.integers(0, min(n, 50)))
    cuts = rng.choice(n, size=k, replace=False).tolist() if n else []
    return forest_from(order, cuts)


# --------------------------------------------------------------------------
# list ranking
# --------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(forests())
def test_rank_matches_naive_on_forests(succ):
    expected = naive_rank(succ)
    validate_succ(succ)
    got = rank_sequential(succ)
    assert got.dtype == np.int64 and got.tolist() == expected
    assert rank_pointer_jumping(succ).tolist() == expected


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-1, 9), max_size=9))
def test_validation_agrees_with_naive_on_arbitrary_arrays(raw):
    succ = np.array(raw, dtype=np.int64)
    expected = naive_rank(succ)
    if expected is None:
        for f in (validate_succ, rank_sequential, rank_pointer_jumping):
            with pytest.raises(ValueError):
                f(succ)
    else:
        validate_succ(succ)
        assert rank_sequential(succ).tolist() == expected
        assert rank_pointer_jumping(succ).tolist() == expected


def test_small_cases():
    assert rank_sequential([]).tolist() == [] and rank_pointer_jumping([]).tolist() == []
    validate_succ(np.array([], dtype=np.int64))
    assert rank_sequential([0]).tolist() == [0]
    assert rank_sequential(np.array([1, 2, 2], dtype=np.uint8)).tolist() == [2, 1, 0]
    assert rank_sequential([0, 1, 2]).tolist() == [0, 0, 0]  # three lone tails
    assert list_heads([3, 2, 2, 3, 0]).tolist() == [1, 4]


def test_long_list_both_references():
    order = np.random.default_rng(1).permutation(200_000)
    succ = forest_from(order, [])
    expected = np.empty(200_000, dtype=np.int64)
    expected[order] = np.arange(199_999, -1, -1)
    assert np.array_equal(rank_sequential(succ), expected)
    assert np.array_equal(rank_pointer_jumping(succ), expected)


@pytest.mark.parametrize("succ, msg", [
    ([1, 5, 2], r"successor out of range \[0, 3\) at node\(s\) 1: succ\[1\] = 5"),
    ([-1, 0], r"out of range \[0, 2\) at node\(s\) 0: succ\[0\] = -1"),
    ([2, 2, 2, 0], r"node\(s\) 2 have two or more predecessors: node 2 is the successor of nodes 0, 1"),
    ([1, 0], r"succ has no tail \(no node i with succ\[i\] == i\), so its lists never end: cycle 0 -> 1 -> 0"),
    ([0, 2, 3, 1], r"3 node\(s\) lie on a cycle and reach no tail: nodes 1, 2, 3; cycle 1 -> 2 -> 3 -> 1"),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 11],
     r"11 node\(s\) lie on a cycle .* nodes 0, 1, 2, 3, 4 \(and 6 more\); cycle 0 -> 1 .* 8 -> \.\.\."),
    ([[0, 1]], r"succ must be a 1-D array, got shape \(1, 2\)"),
    ([0.0, 1.0], "succ must have an integer dtype, got float64"),
])
def test_succ_errors(succ, msg):
    for f in (validate_succ, rank_sequential, rank_pointer_jumping):
        with pytest.raises(ValueError, match=msg):
            f(np.array(succ))


def test_cycle_with_power_of_two_length_is_caught_by_pointer_jumping():
    # on a 4-cycle succ^(2^k) returns to the start, so "s[s] == s" alone would pass
    succ = np.array([1, 2, 3, 0, 4])
    with pytest.raises(ValueError, match="cycle"):
        rank_pointer_jumping(succ)


# --------------------------------------------------------------------------
# connected components
# --------------------------------------------------------------------------

def scipy_labels(n, edges):
    if n == 0:
        return []
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    a = sp.coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n))
    _, lab = connected_components(a, directed=False)
    smallest = np.full(lab.max() + 1, n)
    np.minimum.at(smallest, lab, np.arange(n))
    return smallest[lab].tolist()


@st.composite
def graphs(draw):
    n = draw(st.integers(0, 300))
    if n == 0:
        return 0, np.empty((0, 2), dtype=np.int64)
    vid = st.integers(0, n - 1)
    pairs = draw(st.lists(st.tuples(vid, vid), max_size=400))
    return n, np.array(pairs, dtype=np.int64).reshape(-1, 2)


@settings(max_examples=100, deadline=None)
@given(graphs())
def test_labels_match_scipy(graph):
    n, edges = graph
    expected = scipy_labels(n, edges)
    got = label_sequential(n, edges)
    assert got.dtype == np.int64 and got.tolist() == expected
    assert label_union_find(n, edges).tolist() == expected


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 3000), st.integers(0, 2**32 - 1))
def test_labels_on_random_paths(n, seed):
    # a path in random label order is the slow case for hooking by smaller id
    order = np.random.default_rng(seed).permutation(n)
    edges = np.stack([order[:-1], order[1:]], axis=1)
    assert label_sequential(n, edges).tolist() == [0] * n


def test_label_edge_cases():
    assert label_sequential(0, np.empty((0, 2), dtype=np.int64)).tolist() == []
    assert label_sequential(1, np.empty((0, 2), dtype=np.int64)).tolist() == [0]
    assert label_sequential(1, np.array([[0, 0]])).tolist() == [0]
    e = np.array([[3, 3], [4, 2], [2, 4], [4, 2], [5, 6]], dtype=np.int32)  # loops, duplicates
    assert label_sequential(7, e).tolist() == [0, 1, 2, 3, 2, 5, 5]
    assert label_sequential(3, np.array([[2, 1]], dtype=np.uint64)).tolist() == [0, 1, 1]


EMPTY = np.empty((0, 2), dtype=np.int64)


@pytest.mark.parametrize("n, edges, msg", [
    (True, EMPTY, "n must be an integer, got True"),
    (3.0, EMPTY, "n must be an integer, got 3.0"),
    (-1, EMPTY, "n must be >= 0, got -1"),
    (2**31, EMPTY, r"n=2147483648 does not fit the int32 index type \(max 2147483647\)"),
    (4, np.array([0, 1]), r"edges must have shape \(m, 2\), got \(2,\)"),
    (4, np.zeros((2, 3), dtype=np.int64), r"edges must have shape \(m, 2\), got \(2, 3\)"),
    (4, np.zeros((2, 2)), "edges must have an integer dtype, got float64"),
    (4, np.zeros((2, 2), dtype=bool), "edges must have an integer dtype, got bool"),
    (4, np.array([[0, 1], [2, 3], [1, 4]]), r"edge 2 = \(1, 4\): vertex id 4 is out of range \[0, 4\)"),
    (4, np.array([[0, 1], [-1, 3], [9, 9]]),
     r"edge 1 = \(-1, 3\): vertex id -1 is out of range \[0, 4\) \(2 bad edges in all\)"),
    (4, np.array([[0, 2**64 - 1]], dtype=np.uint64), r"edge 0 = \(0, 18446744073709551615\)"),
    (0, np.array([[0, 0]]), r"edge 0 = \(0, 0\): vertex id 0 is out of range \[0, 0\)"),
])
def test_validate_edges_errors(n, edges, msg):
    with pytest.raises(ValueError, match=msg):
        validate_edges(n, edges)
    with pytest.raises(ValueError, match=msg):
        label_sequential(n, edges)


def test_too_many_edges_for_int32():
    # 2^31 rows that all share one buffer (stride 0): no memory needed
    huge = np.lib.stride_tricks.as_strided(np.zeros(2, dtype=np.int64),
                                           shape=(INT32_MAX + 1, 2), strides=(0, 8))
    with pytest.raises(ValueError, match=r"m=2147483648 edges do not fit the int32 index type"):
        validate_edges(4, huge)


def test_validate_edges_returns_int64():
    out = validate_edges(5, np.array([[1, 2]], dtype=np.int16))
    assert out.dtype == np.int64 and out.tolist() == [[1, 2]]
    assert validate_edges(0, np.empty((0, 2), dtype=np.int32)).shape == (0, 2)
