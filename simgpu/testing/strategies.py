"""Hypothesis strategies for GPU tests: launch shapes, schedules, typed arrays,
linked lists and forests, graphs.

Every strategy shrinks toward the simplest case a person would debug first:
one block, the plain fixed schedule, short arrays of small values, one list,
few vertices and edges.  Needs ``hypothesis`` (``pip install 'simgpu[test]'``).
"""
from __future__ import annotations

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError as exc:                 # pragma: no cover - depends on the environment
    raise ImportError(
        "simgpu.testing.strategies needs hypothesis, which simgpu does not require: "
        "pip install hypothesis  (or pip install 'simgpu[test]'). "
        "simgpu.testing.check_schedules works without it.") from exc

import numpy as np

from .schedules import FIXED

ENGINES = ("lockstep", "warps", "timed", "timed-block")


def schedules(engines=("lockstep", "warps"), max_seed: int = 2**31 - 1):
    """Launch options: :data:`~simgpu.testing.FIXED` or a random schedule on one of
    ``engines`` with a seed. Shrinks toward FIXED, then toward the first engine and
    seed 0. Use as ``dev.launch(k, grid, block, *args, **options)``."""
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise ValueError(f"unknown engines {unknown}; choose from {ENGINES}")
    random = st.builds(lambda e, s: {"engine": e, "schedule": "random", "seed": s},
                       st.sampled_from(tuple(engines)), st.integers(0, max_seed))
    return st.one_of(st.just(dict(FIXED)), random)


def launch_shapes(max_blocks: int = 4, max_threads: int = 256, min_threads: int = 1,
                  multiple_of: int = 1):
    """``(grid, block)``: 1..max_blocks blocks of min_threads..max_threads threads (a
    multiple of ``multiple_of``). Shrinks toward one block of the fewest threads."""
    if max_threads < max(min_threads, multiple_of):
        raise ValueError("max_threads must be at least min_threads and multiple_of")
    lo = -(-max(min_threads, 1) // multiple_of)
    block = st.integers(lo, max_threads // multiple_of).map(lambda k: k * multiple_of)
    return st.tuples(st.integers(1, max_blocks), block)


def _dtype(t) -> np.dtype:
    from ..ir.types import ScalarType
    return t.dtype if isinstance(t, ScalarType) else np.dtype(t)


def arrays(dtype, min_size: int = 0, max_size: int = 100, elements=None, unique: bool = False):
    """1-D numpy arrays of a kernel-language type (``i32``) or numpy dtype. Floats are
    finite unless ``elements`` says otherwise; shrinks toward short arrays of zeros."""
    dt = _dtype(dtype)
    if elements is None:
        elements = (hnp.from_dtype(dt, allow_nan=False, allow_infinity=False)
                    if dt.kind == "f" else hnp.from_dtype(dt))
    return hnp.arrays(dt, st.integers(min_size, max_size), elements=elements, unique=unique)


def _cut_into_lists(order, cuts) -> np.ndarray:
    """succ of the lists that ``order`` (a permutation) forms when cut at ``cuts``;
    every tail points at itself."""
    n = len(order)
    succ = np.empty(n, dtype=np.int64)
    start = 0
    for end in sorted(cuts) + [n]:
        piece = order[start:end]
        succ[piece[:-1]] = piece[1:]
        succ[piece[-1]] = piece[-1]
        start = end
    return succ


@st.composite
def lists(draw, min_n: int = 1, max_n: int = 64):
    """One linked list over 0..n-1 in a random order: ``succ[i]`` is the next node, the
    tail's ``succ`` is itself (the convention of ``algorithms.list_ranking``)."""
    n = draw(st.integers(max(min_n, 1), max_n))
    return _cut_into_lists(draw(st.permutations(range(n))), [])


@st.composite
def forests(draw, min_n: int = 1, max_n: int = 64):
    """Disjoint linked lists covering 0..n-1 (a forest of lists): a permutation cut
    into pieces. Shrinks toward one list in order."""
    n = draw(st.integers(max(min_n, 1), max_n))
    order = draw(st.permutations(range(n)))
    cuts = draw(st.sets(st.integers(1, n - 1), max_size=n - 1)) if n > 1 else set()
    return _cut_into_lists(order, cuts)


@st.composite
def graphs(draw, min_n: int = 0, max_n: int = 64, max_edges: int | None = None,
           self_loops: bool = True):
    """``(n, edges)``: n vertices and an int64 array of shape (m, 2) of undirected
    edges (duplicates allowed; self-loops unless ``self_loops=False``). Shrinks
    toward few vertices and no edges."""
    n = draw(st.integers(min_n, max_n))
    if n == 0 or (n == 1 and not self_loops):
        return n, np.empty((0, 2), dtype=np.int64)
    vertex = st.integers(0, n - 1)
    edge = st.tuples(vertex, vertex)
    if not self_loops:
        edge = edge.filter(lambda e: e[0] != e[1])
    cap = 2 * n if max_edges is None else max_edges
    edges = draw(st.lists(edge, max_size=cap))
    return n, np.array(edges, dtype=np.int64).reshape(-1, 2)


__all__ = ["schedules", "launch_shapes", "arrays", "lists", "forests", "graphs", "ENGINES"]
