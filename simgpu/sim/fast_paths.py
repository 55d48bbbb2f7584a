"""Compiled fast paths: the memory-free parts of a kernel as plain closures.

The generator methods of :class:`~simgpu.sim.interpreter.Executor` can stop at
every memory access and barrier, which is what the engines need, but most of a
kernel can never stop there (index arithmetic, comparisons, loop counters,
whole device functions such as a random-number generator), and running it
through generators only costs time.  :class:`CompiledKernel` turns such IR
nodes, once per kernel, into closures ``f(executor, idx)`` that the executor
calls instead.  Each closure evaluates its children and calls the same
functions of :mod:`simgpu.sim.semantics` as the generator method of its node,
in the same order (the same counts, the same faults).  Nodes that load, store,
use atomics or barriers keep the generator path; their operands may still be
compiled.

A kernel's compiled form lives with its IR function (``fn.compiled['sim']``),
so it goes when the kernel goes; this module does not import the interpreter
(the closures only use the executor they are given).
"""
from __future__ import annotations

import numpy as np

from ..ir import nodes as ir
from . import semantics as sem
from .ops import BINARY, COMPARE, LOGICAL, UNARY
from .scoreboard import keeps_pending, loop_test_reads, touched

_CONST_CACHE_LANES = 1024   # constants of up to this many lanes are built once, read-only

#: False compiles only the leaves (constants, variables, built-in indices), so that
#: every other node runs through the interpreter's generator methods (for the test
#: that the two paths give the same numbers).
COMPILE_COMPOSITES = True


def compiled(fn: ir.Function) -> "CompiledKernel":
    """The simulator's compiled form of kernel ``fn``, made on its first launch."""
    ck = fn.compiled.get("sim")
    if ck is None or ck.composites != COMPILE_COMPOSITES:
        ck = fn.compiled["sim"] = CompiledKernel(fn)
    return ck


class CompiledKernel:
    """One kernel's closures and the scoreboard's facts about its nodes.

    ``pure`` maps id(node) (expressions, statements and statement blocks) to the
    node's closure where it touches no memory; ``ranges`` maps id(For) to its loop
    test where its stop and step touch no memory.  Every node looked at is kept in
    ``seen``, so the ids stay those of live nodes.
    """

    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.composites = COMPILE_COMPOSITES
        self.pure: dict = {}
        self.ranges: dict = {}
        self.uniform_steps: set = set()      # id(For) whose step is one value for the launch
        self.seen: dict = {}
        self._touched: dict = {}
        self._keeps: dict = {}
        self._loop_reads: dict = {}
        self.seen[id(fn)] = fn
        self._block(fn.body)

    # --- the scoreboard's facts, once per node (simgpu.sim.scoreboard) -------------

    def touched(self, node) -> frozenset:
        hit = self._touched.get(id(node))
        if hit is None:
            hit = self._touched[id(node)] = touched(node)
            self.seen[id(node)] = node
        return hit

    def keeps_pending(self, s: ir.Assign) -> bool:
        hit = self._keeps.get(id(s))
        if hit is None:
            hit = self._keeps[id(s)] = keeps_pending(s)
            self.seen[id(s)] = s
        return hit

    def loop_test_reads(self, s) -> frozenset:
        hit = self._loop_reads.get(id(s))
        if hit is None:
            hit = self._loop_reads[id(s)] = loop_test_reads(s)
            self.seen[id(s)] = s
        return hit

    # --- compiling -----------------------------------------------------------------

    def _known(self, node) -> bool:
        return self.seen.get(id(node)) is node

    def _mark(self, node, f):
        self.seen[id(node)] = node
        if f is not None:
            self.pure[id(node)] = f
        return f

    def _block(self, stmts: tuple):
        """Closure for a statement block if every statement is memory-free (else None)."""
        if self._known(stmts):
            return self.pure.get(id(stmts))
        fns = [self._stmt(s) for s in stmts]
        if any(f is None for f in fns):
            return self._mark(stmts, None)

        def block(ex, idx):
            for f in fns:
                if idx.size == 0:
                    break
                idx = f(ex, idx)
            return idx
        return self._mark(stmts, block)

    def leaf(self, e):
        """A constant's, variable's or built-in index's closure (made if not yet)."""
        f = self.pure.get(id(e))
        return f if f is not None else self._mark(e, _leaf(e))

    def _expr(self, e):
        if e is None:
            return None
        if self._known(e):
            return self.pure.get(id(e))
        t = type(e)
        if t is ir.Const or t is ir.Var or t is ir.Special:
            return self._mark(e, _leaf(e))
        return self._mark(e, self._composite_expr(e) if self.composites else self._operands(e))

    def _stmt(self, s):
        if self._known(s):
            return self.pure.get(id(s))
        return self._mark(s, self._make_stmt(s) if self.composites else self._operands(s))

    def _operands(self, node):
        """Compile what is below ``node`` (its leaves at least), not ``node`` itself."""
        for name in getattr(type(node), "__dataclass_fields__", ()):
            part = getattr(node, name)
            if isinstance(part, ir.EXPR_NODES):
                self._expr(part)
            elif type(part) is tuple and part and isinstance(part[0], ir.STMT_NODES):
                self._block(part)
            elif type(part) is tuple:           # a call's arguments
                for a in part:
                    if isinstance(a, ir.EXPR_NODES):
                        self._expr(a)
            elif isinstance(part, ir.Function) and not self._known(part):
                self.seen[id(part)] = part
                self._block(part.body)
        return None

    def _composite_expr(self, e):
        t = type(e)
        expr = self._expr
        if t is ir.Cast:
            operand, dtype = expr(e.operand), e.type.dtype
            if operand is None:
                return None
            cast = sem.cast
            return lambda ex, idx: cast(ex, e, dtype, idx, operand(ex, idx))
        if t is ir.Binary or t is ir.Compare:
            left, right = expr(e.left), expr(e.right)
            if left is None or right is None:
                return None
            op = BINARY[e.op] if t is ir.Binary else COMPARE[e.op]
            operator = sem.operator

            def binary(ex, idx):
                a = left(ex, idx)
                return operator(ex, e, op, idx, a, right(ex, idx))
            return binary
        if t is ir.Unary:
            operand, op = expr(e.operand), UNARY[e.op]
            if operand is None:
                return None
            unary = sem.unary
            return lambda ex, idx: unary(ex, e, op, idx, operand(ex, idx))
        if t is ir.Logical:
            left, right = expr(e.left), expr(e.right)
            if left is None or right is None:
                return None
            start, nnz, needs_right = sem.logical_start, sem._nnz, LOGICAL[e.op]

            def logical(ex, idx):
                result, need = start(ex, e, needs_right, idx, left(ex, idx))
                if nnz(need):
                    result[need] = right(ex, idx[need])
                return result
            return logical
        if t is ir.Select:
            cond, if_true, if_false = expr(e.cond), expr(e.if_true), expr(e.if_false)
            if cond is None or if_true is None or if_false is None:
                return None
            dtype, start = e.type.dtype, sem.select_start

            def select(ex, idx):
                c = cond(ex, idx)
                out, taken = start(ex, e, dtype, idx, c)
                if taken:
                    out[c] = if_true(ex, idx[c])
                if taken < c.size:
                    out[~c] = if_false(ex, idx[~c])
                return out
            return select
        if t is ir.Call:
            fn = e.function
            args = [(p.name, a, None) if isinstance(a, ir.ArrayRef) else (p.name, None, expr(a))
                    for p, a in zip(fn.params, e.args)]
            if self._known(fn):     # recursion (not in the language) or already compiled
                body = self.pure.get(id(fn.body))
            else:
                self.seen[id(fn)] = fn
                body = self._block(fn.body)
            if body is None or any(ref is None and f is None for _, ref, f in args):
                return None
            Frame, enter, leave, result = sem.Frame, sem.call_enter, sem.call_leave, sem.call_result

            def call(ex, idx):
                callee = Frame(fn, ex.group.n)
                for name, ref, f in args:
                    if ref is not None:
                        callee.arrays[name] = ex.binding(ref)
                    else:
                        callee.vars[name][idx] = f(ex, idx)
                saved = enter(ex, e, callee, idx, {})
                try:
                    body(ex, idx)
                finally:
                    leave(ex, saved)
                return result(fn, callee, idx)
            return call
        return self._operands(e)        # Load, Atomic, WarpOp: memory or the warp

    def _make_stmt(self, s):
        t = type(s)
        expr, block = self._expr, self._block
        if t is ir.Assign:
            value = expr(s.value)
            if value is None:
                return None
            assign = sem.assign
            return lambda ex, idx: assign(ex, s, idx, value(ex, idx))
        if t is ir.ExprStmt:
            value = expr(s.expr)
            if value is None:
                return None

            def expr_stmt(ex, idx):
                value(ex, idx)
                return idx
            return expr_stmt
        if t is ir.If:
            cond, then, orelse = expr(s.cond), block(s.then), block(s.orelse)
            if cond is None or then is None or orelse is None:
                return None
            split, join = sem.if_split, sem.if_join

            def if_(ex, idx):
                taken, other = split(ex, s, idx, cond(ex, idx))
                out_t = then(ex, taken) if taken.size else taken
                out_f = orelse(ex, other) if other.size else other
                return join(ex, out_t, out_f)
            return if_
        if t is ir.While or t is ir.For:
            return self._loop(s)
        if t is ir.Break:
            brk = sem.break_
            return lambda ex, idx: brk(ex, s, idx)
        if t is ir.Continue:
            cont = sem.continue_
            return lambda ex, idx: cont(ex, s, idx)
        if t is ir.Return:
            value = expr(s.value) if s.value is not None else None
            if s.value is not None and value is None:
                return None
            ret = sem.return_
            if value is None:
                return lambda ex, idx: ret(ex, s, idx, None)
            return lambda ex, idx: ret(ex, s, idx, value(ex, idx))
        return self._operands(s)        # Store, SyncThreads, SyncWarp: memory or barriers

    def _loop(self, s):
        """Executor.loop as a closure; also the for-loop's test alone where it can be."""
        body = self._block(s.body)
        is_for = type(s) is ir.For
        if not is_for:
            cond = self._expr(s.cond)
            parts = (cond,)
        else:
            start, stop, step = self._expr(s.start), self._expr(s.stop), self._expr(s.step)
            parts = (start, stop, step)
            if sem.is_uniform(s.step):
                self.uniform_steps.add(id(s))
            if stop is not None and step is not None:
                cond = self.ranges[id(s)] = self._range_cond(s, stop, step)
        if body is None or any(p is None for p in parts):
            return None
        test, turn_start, turn_end, loop_end = sem.loop_test, sem.turn_start, sem.turn_end, sem.loop_end
        for_start, for_step = sem.for_start, sem.for_step

        def loop(ex, idx):
            if is_for:
                for_start(ex, s, idx, start(ex, idx))
            active, exits, turns = idx, [], 0
            while True:
                turns += 1
                active = test(ex, s, active, cond(ex, active), exits, turns)
                if not active.size:
                    break
                turn = turn_start(ex)
                active = turn_end(ex, turn, body(ex, active), exits)
                if is_for and active.size:
                    for_step(ex, s, active, step(ex, active))
            return loop_end(ex, exits)
        return loop

    def _range_cond(self, s, stop, step):
        """Executor.range_cond of the for-loop ``s`` as a closure."""
        var, range_test = s.var, sem.range_test
        uniform = id(s) in self.uniform_steps
        if isinstance(s.step, ir.Const):
            step = None

        def cond(ex, idx):
            v = ex.frame.vars[var][idx]
            limit = stop(ex, idx)
            return range_test(ex, s, idx, v, limit, step if step is None else step(ex, idx),
                              uniform)
        return cond


def _leaf(e):
    """The closure of a constant, a variable or a built-in index: these run only
    compiled (they never stop), so this is their one definition."""
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
    if sem.is_lane_index(e):
        key = (e.name, e.dim)

        def lane_index(ex, idx):
            return ex.group.index[key][idx]
        return lane_index
    name, dim, cache = e.name, e.dim, {}
    uniform_special = sem.uniform_special

    def uniform(ex, idx):
        n = idx.size
        geom = ex.group.geom
        k = (n, geom.block, geom.grid)
        a = cache.get(k)
        if a is None:
            a = np.full(n, uniform_special(geom, name, dim), dtype=np.int32)
            if n > _CONST_CACHE_LANES:
                return a
            a.setflags(write=False)
            if len(cache) > 256:
                cache.clear()
            cache[k] = a
        return a
    return uniform
