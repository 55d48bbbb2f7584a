"""The C around the rendered code: the types prelude, the helper functions that
give C the kernel language's wrap-around and division (emitted only when used),
the fresh loads' PTX, C identifiers and literals (moved out of render.py).
"""
from __future__ import annotations

import math
import re

import numpy as np

from simgpu.ir import nodes as ir
from simgpu.ir.types import SCALAR_TYPES, ScalarType, f32

from .c_ops import RenderError


# --- the prelude ----------------------------------------------------------------

_TYPES_PRELUDE = """\
// Fixed-width integer types.  NVRTC (CuPy's RawModule) has no system headers,
// so they are defined here; nvcc gets glibc's (its int64_t is 'long': the
// atomics below cast to the exact overload types for that reason).
#if defined(__CUDACC_RTC__) && !defined(_STDINT_H)
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#elif !defined(__CUDACC_RTC__)
#include <stdint.h>
#endif
static_assert(sizeof(int8_t) == 1 && sizeof(int16_t) == 2 && sizeof(int32_t) == 4 &&
              sizeof(int64_t) == 8 && sizeof(bool) == 1, "fixed-width types");
"""

_HELPER_RE = re.compile(r"^(add|sub|mul|shl|neg|abs|div|mod|min|max)_([iu](?:8|16|32|64))$")

# Helper bodies; T is the type, U its unsigned twin (wrap-around without UB).
_HELPER_BODIES = {
    "add": "return ({T})(({U})a + ({U})b);",
    "sub": "return ({T})(({U})a - ({U})b);",
    "mul": "return ({T})(({U})a * ({U})b);",
    "shl": "return ({T})(({U})a << b);",
    "neg": "return ({T})(({U})0 - ({U})a);",
    "abs": "return a < 0 ? ({T})(({U})0 - ({U})a) : a;",      # abs(MIN) == MIN
    "div": "return b == -1 ? ({T})(({U})0 - ({U})a) : a / b;",  # MIN / -1 == MIN
    "mod": "return b == -1 ? ({T})0 : a % b;",                  # MIN % -1 == 0
    "min": "return a < b ? a : b;",
    "max": "return a > b ? a : b;",
}


# A fresh load (simgpu.ir.fresh): relaxed at device scope, so the compiler issues it as
# written (no store-to-load forwarding) and it reads the L2, where every SM's stores
# meet.  Generic addressing: the pointer may be global or shared.  By element size (and
# floats by name): (PTX type, register constraint, C type of the register).
_FRESH_LOADS = {
    1: ("b8", "h", "unsigned short"), 2: ("b16", "h", "unsigned short"),
    4: ("b32", "r", "unsigned int"), 8: ("b64", "l", "unsigned long long"),
    "f32": ("f32", "f", "float"), "f64": ("f64", "d", "double"),
}


def fresh_load_source(t: ScalarType) -> str:
    """The C definition of ``ld_fresh_<t>(const T* p)``."""
    T = t.c_name
    ptx, reg, R = _FRESH_LOADS[t.name if t.is_float else t.bits // 8]
    value = ("(r & 1) != 0" if t.is_bool else f"({T})(uint8_t)r" if t.bits == 8
             else "r" if t.is_float else f"({T})r")
    return (f"static __device__ __forceinline__ {T} ld_fresh_{t.name}(const {T}* p) "
            f"{{ {R} r; asm volatile(\"ld.relaxed.gpu.{ptx} %0, [%1];\" : \"={reg}\"(r) "
            f": \"l\"(p) : \"memory\"); return {value}; }}")


def helper_source(name: str) -> str:
    """The C definition of prelude helper ``name`` (``add_i32``, ``min_u64``, ...)."""
    op, tname = _HELPER_RE.match(name).groups()
    t = SCALAR_TYPES[tname]
    T, U = t.c_name, "uint" + t.c_name[t.c_name.index("int") + 3:]
    if op in ("neg", "abs"):
        params = f"{T} a"
    elif op == "shl":
        params = f"{T} a, int32_t b"
    else:
        params = f"{T} a, {T} b"
    body = _HELPER_BODIES[op].format(T=T, U=U)
    return f"static __device__ __forceinline__ {T} {name}({params}) {{ {body} }}"


# Names a kernel's identifiers must not take: C++ keywords and alternative
# tokens, CUDA built-ins, the prelude's types, and functions/macros the
# generated code or CUDA's headers put in the global namespace.
C_RESERVED = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast requires return
short signed sizeof static static_assert static_cast struct switch template this thread_local
throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
xor xor_eq restrict main
threadIdx blockIdx blockDim gridDim warpSize dim3 uint3 size_t ptrdiff_t NULL
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t
atomicAdd atomicSub atomicMin atomicMax atomicExch atomicCAS atomicAnd atomicOr atomicXor
min max abs labs llabs fabs fabsf fmin fminf fmax fmaxf sqrt sqrtf exp expf log logf pow powf
sin sinf cos cosf tan tanf floor floorf ceil ceilf round roundf trunc truncf fmod fmodf
isnan isinf isfinite signbit printf malloc free memcpy memset assert exit rand
INT_MIN INT_MAX UINT_MAX LLONG_MIN LLONG_MAX CHAR_BIT EOF RAND_MAX
""".split())


def _reserved(name: str) -> bool:
    return (name in C_RESERVED or bool(_HELPER_RE.match(name)) or name.startswith("__")
            or (name[:1] == "_" and name[1:2].isupper()))


def c_identifier(name: str, taken=()) -> str:
    """``name`` as a C identifier: itself unless reserved or taken, else ``name_`` (``_``...)."""
    out = name
    if name.startswith("__") or (name[:1] == "_" and name[1:2].isupper()):
        out = (name.lstrip("_") or "v") + "_"       # reserved by its prefix: drop the prefix
    while _reserved(out) or out in taken:
        out += "_"
    return out


def kernel_symbol(kernel) -> str:
    """The ``extern "C"`` symbol of a kernel in the rendered module (its name, unless reserved)."""
    return c_identifier(_function(kernel).name)


def _function(obj) -> ir.Function:
    if isinstance(obj, ir.Function):
        return obj
    fn = getattr(obj, "ir", None)       # simgpu.lang.Kernel / DeviceFunction
    if isinstance(fn, ir.Function):
        return fn
    raise TypeError(f"render() takes a @kernel, a @device_function or an ir.Function, "
                    f"not {type(obj).__name__}")


# --- constants ---------------------------------------------------------------

def c_literal(value, t: ScalarType) -> str:
    """A C expression of type ``t`` whose value is ``value`` (negative ones parenthesized)."""
    if t.is_bool:
        return "true" if value else "false"
    if t.is_float:
        v = float(value)
        if t == f32:            # the value the simulator holds: float32(v), maybe inf
            with np.errstate(over="ignore"):
                v = float(np.float32(v))
        if not math.isfinite(v):        # no C literal: spell the bits (a NaN keeps its payload)
            if t == f32:
                return f"__int_as_float(0x{int(np.float32(v).view(np.uint32)):08x})"
            return f"__longlong_as_double(0x{int(np.float64(v).view(np.uint64)):016x}LL)"
        # str(np.float32) is the shortest decimal that reads back as the same f32,
        # so "0.1f" is the simulator's float32(0.1) with no double rounding.
        s = str(np.float32(v)) if t == f32 else repr(v)
        if not any(c in s for c in ".e"):
            s += ".0"
        s += "f" if t == f32 else ""
        return f"({s})" if s.startswith("-") else s
    v = int(value)
    if not t.min <= v <= t.max:
        raise RenderError(f"constant {v} does not fit {t}")
    if t.bits < 32:
        return f"({t.c_name}){v}" if v >= 0 else f"({t.c_name})({v})"
    suffix = {"i32": "", "u32": "u", "i64": "LL", "u64": "ull"}[t.name]
    if t.is_signed and v == t.min:      # -2147483648 is minus applied to a literal too big for int
        return f"(-{t.max}{suffix}-1)"
    return f"({v}{suffix})" if v < 0 else f"{v}{suffix}"


def _bare(s: str) -> str:
    """``s`` without one pair of parentheses enclosing all of it."""
    if not (s.startswith("(") and s.endswith(")")):
        return s
    depth = 0
    for i, c in enumerate(s):
        depth += (c == "(") - (c == ")")
        if depth == 0 and i < len(s) - 1:
            return s
    return s[1:-1]


def _same(f: ir.Function, g: ir.Function) -> bool:
    return f is g or (f.name == g.name and f == g)     # equal IR: the same C function


def _apply(template: str, **kw) -> str:
    text = template.format(**kw)
    return f"({text})" if template.startswith(("{", "-", "~", "!")) else text
