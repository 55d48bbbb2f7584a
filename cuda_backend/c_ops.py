"""The CUDA renderer's op table: one C template per op of ``simgpu.ir.ops``
(tests/test_op_tables.py checks that each op has its row), the atomics'
overloads, and the error for what C cannot express (moved out of render.py).
"""
from __future__ import annotations

from simgpu.ir.ops import AtomicOp, BinaryOp, CompareOp, LogicalOp, UnaryOp
from simgpu.ir.types import ScalarType, f32, f64, i32, i64, u32, u64


class RenderError(Exception):
    """The IR holds something the CUDA renderer cannot express (names the node's line)."""

    def __init__(self, what: str, loc=None):
        where = f"{loc.file}:{loc.line}: " if loc is not None else ""
        src = f"\n    {loc.source.strip()}" if loc is not None and loc.source else ""
        super().__init__(f"{where}{what}{src}")


# --- op tables ----------------------------------------------------------------
# Templates are keyed by the operand type's name ("f32"), else its kind ("int",
# "uint", "float", "bool"), else "any".  "{t}" names a prelude helper for that
# type (add_{t} -> add_i32).  Infix templates are parenthesized when used, so
# operands never need precedence reasoning.

BINARY_C: dict = {
    BinaryOp.ADD: {"int": "add_{t}({a}, {b})", "uint": "{a} + {b}", "float": "{a} + {b}"},
    BinaryOp.SUB: {"int": "sub_{t}({a}, {b})", "uint": "{a} - {b}", "float": "{a} - {b}"},
    BinaryOp.MUL: {"int": "mul_{t}({a}, {b})", "uint": "{a} * {b}",
                   "f32": "__fmul_rn({a}, {b})", "f64": "__dmul_rn({a}, {b})"},
    BinaryOp.DIV: {"float": "{a} / {b}"},
    BinaryOp.IDIV: {"int": "div_{t}({a}, {b})", "uint": "{a} / {b}"},
    BinaryOp.MOD: {"int": "mod_{t}({a}, {b})", "uint": "{a} % {b}"},
    BinaryOp.LSHIFT: {"int": "shl_{t}({a}, {b})", "uint": "{a} << {b}"},
    BinaryOp.RSHIFT: {"int": "{a} >> {b}", "uint": "{a} >> {b}"},   # arithmetic on signed (nvcc)
    BinaryOp.BITAND: {"int": "{a} & {b}", "uint": "{a} & {b}"},
    BinaryOp.BITOR: {"int": "{a} | {b}", "uint": "{a} | {b}"},
    BinaryOp.BITXOR: {"int": "{a} ^ {b}", "uint": "{a} ^ {b}"},
    # fminf/fmaxf: a NaN operand yields the other one, as numpy's fmin/fmax.
    BinaryOp.MIN: {"int": "min_{t}({a}, {b})", "uint": "min_{t}({a}, {b})",
                   "f32": "fminf({a}, {b})", "f64": "fmin({a}, {b})"},
    BinaryOp.MAX: {"int": "max_{t}({a}, {b})", "uint": "max_{t}({a}, {b})",
                   "f32": "fmaxf({a}, {b})", "f64": "fmax({a}, {b})"},
}

UNARY_C: dict = {
    UnaryOp.NEG: {"int": "neg_{t}({a})", "uint": "-{a}", "float": "-{a}"},
    UnaryOp.INVERT: {"int": "~{a}", "uint": "~{a}"},
    UnaryOp.NOT: {"any": "!{a}"},
    UnaryOp.ABS: {"int": "abs_{t}({a})", "uint": "{a}", "f32": "fabsf({a})", "f64": "fabs({a})"},
}

COMPARE_C: dict = {
    CompareOp.EQ: "{a} == {b}", CompareOp.NE: "{a} != {b}", CompareOp.LT: "{a} < {b}",
    CompareOp.LE: "{a} <= {b}", CompareOp.GT: "{a} > {b}", CompareOp.GE: "{a} >= {b}",
}

LOGICAL_C: dict = {LogicalOp.AND: "{a} && {b}", LogicalOp.OR: "{a} || {b}"}

# atomic op -> (CUDA function, {element type: the C type of the overload used}).
# 64-bit signed add/exch/cas/and/or/xor use the unsigned long long overloads
# (two's complement makes them bit-identical); 64-bit min/max need the signed
# long long overloads (sm_35+) because the comparison depends on the sign.
_INT_OVERLOADS = {i32: "int", u32: "unsigned int", i64: "unsigned long long",
                  u64: "unsigned long long"}
_SIGNED_OVERLOADS = {**_INT_OVERLOADS, i64: "long long"}
ATOMIC_C: dict = {
    AtomicOp.ADD: ("atomicAdd", {**_INT_OVERLOADS, f32: "float", f64: "double"}),
    AtomicOp.SUB: ("atomicSub", {i32: "int", u32: "unsigned int"}),
    AtomicOp.MIN: ("atomicMin", _SIGNED_OVERLOADS),
    AtomicOp.MAX: ("atomicMax", _SIGNED_OVERLOADS),
    AtomicOp.EXCH: ("atomicExch", {**_INT_OVERLOADS, f32: "float"}),
    AtomicOp.CAS: ("atomicCAS", _INT_OVERLOADS),
    AtomicOp.AND: ("atomicAnd", _INT_OVERLOADS),
    AtomicOp.OR: ("atomicOr", _INT_OVERLOADS),
    AtomicOp.XOR: ("atomicXor", _INT_OVERLOADS),
}

# Element types whose C name is the overload's type under nvcc and NVRTC alike
# (int32_t is int on both; int64_t is long under nvcc's glibc): no casts needed.
_SAME_AS_OVERLOAD = {i32: "int", u32: "unsigned int", f32: "float", f64: "double"}


def covered_ops() -> dict:
    """Op enum -> the members the C tables render (a test compares with the enums)."""
    return {BinaryOp: set(BINARY_C), UnaryOp: set(UNARY_C), CompareOp: set(COMPARE_C),
            LogicalOp: set(LOGICAL_C), AtomicOp: set(ATOMIC_C)}


def covered_atomic_types() -> set:
    """The (AtomicOp, element type) pairs ATOMIC_C renders; must equal ATOMIC_TYPES'."""
    return {(op, t) for op, (_, types) in ATOMIC_C.items() for t in types}


def _template(table: dict, op, t: ScalarType, loc) -> str:
    forms = table.get(op)
    if forms is None:
        raise RenderError(f"no CUDA C rendering for {op!r}", loc)
    for key in (t.name, t.kind, "any"):
        if key in forms:
            return forms[key]
    raise RenderError(f"{op!r} has no CUDA C rendering for {t} operands", loc)
