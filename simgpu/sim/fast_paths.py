"""Compiled fast paths: the memory-free parts of kernels as plain closures.

The generator methods of :class:`~simgpu.sim.interpreter.Executor` can stop at
every memory access and barrier, which is what the engines need, but most of a
kernel can never stop there, and running it through generators only costs time.
This module turns such IR nodes, once each, into closures ``f(executor, idx)``
that the executor looks up in ``_PURE`` (and ``_RANGE`` for ``for`` loops) and
calls instead.  It also holds the activation records :class:`Frame` and
:class:`Loop`, which both paths create; it sits below the interpreter and does
not import it (the closures only use the executor they are given).
"""
from __future__ import annotations

import numpy as np

from ..ir import nodes as ir
from ..ir.types import ArrayType
from .lanes import union
from .ops import BINARY, COMPARE, UNARY, LaneFault, convert

try:                    # numpy's C function, without the Python dispatch wrapper (4x faster
    from numpy._core.multiarray import count_nonzero as _nnz     # on a warp's 32 lanes)
except ImportError:     # pragma: no cover - other numpy layouts
    _nnz = np.count_nonzero


class Frame:
    """Locals of one kernel or device-function activation, one array per name."""

    def __init__(self, fn: ir.Function, n: int):
        self.fn = fn
        self.vars = {name: np.zeros(n, dtype=t.dtype) for name, t in fn.locals}
        for p in fn.params:
            if not isinstance(p.type, ArrayType):
                self.vars[p.name] = np.zeros(n, dtype=p.type.dtype)
        self.arrays: dict = {}
        self.ret = np.zeros(n, dtype=fn.return_type.dtype) if fn.return_type else None


class Loop:
    def __init__(self):
        self.brk: list = []
        self.cont: list = []


# --- compiled fast paths -----------------------------------------------------------
#
# Most of a kernel touches no memory: index arithmetic, comparisons, loop
# counters, whole device functions such as a random-number generator.  Those
# parts cannot yield, so running them through the interpreter's generator
# methods only costs time.  They are compiled once per IR node into plain closures
# ``f(executor, idx)`` that do exactly what the ``eval_*``/``exec_*`` methods
# do, in the same order (the same counts, the same faults).  Nodes that load,
# store, use atomics or barriers keep the generator path.

_PURE: dict = {}        # id(node) -> closure, for nodes (and blocks) without memory access
_SEEN: dict = {}        # id(node) -> node: every node looked at (keeps ids unique)
_CONST_CACHE_LANES = 1024   # constants of up to this many lanes are built once, read-only


def compile_function(fn: ir.Function) -> None:
    """Compile the memory-free parts of ``fn`` (and of the functions it calls), once."""
    if id(fn) in _SEEN:
        return
    _SEEN[id(fn)] = fn
    _block(fn.body)


def _known(node) -> bool:
    return _SEEN.get(id(node)) is node


def _mark(node, fn):
    _SEEN[id(node)] = node
    if fn is not None:
        _PURE[id(node)] = fn
    return fn


def _block(stmts: tuple):
    """Closure for a statement block if every statement is memory-free (else None)."""
    if _known(stmts):
        return _PURE.get(id(stmts))
    fns = [_stmt(s) for s in stmts]
    if any(f is None for f in fns):
        return _mark(stmts, None)

    def block(ex, idx):
        for f in fns:
            if idx.size == 0:
                break
            idx = f(ex, idx)
        return idx
    return _mark(stmts, block)


def _expr(e):
    if e is None:
        return None
    if _known(e):
        return _PURE.get(id(e))
    return _mark(e, _make_expr(e))


def _stmt(s):
    if _known(s):
        return _PURE.get(id(s))
    return _mark(s, _make_stmt(s))


def _make_expr(e):
    t = type(e)
    if t is ir.Const:
        value, dtype, cache = e.value, e.type.dtype, {}

        def const(ex, idx):
            n = idx.size
            a = cache.get(n)
            if a is None:
                a = np.full(n, value, dtype=dtype)
                if n > _CONST_CACHE_LANES:
                    return a
                a.setflags(write=False)
                cache[n] = a
            return a
        return const
    if t is ir.Var:
        name = e.name

        def var(ex, idx):
            return ex.frame.vars[name][idx]
        return var
    if t is ir.Special:
        if e.name in ("threadIdx", "blockIdx"):
            key = (e.name, e.dim)

            def special(ex, idx):
                return ex.group.index[key][idx]
            return special
        name, dim, cache = e.name, e.dim, {}

        def uniform(ex, idx):
            n = idx.size
            geom = ex.group.geom
            k = (n, geom.block, geom.grid)
            a = cache.get(k)
            if a is None:
                dims = {"blockDim": geom.block, "gridDim": geom.grid}
                value = 32 if name == "warp_size" else dims[name]["xyz".index(dim)]
                a = np.full(n, value, dtype=np.int32)
                if n > _CONST_CACHE_LANES:
                    return a
                a.setflags(write=False)
                if len(cache) > 256:
                    cache.clear()
                cache[k] = a
            return a
        return uniform
    if t is ir.Cast:
        operand, dtype = _expr(e.operand), e.type.dtype
        if operand is None:
            return None

        def cast(ex, idx):
            v = operand(ex, idx)
            ex.issue(idx, e)
            return convert(v, dtype)
        return cast
    if t is ir.Binary or t is ir.Compare:
        left, right = _expr(e.left), _expr(e.right)
        if left is None or right is None:
            return None
        op = BINARY[e.op] if t is ir.Binary else COMPARE[e.op]

        def binary(ex, idx):
            a = left(ex, idx)
            b = right(ex, idx)
            ex.issue(idx, e)
            try:
                return op(a, b)
            except LaneFault as f:
                raise ex.fault(e, f.what, idx[f.bad], f.hint)
        return binary
    if t is ir.Unary:
        operand, op = _expr(e.operand), UNARY[e.op]
        if operand is None:
            return None

        def unary(ex, idx):
            a = operand(ex, idx)
            ex.issue(idx, e)
            return op(a)
        return unary
    if t is ir.Logical:
        left, right = _expr(e.left), _expr(e.right)
        if left is None or right is None:
            return None
        is_and = e.op.value == "and"

        def logical(ex, idx):
            lv = left(ex, idx)
            ex.issue(idx, e)
            need = lv if is_and else ~lv
            result = lv.copy()
            if _nnz(need):
                result[need] = right(ex, idx[need])
            return result
        return logical
    if t is ir.Select:
        cond, if_true, if_false = _expr(e.cond), _expr(e.if_true), _expr(e.if_false)
        if cond is None or if_true is None or if_false is None:
            return None
        dtype = e.type.dtype

        def select(ex, idx):
            c = cond(ex, idx)
            ex.issue(idx, e)
            out = np.empty(idx.size, dtype=dtype)
            taken = _nnz(c)
            if taken:
                out[c] = if_true(ex, idx[c])
            if taken < c.size:
                out[~c] = if_false(ex, idx[~c])
            return out
        return select
    if t is ir.Call:
        fn = e.function
        args = [(p.name, a, None) if isinstance(a, ir.ArrayRef) else (p.name, None, _expr(a))
                for p, a in zip(fn.params, e.args)]
        if _known(fn):          # recursion (not in the language) or already compiled
            body = _PURE.get(id(fn.body))
        else:
            _SEEN[id(fn)] = fn
            body = _block(fn.body)
        if body is None or any(ref is None and f is None for _, ref, f in args):
            return None
        returns = fn.return_type is not None

        def call(ex, idx):
            callee = Frame(fn, ex.group.n)
            for name, ref, f in args:
                if ref is not None:
                    callee.arrays[name] = ex.binding(ref)
                else:
                    callee.vars[name][idx] = f(ex, idx)
            ex.issue(idx, e)
            caller, loops = ex.frame, ex.loops
            ex.frame, ex.loops = callee, []
            try:
                body(ex, idx)
            finally:
                ex.frame, ex.loops = caller, loops
            return callee.ret[idx] if returns else np.zeros(idx.size, np.int32)
        return call
    for part in (getattr(e, "index", None), getattr(e, "value", None), getattr(e, "compare", None)):
        _expr(part)             # Load, Atomic touch memory; their operands may not
    return None


_UNIFORM: dict = {}     # id(expr) -> expr, for expressions equal on every lane of a launch


def _uniform(e) -> bool:
    """True if ``e`` has one value for every lane of a launch: built from constants,
    blockDim, gridDim and warp_size only (such as a striding loop's step)."""
    t = type(e)
    if t is ir.Const:
        return True
    if t is ir.Special:
        return e.name not in ("threadIdx", "blockIdx")
    if t is ir.Binary or t is ir.Compare:
        return _uniform(e.left) and _uniform(e.right)
    if t is ir.Unary or t is ir.Cast:
        return _uniform(e.operand)
    return False


_RANGE: dict = {}       # id(For) -> its loop test, where its stop and step touch no memory


def _range_cond(s, stop, step):
    """Executor.range_cond of the for-loop ``s`` as a closure."""
    var, const_step = s.var, isinstance(s.step, ir.Const)
    up = const_step and s.step.value > 0

    def cond(ex, idx):
        v = ex.frame.vars[var][idx]
        limit = stop(ex, idx)
        if const_step:
            return v < limit if up else v > limit
        return _range_test(ex, s, idx, v, limit, step(ex, idx))
    return cond


def _range_test(ex, s, idx, v, stop, step):
    """``range()``'s test for a step only known at run time (Executor.range_cond)."""
    if _UNIFORM.get(id(s)) is s:            # the same step on every lane: one look suffices
        first = step[0]
        if first == 0:
            raise ex.fault(s, "range() step is zero", idx)
        return v < stop if first > 0 else v > stop
    zero = step == 0
    if _nnz(zero):
        raise ex.fault(s, "range() step is zero", idx[zero])
    up = step > 0
    k = _nnz(up)
    if k == up.size:
        return v < stop
    if k == 0:
        return v > stop
    return np.where(up, v < stop, v > stop)


def _make_stmt(s):
    t = type(s)
    if t is ir.Assign:
        value, name = _expr(s.value), s.name
        if value is None:
            return None

        def assign(ex, idx):
            v = value(ex, idx)
            ex.issue(idx, s)
            ex.frame.vars[name][idx] = v
            return idx
        return assign
    if t is ir.ExprStmt:
        expr = _expr(s.expr)
        if expr is None:
            return None

        def expr_stmt(ex, idx):
            expr(ex, idx)
            return idx
        return expr_stmt
    if t is ir.If:
        cond, then, orelse = _expr(s.cond), _block(s.then), _block(s.orelse)
        if cond is None or then is None or orelse is None:
            return None

        def if_(ex, idx):
            c = cond(ex, idx)
            ex.branch(idx, c, s)
            taken, other = idx[c], idx[~c]
            out_t = then(ex, taken) if taken.size else taken
            out_f = orelse(ex, other) if other.size else other
            return union([out_t, out_f], ex.group.n)
        return if_
    if t is ir.While or t is ir.For:
        body = _block(s.body)
        if t is ir.While:
            cond = _expr(s.cond)
            parts = (cond,)
        else:
            start, stop, step = _expr(s.start), _expr(s.stop), _expr(s.step)
            parts = (start, stop, step)
            if _uniform(s.step):
                _UNIFORM[id(s)] = s
            if stop is not None and step is not None:
                _RANGE[id(s)] = _range_cond(s, stop, step)
        if body is None or any(p is None for p in parts):
            return None
        if t is ir.For:
            var, cond = s.var, _RANGE[id(s)]

        def loop(ex, idx):                           # Executor.loop
            if t is ir.For:
                first = start(ex, idx)
                ex.issue(idx, s)
                ex.frame.vars[var][idx] = first
            active, exits = idx, []
            n = ex.group.n
            sched, rounds = ex.schedule, 0
            while True:
                rounds += 1
                if rounds > sched.max_loop_iterations:   # never ends, or Ctrl-C
                    raise ex.loop_limit(s, active, sched.max_loop_iterations)
                c = cond(ex, active)
                if ex.branch(active, c, s) < active.size:
                    exits.append(active[~c])
                    active = active[c]
                if not active.size:
                    break
                frame_loop = Loop()
                ex.loops.append(frame_loop)
                out = body(ex, active)
                ex.loops.pop()
                exits.extend(frame_loop.brk)
                active = union([out] + frame_loop.cont, n)
                if t is ir.For and active.size:
                    inc = step(ex, active)
                    ex.issue(active, s)
                    v = ex.frame.vars[var]
                    v[active] = v[active] + inc
            return union(exits, n)
        return loop
    if t is ir.Break:
        def break_(ex, idx):
            ex.issue(idx, s)
            ex.loops[-1].brk.append(idx)
            return idx[:0]
        return break_
    if t is ir.Continue:
        def continue_(ex, idx):
            ex.issue(idx, s)
            ex.loops[-1].cont.append(idx)
            return idx[:0]
        return continue_
    if t is ir.Return:
        value = _expr(s.value) if s.value is not None else None
        if s.value is not None and value is None:
            return None

        def return_(ex, idx):
            if value is not None:
                ex.frame.ret[idx] = value(ex, idx)
            ex.issue(idx, s)
            if ex.frame.fn.is_kernel:
                ex.group.exited[idx] = True
            return idx[:0]
        return return_
    if t is ir.Store:
        _expr(s.index)          # the store touches memory; its operands may not
        _expr(s.value)
    return None                 # Store, SyncThreads: memory or barriers
