"""Every error class names the file and line, shows the line with a caret, and says what to do."""
import numpy as np
import pytest

from simgpu.lang import (Array, KernelRuntimeError, KernelSyntaxError, KernelTypeError,
                         LaunchError, atomic_add, blockDim, blockIdx, device_function, f32,
                         i16, i32, i64, kernel, shared_array, syncthreads, threadIdx, u8, u32)

HERE = __file__


def error_of(kern, cls):
    with pytest.raises(cls) as info:
        kern.ir
    return info.value


def assert_points_at(err, text, caret_under=None):
    """The message has file:line, the offending source line, and a caret under ``caret_under``."""
    msg = str(err)
    lines = msg.splitlines()
    assert lines[0].startswith(f"{HERE}:{err.loc.line}:"), msg
    assert lines[1].strip() == text, msg
    caret = lines[2]
    assert set(caret.strip()) == {"^"}, msg
    if caret_under is not None:
        start = lines[1].index(caret_under)
        assert caret.index("^") == start, msg
        assert len(caret.strip()) == len(caret_under), msg
    with open(HERE) as f:
        assert f.read().splitlines()[err.loc.line - 1].strip() == text


# --- syntax: constructs outside the subset ---------------------------------------

def test_list_comprehension():
    @kernel
    def k(a: Array[i32]):
        x = [v for v in range(3)]
    err = error_of(k, KernelSyntaxError)
    assert "list comprehension is not part of the kernel language" in str(err)
    assert_points_at(err, "x = [v for v in range(3)]", "[v for v in range(3)]")


def test_while_else_and_tuple_assign():
    @kernel
    def k1(a: Array[i32]):
        while a[0] > 0:
            a[0] -= 1
        else:
            a[0] = 5
    assert "'while ... else' is not supported" in str(error_of(k1, KernelSyntaxError))

    @kernel
    def k2(a: Array[i32]):
        x, y = 1, 2
    err = error_of(k2, KernelSyntaxError)
    assert "hint: write one assignment per line" in str(err)
    assert_points_at(err, "x, y = 1, 2")


def test_non_range_loop_and_undefined_name():
    @kernel
    def k1(a: Array[i32], n: i32):
        for x in a:
            pass
    err = error_of(k1, KernelSyntaxError)
    assert "range(" in str(err)
    assert_points_at(err, "for x in a:", "a")

    @kernel
    def k2(a: Array[i32]):
        a[0] = undefined_thing + 1
    err = error_of(k2, KernelSyntaxError)
    assert "name 'undefined_thing' is not defined" in str(err)
    assert_points_at(err, "a[0] = undefined_thing + 1", "undefined_thing")


def test_loop_variable_after_loop():
    @kernel
    def k(a: Array[i32], n: i32):
        for j in range(n):
            a[j] = 0
        a[0] = j
    err = error_of(k, KernelSyntaxError)
    assert "cannot be read after that loop ends" in str(err)
    assert_points_at(err, "a[0] = j", "j")


def test_syncthreads_in_expression_and_recursion():
    @kernel
    def k(a: Array[i32]):
        a[0] = syncthreads()
    assert "statement on its own line" in str(error_of(k, KernelSyntaxError))

    @device_function
    def loop_forever(x: i32) -> i32:
        return loop_forever(x)

    @kernel
    def k2(a: Array[i32]):
        a[0] = loop_forever(1)
    err = error_of(k2, KernelSyntaxError)
    assert "recursion" in str(err) and "hint: write it as a loop" in str(err)


def test_calling_a_python_function():
    @kernel
    def k(a: Array[i32]):
        a[0] = len(a)
    err = error_of(k, KernelSyntaxError)
    assert "'len' cannot be called in a kernel" in str(err)
    assert_points_at(err, "a[0] = len(a)", "len(a)")


# --- types ---------------------------------------------------------------------

def test_integer_true_division_says_what_to_write():
    @kernel
    def k(a: Array[i32], n: i32):
        a[0] = n / 2
    err = error_of(k, KernelTypeError)
    assert "'/' on integers" in str(err) and "write '//'" in str(err)
    assert_points_at(err, "a[0] = n / 2", "n / 2")


def test_narrowing_assignment_needs_a_cast():
    @kernel
    def k(small: Array[i16], n: i32):
        small[0] = n
    err = error_of(k, KernelTypeError)
    assert "cannot assign a i32 value to an element of 'small' of type i16" in str(err)
    assert "hint: write the conversion you mean: i16(...)" in str(err)
    assert_points_at(err, "small[0] = n", "n")

    @kernel
    def k2(a: Array[i32], n: i64):
        x = 0
        x = n
    assert "cannot assign a i64 value to 'x' of type i32" in str(error_of(k2, KernelTypeError))


def test_signed_to_unsigned_needs_a_cast():
    @kernel
    def k(a: Array[u32], n: i32):
        a[0] = n
    assert "hint: write the conversion you mean: u32(...)" in str(error_of(k, KernelTypeError))


def test_float_index_and_bitwise_on_float():
    @kernel
    def k(a: Array[i32], x: f32):
        a[x] = 1
    err = error_of(k, KernelTypeError)
    assert "an array index must be an integer, not f32" in str(err)

    @kernel
    def k2(a: Array[i32], x: f32):
        a[0] = i32(x & 1)
    assert "needs integer operands" in str(error_of(k2, KernelTypeError))


def test_missing_annotation_and_returning_kernel():
    @kernel
    def k(a, n: i32):
        pass
    err = error_of(k, KernelTypeError)
    assert "parameter 'a' needs a type annotation" in str(err)

    @kernel
    def k2(a: Array[i32]):
        return 1
    assert "a kernel cannot return a value" in str(error_of(k2, KernelTypeError))


def test_atomic_the_hardware_lacks():
    @kernel
    def k(a: Array[u8]):
        atomic_add(a, 0, 1)
    err = error_of(k, KernelTypeError)
    assert "GPUs have no atomic_add on u8 elements" in str(err)
    assert "i32, u32" in str(err)


def test_device_function_must_end_with_return():
    @device_function
    def f(x: i32) -> i32:
        if x > 0:
            return x

    @kernel
    def k(a: Array[i32]):
        a[0] = f(a[0])
    assert "must end with a 'return'" in str(error_of(k, KernelSyntaxError))


# --- run time --------------------------------------------------------------------

@kernel
def write_past_end(a: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    a[i + 1] = i


def test_out_of_bounds_names_block_thread_index_array(dev):
    a = dev.zeros(100, np.int32)
    with pytest.raises(KernelRuntimeError) as info:
        dev.launch(write_past_end, 2, 64, a, 100)
    msg = str(info.value)
    assert "index 100 is out of bounds for array 'a' of length 100" in msg
    assert "block (1, 0, 0), thread (35, 0, 0)" in msg      # global thread 99 writes a[100]
    assert "(and 28 more lanes)" in msg
    assert_points_at(info.value, "a[i + 1] = i", "a[i + 1]")


@kernel
def half_block_barrier(a: Array[i32]):
    t = threadIdx.x
    if t < 16:
        syncthreads()
    a[t] = t


@pytest.mark.parametrize("engine", ["lockstep", "warps"])
def test_divergent_barrier(dev, engine):
    a = dev.zeros(64, np.int32)
    with pytest.raises(KernelRuntimeError) as info:
        dev.launch(half_block_barrier, 1, 64, a, engine=engine)
    msg = str(info.value)
    assert "syncthreads() reached by only part of a block" in msg
    assert "(16, 0, 0)" in msg
    assert_points_at(info.value, "syncthreads()")


@kernel
def divide(a: Array[i32], d: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        a[i] = a[i] // d[i]


@kernel
def shift(a: Array[i32], s: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        a[i] = a[i] << s[i]


def test_division_by_zero_and_bad_shift(dev):
    d = np.ones(40, np.int32)
    d[37] = 0
    with pytest.raises(KernelRuntimeError) as info:
        dev.launch(divide, 1, 64, dev.zeros(40, np.int32), dev.to_device(d), 40)
    assert "integer division by zero" in str(info.value)
    assert "thread (37, 0, 0)" in str(info.value)
    assert_points_at(info.value, "a[i] = a[i] // d[i]", "a[i] // d[i]")

    s = np.zeros(40, np.int32)
    s[5] = 32
    with pytest.raises(KernelRuntimeError) as info:
        dev.launch(shift, 1, 64, dev.zeros(40, np.int32), dev.to_device(s), 40)
    assert "shift count out of range for a 32-bit value" in str(info.value)
    assert "thread (5, 0, 0)" in str(info.value)


# --- launch checks ---------------------------------------------------------------------

@kernel
def fill(a: Array[i32], v: i32, n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        a[i] = v


def test_launch_checks_change_no_data(dev):
    host = np.arange(10, dtype=np.int32)
    a = dev.to_device(host)
    bad_launches = [
        ((1, 1024, a, 7, 10), "has 1024 threads; sim:gtx260 allows at most 512"),
        ((1, 32, a, 7), "takes 3 arguments (a, v, n), 2 given"),
        ((1, 32, host, 7, 10), "must be a device array of i32, not ndarray (copy it first"),
        ((1, 32, dev.zeros(10, np.int64), 7, 10), "holds int64"),
        ((1, 32, a, 2**40, 10), "does not fit i32"),
        ((1, 32, a, 1.5, 10), "must be an integer (i32), not float"),
        ((0, 32, a, 7, 10), "grid must have 1 to 3 dimensions, each >= 1"),
        (((1, 1, 1, 1), 32, a, 7, 10), "grid must have 1 to 3 dimensions"),
    ]
    for args, text in bad_launches:
        with pytest.raises(LaunchError) as info:
            dev.launch(fill, *args)
        assert text in str(info.value)
    assert np.array_equal(a.to_host(), host)


def test_calling_a_kernel_directly_says_how_to_launch():
    with pytest.raises(TypeError, match=r"launch\(fill, grid, block"):
        fill(1, 2, 3)
