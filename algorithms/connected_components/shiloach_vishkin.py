"""Shiloach-Vishkin connected components on a device: the host driver.

    D = SV0()                          # D[i] = i, Q[i] = 0
    for s = 1, 2, ...:                 # one round
        SV1a  shortcut                 # step 1
        SV1b  mark non-star trees      # step 1 (a kernel of its own: see README)
        SV2   conditional hooking      # step 2
        SV3   hook stagnant stars      # step 3
        SV4   shortcut                 # step 4
        w = 0; SV5; if w == 0: stop    # step 5

When the loop stops every tree is a star and no edge joins two stars, so D[i]
is the root of i's component.  The labels are then normalized on the host
(numpy): every vertex gets the smallest vertex id of its star.

The kernels are in kernels.py; the reasoning for why this is right under any
schedule (any winner of a concurrent write, any interleaving of warps) is in
README.md.
"""
from __future__ import annotations

import math

import numpy as np

from . import kernels as K
from .sequential import INT32_MAX, validate_edges

BLOCK = 256                 # threads per block unless `threads` is smaller
DEFAULT_MAX_BLOCKS = 128    # default p: one thread per item, at most 128 blocks


class ConvergenceError(RuntimeError):
    """The round loop ran past its limit (only the deliberately wrong variant does)."""


def round_bound(n: int) -> int:
    """floor(log_{3/2} n) + 2: Shiloach and Vishkin's bound on the rounds (n >= 1)."""
    if n <= 1:
        return 2
    b = int(math.floor(math.log(n) / math.log(1.5)))
    # guard against floating-point error at exact powers of 3/2
    while 3 ** (b + 1) <= n * 2 ** (b + 1):
        b += 1
    while b > 0 and 3 ** b > n * 2 ** b:
        b -= 1
    return b + 2


def prepare_edges(n: int, edges) -> np.ndarray:
    """Validate and return the device edge words (int64): both orientations of
    every edge that is not a self-loop, packed as (i << 32) | j."""
    arr = np.asarray(edges)
    if arr.size == 0 and arr.ndim <= 2:       # [] or np.empty((0, 2)), any dtype
        arr = np.empty((0, 2), dtype=np.int64)
    e = validate_edges(n, arr)
    e = e[e[:, 0] != e[:, 1]]                 # self-loops never join anything
    if 2 * len(e) > INT32_MAX:
        raise ValueError(f"{len(e)} edges (not counting self-loops) give {2 * len(e)} directed "
                         f"edges, more than the int32 edge index allows ({INT32_MAX})")
    u, v = e[:, 0], e[:, 1]
    i = np.concatenate([u, v])
    j = np.concatenate([v, u])
    return (i << 32) | j


def geometry(threads, items: int):
    """(grid, block) for p = `threads` threads (default: one per item, capped)."""
    if threads is None:
        block = BLOCK
        grid = max(1, min(-(-items // block), DEFAULT_MAX_BLOCKS))
        return grid, block
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    threads = int(threads)
    block = min(threads, BLOCK)
    if threads % block:
        raise ValueError(f"threads = {threads} is not a whole number of blocks of {block}: "
                         f"use at most {BLOCK} threads or a multiple of {BLOCK}")
    return threads // block, block


def shiloach_vishkin(n, edges, device, threads=None, seed=0, launch_options=None,
                     fused_step1=False, max_rounds=None, observer=None):
    """Run SV on `device`; returns (labels int64, rounds, launches, p, m_directed).

    launch_options: passed to every launch (engine=..., schedule=..., seed=...).
    Under schedule="random" every launch gets its own seed, derived from the
    base seed (launch_options["seed"] if given, else `seed`) and the launch's
    position, so a run is reproducible and its launches differ from each other.
    fused_step1: use the WRONG fused step 1 (demonstration only).
    max_rounds: stop with ConvergenceError after this many rounds (default:
    4 * (floor(log_{3/2} n) + 2), far above what the correct variant needs).
    observer: called as observer(kernel_name, s, D, Q) after every launch
    (D, Q: the device arrays; s: the round, 0 for SV0), for tests that check
    invariants between kernels.
    """
    words = prepare_edges(n, edges)
    n = int(n)
    m = len(words)
    if n == 0:
        return np.empty(0, dtype=np.int64), 0, [], 0, 0
    grid, block = geometry(threads, max(n, m))
    opts = dict(launch_options or {})
    base_seed = opts.pop("seed", seed)
    randomized = opts.get("schedule", "fixed") == "random"
    launches = []

    def launch(kernel, *args):
        o = dict(opts)
        if randomized:
            o["seed"] = int(np.random.SeedSequence([int(base_seed), len(launches)])
                            .generate_state(1)[0] & 0x7FFFFFFF)
        elif "seed" in (launch_options or {}):
            o["seed"] = base_seed
        rep = device.launch(kernel, grid, block, *args, **o)
        launches.append(rep)
        if observer is not None:
            observer(rep.kernel, s, D, Q)
        return rep

    D = device.zeros(n, np.int32)
    Q = device.zeros(n, np.int32)
    E = device.to_device(words) if m else device.zeros(1, np.int64)   # never read when m == 0
    w = device.zeros(1, np.int32)
    zero = np.zeros(1, dtype=np.int32)
    limit = max_rounds if max_rounds is not None else 4 * round_bound(n)

    s = 0
    launch(K.sv0_init, D, Q, n)
    while True:
        s += 1
        if s > limit:
            d = D.to_host()
            cur = d[d]
            for _ in range(n.bit_length()):
                cur = cur[cur]
            forest = bool(np.array_equal(d[cur], cur))
            raise ConvergenceError(
                f"Shiloach-Vishkin did not finish in {limit} rounds (n = {n}, "
                f"{m} directed edges); the parent array "
                + ("is still a forest" if forest else "holds a cycle"))
        if fused_step1:
            launch(K.sv1_shortcut_mark_fused, D, Q, s, n)
        else:
            launch(K.sv1a_shortcut, D, n)
            launch(K.sv1b_mark, D, Q, s, n)
        launch(K.sv2_hook, E, D, Q, s, m)
        launch(K.sv3_hook_stagnant, E, D, Q, s, m)
        launch(K.sv4_shortcut, D, n)
        w.copy_from(zero)
        launch(K.sv5_any_change, Q, w, s, n)
        if int(w.to_host()[0]) == 0:
            break

    root = D.to_host().astype(np.int64)
    return normalize(root), s, launches, grid * block, m


def normalize(root: np.ndarray) -> np.ndarray:
    """Labels from the final parent array: the smallest vertex id among the
    vertices with the same D value (host, numpy)."""
    n = len(root)
    smallest = np.full(n, n, dtype=np.int64)
    np.minimum.at(smallest, root, np.arange(n, dtype=np.int64))
    return smallest[root]
