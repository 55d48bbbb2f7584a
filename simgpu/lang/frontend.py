"""Python AST -> typed IR: one ``visit_*`` method per accepted Python node.

Anything without a visitor is outside the kernel language and becomes a
:class:`KernelSyntaxError` that names the construct and points at it.  Types
follow C (see ``simgpu.ir.types``); every implicit conversion becomes an
explicit :class:`~simgpu.ir.nodes.Cast` so the backends never guess.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap

from ..ir import nodes as ir
from ..ir.fresh import mark_fresh_loads
from ..ir.uniform import mark_uniform_atomics
from ..ir.ops import PY_BINARY
from ..ir.types import SCALAR_TYPES, ArrayType, ScalarType, common_type, converts_safely, i32
from .errors import KernelSyntaxError, KernelTypeError
# Expressions, calls and the intrinsics' table, and the pure helpers on IR, live in
# their own modules; their names stay importable from here (lang.warp imports cast).
from .expressions import (ATOMICS, INTRINSIC_OPS, INTRINSICS, SPECIALS,  # noqa: F401
                          ExpressionBuilder)
from .ir_helpers import cast, const_fits, invariant, truth  # noqa: F401
from .warp import syncwarp_stmt

# Names the kernel language gives a meaning to: a variable or parameter of that name
# would silently change what later uses of it mean, so it is refused where it is made.
# Every intrinsic (min, max, abs, the atomics, syncthreads, the warp intrinsics,
# shared_array) is a key of INTRINSICS.
BUILTIN_NAMES = frozenset({"range", "FULL_MASK", "Array", *INTRINSICS})

# Readable names of constructs the kernel language does not have.
CONSTRUCT_NAMES = {
    ast.ListComp: "a list comprehension", ast.DictComp: "a dict comprehension",
    ast.SetComp: "a set comprehension", ast.GeneratorExp: "a generator expression",
    ast.Lambda: "a lambda", ast.With: "a 'with' statement", ast.Try: "a 'try' statement",
    ast.Raise: "a 'raise' statement", ast.Assert: "an 'assert' statement",
    ast.Import: "an import", ast.ImportFrom: "an import", ast.Global: "a 'global' statement",
    ast.Nonlocal: "a 'nonlocal' statement", ast.Delete: "a 'del' statement",
    ast.List: "a list", ast.Tuple: "a tuple", ast.Dict: "a dict", ast.Set: "a set",
    ast.JoinedStr: "an f-string", ast.Await: "'await'", ast.Yield: "'yield'",
    ast.FunctionDef: "a nested function", ast.ClassDef: "a class definition",
    ast.Starred: "a starred expression", ast.NamedExpr: "the walrus operator ':='",
    ast.Slice: "a slice", ast.Match: "a 'match' statement",
}


class Scope:
    """Names visible in the function being compiled."""

    def __init__(self, params: dict):
        self.params = params                 # name -> ScalarType | ArrayType
        self.locals: dict = {}               # name -> ScalarType (incl. hidden)
        self.shared: dict = {}               # name -> ArrayType
        self.dead_loop_vars: dict = {}       # name -> line of the for loop that ended


class FunctionBuilder(ExpressionBuilder, ast.NodeVisitor):
    """Builds the IR of one kernel or device function."""

    def __init__(self, pyfunc, is_kernel: bool, compiling: tuple = ()):
        self.pyfunc = pyfunc
        self.is_kernel = is_kernel
        self.compiling = compiling + (pyfunc.__qualname__,)
        self.file = inspect.getsourcefile(pyfunc) or "<unknown>"
        lines, self.first_line = inspect.getsourcelines(pyfunc)
        raw = "".join(lines)
        dedented = textwrap.dedent(raw)
        self.indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != raw else 0
        self.tree = ast.parse(dedented).body[0]
        self.namespace = dict(pyfunc.__globals__)
        self.namespace.update(inspect.getclosurevars(pyfunc).nonlocals)
        self.loop_depth = 0
        self.hidden = 0
        self.used_names = {n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name)}

    # --- locations and errors ---------------------------------------------

    def loc(self, node) -> ir.Loc:
        line = self.first_line + node.lineno - 1
        text = linecache.getline(self.file, line) or ast.unparse(node)
        end_line = getattr(node, "end_lineno", node.lineno)
        end_col = node.end_col_offset + self.indent if end_line == node.lineno else len(text.rstrip())
        return ir.Loc(self.file, line, node.col_offset + self.indent, end_col, text)

    def syntax_error(self, node, what, hint=None):
        return KernelSyntaxError(what, self.loc(node), hint)

    def type_error(self, node, what, hint=None):
        return KernelTypeError(what, self.loc(node), hint)

    def generic_visit(self, node):
        name = CONSTRUCT_NAMES.get(type(node), f"'{type(node).__name__}'")
        raise self.syntax_error(node, f"{name} is not part of the kernel language",
                                "kernels use assignments, if/while/for-range, arithmetic, "
                                "array indexing and the intrinsics listed in the docs")

    # --- the function -------------------------------------------------------

    def build(self) -> ir.Function:
        fn = self.tree
        if not isinstance(fn, ast.FunctionDef):
            raise self.syntax_error(fn, "only plain 'def' functions can be kernels")
        args = fn.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
            raise self.syntax_error(fn, "kernel parameters must be plain positional parameters "
                                        "without defaults, *args or **kwargs")
        try:
            annotations = inspect.get_annotations(self.pyfunc, eval_str=True)
        except Exception as exc:  # an annotation that does not evaluate
            raise self.type_error(fn, f"cannot evaluate the annotations of '{fn.name}': {exc}")
        params = {}
        for a in args.args:
            if a.arg in BUILTIN_NAMES or a.arg in SPECIALS or a.arg in SCALAR_TYPES \
                    or a.arg == "warp_size":
                raise self.syntax_error(a, f"parameter '{a.arg}' would hide the kernel language's "
                                           f"built-in '{a.arg}'",
                                        f"choose another name, e.g. '{a.arg}_'")
            t = annotations.get(a.arg)
            if not isinstance(t, (ScalarType, ArrayType)):
                raise self.type_error(a, f"parameter '{a.arg}' needs a type annotation such as "
                                         f"'{a.arg}: i32' or '{a.arg}: Array[i32]'"
                                      + ("" if t is None else f", not {t!r}"))
            params[a.arg] = t
        ret = annotations.get("return")
        if self.is_kernel and ret is not None:
            raise self.type_error(fn, "a kernel returns nothing; write results to an array")
        if not self.is_kernel and ret is not None and not isinstance(ret, ScalarType):
            raise self.type_error(fn, f"a device function returns a scalar type, not {ret!r}")
        self.return_type = ret
        self.scope = Scope(params)
        body = list(fn.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]                                   # the docstring
        stmts = self.block(body, top=True)
        if ret is not None and not (stmts and isinstance(stmts[-1], ir.Return)):
            raise self.syntax_error(fn.body[-1], f"device function '{fn.name}' returns {ret} "
                                    "and must end with a 'return' statement")
        return mark_uniform_atomics(mark_fresh_loads(ir.Function(
            name=fn.name, params=tuple(ir.Param(n, t) for n, t in params.items()),
            return_type=ret, body=tuple(stmts), locals=tuple(self.scope.locals.items()),
            shared=tuple(self.scope.shared.items()), is_kernel=self.is_kernel, loc=self.loc(fn))))

    def block(self, stmts, top=False) -> list:
        out = []
        for s in stmts:
            self.top = top
            out.extend(self.visit(s))
        return out

    # --- statements (each returns a list of IR statements) ------------------

    def visit_Pass(self, node):
        return []

    def visit_Expr(self, node):
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "syncthreads":
            if call.args or call.keywords:
                raise self.syntax_error(call, "syncthreads() takes no arguments")
            return [ir.SyncThreads(loc=self.loc(node))]
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "syncwarp":
            return [syncwarp_stmt(self, call, self.loc(node))]
        if not isinstance(call, ast.Call):
            raise self.syntax_error(node, "an expression on its own does nothing",
                                    "assign it to a variable or an array element")
        return [ir.ExprStmt(loc=self.loc(node), expr=self.expr(call, statement=True))]

    def visit_Assign(self, node):
        if len(node.targets) != 1 or isinstance(node.targets[0], (ast.Tuple, ast.List)):
            raise self.syntax_error(node, "only single assignments 'x = ...' are supported",
                                    "write one assignment per line")
        target = node.targets[0]
        if isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) == "shared_array":
            return self.shared_decl(target, node.value)
        return self.assign(target, node.value, node)

    def visit_AnnAssign(self, node):
        t = self.eval_annotation(node.annotation)
        if not isinstance(node.target, ast.Name) or node.value is None:
            raise self.syntax_error(node, "annotated assignments must be 'name: type = value'")
        name = node.target.id
        self.check_assignable(node.target, name)
        if name in self.scope.locals and self.scope.locals[name] != t:
            raise self.type_error(node, f"'{name}' is already a {self.scope.locals[name]} variable")
        self.scope.locals[name] = t
        return self.assign(node.target, node.value, node)

    def visit_AugAssign(self, node):
        op = PY_BINARY.get(type(node.op))
        if op is None:
            raise self.syntax_error(node, f"operator {type(node.op).__name__} is not supported")
        loc = self.loc(node)
        if isinstance(node.target, ast.Name):
            cur = self.name(node.target)
            value = self.binary(node, op, cur, self.expr(node.value))
            # C's compound assignment converts back to the target's type: E1 = (T1)(E1 op E2).
            return [ir.Assign(loc=loc, name=node.target.id, value=cast(value, cur.type, loc))]
        if isinstance(node.target, ast.Subscript):
            arr = self.array_ref(node.target.value)
            index = self.index(node.target)
            pre = []
            if not isinstance(index, (ir.Var, ir.Const, ir.Special)):
                tmp = self.hidden_local("idx", index.type)      # address computed once
                pre.append(ir.Assign(loc=loc, name=tmp, value=index))
                index = ir.Var(type=index.type, loc=loc, name=tmp)
            cur = ir.Load(type=arr.type.elem, loc=loc, array=arr, index=index)
            value = self.binary(node, op, cur, self.expr(node.value))
            return pre + [ir.Store(loc=loc, array=arr, index=index,
                                   value=cast(value, arr.type.elem, loc))]
        raise self.syntax_error(node.target, "only variables and array elements can be assigned")

    def visit_If(self, node):
        cond = truth(self.expr(node.test), self.loc(node.test))
        return [ir.If(loc=self.loc(node), cond=cond, then=tuple(self.block(node.body)),
                      orelse=tuple(self.block(node.orelse)))]

    def visit_While(self, node):
        if node.orelse:
            raise self.syntax_error(node, "'while ... else' is not supported")
        cond = truth(self.expr(node.test), self.loc(node.test))
        self.loop_depth += 1
        body = self.block(node.body)
        self.loop_depth -= 1
        return [ir.While(loc=self.loc(node), cond=cond, body=tuple(body))]

    def visit_For(self, node):
        loc = self.loc(node)
        if node.orelse:
            raise self.syntax_error(node, "'for ... else' is not supported")
        it = node.iter
        if not (isinstance(it, ast.Call) and getattr(it.func, "id", None) == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords):
            raise self.syntax_error(it, "for loops run over range(stop), range(start, stop) "
                                        "or range(start, stop, step) only")
        if not isinstance(node.target, ast.Name):
            raise self.syntax_error(node.target, "the loop variable must be a plain name")
        args = [self.expr(a) for a in it.args]
        for a, src in zip(args, it.args):
            if not a.type.is_int:
                raise self.type_error(src, f"range() takes integers, not {a.type}")
        if len(args) == 1:
            args = [ir.Const(type=i32, loc=loc, value=0)] + args
        if len(args) == 2:
            args.append(ir.Const(type=i32, loc=loc, value=1))
        start, stop, step = args
        if isinstance(step, ir.Const) and step.value == 0:
            raise self.syntax_error(it.args[2], "range() step must not be zero")
        var = node.target.id
        self.check_assignable(node.target, var)
        t = common_type(common_type(start.type, stop.type), step.type)
        if var in self.scope.locals:
            t = self.scope.locals[var]
            for a, src in zip((start, stop, step), it.args):
                if not converts_safely(a.type, t) and not const_fits(a, t):
                    raise self.type_error(src, f"range bound of type {a.type} does not fit the "
                                               f"loop variable '{var}' of type {t}")
        self.scope.locals[var] = t
        self.scope.dead_loop_vars.pop(var, None)
        assigned = {n.id for s in node.body for n in ast.walk(s)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        pre = []
        bounds = []
        for kind, e in (("stop", stop), ("step", step)):
            e = cast(e, t, loc)
            if not invariant(e, assigned | {var}):           # evaluated once, as Python's range
                tmp = self.hidden_local(kind, t)
                pre.append(ir.Assign(loc=loc, name=tmp, value=e))
                e = ir.Var(type=t, loc=loc, name=tmp)
            bounds.append(e)
        self.loop_depth += 1
        body = self.block(node.body)
        self.loop_depth -= 1
        # In C the variable ends one step past the last value, in Python on it:
        # reading it after the loop would differ between backends, so it is refused.
        self.scope.dead_loop_vars[var] = node.lineno + self.first_line - 1
        return pre + [ir.For(loc=loc, var=var, start=cast(start, t, loc), stop=bounds[0],
                             step=bounds[1], body=tuple(body))]

    def visit_Break(self, node):
        if not self.loop_depth:
            raise self.syntax_error(node, "'break' outside a loop")
        return [ir.Break(loc=self.loc(node))]

    def visit_Continue(self, node):
        if not self.loop_depth:
            raise self.syntax_error(node, "'continue' outside a loop")
        return [ir.Continue(loc=self.loc(node))]

    def visit_Return(self, node):
        loc = self.loc(node)
        if self.return_type is None:
            if node.value is not None:
                what = "a kernel" if self.is_kernel else "this device function (no return annotation)"
                raise self.type_error(node, f"{what} cannot return a value",
                                      None if self.is_kernel else "annotate it: def f(...) -> i32:")
            return [ir.Return(loc=loc)]
        if node.value is None:
            raise self.type_error(node, f"this device function must return a {self.return_type}")
        return [ir.Return(loc=loc, value=self.convert(self.expr(node.value), self.return_type,
                                                      node.value, "the return value"))]

    # --- assignment helpers -------------------------------------------------

    def assign(self, target, value_node, node):
        loc = self.loc(node)
        if isinstance(target, ast.Subscript):
            arr = self.array_ref(target.value)
            index = self.index(target)
            value = self.convert(self.expr(value_node), arr.type.elem, value_node,
                                 f"an element of '{arr.name}'")
            return [ir.Store(loc=self.loc(target), array=arr, index=index, value=value)]
        if not isinstance(target, ast.Name):
            raise self.syntax_error(target, "only variables and array elements can be assigned")
        name = target.id
        self.check_assignable(target, name)
        value = self.expr(value_node)
        current = self.scope.locals.get(name) or self.scope.params.get(name)
        if current is None:
            self.scope.locals[name] = value.type      # a local takes its first value's type
        else:
            value = self.convert(value, current, value_node, f"'{name}'")
        self.scope.dead_loop_vars.pop(name, None)
        return [ir.Assign(loc=loc, name=name, value=value)]

    def check_assignable(self, target, name):
        if isinstance(self.scope.params.get(name), ArrayType) or name in self.scope.shared:
            raise self.syntax_error(target, f"'{name}' is an array and cannot be reassigned",
                                    f"assign to an element: {name}[i] = ...")
        if name in SPECIALS or name in SCALAR_TYPES or name == "warp_size":
            raise self.syntax_error(target, f"'{name}' is a built-in name and cannot be assigned")
        if name in BUILTIN_NAMES:
            raise self.syntax_error(target, f"'{name}' is a built-in of the kernel language; a "
                                            f"variable of that name would hide it",
                                    f"choose another name, e.g. '{name}_'")

    def shared_decl(self, target, call):
        if not self.is_kernel or not self.top:
            raise self.syntax_error(call, "shared_array(...) is declared at the top level of a kernel")
        if not isinstance(target, ast.Name) or len(call.args) != 2:
            raise self.syntax_error(call, "write 'name = shared_array(T, size)'")
        t = self.eval_annotation(call.args[0])
        size = self.const_value(call.args[1])
        if not isinstance(t, ScalarType):
            raise self.type_error(call.args[0], f"shared_array(T, size): T must be a scalar type "
                                                f"such as i32 or f32, not {ast.unparse(call.args[0])}")
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise self.type_error(call.args[1], f"shared_array(T, size): the size must be a "
                                                f"positive integer constant, not {size!r}",
                                  "the number of elements of the block's array, e.g. 256")
        name = target.id
        if name in BUILTIN_NAMES:
            self.check_assignable(target, name)
        if name in self.scope.locals or name in self.scope.params or name in self.scope.shared:
            raise self.syntax_error(target, f"'{name}' is already defined")
        self.scope.shared[name] = ArrayType(t, "shared", size)
        return []

    def hidden_local(self, kind, t) -> str:
        while True:
            name = f"_{kind}{self.hidden}"
            self.hidden += 1
            if name not in self.used_names and name not in self.scope.locals:
                self.scope.locals[name] = t
                return name

    def convert(self, value, t, node, what):
        """Implicit conversion on assignment: only where no value can change."""
        if value.type == t:
            return value
        if converts_safely(value.type, t) or const_fits(value, t):
            return cast(value, t, value.loc)
        raise self.type_error(node, f"cannot assign a {value.type} value to {what} of type {t} "
                                    "implicitly: the value could change",
                              f"write the conversion you mean: {t.name}(...)")

    # --- small evaluators ----------------------------------------------------

    def eval_annotation(self, node):
        try:
            return eval(compile(ast.Expression(node), self.file, "eval"), self.namespace)
        except Exception:
            raise self.type_error(node, f"'{ast.unparse(node)}' is not a type of the kernel "
                                        "language", "use i32, u64, f32, Array[i32], ...")

    def const_value(self, node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.const_value(node.operand)           # -4: a constant, to say it is < 0
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.Name) and isinstance(self.namespace.get(node.id), int):
            return self.namespace[node.id]
        raise self.syntax_error(node, "a compile-time constant is needed here")
