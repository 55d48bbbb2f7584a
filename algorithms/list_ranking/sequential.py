"""Sequential list ranking and input validation: the host references.

Input: succ[0..n-1], a forest of lists; the tail t of each list has
succ[t] == t.  rank[i] is the number of links from i to the tail of its own
list (tails have rank 0).

Two independent references:
  - rank_sequential: the paper's sequential method (find the heads, walk each
    list from its head, number backwards).  O(n), a plain Python loop for the
    walk (about 0.4 us per node), the rest numpy.
  - rank_pointer_jumping: Wylie's pointer jumping, all nodes at once in numpy.
    O(n log n) work but no Python loop over nodes; it shares no code with the
    walk, which is the point of a second reference.
"""

from __future__ import annotations

from array import array

import numpy as np

__all__ = ["validate_succ", "rank_sequential", "rank_pointer_jumping", "list_heads"]

_SHOW = 5  # how many offending nodes an error message lists


def _as_succ(succ) -> np.ndarray:
    arr = np.asarray(succ)
    if arr.ndim != 1:
        raise ValueError(f"succ must be a 1-D array, got shape {arr.shape}")
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"succ must have an integer dtype, got {arr.dtype}")
    return arr


def _show(nodes: np.ndarray) -> str:
    shown = ", ".join(str(int(v)) for v in nodes[:_SHOW])
    more = f" (and {len(nodes) - _SHOW} more)" if len(nodes) > _SHOW else ""
    return shown + more


def _check_local(arr: np.ndarray) -> np.ndarray:
    """The O(n) vectorized checks (range, in-degree); returns succ as int64.

    After these, every node has at most one predecessor, so the walk from a
    head can only end at a tail: the walk is safe to run, and whatever it does
    not reach lies on cycles.
    """
    n = len(arr)
    bad = np.flatnonzero((arr < 0) | (arr >= n))
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"successor out of range [0, {n}) at node(s) {_show(bad)}: "
                         f"succ[{i}] = {int(arr[i])}")
    s = arr.astype(np.int64, copy=False)
    links = s != np.arange(n)  # a tail's self-loop is not a link
    preds = np.bincount(s[links], minlength=n)
    multi = np.flatnonzero(preds > 1)
    if len(multi):
        v = int(multi[0])
        who = np.flatnonzero(links & (s == v))
        raise ValueError(f"node(s) {_show(multi)} have two or more predecessors: node {v} "
                         f"is the successor of nodes {_show(who)}")
    return s


def list_heads(succ) -> np.ndarray:
    """The heads (nodes no other node points to), increasing; a lone tail is a head too."""
    s = _check_local(_as_succ(succ))
    links = s != np.arange(len(s))
    return np.flatnonzero(np.bincount(s[links], minlength=len(s)) == 0)


def _walk(s: np.ndarray):
    """Walk every list from its head.  Returns (order, starts): order lists the
    nodes list by list, head to tail; starts[j] is where list j begins in order."""
    n = len(s)
    links = s != np.arange(n)
    heads = np.flatnonzero(np.bincount(s[links], minlength=n) == 0)
    nxt = array("q", s.astype(np.int64, copy=False).tobytes())  # fast int indexing
    order = array("q")
    push = order.append
    starts = []
    for h in heads.tolist():
        starts.append(len(order))
        v = h
        push(v)
        w = nxt[v]
        while w != v:
            v = w
            push(v)
            w = nxt[v]
    return np.frombuffer(order, dtype=np.int64) if len(order) else np.empty(0, np.int64), \
        np.array(starts, dtype=np.int64)


def _cycle_error(s: np.ndarray, covered: np.ndarray) -> ValueError:
    n = len(s)
    lost = np.flatnonzero(~covered)
    tails = np.flatnonzero(s == np.arange(n))
    v = int(lost[0])
    path = [v]
    for _ in range(8):  # show the start of the cycle through v
        v = int(s[v])
        path.append(v)
        if v == path[0]:
            break
    shown = " -> ".join(map(str, path)) + ("" if path[-1] == path[0] else " -> ...")
    if len(tails) == 0:
        return ValueError(f"succ has no tail (no node i with succ[i] == i), so its lists "
                          f"never end: cycle {shown}")
    return ValueError(f"{len(lost)} node(s) lie on a cycle and reach no tail: nodes "
                      f"{_show(lost)}; cycle {shown}")


def validate_succ(succ) -> None:
    """Raise ValueError naming the offending node(s) unless succ is a forest of
    lists: every successor in [0, n), no node with two predecessors, no cycle
    (every node reaches a tail, succ[t] == t).  Empty and n = 1 ([0]) are fine.
    Costs one O(n) walk (rank_sequential does the same checks)."""
    arr = _as_succ(succ)
    if arr.size == 0:
        return
    s = _check_local(arr)
    order, _ = _walk(s)
    if len(order) < len(s):
        covered = np.zeros(len(s), dtype=bool)
        covered[order] = True
        raise _cycle_error(s, covered)


def rank_sequential(succ) -> np.ndarray:
    """Distance of every node to the tail of its list (int64), by walking each
    list from its head: O(n).  Validates like validate_succ on the way."""
    arr = _as_succ(succ)
    n = arr.size
    if n == 0:
        return np.empty(0, dtype=np.int64)
    s = _check_local(arr)
    order, starts = _walk(s)
    if len(order) < n:
        covered = np.zeros(n, dtype=bool)
        covered[order] = True
        raise _cycle_error(s, covered)
    # list j occupies order[starts[j] : ends[j]]; position p in it has rank
    # ends[j] - 1 - p
    ends = np.append(starts[1:], n)
    last = np.repeat(ends - 1, ends - starts)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = last - np.arange(n, dtype=np.int64)
    return rank


def rank_pointer_jumping(succ) -> np.ndarray:
    """Wylie's pointer jumping in numpy: rank[i] = 0 at tails else 1, then
    rank[i] += rank[succ[i]]; succ[i] = succ[succ[i]] until nothing changes
    (at most ceil(log2 n) rounds for valid input).  Double-buffered like the
    kernels: every round reads only the previous round's arrays.  Validates the
    input first (range, predecessors, cycles), as rank_sequential does."""
    arr = _as_succ(succ)
    n = arr.size
    if n == 0:
        return np.empty(0, dtype=np.int64)
    s = _check_local(arr).copy()
    rank = (s != np.arange(n)).astype(np.int64)
    for _ in range(max(1, int(n - 1).bit_length()) + 1):
        if not rank[s].any():  # every successor is a tail: s is final
            break
        rank, s = rank + rank[s], s[s]
    orig = arr.astype(np.int64, copy=False)
    reached = orig[s] == s  # s[i] is a real tail (on a cycle s[i] can be i itself)
    if not reached.all():
        raise _cycle_error(orig, reached)
    return rank
