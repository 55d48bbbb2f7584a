"""CPU baselines: the random splitter on the host, and a compiled sequential walk.

rank_cpu_random_splitter is the paper's CPU baseline (its "multi-threaded
list ranking on the CPU also uses a parallel random splitter approach").  We
chose a single process, vectorized with numpy *per step*: all sublists are
walked at once, one numpy operation per step for every walker still going,
so the parallelism is numpy's array work rather than OS threads (no
multi-process version: on the 2-core machines of this project it would add
shared-memory plumbing for little gain).  Per-step vector work needs many
walkers, so the default is one splitter per 32 nodes (at least 64), far more
than the paper's 4 threads; the phases are those of the GPU version: choose
splitters (KissStreams, seeded as on the device, + every head), walk, rank
the splitter list (pointer jumping in numpy), expand.

rank_sequential_compiled is the sequential walk compiled with numba when
numba can be imported (an optional extra, for benchmarks); without numba it
runs the same function as plain Python, which is slow but gives the same
result (the tests use it that way on small inputs).
"""
from __future__ import annotations

import numpy as np

from algorithms.kiss import KissStreams

from .random_splitter import sublist_stats

try:                                    # optional: pip install numba
    import numba
    HAVE_NUMBA = True
except ImportError:                     # pragma: no cover - depends on the installation
    numba = None
    HAVE_NUMBA = False


def heads_of(succ: np.ndarray) -> np.ndarray:
    """Nodes without a predecessor (a lone tail is a head too).

    One tail means one list (in a valid input), and then its head is the one id
    that no successor names: the sum of all ids minus the sum of the successors
    of the non-tails.  That takes two streaming passes instead of a random
    scatter over n flags (0.7 s against 0.2 s at n = 2^24 on a 2-core
    development machine).  The scatter is the general case, and the check when
    the sum gives an id that cannot be a head."""
    n = len(succ)
    ids = np.arange(n, dtype=np.int64)
    tails = np.flatnonzero(succ == ids)
    if len(tails) == 1:
        head = n * (n - 1) // 2 - (int(succ.sum(dtype=np.int64)) - int(tails[0]))
        if 0 <= head < n and (head == tails[0] or succ[head] != head):
            return np.array([head], dtype=np.int64)
    has_pred = np.zeros(n, dtype=bool)
    has_pred[succ[succ != ids]] = True
    return np.flatnonzero(~has_pred)


def default_cpu_splitters(n: int) -> int:
    return max(64, n // 32)


def rank_cpu_random_splitter(succ, splitters: int | None = None, seed: int = 0,
                             heads: np.ndarray | None = None):
    """Random splitter list ranking on the CPU; returns (ranks int64, stats).

    succ must be a valid forest of lists (rank() validates first)."""
    succ = np.asarray(succ, dtype=np.int64)
    n = len(succ)
    if n == 0:
        return np.empty(0, np.int64), {}
    p = default_cpu_splitters(n) if splitters is None else int(splitters)
    if heads is None:
        heads = heads_of(succ)
    drawn = KissStreams(seed, p).next_below(n) if p else np.empty(0, np.int64)
    cand = np.concatenate([drawn, heads])
    # a node drawn twice is one splitter; the first slot keeps it (slot ids are
    # positions in cand, as on the device where the loser's sublist is empty)
    nodes, first = np.unique(cand, return_index=True)
    slot_of = np.full(n, -1, dtype=np.int64)          # owner; -1: none yet
    slot_of[nodes] = first
    r = len(cand)
    local = np.zeros(n, dtype=np.int64)
    length = np.zeros(r + 1, dtype=np.int64)           # slot r: the sentinel
    nxt = np.full(r + 1, r, dtype=np.int64)
    # walk every sublist at once
    walker = first.copy()                              # slot of each live walker
    cur = nodes.copy()
    length[walker] = 1
    d = 0
    while len(walker):
        d += 1
        nx = succ[cur]
        at_tail = nx == cur
        owned = slot_of[nx] >= 0
        stop = owned & ~at_tail
        nxt[walker[stop]] = slot_of[nx[stop]]
        go = ~(at_tail | owned)
        walker, cur = walker[go], nx[go]
        slot_of[cur] = walker
        local[cur] = d
        length[walker] = d + 1
    # rank the splitter list: Q[k] = length[k] + Q[nxt[k]], Q[sentinel] = 0
    q, s = length.copy(), nxt.copy()
    for _ in range(int(r + 1).bit_length() + 1):
        if (s == r).all():
            break
        q, s = q + q[s], s[s]
    else:
        raise RuntimeError("cpu-random-splitter: the list of splitters did not converge (the "
                           "input is not a forest of lists); rank it with validate=True")
    ranks = (q - 1)[slot_of] - local
    stats = sublist_stats(length[:r], n, p, len(heads), "random", p)
    stats.update(threads=p, slots=r)
    return ranks, stats


def _walk_ranks(succ, heads, rank):
    """Sequential ranking: walk each list from its head twice (count, then number)."""
    for h in heads:
        length = 1
        v = h
        while succ[v] != v:
            v = succ[v]
            length += 1
        v = h
        k = length - 1
        rank[v] = k
        while succ[v] != v:
            v = succ[v]
            k -= 1
            rank[v] = k


_walk_compiled = numba.njit(cache=False)(_walk_ranks) if HAVE_NUMBA else _walk_ranks


def rank_sequential_compiled(succ) -> np.ndarray:
    """The sequential walk, numba-compiled when numba is importable (else plain Python).

    succ must be a valid forest of lists (rank() validates first)."""
    succ = np.ascontiguousarray(succ, dtype=np.int64)
    rank = np.zeros(len(succ), dtype=np.int64)
    if len(succ):
        _walk_compiled(succ, heads_of(succ), rank)
    return rank
