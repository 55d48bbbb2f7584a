"""The simulator's implementation of the op table: C semantics on numpy lanes.

One row per op of ``simgpu.ir.ops`` in each table below (tests/test_op_tables.py
checks that every op has its row here, in the CUDA renderer's C tables and a
spelling in the front end).  Operands arrive already converted
to the node's type (the front end made every conversion explicit), so each
function is a plain same-dtype numpy operation; numpy's fixed-width integer
arrays wrap around exactly as C's unsigned arithmetic and as two's-complement
hardware does for signed values.  Checks that need the lanes (division by
zero, shift counts) raise :class:`LaneFault`; the interpreter turns it into a
``KernelRuntimeError`` naming the block and thread.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..ir.ops import AtomicOp, BinaryOp, CompareOp, LogicalOp, UnaryOp


class LaneFault(Exception):
    """A per-lane fault: ``bad`` is the bool mask of faulting lanes."""

    def __init__(self, what: str, bad: np.ndarray, hint: str | None = None):
        super().__init__(what)
        self.what, self.bad, self.hint = what, bad, hint


def _idiv(a, b):
    """C's ``/`` on integers: the quotient truncated toward zero."""
    _check_nonzero(b)
    q = np.floor_divide(a, b)
    if a.dtype.kind == "i":
        q += ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0))).astype(a.dtype)
    return q


def _mod(a, b):
    """C's ``%``: the remainder takes the sign of the dividend (fmod, not Python's %)."""
    _check_nonzero(b)
    return np.fmod(a, b)


def _check_nonzero(b):
    if b.dtype.kind in "iu":
        bad = b == 0
        if bad.any():
            raise LaneFault("integer division by zero", bad,
                            "guard the division, e.g. 'x // d if d != 0 else 0'")


def _shift(fn):
    def shift(a, b):
        bits = a.dtype.itemsize * 8
        bad = (b < 0) | (b >= bits)
        if bad.any():
            raise LaneFault(f"shift count out of range for a {bits}-bit value "
                            f"(it must be 0..{bits - 1}; C leaves other counts undefined)", bad)
        return fn(a, b.astype(a.dtype))
    return shift


def _min(a, b):
    # CUDA's min/max on floats are fminf/fmaxf: a NaN operand yields the other one.
    return np.fmin(a, b) if a.dtype.kind == "f" else np.minimum(a, b)


def _max(a, b):
    return np.fmax(a, b) if a.dtype.kind == "f" else np.maximum(a, b)


BINARY = {
    BinaryOp.ADD: np.add,
    BinaryOp.SUB: np.subtract,
    BinaryOp.MUL: np.multiply,
    BinaryOp.DIV: np.true_divide,
    BinaryOp.IDIV: _idiv,
    BinaryOp.MOD: _mod,
    BinaryOp.LSHIFT: _shift(np.left_shift),
    BinaryOp.RSHIFT: _shift(np.right_shift),
    BinaryOp.BITAND: np.bitwise_and,
    BinaryOp.BITOR: np.bitwise_or,
    BinaryOp.BITXOR: np.bitwise_xor,
    BinaryOp.MIN: _min,
    BinaryOp.MAX: _max,
}

UNARY = {
    UnaryOp.NEG: np.negative,
    UnaryOp.INVERT: np.invert,
    UnaryOp.NOT: np.logical_not,
    UnaryOp.ABS: np.abs,          # abs(INT_MIN) stays INT_MIN, as two's complement hardware
}

COMPARE = {
    CompareOp.EQ: np.equal,
    CompareOp.NE: np.not_equal,
    CompareOp.LT: np.less,
    CompareOp.LE: np.less_equal,
    CompareOp.GT: np.greater,
    CompareOp.GE: np.greater_equal,
}


def convert(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """C's conversion to ``dtype``: modular for integers, truncation for float->int."""
    return values.astype(dtype, copy=False)


# ``and``/``or``: the lanes whose right side runs, from the left side's values (as
# C's && and ||, the right side runs only where it decides the result).
LOGICAL = {
    LogicalOp.AND: lambda left: left,
    LogicalOp.OR: np.logical_not,
}


class AtomicRule(NamedTuple):
    """How simgpu.sim.atomics.atomic_update applies an atomic op in the lanes' order.

    ``scan``: each lane's old value is a segmented scan of ``ufunc`` over the lanes
    of one address (``negate``: of the negated operands); float addition is not
    associative, so it is summed lane by lane instead.  ``exchange``: each lane
    gets the previous lane's value.  ``compare_and_swap``: one collision rank at a
    time."""
    kind: str
    ufunc: object = None
    negate: bool = False


ATOMIC = {
    AtomicOp.ADD: AtomicRule("scan", np.add),
    AtomicOp.SUB: AtomicRule("scan", np.add, negate=True),   # wrap-around: a - b == a + (-b)
    AtomicOp.MIN: AtomicRule("scan", np.minimum),
    AtomicOp.MAX: AtomicRule("scan", np.maximum),
    AtomicOp.EXCH: AtomicRule("exchange"),
    AtomicOp.CAS: AtomicRule("compare_and_swap"),
    AtomicOp.AND: AtomicRule("scan", np.bitwise_and),
    AtomicOp.OR: AtomicRule("scan", np.bitwise_or),
    AtomicOp.XOR: AtomicRule("scan", np.bitwise_xor),
}


def covered_ops() -> dict:
    """Op enum -> the members the tables above implement (a test compares with the enums)."""
    return {BinaryOp: set(BINARY), UnaryOp: set(UNARY), CompareOp: set(COMPARE),
            LogicalOp: set(LOGICAL), AtomicOp: set(ATOMIC)}
