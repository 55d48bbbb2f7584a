"""Atomics and concurrent stores of many lanes at once, with serial semantics.

An atomic instruction of k lanes behaves as if the lanes went one after
another in a given ``order`` (lane order by default, a random permutation
under a random schedule): each lane gets the value its element held just
before its own turn.  Colliding lanes are grouped by address and the groups
scanned in parallel, so the cost grows with log(collisions), not with the
collisions themselves (a whole grid adding into one counter stays cheap).
"""
from __future__ import annotations

import numpy as np

from ..ir.ops import AtomicOp
from .ops import ATOMIC


def _groups(index: np.ndarray):
    """Stable sort by index: permutation, the sorted indices, and group starts."""
    perm = np.argsort(index, kind="stable")
    sidx = index[perm]
    starts = np.flatnonzero(np.r_[True, sidx[1:] != sidx[:-1]])
    return perm, sidx, starts


def _segmented_inclusive_scan(x, first, ufunc):
    """Inclusive scan of ``x`` restarting where ``first`` is True (Hillis-Steele)."""
    n = len(x)
    seg = np.cumsum(first)
    x = x.copy()
    d = 1
    while d < n:
        same = seg[d:] == seg[:-d]
        if not same.any():
            break
        x[d:] = np.where(same, ufunc(x[:-d], x[d:]), x[d:])
        d *= 2
    return x


def atomic_update(memory: np.ndarray, op: AtomicOp, index: np.ndarray, value: np.ndarray,
                  compare: np.ndarray | None, order: np.ndarray) -> np.ndarray:
    """Apply ``op`` for every lane in ``order``; return each lane's old value (lane order)."""
    k = len(index)
    old = np.empty(k, dtype=memory.dtype)
    if k == 0:
        return old
    idx_o, val_o = index[order], value[order]
    perm, sidx, starts = _groups(idx_o)
    vals = val_o[perm]
    first = np.zeros(len(sidx), dtype=bool)
    first[starts] = True
    init = memory[sidx]                         # each element's value before the instruction
    last = np.r_[starts[1:] - 1, len(sidx) - 1]       # each group's last lane
    rule = ATOMIC[op]                           # the op's row in simgpu.sim.ops
    if rule.negate:
        vals = np.negative(vals)
    if rule.kind == "scan" and rule.ufunc is np.add and memory.dtype.kind == "f":
        # Float addition is not associative: add in the lanes' serial order.
        before = _serial_float_add(init, vals, first)
        memory[sidx[last]] = before[last] + vals[last]
    elif rule.kind == "scan":
        ufunc = rule.ufunc
        incl = _segmented_inclusive_scan(vals, first, ufunc)
        excl = np.empty_like(incl)
        excl[1:] = incl[:-1]
        before = np.where(first, init, ufunc(init, excl))
        memory[sidx[last]] = ufunc(before[last], vals[last])
    elif rule.kind == "exchange":
        before = np.empty_like(vals)
        before[first] = init[first]
        before[~first] = vals[np.flatnonzero(~first) - 1]
        memory[sidx[last]] = vals[last]
    elif rule.kind == "compare_and_swap":
        before = _serial_cas(memory, sidx, vals, compare[order][perm], first)
    else:  # pragma: no cover - tests/test_op_tables.py runs every row
        raise NotImplementedError(rule.kind)
    out_o = np.empty_like(before)
    out_o[perm] = before
    old[order] = out_o
    return old


def _serial_float_add(init, vals, first):
    """Old values of float atomic adds, summed in the lanes' serial order."""
    before = np.empty_like(vals)
    acc = None
    for j in range(len(vals)):                  # floats only; collisions are rare in practice
        acc = init[j] if first[j] else acc
        before[j] = acc
        acc = acc + vals[j]
    return before


def _serial_cas(memory, sidx, vals, cmps, first):
    """Compare-and-swap in serial order, processed one collision rank at a time."""
    rank = np.arange(len(sidx)) - np.maximum.accumulate(np.where(first, np.arange(len(sidx)), 0))
    before = np.empty_like(vals)
    for r in range(int(rank.max()) + 1):
        sel = rank == r                          # at most one lane per address at each rank
        cur = memory[sidx[sel]]
        before[sel] = cur
        swap = cur == cmps[sel]
        memory[sidx[sel][swap]] = vals[sel][swap]
    return before


def store_winners(index: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Positions (into ``index``) of the lanes whose plain store lands: the last in ``order``.

    Concurrent plain stores to one address leave exactly one lane's value (CUDA
    guarantees one of them, not which); the ``order`` says which one wins.
    """
    idx_o = index[order]
    rev = idx_o[::-1]
    _, first_in_rev = np.unique(rev, return_index=True)
    return order[len(order) - 1 - first_in_rev]
