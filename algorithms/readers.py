"""Reading lists and graphs from files, the format found by content.

    succ = read_succ("list.txt")          # or .npy, gzipped or not
    n, edges = read_edges("graph.mtx")    # Matrix Market, .npy, or a text edge list

The suffix is only a hint: a file is recognized by its first bytes (gzip's magic
number, numpy's ``\\x93NUMPY``, Matrix Market's ``%%MatrixMarket`` banner), so a
Matrix Market file named ``graph.txt``, a gzip file without ``.gz`` or ``A.NPY`` in
capitals are read as what they are. Anything that is none of these and not text is
refused. Every refusal is an :class:`~simgpu.InputFileError` (a ``ValueError``) that
names the file (and the line, for text) and says what was wrong and what is read.
"""
from __future__ import annotations

import gzip
import io
import os
import zlib
from pathlib import Path

import numpy as np

from simgpu.lang.errors import ArgumentError, InputFileError

from .matrix_market import NODE_ID_LIMIT, is_matrix_market, read_matrix_market

INT64_MAX = 2**63 - 1
FORMATS = ("npy", "mtx", "text")
WHAT_IS_READ = ("read_succ and read_edges take numpy .npy arrays, Matrix Market files and "
                "text (integers separated by spaces or newlines, '#' or '%' comments), "
                "each optionally gzipped")


def read_input(path) -> tuple:
    """(format, payload, Path): "npy" -> the array, "mtx" and "text" -> the decoded
    text. Raises InputFileError for anything it cannot read."""
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentError(f"a file name (str or Path) is needed, not {type(path).__name__}")
    path = Path(path)
    if not path.exists():
        raise InputFileError(f"{path}: no such file")
    if path.is_dir():
        raise InputFileError(f"{path}: is a directory; give the file inside it")
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InputFileError(f"{path}: cannot be read ({reason}); check its permissions") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, ValueError, zlib.error) as exc:
            raise InputFileError(f"{path}: a damaged gzip file ({exc})") from None
    suffix = "".join(path.suffixes[-2:]).lower().removesuffix(".gz")
    suffix = suffix[suffix.rfind("."):] if "." in suffix else ""
    if suffix == ".npy" and data[:6] != b"\x93NUMPY":
        raise InputFileError(f"{path}: not a readable .npy array (it does not start with "
                             "numpy's header); rename it if it is text")
    if suffix == ".mtx" and not is_matrix_market(data):
        raise InputFileError(f"{path}: not a readable Matrix Market file (no %%MatrixMarket "
                             "banner on its first line)")
    if data[:6] == b"\x93NUMPY":
        try:
            arr = np.load(io.BytesIO(data), allow_pickle=False)
        except Exception as exc:   # numpy raises ValueError, OSError, EOFError, ... on bad files
            raise InputFileError(f"{path}: not a readable .npy array ({exc})") from None
        return "npy", arr, path
    if b"\x00" in data:
        raise InputFileError(f"{path}: binary data (a NUL byte at offset {data.index(0)}), not a "
                             f"format read here; {WHAT_IS_READ}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{path}: not text (byte {exc.start} is not UTF-8) and not a "
                             f"format read here; {WHAT_IS_READ}") from None
    if is_matrix_market(text):
        return "mtx", text, path
    return "text", text, path


def scan_ints(path, text: str, per_line: int | None):
    """Parse integers line by line, for exact error locations.  per_line=None:
    any count (successor files); else at least per_line tokens, first per_line kept."""
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        body = line.split("#", 1)[0].split("%", 1)[0].strip()
        if not body:
            continue
        tokens = body.split()
        if per_line is not None:
            if len(tokens) < per_line:
                raise InputFileError(f"{path}:{lineno}: expected {per_line} vertex ids, "
                                     f"got {line.strip()[:80]!r}")
            tokens = tokens[:per_line]
        for tok in tokens:
            try:
                value = int(tok)
            except ValueError:
                raise InputFileError(f"{path}:{lineno}: {tok[:40]!r} is not an integer") from None
            if value < 0:
                raise InputFileError(f"{path}:{lineno}: negative id {value}")
            if value > INT64_MAX:
                raise InputFileError(f"{path}:{lineno}: id {value} does not fit a 64-bit integer "
                                     f"(node ids are < 2^31 on the device)")
            rows.append((lineno, value))
    return rows


def read_succ(path, validate: bool = True) -> np.ndarray:
    """Read a successor array: .npy (1-D integer) or text (integers separated by
    whitespace or newlines; '#' starts a comment), gzipped or not, found by content.
    With validate (default), the list structure is checked too
    (list_ranking.sequential.validate_succ)."""
    kind, payload, path = read_input(path)
    if kind == "mtx":
        raise InputFileError(f"{path}: a Matrix Market file holds a graph, not a successor "
                             "list; read it with read_edges (simgpu cc)")
    if kind == "npy":
        arr = payload
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise InputFileError(f"{path}: need a 1-D integer array, got shape {arr.shape} "
                                 f"dtype {arr.dtype}")
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= arr.size):
            bad = int(np.flatnonzero((arr < 0) | (arr >= arr.size))[0])
            raise InputFileError(f"{path}: successor {int(arr[bad])} of node {bad} is out of "
                                 f"range [0, {arr.size})")
        succ = arr.astype(np.int64)
    else:
        text = payload
        succ = None
        if "#" not in text and "%" not in text:  # fast path, no comments
            try:
                succ = np.array(text.split(), dtype=np.int64)
            except (ValueError, OverflowError):
                succ = None
        if succ is None or (len(succ) and (succ.min() < 0 or succ.max() >= len(succ))):
            # slow path, line by line, to say which line is wrong
            rows = scan_ints(path, text, None)
            succ = np.array([v for _, v in rows], dtype=np.int64)
            bad = np.flatnonzero(succ >= len(succ))
            if len(bad):
                lineno = rows[bad[0]][0]
                raise InputFileError(f"{path}:{lineno}: successor {succ[bad[0]]} of node "
                                     f"{bad[0]} is out of range [0, {len(succ)})")
    if validate:
        from .list_ranking.sequential import validate_succ
        try:
            validate_succ(succ)
        except ValueError as exc:
            raise InputFileError(f"{path}: {exc}") from None
    return succ


def read_edges(path, n: int | None = None) -> tuple[int, np.ndarray]:
    """Read a graph as (n, edges int64 (m, 2)); the format is found by content.

    - Matrix Market (algorithms.matrix_market), coordinate or array; must be square;
      every stored non-zero is an edge; of a symmetric matrix each stored pair is one
      edge (row >= col).
    - .npy: an integer array of shape (m, 2).
    - text edge list, one edge "u v [more columns ignored]" per line, lines or
      tails after '#' or '%' are comments (SNAP style).
    Each may be gzipped. n defaults to the matrix size, else to the largest id + 1.
    """
    kind, payload, path = read_input(path)
    try:
        if kind == "mtx":
            return _read_mtx(path, payload, n)
        if kind == "npy":
            return as_edge_array(payload, n)
    except InputFileError:
        raise
    except ValueError as exc:
        raise InputFileError(f"{path}: {exc}") from None
    text = payload
    edges = _loadtxt_edges(text)  # fast C parser; None if anything is off
    try:
        if edges is not None and (n is None or not len(edges) or edges.max() < n):
            return as_edge_array(edges, n)
        # slow path, line by line, to say which line is wrong
        rows = scan_ints(path, text, 2)
        edges = np.array([v for _, v in rows], dtype=np.int64).reshape(-1, 2)
        if n is not None and len(edges):
            bad = np.flatnonzero((edges >= n).any(axis=1))
            if len(bad):
                lineno = rows[2 * bad[0]][0]
                raise InputFileError(f"{path}:{lineno}: edge {tuple(edges[bad[0]].tolist())} "
                                     f"has a vertex id out of range [0, {n})")
        return as_edge_array(edges, n)
    except InputFileError:
        raise
    except ValueError as exc:
        raise InputFileError(f"{path}: {exc}") from None


def _read_mtx(path, text: str, n):
    rows, edges = read_matrix_market(path, text, "see algorithms/matrix_market.py for "
                                                    "what is read")
    return _finish(rows if n is None else n, edges, "Matrix Market file")


def _loadtxt_edges(text: str):
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "empty input file" warning
            arr = np.loadtxt(io.StringIO(text), dtype=np.int64, comments=("#", "%"),
                             usecols=(0, 1), ndmin=2)
    except (ValueError, IndexError, OverflowError):
        return None
    if arr.size and arr.min() < 0:
        return None
    return arr.reshape(-1, 2)


# --------------------------------------------------------------------------
# normalizers (also imported by algorithms.generators, where they were first)
# --------------------------------------------------------------------------

def as_edge_array(obj, n: int | None = None) -> tuple[int, np.ndarray]:
    """Normalize a graph to (n, edges int64 (m, 2)).

    Accepts an (m, 2) integer array (or list of pairs), a scipy sparse matrix
    or array (every stored non-zero (i, j) is an edge; must be square), or a
    networkx graph (nodes relabelled 0..N-1 in G.nodes order unless they
    already are exactly 0..N-1; multi-edges kept).  n defaults to the matrix
    size / number of nodes / largest id + 1.
    """
    import scipy.sparse
    if hasattr(obj, "nodes") and hasattr(obj, "edges"):  # networkx, duck-typed
        nodes = list(obj.nodes)
        if all(isinstance(v, (int, np.integer)) for v in nodes) and set(nodes) == set(range(len(nodes))):
            index = None
        else:
            index = {v: i for i, v in enumerate(nodes)}
        pairs = [(u, v) if index is None else (index[u], index[v]) for u, v, *_ in obj.edges]
        edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        return _finish(len(nodes) if n is None else n, edges, "networkx graph")
    if scipy.sparse.issparse(obj):
        if obj.shape[0] != obj.shape[1]:
            raise ValueError(f"sparse matrix is {obj.shape[0]} x {obj.shape[1]}, "
                             "an adjacency matrix must be square")
        coo = obj.tocoo()
        keep = coo.data != 0  # an explicitly stored zero is not an edge
        edges = np.stack([coo.row[keep], coo.col[keep]], axis=1).astype(np.int64)
        return _finish(obj.shape[0] if n is None else n, edges, "sparse matrix")
    arr = np.asarray(obj)
    if arr.size == 0 and arr.ndim <= 2:
        arr = arr.reshape(0, 2).astype(np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"edges must have shape (m, 2), got {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise ValueError(f"edges must have an integer dtype, got {arr.dtype}")
    if len(arr) and arr.min() < 0:
        e = int(np.flatnonzero((arr < 0).any(axis=1))[0])
        raise ValueError(f"edge {e} = {tuple(arr[e].tolist())} has a negative vertex id")
    edges = arr.astype(np.int64)
    if n is None:
        n = int(edges.max()) + 1 if len(edges) else 0
    return _finish(n, edges, "edge array")


def _finish(n, edges: np.ndarray, what: str) -> tuple[int, np.ndarray]:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"n must be an integer, got {n!r}")
    if not 0 <= n <= NODE_ID_LIMIT:           # node ids are int32 on the device
        raise ValueError(f"n={n} must be in [0, {NODE_ID_LIMIT}]")
    n = int(n)
    if len(edges):
        bad = np.flatnonzero((edges >= n).any(axis=1))
        if len(bad):
            e = int(bad[0])
            raise ValueError(f"{what}: edge {e} = {tuple(edges[e].tolist())} has a vertex "
                             f"id out of range [0, {n})")
    return n, np.ascontiguousarray(edges, dtype=np.int64)
