"""Scalar and array types of the kernel language, and C's conversion rules.

The kernel language has C/CUDA semantics, so its types are C's fixed-width
types and mixed expressions follow C's *usual arithmetic conversions*
(C11 6.3.1.8).  Both backends rely on the two functions here
(:func:`promote`, :func:`common_type`): the simulator converts operands with
numpy before each operation, the CUDA renderer emits the same casts.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ScalarType:
    """A fixed-width scalar: ``i8 .. u64``, ``f32``, ``f64`` or ``boolean``."""

    name: str          # the kernel language's name: "i32"
    kind: str          # "int", "uint", "float" or "bool"
    bits: int
    c_name: str        # the CUDA C spelling: "int32_t"

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(_DTYPES[self.name])

    @property
    def is_int(self) -> bool:      # bool is not an integer type here: it promotes first
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def itemsize(self) -> int:
        return max(self.bits // 8, 1)

    @property
    def min(self) -> int:
        return -(1 << (self.bits - 1)) if self.is_signed else 0

    @property
    def max(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.is_signed else (1 << self.bits) - 1

    def fits(self, value) -> bool:
        """Whether a Python constant is representable in this type unchanged."""
        if self.is_bool:
            return isinstance(value, bool) or value in (0, 1)
        if self.is_float:
            return True
        return isinstance(value, (bool, int)) and self.min <= int(value) <= self.max

    def __repr__(self) -> str:
        return self.name

    # A scalar type is also its own cast: ``i64(x)`` in a kernel.  Called on the
    # host it converts a Python value with C's rules (handy in tests and docs).
    def __call__(self, value):
        return np.array(value).astype(self.dtype)[()]


_DTYPES = {
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f32": np.float32, "f64": np.float64, "boolean": np.bool_,
}

i8 = ScalarType("i8", "int", 8, "int8_t")
i16 = ScalarType("i16", "int", 16, "int16_t")
i32 = ScalarType("i32", "int", 32, "int32_t")
i64 = ScalarType("i64", "int", 64, "int64_t")
u8 = ScalarType("u8", "uint", 8, "uint8_t")
u16 = ScalarType("u16", "uint", 16, "uint16_t")
u32 = ScalarType("u32", "uint", 32, "uint32_t")
u64 = ScalarType("u64", "uint", 64, "uint64_t")
f32 = ScalarType("f32", "float", 32, "float")
f64 = ScalarType("f64", "float", 64, "double")
boolean = ScalarType("boolean", "bool", 8, "bool")

SCALAR_TYPES: dict[str, ScalarType] = {
    t.name: t for t in (i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, boolean)
}
INT_TYPES = tuple(t for t in SCALAR_TYPES.values() if t.is_int)


_BY_DTYPE = {t.dtype: t for t in SCALAR_TYPES.values()}   # from_dtype's usual answers


def from_dtype(dtype) -> ScalarType:
    """The scalar type whose numpy dtype is ``dtype`` (ValueError if none is)."""
    dtype = np.dtype(dtype)
    hit = _BY_DTYPE.get(dtype)     # a dict lookup: every device allocation and launch asks
    if hit is not None:
        return hit
    for t in SCALAR_TYPES.values():
        if t.dtype == dtype:
            return t
    raise ValueError(f"numpy dtype {dtype} has no kernel-language type; "
                     f"use one of {', '.join(str(t.dtype) for t in SCALAR_TYPES.values())}")


@dataclass(frozen=True)
class ArrayType:
    """``Array[T]`` (global memory) or a ``shared_array(T, size)`` of one block."""

    elem: ScalarType
    space: str = "global"       # "global" or "shared"
    size: int | None = None     # element count, shared arrays only

    def __repr__(self) -> str:
        if self.space == "shared":
            return f"shared_array({self.elem.name}, {self.size})"
        return f"Array[{self.elem.name}]"


class _ArrayFactory:
    """``Array[i32]`` in a kernel signature."""

    def __getitem__(self, elem: ScalarType) -> ArrayType:
        if not isinstance(elem, ScalarType):
            raise TypeError(f"Array[...] takes a scalar type such as i32, not {elem!r}")
        return ArrayType(elem)

    def __repr__(self) -> str:
        return "Array"


Array = _ArrayFactory()


# --- C's conversion rules -------------------------------------------------

def _rank(t: ScalarType) -> int:
    return {8: 1, 16: 2, 32: 3, 64: 4}[t.bits]


def promote(t: ScalarType) -> ScalarType:
    """Integer promotion (C11 6.3.1.1): bool, 8- and 16-bit integers become int."""
    if t.is_bool or (t.is_int and t.bits < 32):
        return i32
    return t


def common_type(a: ScalarType, b: ScalarType) -> ScalarType:
    """The usual arithmetic conversions (C11 6.3.1.8) of two operand types."""
    if a.is_float or b.is_float:
        if a == f64 or b == f64:
            return f64
        return f32
    a, b = promote(a), promote(b)
    if a == b:
        return a
    if a.is_signed == b.is_signed:
        return a if _rank(a) > _rank(b) else b
    unsigned, signed = (a, b) if not a.is_signed else (b, a)
    if _rank(unsigned) >= _rank(signed):
        return unsigned
    if signed.bits > unsigned.bits:     # the signed type holds every unsigned value
        return signed
    return SCALAR_TYPES["u" + signed.name[1:]]


def converts_safely(src: ScalarType, dst: ScalarType) -> bool:
    """Whether every value of ``src`` survives conversion to ``dst`` unchanged.

    Implicit conversions on assignment are allowed only when this holds; any
    other conversion must be written as a cast, so no assignment silently
    wraps a value.
    """
    if src == dst:
        return True
    if dst.is_bool:
        return src.is_bool
    if src.is_bool:
        return True
    if dst.is_float:
        if src.is_float:
            return dst.bits >= src.bits
        return src.bits < (24 if dst == f32 else 53)     # mantissa holds every integer
    if src.is_float:
        return False
    if src.is_signed == dst.is_signed:
        return dst.bits >= src.bits
    return (not src.is_signed) and dst.bits > src.bits
