"""CPU baselines: the random splitter on the host, and a compiled sequential walk.

rank_cpu_random_splitter is the paper's CPU baseline (its "multi-threaded
list ranking on the CPU also uses a parallel random splitter approach"),
on several cores: the walkers are split between ``workers`` processes
(default: the cores this process may use), and each process walks its share
vectorized with numpy *per step*: one numpy operation per step for all of
its walkers still going.  Processes, not threads, because numpy's fancy
indexing holds the GIL.  The arrays the walk writes live in shared memory
(forked workers write them in place); no two workers ever touch the same
node: a walker writes only the nodes of its own sublist and reads, besides
those, only the splitter marks, which are set before the walk starts.
Per-step vector work needs many walkers, so the default is one splitter per
32 nodes (at least 64), far more than the paper's 4 threads; the phases are
those of the GPU version: choose splitters (KissStreams, seeded as on the
device, + every head), walk, rank the splitter list (pointer jumping in
numpy), expand.

rank_sequential_compiled is the sequential walk compiled with numba when
numba can be imported (an optional extra, for benchmarks); without numba it
runs the same function as plain Python, which is slow but gives the same
result (the tests use it that way on small inputs).
"""
from __future__ import annotations

import multiprocessing
import os

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


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                       # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def rank_cpu_random_splitter(succ, splitters: int | None = None, seed: int = 0,
                             heads: np.ndarray | None = None, workers: int | None = None):
    """Random splitter list ranking on the CPU; returns (ranks int64, stats).

    workers: processes that walk the sublists (None: default_workers()); 1 walks
    in this process.  succ must be a valid forest of lists (rank() validates first)."""
    succ = np.asarray(succ, dtype=np.int64)
    n = len(succ)
    if n == 0:
        return np.empty(0, np.int64), {}
    p = default_cpu_splitters(n) if splitters is None else int(splitters)
    workers = default_workers() if workers is None else int(workers)
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    if heads is None:
        heads = heads_of(succ)
    drawn = KissStreams(seed, p).next_below(n) if p else np.empty(0, np.int64)
    cand = np.concatenate([drawn, heads])
    # a node drawn twice is one splitter; the first slot keeps it (slot ids are
    # positions in cand, as on the device where the loser's sublist is empty)
    nodes, first = np.unique(cand, return_index=True)
    r = len(cand)
    with _WalkArrays(n, r, shared=workers > 1) as arr:
        arr.slot_of[:] = -1                            # owner; -1: none yet
        arr.slot_of[nodes] = first
        arr.nxt[:] = r                                 # slot r: the sentinel
        arr.length[first] = 1
        chunks = np.array_split(np.arange(len(first)), workers)
        if workers == 1 or len(first) < 2 * workers:
            _walk(succ, arr, first, nodes)
        else:
            global _FORKED
            _FORKED = (succ, arr, first, nodes)
            ctx = multiprocessing.get_context("fork")
            with ctx.Pool(workers) as pool:
                pool.map(_walk_chunk, [c for c in chunks if len(c)])
            _FORKED = None
        length, nxt = arr.length.copy(), arr.nxt.copy()
        slot_of, local = arr.slot_of.copy(), arr.local.copy()
    # rank the splitter list: Q[k] = length[k] + Q[nxt[k]], Q[sentinel] = 0
    q, s = length, nxt
    for _ in range(int(r + 1).bit_length() + 1):
        if (s == r).all():
            break
        q, s = q + q[s], s[s]
    else:
        raise RuntimeError("cpu-random-splitter: the list of splitters did not converge (the "
                           "input is not a forest of lists); rank it with validate=True")
    ranks = (q - 1)[slot_of] - local
    stats = sublist_stats(length[:r], n, p, len(heads), "random", p)
    stats.update(threads=p, slots=r, workers=workers)
    return ranks, stats


class _WalkArrays:
    """The arrays the walk writes, in shared memory when workers are forked."""

    def __init__(self, n: int, r: int, shared: bool):
        sizes = {"slot_of": n, "local": n, "length": r + 1, "nxt": r + 1}
        self._shm = []
        for name, size in sizes.items():
            if shared:
                from multiprocessing import shared_memory
                shm = shared_memory.SharedMemory(create=True, size=max(8 * size, 8))
                self._shm.append(shm)
                a = np.ndarray(size, dtype=np.int64, buffer=shm.buf)
                a[:] = 0
            else:
                a = np.zeros(size, dtype=np.int64)
            setattr(self, name, a)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for name in ("slot_of", "local", "length", "nxt"):
            setattr(self, name, None)
        for shm in self._shm:
            shm.close()
            shm.unlink()


_FORKED = None            # (succ, arrays, first, nodes) for forked workers


def _walk_chunk(chunk):
    succ, arr, first, nodes = _FORKED
    _walk(succ, arr, first[chunk], nodes[chunk])


def _walk(succ, arr, walker, cur):
    """Walk the sublists of the slots ``walker`` from their splitters ``cur``,
    all at once, one numpy step per node of the longest."""
    slot_of, local, length, nxt = arr.slot_of, arr.local, arr.length, arr.nxt
    walker, cur = walker.copy(), cur.copy()
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
