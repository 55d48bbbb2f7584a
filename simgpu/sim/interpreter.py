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
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import nodes as ir
from ..ir.types import ArrayType
from ..lang.errors import KernelRuntimeError
from ..mem.access import MemoryAccess
from .atomics import atomic_update, store_winners
from .lanes import LaneGroup, union
from .ops import BINARY, COMPARE, UNARY, LaneFault, convert

try:                    # numpy's C function, without the Python dispatch wrapper (4x faster
    from numpy._core.multiarray import count_nonzero as _nnz     # on a warp's 32 lanes)
except ImportError:     # pragma: no cover - other numpy layouts
    _nnz = np.count_nonzero


@dataclass
class ArrayBinding:
    """An array as the kernel sees it: its storage, base address and name."""
    name: str
    data: np.ndarray              # global: the device array; shared: rows x size, flattened
    base: int = 0                 # byte address of element 0 (global memory)
    space: str = "global"
    size: int = 0                 # elements per block (shared) or in all (global)


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


class Executor:
    """Runs one kernel over one :class:`LaneGroup`."""

    def __init__(self, group: LaneGroup, schedule, counters: Counters, lockstep: bool):
        self.group = group
        self.schedule = schedule
        self.counters = counters
        self.lockstep = lockstep
        self.frame: Frame | None = None
        self.loops: list = []
        self._warps_of = (None, 0)
        self.single = group.single_warp
        # Dispatch tables of plain functions, built once per class (an executor is
        # made per warp by the per-warp engines).
        cls = type(self)
        if "_exec_table" not in cls.__dict__:
            cls._exec_table = {c: getattr(cls, "exec_" + c.__name__) for c in ir.STMT_NODES}
            cls._eval_table = {c: getattr(cls, "eval_" + c.__name__) for c in ir.EXPR_NODES}

    # --- entry ---------------------------------------------------------------

    def run(self, fn: ir.Function, scalars: dict, arrays: dict):
        """Generator: run kernel ``fn`` on every lane of the group."""
        frame = Frame(fn, self.group.n)
        for p in fn.params:
            if p.name in scalars:
                frame.vars[p.name] = np.full(self.group.n, scalars[p.name], dtype=p.type.dtype)
        frame.arrays = arrays
        self.frame = frame
        compile_function(fn)
        idx = np.arange(self.group.n, dtype=np.int64)
        out = yield from self.exec_block(fn.body, idx)
        self.group.exited[out] = True

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
        c.divergent_branches += self.group.split_warps(idx, cond)
        return taken

    def fault(self, node, what, lanes, hint=None, detail=""):
        lane = int(lanes[0])
        where = self.group.describe_lane(lane)
        more = f" (and {len(lanes) - 1} more lanes)" if len(lanes) > 1 else ""
        return KernelRuntimeError(what, node.loc, hint, f"in {where}{more}{detail}")

    # --- statements ----------------------------------------------------------

    def exec_block(self, stmts, idx):
        whole = _PURE.get(id(stmts))
        if whole is not None:
            return whole(self, idx)
        for s in stmts:
            if idx.size == 0:
                break
            f = _PURE.get(id(s))
            if f is not None:
                idx = f(self, idx)
            else:
                idx = yield from self._exec_table[type(s)](self, s, idx)
        return idx

    def exec_Assign(self, s, idx):
        f = _PURE.get(id(s.value))
        value = f(self, idx) if f is not None else (yield from self._eval_table[type(s.value)](self, s.value, idx))
        self.issue(idx, s)
        self.frame.vars[s.name][idx] = value
        return idx

    def exec_Store(self, s, idx):
        f = _PURE.get(id(s.index))
        index = f(self, idx) if f is not None else (yield from self._eval_table[type(s.index)](self, s.index, idx))
        f = _PURE.get(id(s.value))
        value = f(self, idx) if f is not None else (yield from self._eval_table[type(s.value)](self, s.value, idx))
        self.issue(idx, s)
        b = self.binding(s.array)
        pos = self.element(s, b, index, idx)
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
        return idx

    def exec_If(self, s, idx):
        f = _PURE.get(id(s.cond))
        cond = f(self, idx) if f is not None else (yield from self._eval_table[type(s.cond)](self, s.cond, idx))
        self.branch(idx, cond, s)
        taken, other = idx[cond], idx[~cond]
        out_t = (yield from self.exec_block(s.then, taken)) if taken.size else taken
        out_f = (yield from self.exec_block(s.orelse, other)) if other.size else other
        return union([out_t, out_f], self.group.n)

    def exec_While(self, s, idx):
        return (yield from self.loop(s, idx, None))

    def exec_For(self, s, idx):
        f = _PURE.get(id(s.start))
        start = f(self, idx) if f is not None else (yield from self._eval_table[type(s.start)](self, s.start, idx))
        self.issue(idx, s)
        self.frame.vars[s.var][idx] = start
        return (yield from self.loop(s, idx, s))

    def loop(self, s, idx, for_loop):
        active, exits = idx, []
        while True:
            if for_loop is None:
                f = _PURE.get(id(s.cond))
                cond = f(self, active) if f is not None else (yield from self._eval_table[type(s.cond)](self, s.cond, active))
            else:
                f = _RANGE.get(id(s))
                cond = f(self, active) if f is not None else (yield from self.range_cond(for_loop, active))
            if self.branch(active, cond, s) < active.size:     # else every lane goes on
                exits.append(active[~cond])
                active = active[cond]
            if not active.size:
                break
            loop = Loop()
            self.loops.append(loop)
            out = yield from self.exec_block(s.body, active)
            self.loops.pop()
            exits.extend(loop.brk)
            active = union([out] + loop.cont, self.group.n)
            if for_loop is not None and active.size:
                f = _PURE.get(id(for_loop.step))
                step = f(self, active) if f is not None else (yield from self._eval_table[type(for_loop.step)](self, for_loop.step, active))
                self.issue(active, s)
                v = self.frame.vars[for_loop.var]
                v[active] = v[active] + step
        return union(exits, self.group.n)

    def range_cond(self, s, idx):
        v = self.frame.vars[s.var][idx]
        f = _PURE.get(id(s.stop))
        stop = f(self, idx) if f is not None else (yield from self._eval_table[type(s.stop)](self, s.stop, idx))
        if isinstance(s.step, ir.Const):
            return v < stop if s.step.value > 0 else v > stop
        f = _PURE.get(id(s.step))
        step = f(self, idx) if f is not None else (yield from self._eval_table[type(s.step)](self, s.step, idx))
        return _range_test(self, s, idx, v, stop, step)

    def exec_Break(self, s, idx):
        self.issue(idx, s)
        self.loops[-1].brk.append(idx)
        return idx[:0]
        yield  # pragma: no cover - a generator like every exec_* method

    def exec_Continue(self, s, idx):
        self.issue(idx, s)
        self.loops[-1].cont.append(idx)
        return idx[:0]
        yield  # pragma: no cover

    def exec_Return(self, s, idx):
        if s.value is not None:
            self.frame.ret[idx] = yield from self.eval(s.value, idx)
        self.issue(idx, s)
        if self.frame.fn.is_kernel:
            self.group.exited[idx] = True
        return idx[:0]

    def exec_SyncThreads(self, s, idx):
        self.issue(idx, s)
        g = self.group
        if self.lockstep:
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
        if not self.lockstep:
            yield Barrier(s, idx)
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
        f = _PURE.get(id(e))
        if f is not None:
            return f(self, idx)
        return (yield from self._eval_table[type(e)](self, e, idx))

    def eval_Const(self, e, idx):
        return np.full(idx.size, e.value, dtype=e.type.dtype)
        yield  # pragma: no cover - makes this a generator like its siblings

    def eval_Var(self, e, idx):
        return self.frame.vars[e.name][idx]
        yield  # pragma: no cover

    def eval_Special(self, e, idx):
        g = self.group
        if e.name in ("threadIdx", "blockIdx"):
            return g.index[(e.name, e.dim)][idx]
        dims = {"blockDim": g.geom.block, "gridDim": g.geom.grid}
        value = 32 if e.name == "warp_size" else dims[e.name]["xyz".index(e.dim)]
        return np.full(idx.size, value, dtype=np.int32)     # uniform over the lanes
        yield  # pragma: no cover

    def eval_Cast(self, e, idx):
        f = _PURE.get(id(e.operand))
        v = f(self, idx) if f is not None else (yield from self._eval_table[type(e.operand)](self, e.operand, idx))
        self.issue(idx, e)
        return convert(v, e.type.dtype)

    def eval_Binary(self, e, idx):
        f = _PURE.get(id(e.left))
        a = f(self, idx) if f is not None else (yield from self._eval_table[type(e.left)](self, e.left, idx))
        f = _PURE.get(id(e.right))
        b = f(self, idx) if f is not None else (yield from self._eval_table[type(e.right)](self, e.right, idx))
        self.issue(idx, e)
        try:
            return BINARY[e.op](a, b)
        except LaneFault as f:
            raise self.fault(e, f.what, idx[f.bad], f.hint)

    def eval_Unary(self, e, idx):
        f = _PURE.get(id(e.operand))
        a = f(self, idx) if f is not None else (yield from self._eval_table[type(e.operand)](self, e.operand, idx))
        self.issue(idx, e)
        return UNARY[e.op](a)

    def eval_Compare(self, e, idx):
        f = _PURE.get(id(e.left))
        a = f(self, idx) if f is not None else (yield from self._eval_table[type(e.left)](self, e.left, idx))
        f = _PURE.get(id(e.right))
        b = f(self, idx) if f is not None else (yield from self._eval_table[type(e.right)](self, e.right, idx))
        self.issue(idx, e)
        return COMPARE[e.op](a, b)

    def eval_Logical(self, e, idx):
        f = _PURE.get(id(e.left))
        left = f(self, idx) if f is not None else (yield from self._eval_table[type(e.left)](self, e.left, idx))
        self.issue(idx, e)
        # The right side runs only on lanes that still need it, as C's && and ||.
        need = left if e.op.value == "and" else ~left
        result = left.copy()
        if need.any():
            result[need] = yield from self.eval(e.right, idx[need])
        return result

    def eval_Select(self, e, idx):
        f = _PURE.get(id(e.cond))
        cond = f(self, idx) if f is not None else (yield from self._eval_table[type(e.cond)](self, e.cond, idx))
        self.issue(idx, e)
        out = np.empty(idx.size, dtype=e.type.dtype)
        if cond.any():
            out[cond] = yield from self.eval(e.if_true, idx[cond])
        if not cond.all():
            out[~cond] = yield from self.eval(e.if_false, idx[~cond])
        return out

    def eval_Load(self, e, idx):
        f = _PURE.get(id(e.index))
        index = f(self, idx) if f is not None else (yield from self._eval_table[type(e.index)](self, e.index, idx))
        self.issue(idx, e)
        b = self.binding(e.array)
        pos = self.element(e, b, index, idx)
        values = b.data[pos]
        yield self.access("load", e, b, idx, index, pos)
        return values

    def eval_Atomic(self, e, idx):
        f = _PURE.get(id(e.index))
        index = f(self, idx) if f is not None else (yield from self._eval_table[type(e.index)](self, e.index, idx))
        f = _PURE.get(id(e.value))
        value = f(self, idx) if f is not None else (yield from self._eval_table[type(e.value)](self, e.value, idx))
        compare = (yield from self.eval(e.compare, idx)) if e.compare is not None else None
        self.issue(idx, e)
        b = self.binding(e.array)
        pos = self.element(e, b, index, idx)
        order = self.schedule.order(len(pos))
        if order is None:
            order = np.arange(len(pos))
        old = atomic_update(b.data, e.op, pos, value, compare, order)
        yield self.access("atomic", e, b, idx, index, pos)
        return old

    def eval_Call(self, e, idx):
        fn = e.function
        callee = Frame(fn, self.group.n)
        for p, a in zip(fn.params, e.args):
            if isinstance(a, ir.ArrayRef):
                callee.arrays[p.name] = self.binding(a)
            else:
                callee.vars[p.name][idx] = yield from self.eval(a, idx)
        self.issue(idx, e)
        caller, loops = self.frame, self.loops
        self.frame, self.loops = callee, []
        try:
            yield from self.exec_block(fn.body, idx)
        finally:
            self.frame, self.loops = caller, loops
        return callee.ret[idx] if fn.return_type else np.zeros(idx.size, np.int32)

    # --- memory helpers ------------------------------------------------------------

    def binding(self, ref: ir.ArrayRef) -> ArrayBinding:
        return self.frame.arrays[ref.name]

    def element(self, node, b: ArrayBinding, index, idx):
        """Storage positions of ``index`` (bounds-checked) for lanes ``idx``."""
        size = b.size
        pos = index.astype(np.int64)
        # One unsigned compare finds negative and too-large indices alike (an
        # index of a signed type is < 0 exactly when its int64 view as uint64
        # is >= 2**63 > size; unsigned indices convert without changing value
        # unless they exceed 2**63, which is out of bounds either way).
        bad = pos.view(np.uint64) >= size if index.dtype.kind == "i" else index >= size
        if _nnz(bad):
            lanes = idx[bad]
            where = "shared array" if b.space == "shared" else "array"
            raise self.fault(node, f"index {int(index[bad][0])} is out of bounds for {where} "
                                   f"'{b.name}' of length {size}", lanes,
                             "check the index against the array's length (e.g. 'if i < n:')")
        if b.space == "shared":
            pos = self.group.block_row[idx] * size + pos
        return pos

    def access(self, kind, node, b: ArrayBinding, idx, index, pos=None) -> MemoryAccess:
        """The record of one memory instruction; ``pos`` (from :meth:`element`) is the
        int64 index itself for global arrays, which saves converting it again."""
        g = self.group
        word = b.data.dtype.itemsize
        if pos is None or b.space != "global":
            pos = index.astype(np.int64)
        address = pos * word
        address += b.base
        # MemoryAccess(...) without the frozen dataclass's per-field object.__setattr__
        # (a third of the cost of a warp's memory instruction in the timed engine).
        acc = _new_object(MemoryAccess)
        acc.__dict__.update(kind=kind, space=b.space, node=node, array=b.name,
                            warp=g.warp[idx], lane=g.lane[idx], address=address, word_size=word)
        return acc


# --- compiled fast paths -----------------------------------------------------------
#
# Most of a kernel touches no memory: index arithmetic, comparisons, loop
# counters, whole device functions such as a random-number generator.  Those
# parts cannot yield, so running them through the generator methods above
# only costs time.  They are compiled once per IR node into plain closures
# ``f(executor, idx)`` that do exactly what the ``eval_*``/``exec_*`` methods
# do, in the same order (the same counts, the same faults).  Nodes that load,
# store, use atomics or barriers keep the generator path.

_new_object = object.__new__
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
            while True:
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
