"""Loads that must read memory afresh: a thread's load of an array it has stored to.

In the kernel language every load reads memory at its point in the program, so a
thread that stores ``D[r] = x`` and then loads ``D[r]`` sees whatever value ``D[r]``
holds by then, possibly another thread's (Shiloach-Vishkin's hooking reads its root
back this way, to learn which of the concurrent writers won).  C++ gives a data race
no meaning, and a compiler may forward the thread's own stored value to the load,
dropping the load: nvcc does exactly that with ``sv2_hook``'s read-back.

So the front end marks such loads ``fresh``: a load of an array that the same function
stored to earlier on its path, within the same loop iteration, with no
``syncthreads()`` between (a barrier orders memory; nothing is forwarded across it).
Each backend gives the mark its meaning:

* the CUDA renderer emits a relaxed load at device scope (``ld.relaxed.gpu``), which
  the compiler must issue as written and which reads the L2, where every SM's
  stores meet;
* the simulator's values are fresh already; its timed engines send the load past
  the L1 to the L2, as the GPU does.

Not covered, and why: a store in one loop iteration and a load in a later one
(forwarding them needs an address provably the same in both, which a striding
index is not), and a store and a load in different functions (each function is
looked at alone; the calls are inlined only later, by the compiler).
"""
from __future__ import annotations

from dataclasses import replace

from . import nodes as ir


def mark_fresh_loads(fn: ir.Function) -> ir.Function:
    """``fn`` with every load that follows a store to its array marked ``fresh``."""
    body, _ = _block(fn.body, frozenset())
    return replace(fn, body=body) if body != fn.body else fn


def _block(stmts, stored: frozenset):
    """(new statements, arrays stored on the way out), walking in program order."""
    out = []
    for s in stmts:
        s, stored = _stmt(s, stored)
        out.append(s)
    return tuple(out), stored


def _stmt(s, stored: frozenset):
    if isinstance(s, ir.SyncThreads):
        return s, frozenset()
    if isinstance(s, ir.Store):
        s = replace(s, index=_expr(s.index, stored), value=_expr(s.value, stored))
        return s, stored | {s.array.name}
    if isinstance(s, (ir.Assign, ir.Return)):
        return (replace(s, value=_expr(s.value, stored)) if s.value is not None else s), stored
    if isinstance(s, ir.ExprStmt):
        return replace(s, expr=_expr(s.expr, stored)), stored
    if isinstance(s, ir.If):
        then, after_then = _block(s.then, stored)
        orelse, after_else = _block(s.orelse, stored)
        return replace(s, cond=_expr(s.cond, stored), then=then, orelse=orelse), \
            after_then | after_else
    if isinstance(s, ir.While):
        body, after = _block(s.body, stored)
        return replace(s, cond=_expr(s.cond, stored), body=body), stored | after
    if isinstance(s, ir.For):
        body, after = _block(s.body, stored)
        return replace(s, start=_expr(s.start, stored), stop=_expr(s.stop, stored),
                       step=_expr(s.step, stored), body=body), stored | after
    return s, stored                         # Break, Continue: nothing to mark


def _expr(e, stored: frozenset):
    """``e`` with its loads of arrays in ``stored`` marked (an expression stores nothing:
    atomics are not forwarded from, and their own old values are read at the L2)."""
    if e is None or not stored or not isinstance(e, ir.Expr):
        return e
    changes = ir.child_changes(e, lambda x: _expr(x, stored))
    if isinstance(e, ir.Load) and e.array.name in stored and not e.fresh:
        changes["fresh"] = True
    return replace(e, **changes) if changes else e
