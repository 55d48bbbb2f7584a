"""The typed, structured IR: frozen dataclasses, each carrying its source location.

The front end (``simgpu.lang.frontend``) builds it from a kernel's Python AST;
the simulator interprets it and the CUDA renderer prints it, one method per
node class in each.  All implicit conversions are explicit here: the operands
of a :class:`Binary` already have the node's type (the front end inserted
:class:`Cast` nodes), so a backend never decides a conversion on its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from .ops import AtomicOp, BinaryOp, CompareOp, LogicalOp, UnaryOp
from .types import ArrayType, ScalarType


@dataclass(frozen=True)
class Loc:
    """Where a node came from: file, 1-based line, 0-based columns, the line's text."""

    file: str
    line: int
    col: int
    end_col: int
    source: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


# --- expressions ----------------------------------------------------------

@dataclass(frozen=True)
class Expr:
    type: ScalarType
    loc: Loc = field(compare=False, repr=False)


@dataclass(frozen=True)
class Const(Expr):
    value: int | float | bool = 0


@dataclass(frozen=True)
class Var(Expr):
    """A local variable or scalar parameter."""
    name: str = ""


@dataclass(frozen=True)
class Special(Expr):
    """``threadIdx.x``, ``blockIdx.y``, ``blockDim.z``, ``gridDim.x``, ``warp_size``."""
    name: str = ""          # "threadIdx", ..., "warp_size"
    dim: str = ""           # "x", "y", "z" or "" for warp_size


@dataclass(frozen=True)
class ArrayRef:
    """An array parameter or a shared array: only the base of loads, stores and atomics."""
    name: str
    type: ArrayType
    loc: Loc = field(compare=False, repr=False)


@dataclass(frozen=True)
class Load(Expr):
    array: ArrayRef = None
    index: Expr = None
    fresh: bool = False      # follows this thread's store to the array: see simgpu.ir.fresh


@dataclass(frozen=True)
class Binary(Expr):
    op: BinaryOp = None
    left: Expr = None
    right: Expr = None


@dataclass(frozen=True)
class Unary(Expr):
    op: UnaryOp = None
    operand: Expr = None


@dataclass(frozen=True)
class Compare(Expr):
    """Both operands have the same type (the common type); the result is boolean."""
    op: CompareOp = None
    left: Expr = None
    right: Expr = None


@dataclass(frozen=True)
class Logical(Expr):
    """Short-circuit ``and``/``or`` of two booleans: the right side runs only where needed."""
    op: LogicalOp = None
    left: Expr = None
    right: Expr = None


@dataclass(frozen=True)
class Select(Expr):
    """``a if cond else b``: only the chosen side is evaluated, lane by lane."""
    cond: Expr = None
    if_true: Expr = None
    if_false: Expr = None


@dataclass(frozen=True)
class Cast(Expr):
    operand: Expr = None


@dataclass(frozen=True)
class Atomic(Expr):
    """``atomic_<op>(array, index, value)``; the value of the expression is the old element."""
    op: AtomicOp = None
    array: ArrayRef = None
    index: Expr = None
    value: Expr = None
    compare: Expr | None = None      # atomic_cas only
    uniform: bool = False            # index and value warp-uniform: see simgpu.ir.uniform


@dataclass(frozen=True)
class WarpOp(Expr):
    """A warp-level intrinsic (``simgpu.lang.warp``): lanes of one warp exchange values.

    ``op`` is one of ``WARP_OPS``: "shfl_idx", "shfl_up", "shfl_down", "shfl_xor"
    (``value`` from the lane ``lane`` names: a source lane, a delta or a lane mask,
    within segments of ``width`` lanes), "ballot", "any", "all" (of the boolean
    ``value``), "activemask" (no operands). ``mask`` (u32) names the lanes taking part.
    """
    op: str = ""
    mask: Expr | None = None
    value: Expr | None = None
    lane: Expr | None = None
    width: int = 32


WARP_OPS = ("shfl_idx", "shfl_up", "shfl_down", "shfl_xor", "ballot", "any", "all",
            "activemask")


@dataclass(frozen=True)
class Call(Expr):
    """A call of a ``@device_function``; inlined by the simulator, ``__device__`` in CUDA."""
    function: "Function" = None
    args: tuple = ()                 # Expr for scalars, ArrayRef for arrays


def child_changes(e: "Expr | Stmt", f) -> dict:
    """{field: f(child)} for the sub-expressions of ``e`` (an expression or a statement)
    that ``f`` changes (a tuple of them, such as a call's arguments, element by element;
    a statement's nested statements are not expressions, and are left to the caller):
    what a pass that rewrites expressions bottom-up, as the front end's markings do,
    hands to ``replace``. The type, the location and a call's function are not children."""
    changes = {}
    for fl in fields(e):
        if fl.name in ("loc", "type", "function"):
            continue
        value = getattr(e, fl.name)
        if isinstance(value, Expr):
            new = f(value)
            if new is not value:
                changes[fl.name] = new
        elif isinstance(value, tuple):
            new = tuple(f(v) if isinstance(v, Expr) else v for v in value)
            if any(a is not b for a, b in zip(new, value)):
                changes[fl.name] = new
    return changes


# --- statements -----------------------------------------------------------

@dataclass(frozen=True)
class Stmt:
    loc: Loc = field(compare=False, repr=False)


@dataclass(frozen=True)
class Assign(Stmt):
    name: str = ""
    value: Expr = None


@dataclass(frozen=True)
class Store(Stmt):
    array: ArrayRef = None
    index: Expr = None
    value: Expr = None


@dataclass(frozen=True)
class ExprStmt(Stmt):
    """An expression run for its effect: an atomic or a call whose result is unused."""
    expr: Expr = None


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr = None
    then: tuple = ()
    orelse: tuple = ()


@dataclass(frozen=True)
class While(Stmt):
    cond: Expr = None
    body: tuple = ()


@dataclass(frozen=True)
class For(Stmt):
    """``for var in range(start, stop, step)``.

    ``stop`` and ``step`` are evaluated once, before the loop (the front end
    binds them to hidden locals when they are not constants or parameters, so
    backends may re-read them).  The loop runs while ``var < stop`` for a
    positive step and ``var > stop`` for a negative one, as Python's range.
    """
    var: str = ""
    start: Expr = None
    stop: Expr = None
    step: Expr = None
    body: tuple = ()


@dataclass(frozen=True)
class Break(Stmt):
    pass


@dataclass(frozen=True)
class Continue(Stmt):
    pass


@dataclass(frozen=True)
class Return(Stmt):
    value: Expr | None = None


@dataclass(frozen=True)
class SyncThreads(Stmt):
    pass


@dataclass(frozen=True)
class SyncWarp(Stmt):
    """``syncwarp(mask)``: the lanes of ``mask`` (u32) wait for each other and see each
    other's memory accesses made before it (CUDA's ``__syncwarp``)."""
    mask: Expr = None


# --- functions ------------------------------------------------------------

@dataclass(frozen=True)
class Param:
    name: str
    type: ScalarType | ArrayType


@dataclass(frozen=True)
class Function:
    """A kernel (``is_kernel``) or a device function, fully typed."""
    name: str
    params: tuple                    # Param, in order
    return_type: ScalarType | None   # None: returns nothing (kernels always)
    body: tuple                      # Stmt
    locals: tuple                    # (name, ScalarType), every local incl. hidden ones
    shared: tuple                    # (name, ArrayType) shared arrays of a kernel
    is_kernel: bool
    loc: Loc = field(compare=False, repr=False)
    # Each backend's compiled form of this function, by backend name ("sim": the
    # simulator's closures and caches), made on first use: it lives and goes with
    # the function instead of in a global table.
    compiled: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    def local_types(self) -> dict:
        return dict(self.locals)


EXPR_NODES = (Const, Var, Special, Load, Binary, Unary, Compare, Logical, Select,
              Cast, Atomic, WarpOp, Call)
STMT_NODES = (Assign, Store, ExprStmt, If, While, For, Break, Continue, Return,
              SyncThreads, SyncWarp)


def walk(node):
    """Every IR node below ``node`` (statements, expressions, array refs), pre-order."""
    yield node
    if isinstance(node, Function):
        children = node.body
    elif isinstance(node, (tuple, list)):
        children = node
    else:
        children = []
        for name in getattr(node, "__dataclass_fields__", {}):
            if name in ("loc", "type", "function"):
                continue
            value = getattr(node, name)
            if isinstance(value, (Expr, Stmt, ArrayRef)):
                children.append(value)
            elif isinstance(value, tuple):
                children.extend(v for v in value if isinstance(v, (Expr, Stmt, ArrayRef)))
    for child in children:
        yield from walk(child)


def called_functions(fn: Function) -> list:
    """The device functions ``fn`` calls, directly or not, callees first."""
    seen: dict = {}

    def visit(f):
        for node in walk(f):
            if isinstance(node, Call) and node.function.name not in seen:
                visit(node.function)
                seen[node.function.name] = node.function
    visit(fn)
    return list(seen.values())
