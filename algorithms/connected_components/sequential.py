"""Sequential connected components and edge-list validation: host references.

Labels follow the convention the Shiloach-Vishkin kernels converge to: every
vertex is labelled with the smallest vertex id of its component.

  - label_sequential: union-find with union by smaller id and path halving,
    vectorized over all edges at once (numpy), see its docstring.
  - label_union_find: the same union-find one edge at a time in plain Python,
    the textbook loop, kept as an independent cross-check for small inputs.
"""

from __future__ import annotations

import numpy as np

__all__ = ["validate_edges", "check_graph", "directed_edge_count", "label_sequential",
           "label_union_find", "INT32_MAX"]

INT32_MAX = 2**31 - 1  # the kernels index vertices and edges with int32


def validate_edges(n, edges) -> np.ndarray:
    """Check a graph given as n and an (m, 2) integer edge array; return the
    edges as int64.  Raises ValueError for: n not an integer, negative, or
    beyond the int32 index type; edges not of shape (m, 2), not integer, more
    than INT32_MAX of them, or with a vertex id outside [0, n) (naming the
    first offending edge index).  Self-loops, duplicate edges, isolated
    vertices and n = 0 or 1 are all fine."""
    arr = check_graph(n, edges)
    if arr.shape[0] == 0:
        return np.empty((0, 2), dtype=np.int64)
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8:
        bad_mask = arr >= np.uint64(n)  # cannot be negative; avoid int64 overflow
    else:
        bad_mask = (arr < 0) | (arr >= n)
    bad = np.flatnonzero(bad_mask.any(axis=1))
    if len(bad):
        e = int(bad[0])
        u, v = (int(x) for x in arr[e])
        which = u if not 0 <= u < n else v
        more = f" ({len(bad)} bad edges in all)" if len(bad) > 1 else ""
        raise ValueError(f"edge {e} = ({u}, {v}): vertex id {which} is out of range "
                         f"[0, {n}){more}")
    return arr.astype(np.int64, copy=False)


def check_graph(n, edges) -> np.ndarray:
    """The checks of validate_edges that do not look at the vertex ids (O(1)):
    n, and the shape, dtype and length of the edge array.  Returns the edges
    as an array, not copied."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"n must be an integer, got {n!r}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if n > INT32_MAX:
        raise ValueError(f"n={n} does not fit the int32 index type (max {INT32_MAX})")
    arr = np.asarray(edges)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"edges must have shape (m, 2), got {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise ValueError(f"edges must have an integer dtype, got {arr.dtype}")
    if arr.shape[0] > INT32_MAX:
        raise ValueError(f"m={arr.shape[0]} edges do not fit the int32 index type "
                         f"(max {INT32_MAX})")
    return arr


def directed_edge_count(loopless: int) -> int:
    """2 x `loopless`: the directed edges the kernels store for that many edges that
    are not self-loops (both orientations of each).  Raises ValueError where they do
    not fit the int32 edge index."""
    if 2 * loopless > INT32_MAX:
        raise ValueError(f"{loopless} edges (not counting self-loops) give {2 * loopless} "
                         f"directed edges, more than the int32 edge index allows "
                         f"({INT32_MAX}): drop duplicate edges, or label the graph with "
                         f"method='sequential' (on the host), which has no such limit")
    return 2 * loopless


def label_sequential(n, edges) -> np.ndarray:
    """Component labels (int64): the smallest vertex id of each component.

    Union-find over a parent array, processed in rounds over all edges at once:
      1. find: with the parent array fully compressed, the root of u is parent[u];
      2. drop edges whose two roots are equal (they stay joined forever);
      3. union: hook the larger root onto the smallest root it meets this round
         (np.minimum.at resolves several edges hooking the same root); roots
         only ever point to smaller ids, so no cycle can form, and the root of a
         component ends up being its smallest vertex;
      4. compress: parent = parent[parent] until stable.  That is path halving
         applied to every vertex at once, repeated to full compression.
    Rounds repeat until no edge joins two different trees.  Each round is
    O(n + m) numpy work; few rounds are needed in practice (each one at least
    hooks every root that has a smaller neighbouring root).
    """
    e = validate_edges(n, edges)
    n = int(n)
    parent = np.arange(n, dtype=np.int64)
    u, v = e[:, 0], e[:, 1]
    keep = u != v  # self-loops never join anything
    u, v = u[keep], v[keep]
    while len(u):
        ru, rv = parent[u], parent[v]
        join = ru != rv
        if not join.any():
            break
        u, v, ru, rv = u[join], v[join], ru[join], rv[join]
        hi, lo = np.maximum(ru, rv), np.minimum(ru, rv)
        np.minimum.at(parent, hi, lo)
        while True:  # full compression
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent = grand
    return parent


def label_union_find(n, edges) -> np.ndarray:
    """label_sequential computed one edge at a time in plain Python: union by
    smaller root id and path halving (x = parent[x] = parent[parent[x]])."""
    e = validate_edges(n, edges)
    parent = list(range(int(n)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]  # path halving
            x = parent[x]
        return x

    for a, b in e.tolist():
        ra, rb = find(a), find(b)
        if ra != rb:
            if ra < rb:
                parent[rb] = ra
            else:
                parent[ra] = rb
    return np.array([find(x) for x in range(int(n))], dtype=np.int64)
