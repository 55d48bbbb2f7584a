"""Generators make the promised structures, deterministically; readers and
normalizers accept the formats and reject bad input with a located message."""

import networkx as nx
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st
from scipy.sparse.csgraph import connected_components

from algorithms import generators as G
from algorithms.list_ranking.sequential import rank_sequential, validate_succ


def n_components(n, edges):
    a = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    return connected_components(a, directed=False)[0]


def tails(succ):
    return np.flatnonzero(succ == np.arange(len(succ)))


# --------------------------------------------------------------------------
# KISS-driven helpers
# --------------------------------------------------------------------------

def test_kiss_u32_is_strided_over_gen_threads():
    from algorithms.kiss import KissState
    n = G.GEN_THREADS + 5
    d = G.kiss_u32(n, 11, stream=2, draws=2)
    s = KissState.from_seed(G.stream_seed(11, 2), 3)  # thread 3: items 3, 3 + P
    assert [s.next_u32() for _ in range(4)] == [d[0, 3], d[1, 3], d[0, 3 + G.GEN_THREADS],
                                                d[1, 3 + G.GEN_THREADS]]
    # fewer items use the same per-thread streams
    assert np.array_equal(G.kiss_u32(10, 11, 2, 2), d[:, :10])


def test_random_permutation():
    p = G.random_permutation(1000, 1)
    assert p.dtype == np.int64 and np.array_equal(np.sort(p), np.arange(1000))
    assert np.array_equal(p, G.random_permutation(1000, 1))
    assert not np.array_equal(p, G.random_permutation(1000, 2))
    assert len(G.random_permutation(0, 1)) == 0


# --------------------------------------------------------------------------
# lists
# --------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3000), st.integers(0, 2**64 - 1))
def test_random_list(n, seed):
    succ = G.random_list(n, seed)
    assert succ.dtype == np.int64
    validate_succ(succ)
    assert len(tails(succ)) == 1
    assert rank_sequential(succ)[0] == n - 1  # node 0 is the head


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_forest(data):
    n = data.draw(st.integers(1, 2000))
    lists = data.draw(st.integers(1, n))
    succ = G.random_forest(n, lists, data.draw(st.integers(0, 1000)))
    validate_succ(succ)
    t = tails(succ)
    assert len(t) == lists
    # lengths near-equal: n // lists or one more
    rank = rank_sequential(succ)
    heads = np.flatnonzero(np.bincount(succ[succ != np.arange(n)], minlength=n) == 0)
    lengths = rank[heads] + 1
    assert lengths.sum() == n and set(lengths.tolist()) <= {n // lists, -(-n // lists)}
    assert 0 in heads  # node 0 heads the first list


def test_list_edge_cases_and_determinism():
    assert len(G.random_list(0, 1)) == 0 and G.random_list(1, 5).tolist() == [0]
    assert G.ordered_list(4).tolist() == [1, 2, 3, 3] and len(G.ordered_list(0)) == 0
    assert np.array_equal(G.random_list(500, 3), G.random_list(500, 3))
    assert not np.array_equal(G.random_list(500, 3), G.random_list(500, 4))
    assert G.random_forest(5, 5, 1).tolist() == [0, 1, 2, 3, 4]
    assert len(G.random_forest(0, 0, 1)) == 0


@pytest.mark.parametrize("call, msg", [
    (lambda: G.random_forest(5, 0, 1), r"lists=0 must be in \[1, 5\]"),
    (lambda: G.random_forest(5, 6, 1), r"lists=6"),
    (lambda: G.random_list(-1, 1), r"n=-1"),
    (lambda: G.random_list(2.0, 1), "n must be an integer"),
    (lambda: G.blocked_list(5, 0, 1), "window=0"),
    (lambda: G.random_trees_graph(5, 1, 0, 1), "k=0"),
    (lambda: G.random_components_graph(5, 1.5, 1, 1), "density"),
    (lambda: G.uniform_random_graph(0, 3, 1), "n = 0"),
    (lambda: G.rmat_graph(4, 16, 1, a=0.9, b=0.2), "a, b, c"),
    (lambda: G.components_graph_size(10, 0, 1), "density"),
])
def test_generator_argument_errors(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


@pytest.mark.parametrize("n, window", [(1, 1), (10, 3), (100, 7), (1000, 64), (64, 64), (257, 16)])
def test_blocked_list(n, window):
    succ = G.blocked_list(n, window, 9)
    validate_succ(succ)
    assert len(tails(succ)) == 1
    rank = rank_sequential(succ)
    assert rank[0] == n - 1  # head 0
    # walking the list, block ids never decrease: each block is visited in one go
    visit = np.argsort(-rank)
    blocks = visit // window
    assert np.all(np.diff(blocks) >= 0)
    assert np.all(np.abs(succ - np.arange(n)) < 2 * window)


def test_blocked_list_extremes():
    assert np.array_equal(G.blocked_list(50, 1, 3), G.ordered_list(50))
    assert np.array_equal(G.blocked_list(50, 50, 3), G.random_list(50, 3))
    assert np.array_equal(G.blocked_list(50, 10**9, 3), G.random_list(50, 3))
    assert len(G.blocked_list(0, 4, 3)) == 0


# --------------------------------------------------------------------------
# graph families
# --------------------------------------------------------------------------

def test_random_lists_graph():
    n, e = G.random_lists_graph(1000, 7, 2)
    assert n == 1000 and e.dtype == np.int64 and e.shape == (993, 2)
    assert n_components(n, e) == 7
    deg = np.bincount(e.ravel(), minlength=n)
    assert deg.max() <= 2 and (deg == 1).sum() == 14  # two ends per list
    assert np.array_equal(e, G.random_lists_graph(1000, 7, 2)[1])


@pytest.mark.parametrize("k", [1, 2, 3, 20])
def test_random_trees_graph(k):
    n, e = G.random_trees_graph(2000, 5, k, 4)
    assert n == 2000 and e.shape == (1995, 2) and e.dtype == np.int64
    assert n_components(n, e) == 5
    assert len(np.unique(e[:, 0])) == 1995  # one parent per non-root
    children = np.bincount(e[:, 1], minlength=n)
    assert children.max() == k
    # complete k-ary shape: in each tree at most one inner node has < k children
    inner_partial = np.flatnonzero((children > 0) & (children < k))
    assert len(inner_partial) <= 5
    assert np.array_equal(e, G.random_trees_graph(2000, 5, k, 4)[1])


@pytest.mark.parametrize("density, comps", [(0.01, 1), (0.01, 4), (0.1, 3), (0.0, 6)])
def test_random_components_graph(density, comps):
    n, e = G.random_components_graph(1200, density, comps, 8)
    assert n == 1200 and e.dtype == np.int64 and e.shape[1] == 2
    assert n_components(n, e) == comps
    assert np.all(e[:, 0] != e[:, 1])  # no self-loops
    s = 1200 // comps
    expected = comps * max(s - 1, round(density * s * (s - 1) / 2))
    assert abs(len(e) - expected) <= comps
    assert np.array_equal(e, G.random_components_graph(1200, density, comps, 8)[1])


def test_components_graph_size_hits_target():
    n = G.components_graph_size(100_000, 0.01, 2)
    _, e = G.random_components_graph(n, 0.01, 2, 1)
    assert abs(len(e) - 100_000) < 1000


def test_degenerate_graphs():
    assert G.random_components_graph(0, 0.1, 0, 1)[1].shape == (0, 2)
    n, e = G.random_components_graph(5, 0.5, 5, 1)
    assert n == 5 and e.shape == (0, 2)
    assert G.random_trees_graph(0, 0, 2, 1)[1].shape == (0, 2)
    assert G.random_lists_graph(1, 1, 1)[1].shape == (0, 2)


def test_uniform_random_graph():
    n, e = G.uniform_random_graph(100, 5000, 3)
    assert n == 100 and e.shape == (5000, 2) and e.dtype == np.int64
    assert e.min() >= 0 and e.max() < 100
    counts = np.bincount(e.ravel(), minlength=100)
    assert counts.min() > 50  # about 100 each
    assert np.array_equal(e, G.uniform_random_graph(100, 5000, 3)[1])
    assert G.uniform_random_graph(0, 0, 1)[1].shape == (0, 2)


def test_rmat_graph():
    n, e = G.rmat_graph(10, 8, 5)
    assert n == 1024 and e.shape == (8192, 2) and e.dtype == np.int64
    assert e.min() >= 0 and e.max() < n
    deg = np.bincount(e.ravel(), minlength=n)
    assert deg.max() > 8 * deg.mean()  # skewed, unlike a uniform graph
    assert np.array_equal(e, G.rmat_graph(10, 8, 5)[1])
    # a = 1: every edge picks the top-left quadrant at every level: (p[0], p[0])
    _, e1 = G.rmat_graph(6, 2, 5, a=1.0, b=0.0, c=0.0)
    assert len(np.unique(e1)) == 1
    # b = 1: src bits 0, dst bits 1: edge (p[0], p[n-1])
    _, e2 = G.rmat_graph(6, 2, 5, a=0.0, b=1.0, c=0.0)
    assert len(np.unique(e2[:, 0])) == 1 and len(np.unique(e2[:, 1])) == 1
    assert e2[0, 0] != e2[0, 1]


# --------------------------------------------------------------------------
# readers
# --------------------------------------------------------------------------

def test_read_succ_formats(tmp_path):
    succ = G.random_list(50, 1)
    np.save(tmp_path / "a.npy", succ)
    assert np.array_equal(G.read_succ(tmp_path / "a.npy"), succ)
    (tmp_path / "a.txt").write_text("# a list\n" + "\n".join(map(str, succ)) + "\n")
    assert np.array_equal(G.read_succ(tmp_path / "a.txt"), succ)
    (tmp_path / "b.txt").write_text("1 2\n 3   3  # tail\n\n")
    assert G.read_succ(tmp_path / "b.txt").tolist() == [1, 2, 3, 3]
    (tmp_path / "c.txt").write_text("")
    assert len(G.read_succ(tmp_path / "c.txt")) == 0


@pytest.mark.parametrize("name, content, msg", [
    ("bad.txt", "1\n2\nx\n3\n", r"bad.txt:3: 'x' is not an integer"),
    ("neg.txt", "1\n-1\n", r"neg.txt:2: negative id -1"),
    ("range.txt", "1\n2\n7\n", r"range.txt:3: successor 7 of node 2 is out of range \[0, 3\)"),
    ("cycle.txt", "1 0\n", r"cycle.txt: succ has no tail"),
    ("two.txt", "2 2 2\n", r"two.txt: node\(s\) 2 have two or more predecessors"),
])
def test_read_succ_errors(tmp_path, name, content, msg):
    (tmp_path / name).write_text(content)
    with pytest.raises(ValueError, match=msg):
        G.read_succ(tmp_path / name)


def test_read_succ_npy_errors(tmp_path):
    np.save(tmp_path / "m.npy", np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match=r"m.npy: need a 1-D integer array, got shape \(2, 2\)"):
        G.read_succ(tmp_path / "m.npy")
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    with pytest.raises(ValueError, match="junk.npy: not a readable .npy"):
        G.read_succ(tmp_path / "junk.npy")
    np.save(tmp_path / "cyc.npy", np.array([1, 0]))
    assert G.read_succ(tmp_path / "cyc.npy", validate=False).tolist() == [1, 0]
    with pytest.raises(ValueError, match="cyc.npy: succ has no tail"):
        G.read_succ(tmp_path / "cyc.npy")


def test_read_edges_text_and_npy(tmp_path):
    (tmp_path / "g.txt").write_text(
        "# Directed graph (each unordered pair of nodes is saved once)\n"
        "# FromNodeId\tToNodeId\n0\t1\n1 2 0.5\n% other comment\n\n4 4\n")
    n, e = G.read_edges(tmp_path / "g.txt")
    assert n == 5 and e.tolist() == [[0, 1], [1, 2], [4, 4]] and e.dtype == np.int64
    assert G.read_edges(tmp_path / "g.txt", n=9)[0] == 9
    np.save(tmp_path / "g.npy", np.array([[0, 3], [2, 1]], dtype=np.int32))
    n, e = G.read_edges(tmp_path / "g.npy")
    assert n == 4 and e.dtype == np.int64 and e.tolist() == [[0, 3], [2, 1]]


def test_read_edges_matrix_market(tmp_path):
    a = sp.coo_matrix(([1.0, 2.0, 3.0], ([0, 2, 3], [1, 0, 3])), shape=(4, 4))
    scipy.io.mmwrite(str(tmp_path / "g.mtx"), a)
    n, e = G.read_edges(tmp_path / "g.mtx")
    assert n == 4 and sorted(map(tuple, e.tolist())) == [(0, 1), (2, 0), (3, 3)]
    sym = sp.coo_matrix(([1.0, 1.0, 1.0, 1.0], ([1, 0, 2, 3], [0, 1, 3, 2])), shape=(5, 5))
    scipy.io.mmwrite(str(tmp_path / "s.mtx"), sym, symmetry="symmetric")
    n, e = G.read_edges(tmp_path / "s.mtx")
    assert n == 5 and sorted(map(tuple, e.tolist())) == [(1, 0), (3, 2)]  # once per pair
    scipy.io.mmwrite(str(tmp_path / "r.mtx"), sp.coo_matrix(np.ones((2, 3))))
    with pytest.raises(ValueError, match=r"r.mtx: matrix is 2 x 3"):
        G.read_edges(tmp_path / "r.mtx")
    (tmp_path / "bad.mtx").write_text("%%MatrixMarket nonsense\n1 2\n")
    with pytest.raises(ValueError, match="bad.mtx:1: not a readable Matrix Market"):
        G.read_edges(tmp_path / "bad.mtx")


@pytest.mark.parametrize("content, msg", [
    ("0 1\n1 x\n", r"e.txt:2: 'x' is not an integer"),
    ("# c\n0 1\n5\n", r"e.txt:3: expected 2 vertex ids, got '5'"),
    ("0 1\n\n2 -3\n", r"e.txt:3: negative id -3"),
])
def test_read_edges_text_errors(tmp_path, content, msg):
    (tmp_path / "e.txt").write_text(content)
    with pytest.raises(ValueError, match=msg):
        G.read_edges(tmp_path / "e.txt")


def test_read_edges_other_errors(tmp_path):
    (tmp_path / "e.txt").write_text("0 1\n1 2\n2 9\n")
    with pytest.raises(ValueError, match=r"e.txt:3: edge \(2, 9\) has a vertex id out of range \[0, 5\)"):
        G.read_edges(tmp_path / "e.txt", n=5)
    np.save(tmp_path / "b.npy", np.zeros((3, 3), dtype=np.int64))
    with pytest.raises(ValueError, match=r"b.npy: edges must have shape \(m, 2\), got \(3, 3\)"):
        G.read_edges(tmp_path / "b.npy")
    with pytest.raises(ValueError, match="no such file"):
        G.read_edges(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="no such file"):
        G.read_succ(tmp_path / "missing.txt")


def test_read_edges_empty_and_dense_mtx(tmp_path):
    (tmp_path / "empty.txt").write_text("# nothing here\n")
    n, e = G.read_edges(tmp_path / "empty.txt")
    assert n == 0 and e.shape == (0, 2) and e.dtype == np.int64
    dense = np.array([[0, 1, 0], [0, 0, 0], [2, 0, 0]])
    scipy.io.mmwrite(str(tmp_path / "d.mtx"), dense)  # "array" format
    n, e = G.read_edges(tmp_path / "d.mtx")
    assert n == 3 and sorted(map(tuple, e.tolist())) == [(0, 1), (2, 0)]


# --------------------------------------------------------------------------
# as_edge_array
# --------------------------------------------------------------------------

def test_as_edge_array_inputs():
    n, e = G.as_edge_array(np.array([[0, 2], [2, 1]], dtype=np.uint16))
    assert n == 3 and e.dtype == np.int64 and e.tolist() == [[0, 2], [2, 1]]
    assert G.as_edge_array([[0, 1]], n=4)[0] == 4
    assert G.as_edge_array([])[1].shape == (0, 2) and G.as_edge_array([])[0] == 0
    m = sp.csr_matrix(([1, 0, 5], ([0, 1, 2], [1, 2, 0])), shape=(4, 4))  # a stored 0
    n, e = G.as_edge_array(m)
    assert n == 4 and sorted(map(tuple, e.tolist())) == [(0, 1), (2, 0)]
    g = nx.Graph([("a", "b"), ("b", "c")])
    g.add_node("lonely")
    n, e = G.as_edge_array(g)
    assert n == 4 and e.tolist() == [[0, 1], [1, 2]]
    h = nx.path_graph(5)
    n, e = G.as_edge_array(h)
    assert n == 5 and e.tolist() == [[0, 1], [1, 2], [2, 3], [3, 4]]
    mg = nx.MultiGraph([(0, 1), (0, 1)])
    assert len(G.as_edge_array(mg)[1]) == 2


@pytest.mark.parametrize("obj, n, msg", [
    (np.zeros((2, 3), dtype=int), None, r"shape \(m, 2\), got \(2, 3\)"),
    (np.zeros(4, dtype=int), None, r"shape \(m, 2\), got \(4,\)"),
    (np.zeros((2, 2)), None, "integer dtype, got float64"),
    (np.array([[0, 1], [1, -2]]), None, r"edge 1 = \(1, -2\) has a negative vertex id"),
    (np.array([[0, 1], [1, 7]]), 5, r"edge 1 = \(1, 7\) has a vertex id out of range \[0, 5\)"),
    (sp.csr_matrix(np.ones((2, 3))), None, "sparse matrix is 2 x 3"),
    (np.array([[0, 1]]), 2**31, "n=2147483648"),
])
def test_as_edge_array_errors(obj, n, msg):
    with pytest.raises(ValueError, match=msg):
        G.as_edge_array(obj, n)
