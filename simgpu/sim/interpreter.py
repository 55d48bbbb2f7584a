"""The SIMT interpreter: runs IR over a group of lanes, one numpy vector per value.

Each statement runs for every *active* lane at once; the active set is a
sorted array of lane indices, so the cost of a statement follows the lanes
that execute it.  ``if`` runs the taken side, then the other, each with its
lanes (as a GPU serializes divergent paths); loops run while any lane is
active, with ``break``/``continue``/``return`` removing lanes per lane.

Every ``exec_*``/``eval_*`` method is a generator.  It yields each memory
access (a :class:`~simgpu.mem.access.MemoryAccess`) right after performing
it, and a :class:`Barrier` at ``syncthreads()`` in per-warp mode.  The engines
drive the generator: the lockstep engine counts the accesses and moves on, the
per-warp engines interleave warps at these points (randomly, or in simulated
time), so all engines share this one implementation of the semantics.

The memory-free parts of a kernel also run as compiled closures, built once per
kernel in :mod:`simgpu.sim.fast_paths`; both paths call the functions of
:mod:`simgpu.sim.semantics` for what a node does, so they give the same
values, counts and faults.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import nodes as ir
from ..lang.errors import KernelRuntimeError
from . import warp
from . import semantics as sem
from .atomics import atomic_update, store_winners
from .fast_paths import compiled
from .lanes import LaneGroup
from .memory_instructions import ArrayBinding, MemoryInstructions  # noqa: F401 (re-exported)
from .ops import BINARY, COMPARE, LOGICAL, UNARY
from .scoreboard import FENCE, ScoreboardWaits
from .semantics import Frame, _nnz

@dataclass
class Barrier:
    """Yielded by a warp at ``syncthreads()``: ``idx`` lanes arrived at ``node``."""
    node: ir.SyncThreads
    idx: np.ndarray


@dataclass
class Counters:
    """Per-launch instruction counts, shared by every group of the launch."""
    warp_instructions: int = 0
    thread_instructions: int = 0      # active lanes summed over warp instructions
    branches: int = 0
    divergent_branches: int = 0

    def merge(self, other: "Counters") -> None:
        self.warp_instructions += other.warp_instructions
        self.thread_instructions += other.thread_instructions
        self.branches += other.branches
        self.divergent_branches += other.divergent_branches


class Executor(MemoryInstructions, ScoreboardWaits):
    """Runs one kernel over one :class:`LaneGroup`."""

    def __init__(self, group: LaneGroup, schedule, counters: Counters, lockstep: bool):
        self.group = group
        self.schedule = schedule
        self.counters = counters
        self.lockstep = lockstep
        # A lockstep group holds whole blocks, and passes syncthreads() by itself, unless
        # it is some warps of a block (timed-block's groups per scheduler): then, as a
        # single warp does, it waits at a Barrier for the block's other groups.
        self.whole_blocks = group.n == group.shared_rows * group.geom.threads_per_block
        self.frame: Frame | None = None
        self.loops: list = []
        self._warps_of = (None, 0)
        self.single = group.single_warp
        # The scoreboard (simgpu.sim.scoreboard): only the timed engines set the
        # accesses' ready times, so elsewhere all three stay empty and zero.
        self.pending: dict = {}       # variable -> cycle its data are back
        self.temp_ready = 0.0         # latest pending value of the statement so far
        self.ret_ready = 0.0          # latest pending value a device function returns
        self.clock = None             # the timed engine's environment (its .now)
        # check="races"/"uninit" (simgpu.sim.checks): the launch's checker rides with the
        # schedule, which every engine hands to every executor; None costs one test per
        # memory instruction.
        self.check = schedule.check
        # Dispatch tables of plain functions, built once per class (an executor is
        # made per warp by the per-warp engines).
        cls = type(self)
        if "_exec_table" not in cls.__dict__:
            cls._exec_table = {c: getattr(cls, "exec_" + c.__name__) for c in ir.STMT_NODES}
            # Constants, variables and built-in indices are defined by their closures.
            leaves = (ir.Const, ir.Var, ir.Special)
            cls._eval_table = {c: cls.eval_leaf if c in leaves else getattr(cls, "eval_" + c.__name__)
                               for c in ir.EXPR_NODES}

    # --- entry ---------------------------------------------------------------

    def run(self, fn: ir.Function, scalars: dict, arrays: dict):
        """Generator: run kernel ``fn`` on every lane of the group."""
        frame = Frame(fn, self.group.n)
        self.kernel_name = fn.name
        for p in fn.params:
            if p.name in scalars:
                frame.vars[p.name] = np.full(self.group.n, scalars[p.name], dtype=p.type.dtype)
        frame.arrays = arrays
        self.frame = frame
        self.kernel = kernel = compiled(fn)
        self.pure, self.ranges = kernel.pure, kernel.ranges
        idx = np.arange(self.group.n, dtype=np.int64)
        out = yield from self.exec_block(fn.body, idx)
        self.group.exited[out] = True
        if self.pending:                 # a warp retires once its loads are back
            yield from self.wait_all(idx)

    # --- bookkeeping -----------------------------------------------------------

    def warps(self, idx) -> int:
        """Warps among lanes ``idx`` (one-entry cache: a statement's parts share ``idx``)."""
        if self._warps_of[0] is not idx:
            self._warps_of = (idx, self.group.count_warps(idx))
        return self._warps_of[1]

    def issue(self, idx, node):
        """Count one warp instruction for every warp with lanes in ``idx``."""
        c = self.counters
        if self.single:                     # one warp: no need to count them
            if idx.size:
                c.warp_instructions += 1
                c.thread_instructions += idx.size
            return
        c.warp_instructions += self.warps(idx)
        c.thread_instructions += idx.size

    def branch(self, idx, cond, node) -> int:
        """Count a branch of lanes ``idx`` on ``cond``; returns how many lanes take it."""
        taken = _nnz(cond)
        c = self.counters
        if self.single:                     # LaneGroup.split_warps for one warp
            if idx.size:
                c.warp_instructions += 1
                c.thread_instructions += idx.size
                c.branches += 1
                if 0 < taken < idx.size:
                    c.divergent_branches += 1
            return taken
        self.issue(idx, node)
        c.branches += self.warps(idx)
        if 0 < taken < idx.size:            # (taken by none or all: no warp is split)
            c.divergent_branches += self.group.split_warps(idx, cond)
        return taken

    def fault(self, node, what, lanes, hint=None, detail=""):
        lane = int(lanes[0])
        where = self.group.describe_lane(lane)
        more = f" (and {len(lanes) - 1} more lanes)" if len(lanes) > 1 else ""
        return KernelRuntimeError(what, node.loc, hint, f"in {where}{more}{detail}")

    # --- statements ----------------------------------------------------------

    def exec_block(self, stmts, idx):
        pure = self.pure
        whole = pure.get(id(stmts))
        if whole is not None and not self.pending:
            return whole(self, idx)
        for s in stmts:
            if idx.size == 0:
                break
            if self.pending:             # the scoreboard: statement by statement
                yield from self.wait_for(self.kernel.touched(s), idx)
                if s.__class__ is ir.Assign:
                    self.forget(s.name, idx)           # its old value is dead
            f = pure.get(id(s))
            if f is not None:
                idx = f(self, idx)
            else:
                idx = yield from self._exec_table[type(s)](self, s, idx)
        return idx

    def exec_Assign(self, s, idx):
        f = self.pure.get(id(s.value))
        value = f(self, idx) if f is not None else (yield from self._eval_table[type(s.value)](self, s.value, idx))
        t = self.temp_ready
        if t:
            if self.kernel.keeps_pending(s):         # x = a[i]: x is pending, the warp goes on
                self.temp_ready = 0.0
                self.make_pending(s.name, t, idx)
            else:                        # a computed value: its instruction waits
                yield from self.wait_value(idx)
        return sem.assign(self, s, idx, value)

    def exec_Store(self, s, idx):
        f = self.pure.get(id(s.index))
        index = f(self, idx) if f is not None else (yield from self._eval_table[type(s.index)](self, s.index, idx))
        f = self.pure.get(id(s.value))
        value = f(self, idx) if f is not None else (yield from self._eval_table[type(s.value)](self, s.value, idx))
        if self.temp_ready:              # its address and data must be there
            yield from self.wait_value(idx)
        self.issue(idx, s)
        b = self.binding(s.array)
        pos = self.element(s, b, index, idx)
        if self.check is not None:
            self.check.store(self, s, b, idx, pos, value)
        order = self.schedule.order(len(pos))
        if order is None:
            b.data[pos] = value       # numpy assigns in order: the highest lane wins
        else:
            win = store_winners(pos, order)
            b.data[pos[win]] = value[win]
        yield self.access("store", s, b, idx, index, pos)
        return idx

    def exec_ExprStmt(self, s, idx):
        yield from self.eval(s.expr, idx)
        self.temp_ready = 0.0            # an unused result: nobody waits for it
        return idx

    def exec_If(self, s, idx):
        f = self.pure.get(id(s.cond))
        cond = f(self, idx) if f is not None else (yield from self._eval_table[type(s.cond)](self, s.cond, idx))
        if self.temp_ready:              # a branch needs its condition
            yield from self.wait_value(idx)
        taken, other = sem.if_split(self, s, idx, cond)
        out_t = (yield from self.exec_block(s.then, taken)) if taken.size else taken
        out_f = (yield from self.exec_block(s.orelse, other)) if other.size else other
        return sem.if_join(self, out_t, out_f)

    def exec_While(self, s, idx):
        return (yield from self.loop(s, idx, None))

    def exec_For(self, s, idx):
        f = self.pure.get(id(s.start))
        start = f(self, idx) if f is not None else (yield from self._eval_table[type(s.start)](self, s.start, idx))
        if self.temp_ready:
            yield from self.wait_value(idx)
        sem.for_start(self, s, idx, start)
        return (yield from self.loop(s, idx, s))

    def loop(self, s, idx, for_loop):
        active, exits = idx, []
        test = self.kernel.loop_test_reads(s)
        turns = 0
        while True:
            turns += 1
            if self.pending:             # its test reads a pending variable
                yield from self.wait_for(test, active)
            if for_loop is None:
                f = self.pure.get(id(s.cond))
                cond = f(self, active) if f is not None else (yield from self._eval_table[type(s.cond)](self, s.cond, active))
            else:
                f = self.ranges.get(id(s))
                cond = f(self, active) if f is not None else (yield from self.range_cond(for_loop, active))
            if self.temp_ready:          # a branch needs its condition
                yield from self.wait_value(active)
            active = sem.loop_test(self, s, active, cond, exits, turns)
            if not active.size:
                break
            turn = sem.turn_start(self)
            out = yield from self.exec_block(s.body, active)
            active = sem.turn_end(self, turn, out, exits)
            if for_loop is not None and active.size:
                if self.pending:
                    yield from self.wait_for(test, active)
                f = self.pure.get(id(for_loop.step))
                step = f(self, active) if f is not None else (yield from self._eval_table[type(for_loop.step)](self, for_loop.step, active))
                if self.temp_ready:
                    yield from self.wait_value(active)
                sem.for_step(self, s, active, step)
        return sem.loop_end(self, exits)

    def range_cond(self, s, idx):
        v = self.frame.vars[s.var][idx]
        f = self.pure.get(id(s.stop))
        stop = f(self, idx) if f is not None else (yield from self._eval_table[type(s.stop)](self, s.stop, idx))
        if isinstance(s.step, ir.Const):
            step = None
        else:
            f = self.pure.get(id(s.step))
            step = f(self, idx) if f is not None else (yield from self._eval_table[type(s.step)](self, s.step, idx))
        return sem.range_test(self, s, idx, v, stop, step, id(s) in self.kernel.uniform_steps)

    def exec_Break(self, s, idx):
        return sem.break_(self, s, idx)
        yield  # pragma: no cover - a generator like every exec_* method

    def exec_Continue(self, s, idx):
        return sem.continue_(self, s, idx)
        yield  # pragma: no cover

    def exec_Return(self, s, idx):
        value = None
        if s.value is not None:
            value = yield from self.eval(s.value, idx)
            if self.temp_ready:          # the caller's value: pending there
                self.ret_ready = self.later(self.temp_ready, self.ret_ready)
                self.temp_ready = 0.0
        return sem.return_(self, s, idx, value)

    def exec_SyncThreads(self, s, idx):
        self.issue(idx, s)
        g = self.group
        if self.lockstep and self.whole_blocks:
            # Every live thread of a block that reached the barrier must be here.
            here = np.bincount(g.block_row[idx], minlength=g.shared_rows)
            live = np.bincount(g.block_row[~g.exited], minlength=g.shared_rows)
            bad_rows = np.flatnonzero((here > 0) & (here != live))
        else:
            missing = np.setdiff1d(np.flatnonzero(~g.exited), idx)
            bad_rows = g.block_row[missing[:1]]
        if bad_rows.size:
            waiting = np.zeros(g.n, dtype=bool)
            waiting[idx] = True
            missing = np.flatnonzero(np.isin(g.block_row, bad_rows) & ~waiting & ~g.exited)
            raise self.divergent_barrier(s, missing)
        if self.check is not None:
            self.check.syncthreads(g, idx)
        if not (self.lockstep and self.whole_blocks):
            yield Barrier(s, idx)
        elif self.clock is not None:     # a timed block: it waits for its stores
            yield FENCE
        return idx

    def divergent_barrier(self, s, missing):
        g = self.group
        block = tuple(int(v) for v in g.geom.block_index(int(g.block_lin[missing[0]])))
        shown = ", ".join(str(tuple(int(v) for v in g.geom.thread_index(int(g.tid[m]))))
                          for m in missing[:4])
        return KernelRuntimeError(
            "syncthreads() reached by only part of a block", s.loc,
            "every thread of a block must reach the same syncthreads(); move it out of the "
            "branch or loop that only some threads take",
            f"in block {block}, {len(missing)} threads did not arrive: {shown}"
            + (", ..." if len(missing) > 4 else ""))

    # --- expressions -----------------------------------------------------------

    def eval(self, e, idx):
        f = self.pure.get(id(e))
        if f is not None:
            return f(self, idx)
        return (yield from self._eval_table[type(e)](self, e, idx))

    def eval_leaf(self, e, idx):
        """A constant, a variable or a built-in index: compiled with the kernel, so
        this runs only for a node the compiler did not reach."""
        return self.kernel.leaf(e)(self, idx)
        yield  # pragma: no cover - makes this a generator like its siblings

    def eval_Cast(self, e, idx):
        f = self.pure.get(id(e.operand))
        v = f(self, idx) if f is not None else (yield from self._eval_table[type(e.operand)](self, e.operand, idx))
        return sem.cast(self, e, e.type.dtype, idx, v)

    def eval_Binary(self, e, idx):
        f = self.pure.get(id(e.left))
        a = f(self, idx) if f is not None else (yield from self._eval_table[type(e.left)](self, e.left, idx))
        f = self.pure.get(id(e.right))
        b = f(self, idx) if f is not None else (yield from self._eval_table[type(e.right)](self, e.right, idx))
        return sem.operator(self, e, BINARY[e.op], idx, a, b)

    def eval_Unary(self, e, idx):
        f = self.pure.get(id(e.operand))
        a = f(self, idx) if f is not None else (yield from self._eval_table[type(e.operand)](self, e.operand, idx))
        return sem.unary(self, e, UNARY[e.op], idx, a)

    def eval_Compare(self, e, idx):
        f = self.pure.get(id(e.left))
        a = f(self, idx) if f is not None else (yield from self._eval_table[type(e.left)](self, e.left, idx))
        f = self.pure.get(id(e.right))
        b = f(self, idx) if f is not None else (yield from self._eval_table[type(e.right)](self, e.right, idx))
        return sem.operator(self, e, COMPARE[e.op], idx, a, b)

    def eval_Logical(self, e, idx):
        f = self.pure.get(id(e.left))
        left = f(self, idx) if f is not None else (yield from self._eval_table[type(e.left)](self, e.left, idx))
        if self.temp_ready:              # which lanes go on depends on it: a branch
            yield from self.wait_value(idx)
        result, need = sem.logical_start(self, e, LOGICAL[e.op], idx, left)
        if _nnz(need):
            result[need] = yield from self.eval(e.right, idx[need])
        return result

    def eval_Select(self, e, idx):
        f = self.pure.get(id(e.cond))
        cond = f(self, idx) if f is not None else (yield from self._eval_table[type(e.cond)](self, e.cond, idx))
        if self.temp_ready:              # which side runs depends on it: a branch
            yield from self.wait_value(idx)
        out, taken = sem.select_start(self, e, e.type.dtype, idx, cond)
        if taken:
            out[cond] = yield from self.eval(e.if_true, idx[cond])
        if taken < cond.size:
            out[~cond] = yield from self.eval(e.if_false, idx[~cond])
        return out

    def eval_Load(self, e, idx):
        before, self.temp_ready = self.temp_ready, 0.0    # what the operands leave pending
        f = self.pure.get(id(e.index))
        index = f(self, idx) if f is not None else (yield from self._eval_table[type(e.index)](self, e.index, idx))
        if self.temp_ready:              # its address is still on its way: a[b[i]]
            yield from self.wait_value(idx)
        self.issue(idx, e)
        b = self.binding(e.array)
        pos = self.element(e, b, index, idx)
        if self.check is not None:
            self.check.load(self, e, b, idx, pos)
        values = b.data[pos]
        acc = self.access("load", e, b, idx, index, pos)
        yield acc
        ready = acc.ready                # set by a timed engine: the value is pending
        self.temp_ready = self.later(ready, before) if before else ready
        return values

    def eval_Atomic(self, e, idx):
        before, self.temp_ready = self.temp_ready, 0.0
        f = self.pure.get(id(e.index))
        index = f(self, idx) if f is not None else (yield from self._eval_table[type(e.index)](self, e.index, idx))
        f = self.pure.get(id(e.value))
        value = f(self, idx) if f is not None else (yield from self._eval_table[type(e.value)](self, e.value, idx))
        compare = (yield from self.eval(e.compare, idx)) if e.compare is not None else None
        if self.temp_ready:              # its operands must be there
            yield from self.wait_value(idx)
        self.issue(idx, e)
        b = self.binding(e.array)
        pos = self.element(e, b, index, idx)
        if self.check is not None:
            self.check.atomic(self, e, b, idx, pos)
        order = self.schedule.order(len(pos))
        if order is None:
            order = np.arange(len(pos))
        old = atomic_update(b.data, e.op, pos, value, compare, order)
        acc = self.access("atomic", e, b, idx, index, pos)
        yield acc
        ready = acc.ready                # its old value is pending, as a load's
        self.temp_ready = self.later(ready, before) if before else ready
        return old

    def eval_WarpOp(self, e, idx):
        if e.op == "activemask":
            self.issue(idx, e)
            return warp.active_bits(self.group, idx).astype(np.uint32)
        mask = yield from self.eval(e.mask, idx)
        value = yield from self.eval(e.value, idx)
        if e.lane is None:
            self.issue(idx, e)
            return warp.vote(self, e, idx, mask, value)
        lane = yield from self.eval(e.lane, idx)
        self.issue(idx, e)
        return warp.shuffle(self, e, idx, mask, value, lane)

    def exec_SyncWarp(self, s, idx):
        mask = yield from self.eval(s.mask, idx)
        self.issue(idx, s)
        warp.syncwarp(self, s, idx, mask)
        if self.check is not None:
            self.check.syncwarp(self.group, idx)
        return idx

    def eval_Call(self, e, idx):
        fn = e.function
        callee = Frame(fn, self.group.n)
        before, pending = self.temp_ready, {}
        for p, a in zip(fn.params, e.args):
            if isinstance(a, ir.ArrayRef):
                callee.arrays[p.name] = self.binding(a)
            else:
                self.temp_ready = 0.0
                callee.vars[p.name][idx] = yield from self.eval(a, idx)
                if self.temp_ready:      # the parameter is pending in the callee
                    pending[p.name] = self.temp_ready
        self.temp_ready = 0.0
        saved = sem.call_enter(self, e, callee, idx, pending)
        try:
            yield from self.exec_block(fn.body, idx)
        finally:
            returned = sem.call_leave(self, saved)
        self.temp_ready = self.later(returned, before)
        return sem.call_result(fn, callee, idx)
