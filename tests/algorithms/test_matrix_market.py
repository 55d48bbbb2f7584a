"""algorithms.matrix_market against scipy's pure-Python reader (the reference on valid files) and
on malformed ones: the line, what was wrong, and no work from a declared size."""
import io

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
# The reference is scipy's pure-Python reader: scipy.io.mmread's C++ one (1.17) kills the
# interpreter on a valid 0 x 0 "array" file (SIGFPE), and a test must not crash the suite
from scipy.io import _mmio
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithms.generators import read_edges
from simgpu.lang.errors import InputFileError


def _reference(data: bytes):
    """Edges as scipy reads them: every stored non-zero; of a symmetric matrix (which
    scipy mirrors) the row >= col half, one per pair."""
    info = _mmio.mminfo(io.BytesIO(data))
    mat = _mmio.mmread(io.BytesIO(data))
    coo = sp.coo_array(mat) if sp.issparse(mat) else sp.coo_array(np.asarray(mat))
    keep = coo.data != 0
    edges = np.stack([coo.row[keep], coo.col[keep]], axis=1).astype(np.int64)
    if info[5] != "general":
        edges = edges[edges[:, 0] >= edges[:, 1]]
    return sorted(map(tuple, edges.tolist()))


@st.composite
def matrices(draw):
    n = draw(st.integers(0, 7))
    field = draw(st.sampled_from(["real", "integer", "pattern", "complex"]))
    symmetry = draw(st.sampled_from(["general", "symmetric"]))
    dense = draw(st.booleans()) and field != "pattern"
    cells = draw(st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0)),
                                    st.sampled_from([0, 1, -2, 3.5])), max_size=12)) if n else []
    a = np.zeros((n, n), dtype=complex if field == "complex" else float)
    for i, j, v in cells:
        a[i, j] = v if field != "pattern" else 1
        if symmetry == "symmetric":
            a[j, i] = a[i, j]
    if field == "integer":
        a = a.real.astype(np.int64)
    buf = io.BytesIO()
    if dense:
        scipy.io.mmwrite(buf, a, field=None if field == "pattern" else field,
                         symmetry=symmetry)
    else:
        m = sp.coo_array(a)
        if field != "pattern":   # an explicitly stored zero must not become an edge
            node = st.integers(0, max(n - 1, 0))
            extra = draw(st.lists(st.tuples(node, node), max_size=2)) if n else []
            rows = np.concatenate([m.row, [i for i, _ in extra]]).astype(np.int64)
            cols = np.concatenate([m.col, [j for _, j in extra]]).astype(np.int64)
            vals = np.concatenate([m.data, np.zeros(len(extra), m.data.dtype)])
            if symmetry == "symmetric":
                lower = rows >= cols
                rows, cols, vals = rows[lower], cols[lower], vals[lower]
            m = sp.coo_array((vals, (rows, cols)), shape=(n, n))
        scipy.io.mmwrite(buf, m, field=field, symmetry=symmetry)
    return buf.getvalue()


@settings(max_examples=80, deadline=None)
@given(data=matrices())
def test_read_edges_agrees_with_scipy_on_valid_files(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("mm") / "g.mtx"
    path.write_bytes(data)
    n, edges = read_edges(path)
    assert n == _mmio.mminfo(io.BytesIO(data))[0]
    assert sorted(map(tuple, edges.tolist())) == _reference(data)


def test_an_empty_dense_matrix_is_a_graph_without_nodes(tmp_path):
    (tmp_path / "e.mtx").write_text("%%MatrixMarket matrix array real general\n0 0\n")
    n, edges = read_edges(tmp_path / "e.mtx")
    assert n == 0 and edges.shape == (0, 2)


def test_symmetric_pairs_are_one_edge_each_and_comments_are_skipped(tmp_path):
    (tmp_path / "s.mtx").write_text("%%MatrixMarket matrix coordinate pattern symmetric\n"
                                    "% a comment\n\n4 4 3\n2 1\n1 3 % upper, kept as (2, 0)\n"
                                    "% between entries\n4 4\n")
    n, edges = read_edges(tmp_path / "s.mtx")
    assert n == 4 and edges.tolist() == [[1, 0], [2, 0], [3, 3]] and edges.dtype == np.int64


HEADER = "%%MatrixMarket matrix coordinate real general\n"


@pytest.mark.parametrize("text, match", [
    ("%%MatrixMarket matrix coordinate real\n1 1 0\n", r":1: .*the banner is"),
    ("%%MatrixMarket vector coordinate real general\n", r":1: .*the object is 'vector'"),
    ("%%MatrixMarket matrix sparse real general\n", r":1: .*the format is 'sparse'"),
    ("%%MatrixMarket matrix coordinate quaternion general\n", r":1: .*the field is"),
    ("%%MatrixMarket matrix coordinate real hermitian\n", r":1: .*hermitian matrix is complex"),
    ("%%MatrixMarket matrix array pattern general\n", r":1: .*not a Matrix Market type"),
    (HEADER + "% only comments\n", r":2: .*no size line"),
    (HEADER + "3 3\n", r":2: .*size line of a coordinate matrix is 3"),
    (HEADER + "3 3 -1\n", r":2: .*size line"),
    (HEADER + "3 4 0\n", r"matrix is 3 x 4, an adjacency matrix must be square"),
    (HEADER + "3 3 2\n1 2 1.0\n", r":2: .*declares 2 entries, the file holds 1"),
    (HEADER + "3 3 2\n1 2 1\n2 x 1\n", r":4: .*'x' is not a row or column number"),
    (HEADER + "3 3 2\n1 2 1\n2 1\n", r":4: .*an entry is 3 numbers, not '2 1'"),
    (HEADER + "3 3 1\n1 2 0x5\n", r":3: .*'0x5' is not a number"),
    (HEADER + "% c\n3 3 2\n1 2 1\n\n1 4 1\n", r":6: .*entry \(1, 4\) is outside the 3 x 3"),
    (HEADER + "3 3 1\n0 1 1\n", r":3: .*entry \(0, 1\) is outside .*1-based"),
    (HEADER + "3 3 1\n1 99999999999 1\n", r":3: .*entry \(1, 99999999999\) is outside"),
    (HEADER + "3 3 1\n1 99999999999999999999 1\n", r":3: .*past 2\^31 - 1"),
    (HEADER + "3000000000 3000000000 0\n", r":2: .*node ids must be < 2\^31"),
    ("%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n",
     r":2: .*symmetric 3 x 3 array holds 6 values, the file holds 4"),
    (HEADER + "2 2 1\n1 1\x00 1\n", r"a NUL byte at offset"),
])
def test_malformed_files_are_refused_at_their_line(tmp_path, text, match):
    (tmp_path / "m.mtx").write_bytes(text.encode())
    with pytest.raises(InputFileError, match=match):
        read_edges(tmp_path / "m.mtx")


def test_declared_sizes_allocate_nothing(tmp_path):
    """A size line may claim anything; only what the file holds is read or allocated."""
    (tmp_path / "c.mtx").write_text(HEADER + "2147483647 2147483647 4611686018427387904\n1 1 1\n")
    with pytest.raises(InputFileError,
                       match="declares 4611686018427387904 entries, the file holds 1"):
        read_edges(tmp_path / "c.mtx")
    (tmp_path / "a.mtx").write_text("%%MatrixMarket matrix array real general\n"
                                    "2000000000 2000000000\n1\n")
    with pytest.raises(InputFileError, match="holds 4000000000000000000 values, the file holds 1"):
        read_edges(tmp_path / "a.mtx")
    (tmp_path / "big.mtx").write_text(HEADER + "2147483647 2147483647 1\n2147483647 1 1\n")
    n, edges = read_edges(tmp_path / "big.mtx")
    assert n == 2**31 - 1 and edges.tolist() == [[2**31 - 2, 0]]
