"""Matrix Market files read as graphs, with work bounded by the file's own size.

A Matrix Market file (NIST's exchange format, the SuiteSparse collection's) is a
banner, comment lines, a size line and the entries::

    %%MatrixMarket matrix coordinate pattern symmetric
    % any comments
    3 3 2          <- rows, columns, entries (coordinate) or rows, columns (array)
    2 1            <- 1-based row, column [, value [, imaginary part]]
    3 2

Every stored non-zero (i, j) is the edge (i-1, j-1); an explicitly stored zero is not an
edge. Of a symmetric (or skew-symmetric, hermitian) matrix each stored pair is one edge,
(larger id, smaller id). The "array" (dense, column-major) format is read too.

Why our own reader: scipy.io.mmread's C++ parser (scipy 1.17) crashed the interpreter
on a damaged file (a segmentation fault, tests/test_fuzz_input.py) and on a valid one,
a 0 x 0 "array" matrix (a floating-point exception); its pure-Python parser took
minutes on some damaged files. Here the header is parsed by hand and the body by
numpy.loadtxt's C tokenizer; nothing is allocated from a declared size, every count
is checked against what the file holds, and each refusal names the line.
"""
from __future__ import annotations

import io
import re
import warnings

import numpy as np

from simgpu.lang.errors import InputFileError

NODE_ID_LIMIT = 2**31 - 1          # node ids are int32 on the device
BANNER = "%%matrixmarket"          # a file's first token, in any case
FIELD_VALUES = {"pattern": 0, "real": 1, "double": 1, "integer": 1, "unsigned-integer": 1,
                "complex": 2}
SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")
FORMATS = ("coordinate", "array")
_UINT = re.compile(r"\+?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)",
                    re.IGNORECASE)


class _Lines:
    """The file's lines one at a time, with their numbers, without splitting it all."""

    def __init__(self, text: str):
        self.text, self.pos, self.lineno = text, 0, 0

    def next(self) -> str | None:
        if self.pos >= len(self.text):
            return None
        end = self.text.find("\n", self.pos)
        end = len(self.text) if end < 0 else end
        line, self.pos = self.text[self.pos:end], end + 1
        self.lineno += 1
        return line


def is_matrix_market(text: str | bytes) -> bool:
    """Whether a file's text (or bytes) starts, after white space, with the banner."""
    head = text.lstrip()[:len(BANNER)]
    return (head.decode("latin-1") if isinstance(head, bytes) else head).lower() == BANNER


def read_matrix_market(path, text: str, what_to_do: str) -> tuple[int, np.ndarray]:
    """(n, edges int64 (m, 2)) of a Matrix Market file's text (decoded by
    readers.read_input, which refuses binary data). Raises InputFileError naming path
    and line for anything malformed."""
    def refuse(lineno, why):
        raise InputFileError(f"{path}:{lineno}: not a readable Matrix Market file: {why}; "
                             f"{what_to_do}")

    text = text.lstrip()
    lines = _Lines(text)
    banner = lines.next().split()
    fmt, field, symmetry = _banner(banner, lambda why: refuse(1, why))

    line = lines.next()
    while line is not None and (not line.strip() or line.lstrip().startswith("%")):
        line = lines.next()
    want = 3 if fmt == "coordinate" else 2
    if line is None:
        refuse(lines.lineno, f"no size line (the {want} numbers after the banner and comments)")
    sizes = line.split()
    if len(sizes) != want or not all(_UINT.fullmatch(s) for s in sizes):
        article = "an" if fmt == "array" else "a"
        refuse(lines.lineno, f"the size line of {article} {fmt} matrix is {want} "
                             f"non-negative integers, not {line.strip()[:80]!r}")
    rows, cols = int(sizes[0]), int(sizes[1])
    if rows != cols:
        raise InputFileError(f"{path}: matrix is {rows} x {cols}, an adjacency matrix must "
                             "be square")
    if rows > NODE_ID_LIMIT:
        refuse(lines.lineno, f"{rows} rows; node ids must be < 2^31 (int32 on the device)")
    size_line, body = lines.lineno, text[lines.pos:]
    if fmt == "coordinate":
        edges = _coordinate(body, size_line, rows, int(sizes[2]), FIELD_VALUES[field],
                            symmetry, refuse)
    else:
        edges = _array(body, size_line, rows, FIELD_VALUES[field], symmetry, refuse)
    return rows, edges


def _banner(tokens, refuse):
    if len(tokens) != 5 or tokens[0].lower() != BANNER:
        refuse("the banner is '%%MatrixMarket matrix <coordinate|array> <field> <symmetry>', "
               f"not {' '.join(tokens)[:80]!r}")
    obj, fmt, field, symmetry = (t.lower() for t in tokens[1:])
    if obj != "matrix":
        refuse(f"the object is {obj!r}; only 'matrix' holds a graph")
    if fmt not in FORMATS:
        refuse(f"the format is {fmt!r}, not one of {', '.join(FORMATS)}")
    if field not in FIELD_VALUES:
        refuse(f"the field is {field!r}, not one of {', '.join(FIELD_VALUES)}")
    if symmetry not in SYMMETRIES:
        refuse(f"the symmetry is {symmetry!r}, not one of {', '.join(SYMMETRIES)}")
    if field == "pattern" and (fmt == "array" or symmetry in ("skew-symmetric", "hermitian")):
        refuse(f"'{fmt} pattern {symmetry}' is not a Matrix Market type")
    if symmetry == "hermitian" and field != "complex":
        refuse(f"a hermitian matrix is complex, not {field}")
    return fmt, field, symmetry


def _load(body: str, ids: int, values: int):
    """The body's entries: (ids int64 (k, ids), values float64 (k, values)), or None if
    any line is off (numpy.loadtxt's C tokenizer: exact column counts, strict integers)."""
    dtype = [("ids", np.int64, (ids,))] if ids else []
    dtype += [("values", np.float64, (values,))] if values else []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # "input contained no data"
            arr = np.loadtxt(io.StringIO(body), dtype=dtype, comments="%", ndmin=1)
    except ValueError:
        return None
    return (arr["ids"] if ids else np.zeros((len(arr), 0), np.int64),
            arr["values"] if values else np.zeros((len(arr), 0)))


def _coordinate(body, size_line, n, declared, values, symmetry, refuse):
    loaded = _load(body, 2, values)
    if loaded is None:
        _find_bad_line(body, size_line, 2, values, refuse)
        refuse(size_line + 1, f"each entry is {2 + values} numbers")  # loadtxt and we disagree
    ij, vals = loaded
    if len(ij) != declared:
        refuse(size_line, f"the size line declares {declared} entries, the file holds "
                          f"{len(ij)}")
    out = np.flatnonzero((ij < 1).any(axis=1) | (ij > n).any(axis=1))
    if len(out):
        k = int(out[0])
        refuse(_line_of_row(body, size_line, k),
               f"entry ({int(ij[k, 0])}, {int(ij[k, 1])}) is outside the {n} x {n} matrix "
               "(ids are 1-based)")
    edges = (ij - 1)[_nonzero(vals)]
    if symmetry != "general":        # one edge per stored pair: (larger id, smaller id)
        edges = np.stack([edges.max(axis=1), edges.min(axis=1)], axis=1)
    return np.ascontiguousarray(edges)


def _array(body, size_line, n, values, symmetry, refuse):
    loaded = _load(body, 0, values)
    if loaded is None:
        _find_bad_line(body, size_line, 0, values, refuse)
        refuse(size_line + 1, f"each entry is {values} number(s)")
    arr = loaded[1]
    if symmetry == "general":
        declared = n * n
    else:
        declared = n * (n + 1) // 2 if symmetry != "skew-symmetric" else n * (n - 1) // 2
    if len(arr) != declared:
        refuse(size_line, f"a {symmetry} {n} x {n} array holds {declared} values, the file "
                          f"holds {len(arr)}")
    if symmetry == "general":
        k = np.arange(declared, dtype=np.int64)
        row, col = k % max(n, 1), k // max(n, 1)                  # column-major
    else:   # the lower triangle, column by column
        col, row = np.triu_indices(n, k=0 if symmetry != "skew-symmetric" else 1)
    keep = _nonzero(arr)
    row, col = row[keep].astype(np.int64), col[keep].astype(np.int64)
    order = np.lexsort((col, row))                                # row-major, as dense
    return np.ascontiguousarray(np.stack([row[order], col[order]], axis=1))


def _nonzero(vals) -> np.ndarray:
    if vals.shape[1] == 0:                                        # pattern
        return np.ones(len(vals), dtype=bool)
    return (vals != 0).any(axis=1)


def _body_lines(body, size_line):
    for offset, line in enumerate(body.split("\n"), start=1):
        content = line.split("%", 1)[0].strip()
        if content:
            yield size_line + offset, line, content.split()


def _line_of_row(body, size_line, k) -> int:
    for i, (lineno, _, _) in enumerate(_body_lines(body, size_line)):
        if i == k:
            return lineno
    return size_line


def _find_bad_line(body, size_line, ids, values, refuse):
    """Refuse at the first malformed entry line (run only once loadtxt found one)."""
    for lineno, line, tokens in _body_lines(body, size_line):
        if len(tokens) != ids + values:
            refuse(lineno, f"an entry is {ids + values} numbers, not {line.strip()[:80]!r}")
        for t in tokens[:ids]:
            if not _UINT.fullmatch(t):
                refuse(lineno, f"{t[:40]!r} is not a row or column number")
            if int(t) > NODE_ID_LIMIT:
                refuse(lineno, f"row or column {t[:40]} is past 2^31 - 1")
        for t in tokens[ids:]:
            if not _FLOAT.fullmatch(t):
                refuse(lineno, f"{t[:40]!r} is not a number")
