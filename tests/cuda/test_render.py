"""The CUDA C renderer: coverage of every op and IR node, and the C it writes.

These tests need neither nvcc nor a GPU; test_nvcc.py compiles the output.
"""
import dataclasses
import re

import pytest

from cuda_backend import render as R
from cuda_backend.render import (CudaRenderer, RenderError, c_literal, covered_atomic_types,
                                 covered_ops, kernel_symbol, render, render_module)
from simgpu.ir import nodes as ir
from simgpu.ir.ops import (ATOMIC_TYPES, INT_ONLY, AtomicOp, BinaryOp, CompareOp, LogicalOp,
                           UnaryOp)
from simgpu.ir.types import SCALAR_TYPES, f32, f64, i8, i16, i32, i64, promote, u8, u32, u64

from . import kernels_for_render as K

KERNEL_LINES = open(K.__file__).read().splitlines()


def line_of(text: str) -> int:
    """The line number of the one line of kernels_for_render.py that holds ``text``."""
    found = [n for n, ln in enumerate(KERNEL_LINES, 1) if text in ln]
    assert len(found) == 1, (text, found)
    return found[0]


# --- coverage: a new op, atomic type or node class without a C rendering fails here ---

@pytest.mark.parametrize("enum", [BinaryOp, UnaryOp, CompareOp, LogicalOp, AtomicOp])
def test_every_op_has_a_c_rendering(enum):
    assert covered_ops()[enum] == set(enum)


def test_atomic_table_matches_the_legal_pairs():
    legal = {(op, t) for op, types in ATOMIC_TYPES.items() for t in types}
    assert covered_atomic_types() == legal


def test_every_ir_node_class_has_a_renderer_method():
    stmts = {c.__name__ for c in ir.STMT_NODES}
    exprs = {c.__name__ for c in ir.EXPR_NODES}
    assert stmts == {m[5:] for m in dir(CudaRenderer) if m.startswith("emit_")}
    assert exprs == {m[5:] for m in dir(CudaRenderer) if m.startswith("expr_")}


OPERAND_TYPES = sorted({promote(t) for t in SCALAR_TYPES.values()} | {f32, f64}, key=str)


@pytest.mark.parametrize("op", list(BinaryOp))
def test_every_binary_op_renders_for_every_type_the_front_end_allows(op):
    for t in OPERAND_TYPES:
        if (op in INT_ONLY and t.is_float) or (op is BinaryOp.DIV and not t.is_float):
            continue
        text = CudaRenderer().binary_text(op, t, "a", "b", None)
        assert "a" in text and "b" in text


@pytest.mark.parametrize("op", list(UnaryOp))
def test_every_unary_op_renders_for_every_type(op):
    for t in OPERAND_TYPES:
        if op is UnaryOp.INVERT and t.is_float:
            continue
        assert R._template(R.UNARY_C, op, t, None)


# --- golden-ish checks on small kernels -----------------------------------------

def test_elementwise_kernel():
    src = render(K.elementwise)
    assert 'extern "C" __global__ void elementwise(int32_t* a, int32_t* out, int32_t n) {' in src
    assert "    int32_t i = 0;\n" in src                       # hoisted, zero-initialized
    line = line_of("out[i] = a[i] * 2 + 1")
    assert f"// kernels_for_render.py:{line}: out[i] = a[i] * 2 + 1\n" in src
    assert "out[i] = add_i32(mul_i32(a[i], 2), 1);" in src
    assert "i = add_i32(mul_i32((int32_t)blockIdx.x, (int32_t)blockDim.x), (int32_t)threadIdx.x);" in src
    assert "if (i < n) {" in src
    # helpers are defined once, and only those used
    assert src.count("int32_t add_i32(int32_t a, int32_t b)") == 1
    assert "(int32_t)((uint32_t)a + (uint32_t)b)" in src
    assert "sub_i32(" not in src and "add_i64" not in src


def test_every_statement_is_preceded_by_its_python_line():
    src = render(K.loops)
    lines = src.splitlines()
    fn = K.loops.ir
    stmt_lines = {n.loc.line for n in ir.walk(fn) if isinstance(n, ir.Stmt)}
    for line in stmt_lines:
        assert any(re.search(rf"// kernels_for_render\.py:{line}: ", ln) for ln in lines), line
    # an elif keeps its line as a trailing comment
    assert re.search(r"\} else if \(j > 7\) \{  // kernels_for_render\.py:\d+: elif j > 7:", src)


def test_source_comment_is_safe_for_c():
    loc = ir.Loc("/x/k.py", 3, 0, 1, "    x = 1  # ends with a backslash \\\n")
    assert R.source_comment(loc) == "// k.py:3: x = 1 # ends with a backslash"


def test_atomics_use_exact_overloads():
    src = render_module([K.atomics_i32, K.atomics_i64, K.atomics_u64, K.atomics_float])
    assert "old[0] = atomicAdd(&a[0], i);" in src
    assert "old[5] = atomicCAS(&a[5], 0, i);" in src                # compare, then value
    assert "atomicAdd(&a[9], 1);" in src                             # result unused
    assert ("old[0] = (int64_t)atomicAdd((unsigned long long*)&a[0], (unsigned long long)v);"
            in src)
    assert "old[2] = (int64_t)atomicMin((long long*)&a[2], (long long)v);" in src
    assert "old[3] = (uint64_t)atomicMax((unsigned long long*)&a[3], (unsigned long long)v);" in src
    assert "\n    atomicAdd((unsigned long long*)&a[9], (unsigned long long)v);" in src
    assert "oldd[0] = atomicAdd(&d[0], (double)x);" in src


def test_atomic_sub_on_i32_and_u32():
    assert "atomicSub(&a[1], i)" in render(K.atomics_i32)
    assert "atomicSub(&a[1], v)" in render(K.atomics_u32)


def test_illegal_atomic_is_a_clear_error():
    fn = K.atomics_i64.ir
    store = next(s for s in fn.body if isinstance(s, ir.Store) and isinstance(s.value, ir.Atomic))
    bad = dataclasses.replace(store, value=dataclasses.replace(store.value, op=AtomicOp.SUB))
    broken = dataclasses.replace(fn, body=(bad,))
    with pytest.raises(RenderError, match=r"no atomic_sub on i64 elements \(it exists for i32, u32\)"):
        render(broken)


def test_unknown_node_class_is_a_clear_error():
    @dataclasses.dataclass(frozen=True)
    class Teleport(ir.Stmt):
        pass
    fn = K.elementwise.ir
    broken = dataclasses.replace(fn, body=fn.body + (Teleport(loc=fn.body[0].loc),))
    with pytest.raises(RenderError, match="no emit_Teleport"):
        render(broken)


def test_shared_memory_is_declared_and_used_as_written():
    """No hidden zero-fill and no extra barrier: the kernel's own zeros, its own
    syncthreads() calls and nothing else."""
    src = render(K.block_sum)
    assert "__shared__ int32_t buf[128];" in src and "__shared__ bool flags[32];" in src
    assert "_fill" not in src
    first_stmt = src.index(f"// kernels_for_render.py:{line_of('t = threadIdx.x')}:")
    assert "__syncthreads" not in src[:first_stmt]
    assert src.count("__syncthreads();") == 2                       # the kernel's two
    assert src.index("buf[t] = 0;") < src.index("buf[t] = a[i];")
    assert "buf[t] = add_i32(buf[t], buf[add_i32(t, s)]);" in src   # buf[t] += buf[t + s]
    assert "s = (int32_t)blockDim.x / 2;" in src                    # constant divisor: plain C
    assert "if ((t == 0) && flags[0]) {" in src


def test_kernels_without_shared_memory_do_not_synchronize():
    assert "__syncthreads" not in render(K.elementwise)


def test_device_functions_come_first_callees_before_callers():
    src = render(K.device_calls)
    mix = src.index("__device__ uint32_t mix(uint32_t x) {")
    hash_sum = src.index("__device__ uint32_t hash_sum(uint32_t* data, int32_t start, int32_t count) {")
    bump = src.index("__device__ void bump(int32_t* counter) {")
    kern = src.index('extern "C" __global__ void device_calls(')
    assert mix < hash_sum < kern and bump < kern
    assert "return 1u;" in src and "return h;" in src
    assert "return (x ^ (x >> 16)) * 73244475u;" in src
    assert "out[i] = hash_sum(data, i, min_i32(sub_i32(n, i), 4));" in src
    assert "\n    bump(counter);" in src
    assert "    return;\n    }" in src               # the kernel's early return


def test_module_defines_each_device_function_once():
    src = render_module([K.device_calls, K.hash_only, K.device_calls])
    assert src.count("__device__ uint32_t mix(") == 1
    assert src.count('__global__ void device_calls(') == 1
    assert src.count('__global__ void hash_only(') == 1


def test_device_function_alone():
    src = render(K.hash_sum)
    assert "__device__ uint32_t hash_sum(" in src and "__global__" not in src


def test_for_loops_directions_and_wrapping_step():
    src = render(K.loops)
    assert "for (j = n; j > 0; j = add_i32(j, -2)) {" in src
    assert "for (j = 0; (step > 0 ? j < n : j > n); j = add_i32(j, step)) {" in src
    assert "for (j = 0; j < 10; j = add_i32(j, 1)) {" in src
    assert "while (true) {" in src and "break;" in src and "continue;" in src
    assert "if ((k % 3) == 0) {" in src


def test_striding_loop():
    src = render(K.striding)
    assert "i = add_i32(i, mul_i32((int32_t)gridDim.x, (int32_t)blockDim.x))" in src
    assert "rank[i] = sub_i64(head_rank[owner[i]], rank[i]);" in src


def test_scalar_types_render_with_exact_c_types():
    src = render(K.scalar_types)
    for decl in ["int8_t a8 = (int8_t)0;", "uint16_t b16 = (uint16_t)0;", "int64_t a64 = 0LL;",
                 "uint64_t b64 = 0ull;", "uint32_t b32 = 0u;", "float x = 0.0f;",
                 "double y = 0.0;", "bool flag = false;"]:
        assert decl in src
    assert "div_i32(a32, s)" in src and "mod_i32(a32, s)" in src   # INT_MIN / -1 guarded
    assert "a32 / 7" in src and "a32 % 7" in src                   # constant divisors: plain C
    assert "shl_i32(a32, s)" in src and "shl_i64(a64, s)" in src and "(a64 >> s)" in src
    assert "(b32 << (uint32_t)s)" in src
    assert "neg_i32(a32)" in src and "abs_i32(a32)" in src and ", ~a32)" in src
    assert "min_u64(b64, 3ull)" in src and "max_i64(a64, -3LL)" in src
    assert "__fmul_rn(x, x)" in src and "__dmul_rn(y, y)" in src     # never fused into an FMA
    assert "fminf(x, 0.1f)" in src and "fmaxf(x, (-x))" in src and "fabsf(x)" in src
    assert "fmin(y, 0.1)" in src and "fabs(y)" in src
    assert "(int32_t)x" in src and "(float)b64" in src and "(bool)a32" in src
    assert "(int8_t)add_i32((int32_t)a8, (int32_t)a8)" in src
    assert "bools[1] = (bool)a32 || ((bool)x && (!flag));" in src


def test_select_and_logical():
    src = render(K.select_logical)
    assert "lo = ((i < n) && (a[i] > 0)) ? a[i] : ((i < n) ? neg_i32(a[i]) : 0);" in src
    assert "ok = (i < n) || ((i == 0) && (!(i > 5)));" in src


def test_64_bit_and_extreme_constants():
    src = render(K.constants_64)
    for text in ["out64[0] = 5000000000LL;", "out64[1] = -9223372036854775807LL-1;",
                 "out64[2] = 9223372036854775807LL;", "out64[3] = neg_i64(5000000000LL);",
                 "outu[0] = 18446744073709551615ull;", "out32[0] = -2147483647-1;",
                 "outu32[0] = 4294967295u;", "outf[0] = 0.1f;",
                 "outf[1] = __int_as_float(0xff800000);",     # f32(-3.5e38) is -inf
                 "__longlong_as_double(0x7ff0000000000000LL)"]:
        assert text in src


@pytest.mark.parametrize("value,t,text", [
    (0, i32, "0"), (-5, i32, "(-5)"), (-2**31, i32, "(-2147483647-1)"), (2**31 - 1, i32, "2147483647"),
    (4294967295, u32, "4294967295u"), (5000000000, i64, "5000000000LL"),
    (-2**63, i64, "(-9223372036854775807LL-1)"), (2**64 - 1, u64, "18446744073709551615ull"),
    (-3, i8, "(int8_t)(-3)"), (7, i16, "(int16_t)7"), (255, u8, "(uint8_t)255"),
    (True, SCALAR_TYPES["boolean"], "true"), (0.1, f32, "0.1f"), (2.0, f32, "2.0f"),
    (-1.5, f64, "(-1.5)"), (1e300, f64, "1e+300"), (1e300, f32, "__int_as_float(0x7f800000)"),
    (float("nan"), f64, "__longlong_as_double(0x7ff8000000000000LL)"),
])
def test_c_literal(value, t, text):
    assert c_literal(value, t) == text


def test_c_literal_refuses_values_outside_the_type():
    with pytest.raises(RenderError):
        c_literal(2**31, i32)


def test_narrow_hand_built_binary_is_computed_in_int_and_wrapped_back():
    assert CudaRenderer().binary_text(BinaryOp.MUL, i16, "a", "b", None) == \
        "(int16_t)mul_i32((int32_t)a, (int32_t)b)"


def test_reserved_names_are_renamed():
    src = render(K.double)
    assert kernel_symbol(K.double) == "double_"
    assert 'extern "C" __global__ void double_(int32_t* a, int32_t* out, int32_t n) {' in src
    assert "int32_t char_ = 0;" in src and "out[auto_] = mul_i32(a[auto_], char_);" in src
    assert R.c_identifier("add_i32") == "add_i32_"
    assert R.c_identifier("__x") == "x_" and R.c_identifier("_Tmp") == "Tmp_"
    assert R.c_identifier("x", taken={"x", "x_"}) == "x__"


def test_two_kernels_with_one_name_in_one_module_are_refused():
    other = dataclasses.replace(K.hash_only.ir, name="elementwise")
    with pytest.raises(RenderError, match="two different kernels named 'elementwise'"):
        render_module([K.elementwise, other])


def test_render_refuses_other_objects():
    with pytest.raises(TypeError, match="@kernel"):
        render(42)


# --- on a GPU machine: the rendered kernels compute what the simulator computes ---------

def _differential_cases():
    """(kernel, grid, block, args, outputs to compare) with values where C and Python differ."""
    import numpy as np
    rng = np.random.default_rng(7)
    n = 200

    def ints(dtype, extremes):
        info = np.iinfo(dtype)
        v = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        v[:len(extremes)] = extremes
        return v

    m32, m64 = -2**31, -2**63
    xs32 = ints(np.int32, [m32, m32, m32, 2**31 - 1, -7, 7, -7, 65536, -1, 0])
    ys32 = ints(np.int32, [-1, 1, 0, 1, 2, -2, -2, 65536, m32, 5])
    xs64 = ints(np.int64, [m64, m64, m64, 2**63 - 1, -7, 7, -7, 2**32, -1, 0])
    ys64 = ints(np.int64, [-1, 1, 0, 1, 2, -2, -2, 2**32, m64, 5])
    fx = (rng.standard_normal(n) * 1e3).astype(np.float32)
    fy = (rng.standard_normal(n) * 1e-2).astype(np.float32)
    fx[:6] = [np.nan, 1.0, np.inf, -0.0, 3.0, 1e38]
    fy[:6] = [1.0, np.nan, np.inf, 0.0, 0.1, 1e38]
    fd = rng.standard_normal(n) * 1e200
    fd[:2] = [np.nan, 1e300]
    z = np.zeros
    yield K.int_ops_i32, 4, 64, [xs32, ys32, z(8 * n, np.int32), n]
    yield K.int_ops_i64, 4, 64, [xs64, ys64, z(8 * n, np.int64), n]
    yield K.float_ops, 4, 64, [fx, fy, z(4 * n, np.float32), fd, z(2 * n), n]
    for s in (1, 5, 31):
        arrays = [ints(np.int8, [-128]), ints(np.int16, [-32768]), ints(np.int32, [m32]),
                  ints(np.int64, [m64]), ints(np.uint8, [255]), ints(np.uint16, [65535]),
                  ints(np.uint32, [2**32 - 1]), ints(np.uint64, [2**64 - 1]),
                  np.array([-3.75] + [0.5] * (n - 1), np.float32),
                  np.array([1e9 + 0.5] + [2.0] * (n - 1)), np.array([True] * n)]
        yield K.scalar_types, 1, 1, arrays + [s]
    for n_, step in ((10, 3), (7, -1), (0, 2)):
        yield K.loops, 1, 32, [z(32, np.int32), n_, step]
    yield K.select_logical, 1, 16, [ints(np.int32, [m32, -1, 0, 5])[:16], z(32, np.int32), 9]
    yield K.constants_64, 1, 1, [z(4, np.int64), z(2, np.uint64), z(3, np.int32), z(1, np.uint32),
                                 z(2, np.float32), z(3)]
    yield K.block_sum, 3, 128, [ints(np.int32, [m32, m32]), z(3, np.int32), n]
    data = ints(np.uint32, [0, 1])
    yield K.device_calls, 4, 64, [data, z(n, np.uint32), z(1, np.int32), n]
    yield K.hash_only, 4, 64, [data, z(n, np.uint32), n]
    yield K.elementwise, 4, 64, [xs32, z(n, np.int32), n]
    yield K.striding, 2, 32, [xs64.copy(), rng.integers(0, n, n, dtype=np.int32), ys64, n]
    yield K.thread_geometry, (2, 3, 1), (4, 2, 3), [z(6 * 24, np.int32)]
    yield K.double, 4, 64, [xs32, z(n, np.int32), n]
    halves = [np.concatenate([z(n, a.dtype), a]) for a in (
        ints(np.int8, [-128]), ints(np.int16, [-32768]), xs32, xs64, ints(np.uint8, [255]),
        ints(np.uint16, [0]), ints(np.uint32, [2**32 - 1]), ints(np.uint64, [2**64 - 1]),
        fx, fd, rng.integers(0, 2, n).astype(bool))]
    yield K.fresh_loads, 2, 128, halves + [n]
    for kern, dtype in ((K.atomics_i32, np.int32), (K.atomics_u32, np.uint32),
                        (K.atomics_i64, np.int64), (K.atomics_u64, np.uint64)):
        yield kern, 1, 1, [ints(dtype, [])[:10], z(10, dtype)]     # one thread: deterministic
    yield K.atomics_float, 1, 1, [z(2, np.float32) + 1, z(1) + 2, z(2, np.float32), z(1)]
    w = 128
    yield K.warp_intrinsics, 2, 64, [rng.integers(-2000, 2000, w, dtype=np.int32),
                                     rng.standard_normal(w), ints(np.uint64, [2**64 - 1])[:w],
                                     z(10 * w, np.int32), z(w), z(w, np.uint64),
                                     z(6 * w, np.uint32)]


@pytest.mark.gpu
def test_rendered_kernels_match_the_simulator_on_a_gpu():
    import numpy as np
    cupy = pytest.importorskip("cupy")
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # pragma: no cover
        pytest.skip(f"no CUDA device: {exc}")
    import simgpu
    sim = simgpu.get_device("sim:h100")
    module = cupy.RawModule(code=render_module(K.ALL), options=("--std=c++17",))
    failures = []
    for case, (kern, grid, block, args) in enumerate(_differential_cases()):
        sim_args = [sim.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        sim.launch(kern, grid, block, *sim_args)
        fn = kern.ir
        gpu_args = [cupy.asarray(a) if isinstance(a, np.ndarray)
                    else np.array(a, dtype=p.type.dtype)[()] for a, p in zip(args, fn.params)]
        dims = [tuple(d) if isinstance(d, tuple) else (d,) for d in (grid, block)]
        module.get_function(kernel_symbol(kern))(dims[0], dims[1], tuple(gpu_args))
        cupy.cuda.Device().synchronize()
        for p, s, g in zip(fn.params, sim_args, gpu_args):
            if not isinstance(g, cupy.ndarray):
                continue
            want, got = s.to_host(), cupy.asnumpy(g)
            if not np.array_equal(want, got, equal_nan=want.dtype.kind == "f"):
                bad = np.flatnonzero(~((want == got) | (np.isnan(want) & np.isnan(got))
                                       if want.dtype.kind == "f" else want == got))
                failures.append(f"case {case} {kern.name}.{p.name}[{bad[:5].tolist()}]: "
                                f"sim {want[bad[:5]].tolist()} gpu {got[bad[:5]].tolist()}")
    assert not failures, "\n".join(failures)
