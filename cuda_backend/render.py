"""IR -> readable CUDA C, one method per IR node class (mirrors ``simgpu.sim.interpreter``).

    from cuda_backend.render import render, render_module, kernel_symbol
    src = render(my_kernel)              # a @kernel, a @device_function or an ir.Function
    src = render_module([k1, k2])        # several kernels; each device function once

The C must compute exactly what the simulator computes, so the renderer never
lets nvcc choose: the IR already makes every conversion explicit, and the
places where C differs from the kernel language get small helper functions
(emitted only when used):

- signed ``+ - * <<`` and unary ``-`` wrap around in the kernel language but
  are undefined behaviour in C on overflow (nvcc exploits that, e.g. to widen
  loop counters): they are computed in the unsigned type of the same width and
  cast back, ``add_i32(a, b) = (int32_t)((uint32_t)a + (uint32_t)b)``;
- ``INT_MIN // -1`` and ``INT_MIN % -1`` are undefined in C, INT_MIN and 0 in
  the simulator: signed ``//``/``%`` go through ``div_i32``/``mod_i32`` unless
  the divisor is a constant other than -1 (then C's ``/`` and ``%`` are exact);
- ``abs(INT_MIN)`` stays INT_MIN (two's complement), via ``abs_i32``;
- float ``*`` is ``__fmul_rn``/``__dmul_rn``: nvcc would otherwise contract
  ``a * b + c`` into one fused multiply-add, rounding differently from numpy;
- locals are zero-initialized, as the simulator defines them; shared arrays
  are declared only (undefined at block start, as CUDA has them: a kernel that
  needs zeros stores them, and the simulator's check="uninit" finds one that
  does not).

Every statement is preceded by a ``// file.py:LINE: source`` comment; the nvcc
wrapper (``cuda_backend.nvcc``) maps compiler errors back through them.
"""
from __future__ import annotations

import math
import os
import re

import numpy as np

from simgpu.ir import nodes as ir
from simgpu.ir.ops import ATOMIC_TYPES, AtomicOp, BinaryOp, CompareOp, LogicalOp, UnaryOp
from simgpu.ir.types import (SCALAR_TYPES, ArrayType, ScalarType, f32, f64, i32, i64, promote,
                             u32, u64)


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


# --- the renderer ------------------------------------------------------------

class CudaRenderer:
    """Renders functions to CUDA C: ``emit_<Stmt>`` and ``expr_<Expr>`` per IR node class.

    One renderer renders one module: it remembers the helpers used and the C
    names given to device functions, so each is defined once.
    """

    INDENT = "    "

    def __init__(self):
        self.helpers: set = set()         # prelude helpers used so far
        self.fresh_types: set = set()     # element types of the fresh loads so far
        self.functions: list = []         # [(ir.Function, C name)] device functions, callees first
        self.kernel_names: set = set()
        self.lines: list = []
        self.depth = 0
        self.fn: ir.Function | None = None
        self.names: dict = {}             # IR name -> C name, in the current function
        self.last_loc = None

    # --- modules ------------------------------------------------------------

    def render_module(self, objs) -> str:
        kernels = [_function(o) for o in objs]
        self.kernel_names = {c_identifier(k.name) for k in kernels if k.is_kernel}
        for k in kernels:
            for f in self._callees(k):
                self._function_name(f)
            if not k.is_kernel:
                self._function_name(k)
        bodies = [self.function(f, name) for f, name in self.functions]
        seen: dict = {}
        for k in kernels:
            if not k.is_kernel or any(k is g for g in seen.values()):
                continue
            if k.name in seen:          # extern "C" symbols must differ within one module
                raise RenderError(f"two different kernels named '{k.name}' in one module "
                                  "(render them into separate modules)", k.loc)
            seen[k.name] = k
            bodies.append(self.function(k, c_identifier(k.name)))
        files = sorted({os.path.basename(k.loc.file) for k in kernels if k.loc is not None})
        head = [f"// CUDA C generated by simgpu's renderer from {', '.join(files)}.",
                "// Edit the Python kernel, not this file: each statement below follows the",
                "// '// file.py:LINE: source' comment of the Python line it came from.", "",
                _TYPES_PRELUDE]
        if self.helpers:
            head.append("// Where C differs from the kernel language: signed arithmetic wraps around\n"
                        "// (undefined on overflow in C), so it is done in the unsigned twin type;\n"
                        "// MIN / -1 is MIN and MIN % -1 is 0; min/max read each operand once.")
            head.extend(helper_source(h) for h in sorted(self.helpers, key=_helper_order))
            head.append("")
        if self.fresh_types:
            head.append("// Loads after this thread's store to the same array: C would let the\n"
                        "// compiler forward the stored value; the kernel language reads memory,\n"
                        "// where another thread may have written since (see simgpu.ir.fresh).")
            head.extend(fresh_load_source(t) for t in sorted(self.fresh_types, key=lambda t: t.name))
            head.append("")
        return "\n".join(head + bodies)

    @staticmethod
    def _callees(fn):
        """Device functions ``fn`` calls, callees first.  Unlike ir.called_functions this
        keeps two different functions of one name apart (they get distinct C names)."""
        out = []

        def visit(f):
            for node in ir.walk(f):
                if isinstance(node, ir.Call) and not any(_same(g, node.function) for g in out):
                    visit(node.function)
                    if not any(_same(g, node.function) for g in out):
                        out.append(node.function)
        visit(fn)
        return out

    def _function_name(self, f: ir.Function) -> str:
        for g, name in self.functions:
            if _same(g, f):
                return name
        taken = self.kernel_names | {name for _, name in self.functions}
        name = c_identifier(f.name, taken)
        self.functions.append((f, name))
        return name

    # --- functions ----------------------------------------------------------

    def function(self, fn: ir.Function, cname: str) -> str:
        self.fn, self.lines, self.depth, self.last_loc = fn, [], 0, None
        called = {self._function_name(c.function) for c in ir.walk(fn) if isinstance(c, ir.Call)}
        self.names = {}
        taken = set(called) | {cname}
        for name in [p.name for p in fn.params] + [n for n, _ in fn.locals + fn.shared]:
            if name in self.names:
                continue
            self.names[name] = c_identifier(name, taken)
            taken.add(self.names[name])
        signature = ", ".join(self._param(p) for p in fn.params) or "void"
        where = f"{fn.loc.file}:{fn.loc.line}" if fn.loc is not None else "?"
        kind = "kernel" if fn.is_kernel else "device function"
        self.lines.append(f"// {kind} {fn.name}, from {where}")
        if fn.is_kernel:
            self.lines.append(f'extern "C" __global__ void {cname}({signature}) {{')
        else:
            ret = fn.return_type.c_name if fn.return_type else "void"
            self.lines.append(f"__device__ {ret} {cname}({signature}) {{")
        self.depth = 1
        if fn.locals:
            self.line("// locals start at zero, as in the simulator")
        params = {p.name for p in fn.params}
        for name, t in fn.locals:
            if name not in params:      # a parameter reused as a loop variable stays one
                self.line(f"{t.c_name} {self.names[name]} = {c_literal(0, t)};")
        if fn.shared:
            self.shared_arrays(fn, taken)
        for s in fn.body:
            self.emit(s)
        self.lines.append("}")
        self.lines.append("")
        return "\n".join(self.lines)

    def _param(self, p: ir.Param) -> str:
        if isinstance(p.type, ArrayType):
            return f"{p.type.elem.c_name}* {self.names[p.name]}"
        return f"{p.type.c_name} {self.names[p.name]}"

    def shared_arrays(self, fn, taken):
        # Declared only: CUDA leaves shared memory undefined at block start, and the
        # kernel runs exactly as written (no hidden zero-fill, no extra barrier); a
        # kernel that needs zeros stores them itself.  The simulator's check="uninit"
        # finds a read of a word nothing wrote.
        for name, t in fn.shared:
            self.line(f"__shared__ {t.elem.c_name} {self.names[name]}[{t.size}];")

    # --- statements ---------------------------------------------------------

    def line(self, text: str):
        self.lines.append(self.INDENT * self.depth + text)

    def comment(self, loc):
        """``// file.py:LINE: source`` once per run of statements from one Python line."""
        if loc is None or (loc.file, loc.line) == self.last_loc:
            return
        self.last_loc = (loc.file, loc.line)
        self.line(source_comment(loc))

    def emit(self, s: ir.Stmt):
        method = getattr(self, "emit_" + type(s).__name__, None)
        if method is None:
            raise RenderError(f"the CUDA renderer has no emit_{type(s).__name__}", s.loc)
        self.comment(s.loc)
        method(s)

    def block(self, stmts):
        self.depth += 1
        self.last_loc = None            # a nested block repeats its first line's comment
        for s in stmts:
            self.emit(s)
        self.depth -= 1
        self.last_loc = None

    def emit_Assign(self, s):
        self.line(f"{self.names[s.name]} = {_bare(self.expr(s.value))};")

    def emit_Store(self, s):
        self.line(f"{self.names[s.array.name]}[{_bare(self.expr(s.index))}] = "
                  f"{_bare(self.expr(s.value))};")

    def emit_ExprStmt(self, s):
        e = s.expr
        text = self.atomic(e, used=False) if isinstance(e, ir.Atomic) else self.expr(e)
        self.line(f"{_bare(text)};")

    def emit_If(self, s):
        self.line(f"if ({_bare(self.expr(s.cond))}) {{")
        self.block(s.then)
        orelse = s.orelse
        while len(orelse) == 1 and isinstance(orelse[0], ir.If):     # elif chain
            inner = orelse[0]
            self.line(f"}} else if ({_bare(self.expr(inner.cond))}) {{  "
                      f"{source_comment(inner.loc)}")
            self.block(inner.then)
            orelse = inner.orelse
        if orelse:
            self.line("} else {")
            self.block(orelse)
        self.line("}")

    def emit_While(self, s):
        self.line(f"while ({_bare(self.expr(s.cond))}) {{")
        self.block(s.body)
        self.line("}")

    def emit_For(self, s):
        # As the simulator: a constant step fixes the direction, otherwise the
        # sign of the step is tested at every check (stop/step are invariant:
        # the front end put anything else in hidden locals).
        v = self.names[s.var]
        params = {p.name: p.type for p in self.fn.params}     # a parameter keeps its own type
        t = params.get(s.var) or self.fn.local_types()[s.var]
        stop, step = self.expr(s.stop), self.expr(s.step)
        if isinstance(s.step, ir.Const):
            cond = f"{v} < {stop}" if s.step.value > 0 else f"{v} > {stop}"
        else:
            cond = f"({step} > {c_literal(0, t)} ? {v} < {stop} : {v} > {stop})"
        inc = self.binary_text(BinaryOp.ADD, t, v, step, s.loc)     # wraps like the simulator
        self.line(f"for ({v} = {_bare(self.expr(s.start))}; {cond}; {v} = {_bare(inc)}) {{")
        self.block(s.body)
        self.line("}")

    def emit_Break(self, s):
        self.line("break;")

    def emit_Continue(self, s):
        self.line("continue;")

    def emit_Return(self, s):
        if s.value is None:
            self.line("return;")
        else:
            self.line(f"return {_bare(self.expr(s.value))};")

    def emit_SyncThreads(self, s):
        self.line("__syncthreads();")

    def emit_SyncWarp(self, s):
        self.line(f"__syncwarp({_bare(self.expr(s.mask))});")

    # --- expressions --------------------------------------------------------

    def expr(self, e: ir.Expr) -> str:
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise RenderError(f"the CUDA renderer has no expr_{type(e).__name__}", e.loc)
        return method(e)

    def expr_Const(self, e):
        try:
            return c_literal(e.value, e.type)
        except RenderError as exc:
            raise RenderError(str(exc), e.loc) from None

    def expr_Var(self, e):
        return self.names[e.name]

    def expr_Special(self, e):
        if e.name == "warp_size":
            return "32"                 # the simulator's warp size; every NVIDIA GPU's
        return f"(int32_t){e.name}.{e.dim}"     # unsigned in CUDA, i32 in the kernel language

    def expr_Load(self, e):
        element = f"{self.names[e.array.name]}[{_bare(self.expr(e.index))}]"
        if e.fresh:
            self.fresh_types.add(e.array.type.elem)
            return f"ld_fresh_{e.array.type.elem.name}(&{element})"
        return element

    def expr_Binary(self, e):
        return self.binary_text(e.op, e.type, self.expr(e.left), self.expr(e.right), e.loc,
                                right_node=e.right)

    def binary_text(self, op, t: ScalarType, a: str, b: str, loc, right_node=None) -> str:
        if (t.is_int or t.is_bool) and t.bits < 32:
            # The front end promotes operands first; a hand-built narrow op is
            # done in int (as C would) and wrapped back to its type.
            w = promote(t)
            return f"({t.c_name}){self.binary_text(op, w, f'({w.c_name}){a}', f'({w.c_name}){b}', loc)}"
        if (op in (BinaryOp.IDIV, BinaryOp.MOD) and t.is_signed
                and isinstance(right_node, ir.Const) and right_node.value not in (0, -1)):
            # a constant divisor other than -1 cannot overflow: plain C, which
            # nvcc turns into a multiply.
            return f"({a} {'/' if op is BinaryOp.IDIV else '%'} {b})"
        return self.use(_template(BINARY_C, op, t, loc), t, a=a, b=b)

    def use(self, template: str, t: ScalarType, **kw) -> str:
        """Fill ``template``; remember the prelude helper it names, if any."""
        if "{t}" in template:
            name = template.split("(")[0].format(t=t.name)
            self.helpers.add(name)
            kw = {k: _bare(v) for k, v in kw.items()}   # function arguments need no parens
        return _apply(template, t=t.name, **kw)

    def expr_Unary(self, e):
        t = e.type
        a = self.expr(e.operand)
        if t.is_int and t.bits < 32:
            w = promote(t)
            inner = self.use(_template(UNARY_C, e.op, w, e.loc), w, a=f"({w.c_name}){a}")
            return f"({t.c_name}){inner}"
        return self.use(_template(UNARY_C, e.op, t, e.loc), t, a=a)

    def expr_Compare(self, e):
        return _apply(COMPARE_C[e.op], a=self.expr(e.left), b=self.expr(e.right))

    def expr_Logical(self, e):
        return _apply(LOGICAL_C[e.op], a=self.expr(e.left), b=self.expr(e.right))

    def expr_Select(self, e):
        return f"({self.expr(e.cond)} ? {self.expr(e.if_true)} : {self.expr(e.if_false)})"

    def expr_Cast(self, e):
        return f"({e.type.c_name}){self.expr(e.operand)}"

    def expr_Atomic(self, e):
        return self.atomic(e, used=True)

    def atomic(self, e, used: bool) -> str:
        t = e.array.type.elem
        fn_name, overloads = ATOMIC_C.get(e.op, (None, {}))
        ctype = overloads.get(t)
        if ctype is None:
            ok = ", ".join(x.name for x in ATOMIC_TYPES.get(e.op, ()))
            raise RenderError(f"CUDA has no atomic_{e.op.value} on {t} elements "
                              f"(it exists for {ok})", e.loc)
        ptr = f"&{self.names[e.array.name]}[{_bare(self.expr(e.index))}]"
        values = [self.expr(v) for v in ((e.compare, e.value) if e.op is AtomicOp.CAS
                                         else (e.value,))]
        if _SAME_AS_OVERLOAD.get(t) == ctype:
            return f"{fn_name}({ptr}, {', '.join(_bare(v) for v in values)})"
        args = ", ".join(f"({ctype}){v}" for v in values)
        call = f"{fn_name}(({ctype}*){ptr}, {args})"
        return f"({t.c_name}){call}" if used else call

    def expr_WarpOp(self, e):
        """CUDA's warp intrinsics; the simulator's semantics are simgpu.sim.warp's."""
        if e.op == "activemask":
            return "__activemask()"
        mask = _bare(self.expr(e.mask))
        if e.lane is None:                           # ballot / any / all of a bool
            call = f"__{e.op}_sync({mask}, {_bare(self.expr(e.value))})"
            return call if e.op == "ballot" else f"({call} != 0)"
        name = {"shfl_idx": "__shfl_sync"}.get(e.op, f"__{e.op}_sync")
        value = f"({e.type.c_name}){self.expr(e.value)}"      # picks CUDA's overload
        return f"{name}({mask}, {value}, {_bare(self.expr(e.lane))}, {e.width})"

    def expr_Call(self, e):
        args = ", ".join(self.names[a.name] if isinstance(a, ir.ArrayRef) else _bare(self.expr(a))
                         for a in e.args)
        return f"{self._function_name(e.function)}({args})"


def _helper_order(name: str):
    op, t = _HELPER_RE.match(name).groups()
    return (list(_HELPER_BODIES).index(op), t[0], int(t[1:]))


def source_comment(loc) -> str:
    """``// file.py:LINE: source`` (made safe for a C line comment)."""
    text = " ".join(loc.source.split()) if loc.source else ""
    text = text.rstrip("\\").replace("??", "? ?")     # no line splice, no trigraph
    return f"// {os.path.basename(loc.file)}:{loc.line}: {text}".rstrip()


# --- entry points ---------------------------------------------------------------

def render(obj) -> str:
    """CUDA C for one kernel (or device function): prelude, callees, then the function."""
    return CudaRenderer().render_module([obj])


def render_module(objs) -> str:
    """CUDA C for several kernels in one module; shared device functions appear once."""
    return CudaRenderer().render_module(list(objs))
