"""Small pure functions on the IR that the front end uses everywhere: explicit
conversions (``cast``), C's truth value (``truth``), whether a constant fits a type
and whether an expression is loop-invariant (moved out of frontend.py).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.ops import CompareOp
from ..ir.types import ScalarType, boolean


def cast(e: ir.Expr, t: ScalarType, loc) -> ir.Expr:
    if e.type == t:
        return e
    if isinstance(e, ir.Const) and t.fits(e.value) and not t.is_bool:
        return ir.Const(type=t, loc=e.loc, value=float(e.value) if t.is_float else int(e.value))
    return ir.Cast(type=t, loc=loc, operand=e)


def truth(e: ir.Expr, loc) -> ir.Expr:
    """C's truth value of a scalar: ``e != 0`` (booleans are already truth values)."""
    if e.type.is_bool:
        return e
    return ir.Compare(type=boolean, loc=loc, op=CompareOp.NE, left=e,
                      right=ir.Const(type=e.type, loc=loc, value=0))


def const_fits(e: ir.Expr, t: ScalarType) -> bool:
    return isinstance(e, ir.Const) and not isinstance(e.value, float) and t.fits(e.value) \
        and not (t.is_bool and not isinstance(e.value, bool))


def invariant(e: ir.Expr, assigned: set) -> bool:
    """Whether ``e`` has the same value at every loop iteration (no memory, no assigned names)."""
    for n in ir.walk(e):
        if isinstance(n, (ir.Load, ir.Atomic, ir.Call, ir.WarpOp)):
            return False
        if isinstance(n, ir.Var) and n.name in assigned:
            return False
    return True
