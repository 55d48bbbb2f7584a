"""The op table: every operator the IR can hold, in one place.

Each backend has exactly one implementation per entry (the simulator's numpy
table in ``simgpu.sim.ops``, the CUDA renderer's C table in
``cuda_backend.render``); a test checks that both cover every op here.
"""
from __future__ import annotations

import ast
from enum import Enum

from .types import INT_TYPES, ScalarType, f32, f64, i32, i64, u32, u64


class BinaryOp(Enum):
    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"          # float division only; integers use FLOORDIV's C meaning
    IDIV = "//"        # integer division truncating toward zero, as C's /
    MOD = "%"          # remainder with the sign of the dividend, as C's %
    LSHIFT = "<<"
    RSHIFT = ">>"      # arithmetic for signed types, as nvcc and gcc do it
    BITAND = "&"
    BITOR = "|"
    BITXOR = "^"
    MIN = "min"
    MAX = "max"


class UnaryOp(Enum):
    NEG = "-"
    INVERT = "~"
    NOT = "not"
    ABS = "abs"


class CompareOp(Enum):
    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="


class LogicalOp(Enum):
    AND = "and"
    OR = "or"


class AtomicOp(Enum):
    ADD = "add"
    SUB = "sub"
    MIN = "min"
    MAX = "max"
    EXCH = "exch"
    CAS = "cas"
    AND = "and"
    OR = "or"
    XOR = "xor"


PY_BINARY = {
    ast.Add: BinaryOp.ADD, ast.Sub: BinaryOp.SUB, ast.Mult: BinaryOp.MUL,
    ast.Div: BinaryOp.DIV, ast.FloorDiv: BinaryOp.IDIV, ast.Mod: BinaryOp.MOD,
    ast.LShift: BinaryOp.LSHIFT, ast.RShift: BinaryOp.RSHIFT,
    ast.BitAnd: BinaryOp.BITAND, ast.BitOr: BinaryOp.BITOR, ast.BitXor: BinaryOp.BITXOR,
}
PY_UNARY = {ast.USub: UnaryOp.NEG, ast.Invert: UnaryOp.INVERT, ast.Not: UnaryOp.NOT}
PY_LOGICAL = {ast.And: LogicalOp.AND, ast.Or: LogicalOp.OR}
PY_COMPARE = {
    ast.Eq: CompareOp.EQ, ast.NotEq: CompareOp.NE, ast.Lt: CompareOp.LT,
    ast.LtE: CompareOp.LE, ast.Gt: CompareOp.GT, ast.GtE: CompareOp.GE,
}

# Integer-only operators (C forbids them on floating point).
INT_ONLY = {BinaryOp.IDIV, BinaryOp.MOD, BinaryOp.LSHIFT, BinaryOp.RSHIFT,
            BinaryOp.BITAND, BinaryOp.BITOR, BinaryOp.BITXOR}

# Element types each atomic exists for on NVIDIA hardware (CUDA C Programming
# Guide, "Atomic Functions").  The simulator refuses the same kernels the GPU
# would, so a kernel that runs here also compiles there.  Signed 64-bit add/sub
# render as the unsigned long long form (two's complement makes them equal);
# 64-bit min/max exist from sm_35 on; f64 add from sm_60 on.
ATOMIC_TYPES: dict[AtomicOp, tuple[ScalarType, ...]] = {
    AtomicOp.ADD: (i32, u32, i64, u64, f32, f64),
    AtomicOp.SUB: (i32, u32),
    AtomicOp.MIN: (i32, u32, i64, u64),
    AtomicOp.MAX: (i32, u32, i64, u64),
    AtomicOp.EXCH: (i32, u32, u64, i64, f32),
    AtomicOp.CAS: (i32, u32, u64, i64),
    AtomicOp.AND: (i32, u32, u64, i64),
    AtomicOp.OR: (i32, u32, u64, i64),
    AtomicOp.XOR: (i32, u32, u64, i64),
}

assert all(t in INT_TYPES or t in (f32, f64) for ts in ATOMIC_TYPES.values() for t in ts)
