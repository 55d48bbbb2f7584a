"""What each IR node does to the lanes, written once.

The simulator runs a node in one of two ways: the interpreter's generator
methods (:mod:`simgpu.sim.interpreter`), which can stop at a memory access or
a barrier, and the compiled closures of :mod:`simgpu.sim.fast_paths`, for the
parts of a kernel that never stop.  Both call the functions here for every
step that is not the evaluation of a child node, so the counts, the values and
the faults of a node have one definition; the two differ only in how they
evaluate children (``yield from`` or a plain call) and in the scoreboard's
waits, which only the interpreter has.

Every function takes the executor ``ex`` (its frame, lane group and counters),
the node and the active lanes ``idx`` (a sorted array of lane numbers).
"""
from __future__ import annotations

import numpy as np

from ..ir import nodes as ir
from ..ir.types import ArrayType
from ..lang.errors import KernelTimeoutError
from .lanes import union
from .ops import LaneFault, convert

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
    """The lanes that left one turn of a loop by ``break`` and by ``continue``."""

    def __init__(self):
        self.brk: list = []
        self.cont: list = []


# --- expressions -----------------------------------------------------------------

# Constants, variables and the built-in indices are defined by their closures
# (simgpu.sim.fast_paths): they never stop, so they always run compiled.

def is_lane_index(e: ir.Special) -> bool:
    """threadIdx and blockIdx differ between lanes; blockDim, gridDim, warp_size do not."""
    return e.name in ("threadIdx", "blockIdx")


def uniform_special(geom, name: str, dim: str) -> int:
    """blockDim, gridDim or warp_size: one value for every lane of a launch."""
    dims = {"blockDim": geom.block, "gridDim": geom.grid}
    return 32 if name == "warp_size" else dims[name]["xyz".index(dim)]


def cast(ex, e: ir.Cast, dtype, idx, v):
    ex.issue(idx, e)
    return convert(v, dtype)


def operator(ex, e, op, idx, a, b):
    """A Binary or Compare node's instruction on its operands' values; ``op`` is its
    function from simgpu.sim.ops (a lane that faults, such as a division by zero,
    raises a KernelRuntimeError naming it)."""
    ex.issue(idx, e)
    try:
        return op(a, b)
    except LaneFault as f:
        raise ex.fault(e, f.what, idx[f.bad], f.hint)


def unary(ex, e: ir.Unary, op, idx, a):
    ex.issue(idx, e)
    return op(a)


def logical_start(ex, e: ir.Logical, needs_right, idx, left):
    """``and``/``or`` after its left side: the result so far and the lanes whose right
    side must run; ``needs_right`` is the op's row of simgpu.sim.ops.LOGICAL."""
    ex.issue(idx, e)
    return left.copy(), needs_right(left)


def select_start(ex, e: ir.Select, dtype, idx, cond):
    """A conditional expression after its condition: the result to fill and how many
    lanes take the true side (each side runs only on its lanes)."""
    ex.issue(idx, e)
    return np.empty(idx.size, dtype=dtype), _nnz(cond)


def call_enter(ex, e: ir.Call, callee: Frame, idx, pending: dict):
    """Switch ``ex`` to the callee's frame (no loops, ``pending`` its pending
    parameters); returns what :func:`call_leave` restores."""
    ex.issue(idx, e)
    saved = ex.frame, ex.loops, ex.pending, ex.ret_ready
    ex.frame, ex.loops, ex.pending, ex.ret_ready = callee, [], pending, 0.0
    return saved


def call_leave(ex, saved) -> float:
    """Back to the caller's frame; returns when the callee's returned value is back."""
    returned = ex.ret_ready
    ex.frame, ex.loops, ex.pending, ex.ret_ready = saved
    return returned


def call_result(fn: ir.Function, callee: Frame, idx):
    return callee.ret[idx] if fn.return_type else np.zeros(idx.size, np.int32)


# --- statements ------------------------------------------------------------------

def assign(ex, s: ir.Assign, idx, value):
    ex.issue(idx, s)
    ex.frame.vars[s.name][idx] = value
    return idx


def if_split(ex, s: ir.If, idx, cond):
    """The lanes that take the ``then`` side and those that take the other."""
    ex.branch(idx, cond, s)
    return idx[cond], idx[~cond]


def if_join(ex, out_then, out_else):
    return union([out_then, out_else], ex.group.n)


def for_start(ex, s: ir.For, idx, first):
    ex.issue(idx, s)
    ex.frame.vars[s.var][idx] = first


def loop_test(ex, s, active, cond, exits: list, turn: int):
    """A loop's test at its ``turn``-th turn (1, 2, ... since the lanes entered it):
    lanes where ``cond`` is false leave (into ``exits``); returns the lanes that run
    the body.  Past the launch's run limit the launch stops (:func:`loop_limit`); the
    check is here because every loop, interpreted or compiled, runs its test here."""
    limit = ex.schedule.max_loop_iterations      # read each time: Ctrl-C sets it to 0
    if turn > limit:
        raise loop_limit(ex, s, active, limit)
    if ex.branch(active, cond, s) < active.size:      # else every lane goes on
        exits.append(active[~cond])
        active = active[cond]
    return active


def loop_limit(ex, s, active, limit: int) -> BaseException:
    """The error of a loop that ran ``limit`` times and goes on (a kernel that never ends),
    or KeyboardInterrupt once Ctrl-C stopped the launch (see launch.interruptible)."""
    if ex.schedule.interrupted:
        return KeyboardInterrupt()
    hint = "raise it with launch(..., max_loop_iterations=N) if the loop is meant to run longer"
    if ex.lockstep and not ex.group.single_warp:
        hint = ("this engine runs a loop to its end for all the lanes it holds together "
                "(engine 'lockstep': whole waves of blocks) before any other branch goes "
                "on, so a wait for a write by another of those threads or blocks never "
                "ends: run it with engine='warps' or 'timed' (or " + hint + ")")
    lanes = active if active.size else np.zeros(1, np.int64)
    where = ex.group.describe_lane(int(lanes[0]))
    more = f" (and {len(lanes) - 1} more lanes)" if len(lanes) > 1 else ""
    return KernelTimeoutError(
        f"kernel '{ex.kernel_name}': this loop ran {limit:,} times and has not ended",
        s.loc, hint, f"in {where}{more}")


def turn_start(ex) -> Loop:
    loop = Loop()
    ex.loops.append(loop)
    return loop


def turn_end(ex, loop: Loop, out, exits: list):
    """After one turn of the body: the lanes that go on (``continue`` included);
    those that broke out join ``exits``."""
    ex.loops.pop()
    exits.extend(loop.brk)
    return union([out] + loop.cont, ex.group.n)


def for_step(ex, s: ir.For, active, step):
    ex.issue(active, s)
    v = ex.frame.vars[s.var]
    v[active] = v[active] + step


def loop_end(ex, exits: list):
    return union(exits, ex.group.n)


def range_test(ex, s: ir.For, idx, v, stop, step, uniform_step: bool):
    """``range()``'s test of lanes ``idx`` (``v`` their loop variable); ``step`` is
    None for a constant step, else its values; ``uniform_step``: the same step on
    every lane of the launch (one look suffices)."""
    if step is None:
        return v < stop if s.step.value > 0 else v > stop
    if uniform_step:
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


def is_uniform(e) -> bool:
    """True if ``e`` has one value for every lane of a launch: built from constants,
    blockDim, gridDim and warp_size only (such as a striding loop's step)."""
    t = type(e)
    if t is ir.Const:
        return True
    if t is ir.Special:
        return not is_lane_index(e)
    if t is ir.Binary or t is ir.Compare:
        return is_uniform(e.left) and is_uniform(e.right)
    if t is ir.Unary or t is ir.Cast:
        return is_uniform(e.operand)
    return False


def break_(ex, s, idx):
    ex.issue(idx, s)
    ex.loops[-1].brk.append(idx)
    return idx[:0]


def continue_(ex, s, idx):
    ex.issue(idx, s)
    ex.loops[-1].cont.append(idx)
    return idx[:0]


def return_(ex, s: ir.Return, idx, value):
    """``return`` (``value`` None for a bare one): its lanes are done with the function."""
    if value is not None:
        ex.frame.ret[idx] = value
    ex.issue(idx, s)
    if ex.frame.fn.is_kernel:
        ex.group.exited[idx] = True
    return idx[:0]
