"""The front end's expressions: Python expressions -> typed IR, calls and the
intrinsics' table (moved out of frontend.py; :class:`ExpressionBuilder` is a
base of :class:`~simgpu.lang.frontend.FunctionBuilder`, which supplies
``loc``, the errors, ``scope``, ``namespace`` and ``compiling``).
"""
from __future__ import annotations

import ast
import inspect

from ..ir import nodes as ir
from ..ir.ops import (ATOMIC_TYPES, INT_ONLY, PY_BINARY, PY_COMPARE, PY_LOGICAL, PY_UNARY,
                      AtomicOp, BinaryOp, LogicalOp, UnaryOp)
from ..ir.types import (SCALAR_TYPES, ArrayType, ScalarType, boolean, common_type, f64, i32,
                        i64, promote, u64)
from .ir_helpers import cast, truth
from .warp import WARP_INTRINSICS, warp_call

SPECIALS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
# atomic_and_/atomic_or_ as DESIGN.md spells them (after operator.and_); the
# plain spellings are accepted too.
ATOMICS = {f"atomic_{op.value}": op for op in AtomicOp}
ATOMICS.update(atomic_and_=AtomicOp.AND, atomic_or_=AtomicOp.OR, atomic_xor_=AtomicOp.XOR)


class ExpressionBuilder:
    """Expressions and calls of :class:`~simgpu.lang.frontend.FunctionBuilder`."""

    def expr(self, node, statement=False) -> ir.Expr:
        if isinstance(node, ast.Call):
            return self.call(node, statement)
        return self.visit(node)

    def visit_Constant(self, node):
        v = node.value
        loc = self.loc(node)
        if isinstance(v, bool):
            return ir.Const(type=boolean, loc=loc, value=v)
        if isinstance(v, int):
            for t in (i32, i64, u64):             # C's rule for decimal literals, plus u64
                if t.fits(v):
                    return ir.Const(type=t, loc=loc, value=v)
            raise self.type_error(node, f"the constant {v} does not fit in 64 bits")
        if isinstance(v, float):
            return ir.Const(type=f64, loc=loc, value=v)
        raise self.syntax_error(node, f"constants of type {type(v).__name__} are not supported")

    def visit_Name(self, node):
        name = node.id
        if name in self.scope.dead_loop_vars:
            line = self.scope.dead_loop_vars[name]
            raise self.syntax_error(node, f"'{name}' is the variable of the for loop at line {line} "
                                          "and cannot be read after that loop ends",
                                    "copy it to another variable inside the loop")
        return self.name(node)

    def name(self, node):
        name, loc = node.id, self.loc(node)
        t = self.scope.locals.get(name) or self.scope.params.get(name)
        if isinstance(t, ScalarType):
            return ir.Var(type=t, loc=loc, name=name)
        if isinstance(t, ArrayType) or name in self.scope.shared:
            raise self.type_error(node, f"'{name}' is an array; only its elements can be used",
                                  f"index it: {name}[i]")
        if name == "warp_size":
            return ir.Special(type=i32, loc=loc, name="warp_size", dim="")
        if name in self.namespace:
            v = self.namespace[name]
            if isinstance(v, (bool, int, float)):     # a module constant, e.g. BLOCK = 256
                return self.visit_Constant(ast.copy_location(ast.Constant(v), node))
            raise self.type_error(node, f"'{name}' is a {type(v).__name__} of the module; kernels "
                                        "can use module constants that are int, float or bool")
        raise self.syntax_error(node, f"name '{name}' is not defined",
                                "a local must be assigned before it is used")

    def module_attribute(self, node):
        """The object ``mod.name`` names, where ``mod`` is a module imported by the kernel's file."""
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            mod = self.namespace.get(node.value.id)
            if inspect.ismodule(mod) and hasattr(mod, node.attr):
                return getattr(mod, node.attr)
        return None

    def visit_Attribute(self, node):
        value = self.module_attribute(node)
        if isinstance(value, (bool, int, float)):   # a module's constant: K.BLOCK
            return self.visit_Constant(ast.copy_location(ast.Constant(value), node))
        if isinstance(node.value, ast.Name) and node.value.id in SPECIALS:
            if node.attr not in ("x", "y", "z"):
                raise self.syntax_error(node, f"{node.value.id} has fields x, y and z")
            return ir.Special(type=i32, loc=self.loc(node), name=node.value.id, dim=node.attr)
        raise self.syntax_error(node, "attribute access is limited to threadIdx/blockIdx/"
                                      "blockDim/gridDim .x/.y/.z")

    def visit_Subscript(self, node):
        arr = self.array_ref(node.value)
        return ir.Load(type=arr.type.elem, loc=self.loc(node), array=arr, index=self.index(node))

    def array_ref(self, node) -> ir.ArrayRef:
        if isinstance(node, ast.Name):
            t = self.scope.params.get(node.id) or self.scope.shared.get(node.id)
            if isinstance(t, ArrayType):
                return ir.ArrayRef(node.id, t, self.loc(node))
            if t is not None or node.id in self.scope.locals:
                raise self.type_error(node, f"'{node.id}' is a scalar and cannot be indexed")
        raise self.syntax_error(node, "only array parameters and shared arrays can be indexed")

    def index(self, sub) -> ir.Expr:
        if isinstance(sub.slice, ast.Slice):
            raise self.syntax_error(sub.slice, "slices are not supported; index one element")
        idx = self.expr(sub.slice)
        if not idx.type.is_int:
            raise self.type_error(sub.slice, f"an array index must be an integer, not {idx.type}",
                                  "convert it: i64(...)" if idx.type.is_float else None)
        return idx

    def visit_BinOp(self, node):
        op = PY_BINARY.get(type(node.op))
        if op is None:
            raise self.syntax_error(node, f"the operator '{ast.unparse(node)}' is not supported")
        return self.binary(node, op, self.expr(node.left), self.expr(node.right))

    def binary(self, node, op, left, right):
        loc = self.loc(node)
        if op is BinaryOp.DIV and not (left.type.is_float or right.type.is_float):
            raise self.type_error(node, "'/' on integers is not C's division",
                                  "write '//' for integer division (it truncates toward zero, "
                                  "as C's '/'), or convert an operand to f32/f64")
        if op in INT_ONLY and (left.type.is_float or right.type.is_float):
            raise self.type_error(node, f"'{op.value}' needs integer operands, not "
                                        f"{left.type} and {right.type}")
        if op in (BinaryOp.LSHIFT, BinaryOp.RSHIFT):     # each operand promoted on its own
            t = promote(left.type)
            return ir.Binary(type=t, loc=loc, op=op, left=cast(left, t, loc),
                             right=cast(right, promote(right.type), loc))
        t = common_type(left.type, right.type)
        return ir.Binary(type=t, loc=loc, op=op, left=cast(left, t, loc), right=cast(right, t, loc))

    def visit_UnaryOp(self, node):
        loc = self.loc(node)
        operand = self.expr(node.operand)
        if isinstance(node.op, ast.UAdd):
            return cast(operand, promote(operand.type), loc)
        op = PY_UNARY[type(node.op)]
        if op is UnaryOp.NOT:
            return ir.Unary(type=boolean, loc=loc, op=op, operand=truth(operand, loc))
        if op is UnaryOp.INVERT and operand.type.is_float:
            raise self.type_error(node, f"'~' needs an integer operand, not {operand.type}")
        t = promote(operand.type)
        if isinstance(node.operand, ast.Constant) and op is UnaryOp.NEG and not t.is_float:
            # C: -5 is minus applied to the literal 5, so it keeps the literal's
            # type (-2147483648 is an i64, as it is a long in C); fold it, wrapping.
            value = (-operand.value - t.min) % (1 << t.bits) + t.min
            return ir.Const(type=t, loc=loc, value=value)
        return ir.Unary(type=t, loc=loc, op=op, operand=cast(operand, t, loc))

    def visit_BoolOp(self, node):
        op = PY_LOGICAL[type(node.op)]
        values = [truth(self.expr(v), self.loc(v)) for v in node.values]
        result = values[0]
        for v in values[1:]:
            result = ir.Logical(type=boolean, loc=self.loc(node), op=op, left=result, right=v)
        return result

    def visit_Compare(self, node):
        loc = self.loc(node)
        result = None
        left = self.expr(node.left)
        for op_node, right_node in zip(node.ops, node.comparators):
            op = PY_COMPARE.get(type(op_node))
            if op is None:
                raise self.syntax_error(node, "only ==, !=, <, <=, > and >= compare values")
            right = self.expr(right_node)
            t = common_type(left.type, right.type)
            c = ir.Compare(type=boolean, loc=loc, op=op, left=cast(left, t, loc),
                           right=cast(right, t, loc))
            result = c if result is None else ir.Logical(type=boolean, loc=loc, op=LogicalOp.AND,
                                                         left=result, right=c)
            left = right
        return result

    def visit_IfExp(self, node):
        loc = self.loc(node)
        a, b = self.expr(node.body), self.expr(node.orelse)
        t = common_type(a.type, b.type)          # C's ?: converts both sides, promoting too
        return ir.Select(type=t, loc=loc, cond=truth(self.expr(node.test), loc),
                         if_true=cast(a, t, loc), if_false=cast(b, t, loc))

    # --- calls -------------------------------------------------------------

    def call(self, node, statement):
        loc = self.loc(node)
        if node.keywords:
            raise self.syntax_error(node, "keyword arguments are not supported in kernels")
        module_attr = self.module_attribute(node.func)
        if module_attr is not None:                # kernels.put(...): a module's function
            fname, target = node.func.attr, module_attr
        elif isinstance(node.func, ast.Name):
            fname = node.func.id
            target = self.namespace.get(fname)
        else:
            raise self.syntax_error(node.func, "only intrinsics, casts and device functions "
                                               "can be called")
        if fname in SCALAR_TYPES or isinstance(target, ScalarType):
            t = SCALAR_TYPES.get(fname) or target
            self.nargs(node, 1)
            return cast(self.expr(node.args[0]), t, loc)
        intrinsic = INTRINSICS.get(fname)
        if intrinsic is not None:
            return intrinsic(self, node, fname)
        ir_of = getattr(target, "__simgpu_device_function__", None)
        if ir_of is not None:
            return self.device_call(node, target, statement)
        if getattr(target, "__simgpu_kernel__", False):
            raise self.syntax_error(node, f"'{fname}' is a kernel; kernels are launched from the "
                                          "host, not called", "make it a @device_function")
        raise self.syntax_error(node, f"'{fname}' cannot be called in a kernel",
                                "kernels call casts (i32(x), ...), min, max, abs, atomic_*, "
                                "syncthreads(), the warp intrinsics (shfl_sync, ...) and "
                                "@device_function functions")

    def nargs(self, node, n):
        if len(node.args) != n:
            raise self.syntax_error(node, f"{node.func.id}() takes {n} argument(s), "
                                          f"{len(node.args)} given")

    def atomic(self, node, fname):
        op = ATOMICS[fname]
        loc = self.loc(node)
        self.nargs(node, 4 if op is AtomicOp.CAS else 3)
        arr = self.array_ref(node.args[0])
        index = self.expr(node.args[1])
        if not index.type.is_int:
            raise self.type_error(node.args[1], f"an array index must be an integer, not {index.type}")
        t = arr.type.elem
        if t not in ATOMIC_TYPES[op]:
            ok = ", ".join(x.name for x in ATOMIC_TYPES[op])
            raise self.type_error(node, f"GPUs have no atomic_{op.value} on {t} elements",
                                  f"atomic_{op.value} exists for {ok}")
        args = [self.convert(self.expr(a), t, a, f"atomic_{op.value}'s operand")
                for a in node.args[2:]]
        compare, value = (args[0], args[1]) if op is AtomicOp.CAS else (None, args[0])
        return ir.Atomic(type=t, loc=loc, op=op, array=arr, index=index, value=value,
                         compare=compare)

    def device_call(self, node, target, statement):
        loc = self.loc(node)
        if target.pyfunc.__qualname__ in self.compiling:
            raise self.syntax_error(node, f"'{node.func.id}' calls itself; recursion is not "
                                          "supported on the GPU", "write it as a loop")
        fn = target.build(self.compiling)
        if len(node.args) != len(fn.params):
            raise self.type_error(node, f"'{fn.name}' takes {len(fn.params)} argument(s), "
                                        f"{len(node.args)} given")
        args = []
        for p, a in zip(fn.params, node.args):
            if isinstance(p.type, ArrayType):
                ref = self.array_ref(a)
                # A shared array may be passed too: CUDA's generic pointers reach both.
                if ref.type.elem != p.type.elem:
                    raise self.type_error(a, f"parameter '{p.name}' of '{fn.name}' is "
                                             f"{p.type!r}, not {ref.type!r}")
                args.append(ref)
            else:
                args.append(self.convert(self.expr(a), p.type, a,
                                         f"parameter '{p.name}' of '{fn.name}'"))
        if fn.return_type is None and not statement:
            raise self.type_error(node, f"'{fn.name}' returns nothing; its call is a statement")
        return ir.Call(type=fn.return_type or i32, loc=loc, function=fn, args=tuple(args))


# --- the intrinsics: one row per name a kernel may call ------------------------------
# Each row compiles a call ``node`` of intrinsic ``fname``; an op of simgpu.ir.ops that
# has no Python operator is reached through a row here (INTRINSIC_OPS, which
# tests/test_op_tables.py checks).  Casts (i32(x), ...) and device functions are
# resolved before and after this table, by what the name refers to.

def _min_max(c, node, fname):
    if len(node.args) < 2:
        raise c.syntax_error(node, f"{fname}() takes two or more arguments")
    op = INTRINSIC_OPS[fname]
    result = c.expr(node.args[0])
    for a in node.args[1:]:
        result = c.binary(node, op, result, c.expr(a))
    return result


def _abs(c, node, fname):
    c.nargs(node, 1)
    loc = c.loc(node)
    operand = c.expr(node.args[0])
    t = promote(operand.type)
    return ir.Unary(type=t, loc=loc, op=INTRINSIC_OPS[fname], operand=cast(operand, t, loc))


def _syncthreads_in_expression(c, node, fname):
    raise c.syntax_error(node, "syncthreads() is a statement on its own line")


def _shared_array_in_expression(c, node, fname):
    raise c.syntax_error(node, "write 'name = shared_array(T, size)' at the top of the kernel")


INTRINSICS = {
    "min": _min_max,
    "max": _min_max,
    "abs": _abs,
    **{name: ExpressionBuilder.atomic for name in ATOMICS},
    "syncthreads": _syncthreads_in_expression,
    **{name: warp_call for name in WARP_INTRINSICS},
    "shared_array": _shared_array_in_expression,
}

#: The ops of simgpu.ir.ops that kernels reach by calling an intrinsic.
INTRINSIC_OPS = {"min": BinaryOp.MIN, "max": BinaryOp.MAX, "abs": UnaryOp.ABS, **ATOMICS}
