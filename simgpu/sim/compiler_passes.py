"""What the CUDA compiler does to a kernel that changes its counts and its time.

The simulator runs a kernel's IR as its source has it; nvcc does not.  Two of its
transformations show in the card's counts and times, and both are here, as IR
passes, applied where the config's ``[issue]`` section asks for them:

* **Loop unrolling** (``unroll_loops``, ``unroll_straight_copies``,
  ``unroll_full_max_trips``).  A ``for`` loop
  whose trip count is a constant up to ``unroll_full_max_trips`` becomes that many
  copies of its body (the loop variable a constant in each).  A loop of step 1 whose
  trip count is known only at run time becomes a remainder loop of ``trips %
  unroll_loops`` iterations, then a loop whose body holds ``unroll_loops`` copies.  A
  warp issues each copy's instructions once for every iteration any of its lanes
  runs, so unrolling changes the request counts of loops whose lanes run different
  trip counts (validation/unroll_counts.py: the H100's ncu counts for bfs_expand are
  those of a loop unrolled by four, remainder first).  Where the body is assignments
  only (``unroll_straight_copies``), ptxas goes on: the copies run sixteen at a time,
  then eight, then four for what is left, and spmv_csr's counts are exactly those.
* **Load scheduling** (``schedule_loads``).  In straight-line code, each global or
  shared load becomes an instruction of its own (a pending temporary) and issues as
  early as its operands and the memory order allow, loads before other instructions
  of the same depth (how many loads' latencies lie on the way to it).  With the
  scoreboard, independent loads then overlap across statements and unrolled copies,
  as in nvcc's SASS: transpose_tiled's four loads issue before its four shared
  stores (``LDG x4, STS x4``), where the source interleaves them.

What stays in order, as a compiler without ``__restrict__`` must keep it: a load
never passes a store or an atomic to the same memory space (global, shared), nor a
barrier, a branch, a loop, a call or a warp operation (each ends a straight-line
run).  Loads under a short-circuit ``and``/``or`` or a conditional expression run only
where the source says, and stay.  The results are those of the kernel as written.
"""
from __future__ import annotations

import dataclasses

from ..ir import nodes as ir
from ..ir.ops import BinaryOp, CompareOp, LogicalOp
from ..ir.types import SCALAR_TYPES

__all__ = ["compiled_form", "unroll", "schedule_loads"]

_BARRIER_EXPRS = (ir.Atomic, ir.Call, ir.WarpOp)


def compiled_form(fn: ir.Function, issue) -> ir.Function:
    """``fn`` as the compiler of the config's ``[issue]`` section would issue it
    (``fn`` itself where the section asks for no pass); made once per kernel and
    setting."""
    wide = issue.unroll_straight_copies
    key = ("compiler", issue.unroll_loops, issue.unroll_full_max_trips, wide, issue.schedule_loads)
    if not (issue.unroll_loops or issue.unroll_full_max_trips or issue.schedule_loads):
        return fn
    got = fn.compiled.get(key)
    if got is None:
        names = _Names(fn)
        out = fn
        if issue.unroll_loops or issue.unroll_full_max_trips:
            out = unroll(out, issue.unroll_loops or 1, issue.unroll_full_max_trips or 0, names,
                         wide or 0)
        if issue.schedule_loads:
            out = schedule_loads(out, names)
        got = fn.compiled[key] = out
    return got


# --------------------------------------------------------------------------- #
# Rewriting helpers
# --------------------------------------------------------------------------- #

class _Names:
    """Fresh local names for a function, with their types collected."""

    def __init__(self, fn: ir.Function):
        self.taken = {p.name for p in fn.params} | {n for n, _ in fn.locals} | {
            n for n, _ in fn.shared}
        self.new: list = []

    def fresh(self, stem: str, t) -> str:
        k = len(self.new)
        while f"{stem}{k}" in self.taken:
            k += 1
        name = f"{stem}{k}"
        self.taken.add(name)
        self.new.append((name, t))
        return name

    def add_to(self, fn: ir.Function, body: tuple) -> ir.Function:
        have = {n for n, _ in fn.locals}
        extra = tuple(x for x in self.new if x[0] not in have)
        return dataclasses.replace(fn, body=body, locals=fn.locals + extra)


def map_expr(e, f):
    """``e`` with ``f`` applied bottom-up to every expression node in it."""
    changes = ir.child_changes(e, lambda c: map_expr(c, f))
    return f(dataclasses.replace(e, **changes) if changes else e)


def map_stmt(s, f):
    """Statement ``s`` with :func:`map_expr` ``f`` applied to its expressions, nested
    statements included."""
    changes = {}
    for fl in dataclasses.fields(s):
        if fl.name == "loc":
            continue
        value = getattr(s, fl.name)
        if isinstance(value, ir.Expr):
            changes[fl.name] = map_expr(value, f)
        elif isinstance(value, tuple) and value and isinstance(value[0], ir.Stmt):
            changes[fl.name] = tuple(map_stmt(x, f) for x in value)
    return dataclasses.replace(s, **changes)


def _map_blocks(stmts: tuple, f) -> tuple:
    """Every statement block, innermost first, through ``f(block) -> block``."""
    out = []
    for s in stmts:
        changes = {fl.name: _map_blocks(getattr(s, fl.name), f)
                   for fl in dataclasses.fields(s)
                   if fl.name in ("then", "orelse", "body")}
        out.append(dataclasses.replace(s, **changes) if changes else s)
    return tuple(f(tuple(out)))


# --------------------------------------------------------------------------- #
# Unrolling
# --------------------------------------------------------------------------- #

def _int_const(e) -> int | None:
    return e.value if type(e) is ir.Const and not isinstance(e.value, (bool, float)) else None


def _unrollable(s: ir.For) -> bool:
    """No ``break``/``continue`` inside (they would leave one copy, not the loop) and no
    assignment of the loop variable."""
    for n in ir.walk(s.body):
        if type(n) in (ir.Break, ir.Continue):
            return False
        if (type(n) is ir.Assign and n.name == s.var) or (type(n) is ir.For and n.var == s.var):
            return False
    return True


def _with_var(body: tuple, var: str, value) -> tuple:
    """``body`` with every read of ``var`` replaced by the expression ``value``."""
    def f(e):
        return value if type(e) is ir.Var and e.name == var else e
    return tuple(map_stmt(s, f) for s in body)


def unroll(fn: ir.Function, factor: int, full_max: int, names: _Names | None = None,
           wide: int = 0):
    """``fn`` with its ``for`` loops unrolled (see the module's docstring)."""
    names = names or _Names(fn)
    types = fn.local_types()

    def block(stmts):
        out = []
        for s in stmts:
            if type(s) is ir.For and _unrollable(s):
                out.extend(_unroll_for(s, types[s.var], factor, full_max, names, wide))
            else:
                out.append(s)
        return out

    return names.add_to(fn, _map_blocks(fn.body, block))


def _straight(body: tuple) -> bool:
    """A body of assignments only, no store, atomic, call or warp operation: ptxas
    unrolls its loop further (spmv_csr's SASS; bfs_expand's, which stores, it does not)."""
    return all(type(n) is ir.Assign for n in body) and not any(
        isinstance(n, _BARRIER_EXPRS) for n in ir.walk(body))


def _unroll_for(s: ir.For, t, factor: int, full_max: int, names: _Names, wide: int = 0) -> list:
    start, stop, step = _int_const(s.start), _int_const(s.stop), _int_const(s.step)
    loc = s.loc
    if None not in (start, stop, step) and step and 0 < len(range(start, stop, step)) <= full_max:
        values = range(start, stop, step)
        out = []
        for v in values:
            out.extend(_with_var(s.body, s.var, ir.Const(t, loc, v)))
        return out               # (the language reads no loop variable after its loop)
    if step != 1 or factor <= 1:
        return [s]
    # remainder first, then the body ``factor`` times (``factor`` a power of two)
    if factor & (factor - 1):
        return [s]

    def var(name):
        return ir.Var(t, loc, name)

    def c(value):
        return ir.Const(t, loc, value)

    first, last, mid = (names.fresh("_unroll_", t) for _ in range(3))
    boolean = ir.Compare(SCALAR_TYPES["boolean"], loc, CompareOp.GT, var(last), var(first))
    rest = ir.Binary(t, loc, BinaryOp.BITAND,
                     ir.Binary(t, loc, BinaryOp.SUB, var(last), var(first)), c(factor - 1))
    copies = []
    for k in range(factor):
        v = var(mid) if k == 0 else ir.Binary(t, loc, BinaryOp.ADD, var(mid), c(k))
        copies.extend(_with_var(s.body, s.var, v))
    head = [
        ir.Assign(loc, first, s.start),
        ir.Assign(loc, last, s.stop),
        ir.Assign(loc, mid, ir.Select(t, loc, boolean,
                                      ir.Binary(t, loc, BinaryOp.ADD, var(first), rest),
                                      var(first))),
        ir.For(loc, s.var, var(first), var(mid), c(1), s.body),
    ]
    if not (wide > factor and _straight(s.body)):
        return head + [ir.For(loc, mid, var(mid), var(last), c(factor), tuple(copies))]
    # ptxas's further unrolling (spmv_csr's SASS): the copies ``wide`` at a time, then
    # ``wide / 2``, ... down to ``factor`` for what is left
    def copies_at(base, n):
        out = []
        for k in range(n):
            v = var(base) if k == 0 else ir.Binary(t, loc, BinaryOp.ADD, var(base), c(k))
            out.extend(_with_var(s.body, s.var, v))
        return tuple(out)

    def sub(a, b):
        return ir.Binary(t, loc, BinaryOp.SUB, a, b)

    boolean_t = SCALAR_TYPES["boolean"]
    top, run = names.fresh("_unroll_", t), names.fresh("_unroll_", t)
    left = sub(var(last), var(mid))
    whole = sub(left, ir.Binary(t, loc, BinaryOp.BITAND, left, c(wide - 1)))
    more = ir.Compare(boolean_t, loc, CompareOp.GT, var(last), var(mid))
    out = head + [
        ir.Assign(loc, top, ir.Select(t, loc, more,
                                      ir.Binary(t, loc, BinaryOp.ADD, var(mid), whole), var(mid))),
        ir.For(loc, run, var(mid), var(top), c(wide), copies_at(run, wide)),
    ]
    n = wide // 2
    while n >= factor:
        fits = ir.Logical(boolean_t, loc, LogicalOp.AND,
                          ir.Compare(boolean_t, loc, CompareOp.GT, var(last), var(top)),
                          ir.Compare(boolean_t, loc, CompareOp.GE, sub(var(last), var(top)), c(n)))
        out.append(ir.If(loc, fits, copies_at(top, n) + (
            ir.Assign(loc, top, ir.Binary(t, loc, BinaryOp.ADD, var(top), c(n))),), ()))
        n //= 2
    return out


# --------------------------------------------------------------------------- #
# Load scheduling
# --------------------------------------------------------------------------- #

def schedule_loads(fn: ir.Function, names: _Names | None = None) -> ir.Function:
    """``fn`` with each straight-line run of statements list-scheduled (see the
    module's docstring)."""
    names = names or _Names(fn)
    shared = {n for n, _ in fn.shared}
    return names.add_to(fn, _map_blocks(fn.body, lambda b: _schedule_block(b, shared, names)))


def _simple(s) -> bool:
    """An assignment or a store whose expressions hold no atomic, call or warp
    operation: it may move within its run."""
    if type(s) not in (ir.Assign, ir.Store):
        return False
    return not any(isinstance(n, _BARRIER_EXPRS) for n in ir.walk(s))


def _schedule_block(stmts: tuple, shared: set, names: _Names) -> list:
    out, run = [], []
    for s in stmts:
        if _simple(s):
            run.extend(_split_loads(s, names))
        else:
            out.extend(_list_schedule(run, shared))
            run = []
            out.append(s)
    out.extend(_list_schedule(run, shared))
    return out


def _is_load_assign(s) -> bool:
    if type(s) is not ir.Assign:
        return False
    v = s.value.operand if type(s.value) is ir.Cast else s.value
    return type(v) is ir.Load


def _split_loads(s, names: _Names) -> list:
    """``s`` as its loads (each a ``tmp = load`` of its own, operands first) and then
    ``s`` reading the temporaries.  A statement that is a load (``x = a[i]``, or a cast
    of one) stays one, its index's loads lifted; loads under ``and``/``or`` or a
    conditional expression stay in place."""
    before: list = []

    def lifted(e):
        """``e`` with its loads lifted, but not from the conditional parts of and/or
        and selects."""
        if type(e) is ir.Logical:
            return dataclasses.replace(e, left=lifted(e.left))
        if type(e) is ir.Select:
            return dataclasses.replace(e, cond=lifted(e.cond))
        changes = ir.child_changes(e, lifted)
        e = dataclasses.replace(e, **changes) if changes else e
        if type(e) is not ir.Load:
            return e
        tmp = names.fresh("_load_", e.type)
        before.append(ir.Assign(e.loc, tmp, e))
        return ir.Var(e.type, e.loc, tmp)

    if _is_load_assign(s):
        cast = type(s.value) is ir.Cast
        load = s.value.operand if cast else s.value
        load = dataclasses.replace(load, index=lifted(load.index))
        value = dataclasses.replace(s.value, operand=load) if cast else load
        return before + [dataclasses.replace(s, value=value)]
    changes = {f: lifted(getattr(s, f)) for f in ("index", "value")
               if isinstance(getattr(s, f, None), ir.Expr)}
    return before + [dataclasses.replace(s, **changes)]


def _facts(s, shared: set):
    """(variables read, variables written, spaces read, spaces written) of ``s``."""
    reads, mem_reads = set(), set()
    for e in (getattr(s, "index", None), s.value):
        if e is None:
            continue
        for n in ir.walk(e):
            if type(n) is ir.Var:
                reads.add(n.name)
            elif type(n) is ir.Load:
                mem_reads.add("shared" if n.array.name in shared else "global")
    if type(s) is ir.Assign:
        return reads, {s.name}, mem_reads, set()
    return reads, set(), mem_reads, {"shared" if s.array.name in shared else "global"}


def _list_schedule(run: list, shared: set) -> list:
    """``run`` reordered: each statement after every earlier one it depends on, and
    among those ready, the one fewest loads deep first, loads before the rest, then
    in source order."""
    if len(run) < 2:
        return list(run)
    facts = [_facts(s, shared) for s in run]
    loads = [_is_load_assign(s) for s in run]
    deps: list = []
    depth: list = []
    for j, (rj, wj, mrj, mwj) in enumerate(facts):
        d, dj = 0, []
        for i in range(j):
            ri, wi, mri, mwi = facts[i]
            data = wi & rj
            if data or ri & wj or wi & wj or mwi & (mrj | mwj) or mri & mwj:
                dj.append(i)
                d = max(d, depth[i] + (1 if loads[i] and data else 0))
        deps.append(dj)
        depth.append(d)
    done = [False] * len(run)
    out = []
    for _ in run:
        ready = [j for j in range(len(run))
                 if not done[j] and all(done[i] for i in deps[j])]
        j = min(ready, key=lambda k: (depth[k], not loads[k], k))
        done[j] = True
        out.append(run[j])
    return out
