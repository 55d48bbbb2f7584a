"""simgpu.ir.uniform: which atomics are warp-uniform (nvcc aggregates them), by a
divergence analysis of the kernel. The expected marks are worked out by hand from
what varies between the lanes of a warp."""
from dataclasses import fields

from simgpu.ir import nodes as ir
from simgpu.lang import (Array, atomic_add, atomic_max, blockDim, blockIdx, device_function,
                         f32, gridDim, i32, i64, kernel, threadIdx)


@device_function
def bump(c: Array[i32], k: i32) -> i32:
    atomic_add(c, k, 1)                 # k is whatever the caller passes: varying
    return k


@kernel
def marks(c: Array[i32], keys: Array[i32], x: Array[f32], w: Array[i64], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    j = blockIdx.x * 2 + gridDim.x
    if i < n:
        atomic_add(c, 0, 1)             # U: constants
        atomic_add(c, j + n, 1)         # U: blocks, grid and a scalar parameter
        atomic_add(c, i & 7, 1)         # V: threadIdx
        atomic_add(c, 0, i)             # U: a 32-bit value that varies (REDUX.SUM)
        atomic_add(w, 0, i64(i))        # V: a 64-bit value that varies (not measured)
        atomic_add(c, keys[0], 1)       # V: a load (conservatively)
        atomic_max(c, 0, 1)             # V: only add/sub are aggregated
        atomic_add(x, 0, f32(1))        # V: floats are not (the sum's rounding)
    k = 0
    while k < n:
        atomic_add(c, k, 1)             # U: k follows n
        k += 1
    m = 0
    if threadIdx.x < 3:
        m = 1
    atomic_add(c, m, 1)                 # V: assigned under a varying condition
    last = 0
    for t in range(n):
        last = t
        if t == i:
            break
    atomic_add(c, last, 1)              # V: lanes left the loop at different t
    bump(c, 1)


def uniform_marks(fn) -> list:
    """(comment of the line, uniform) of each atomic, in source order."""
    out = []

    def walk(x):
        if isinstance(x, ir.Atomic):
            out.append((x.loc.source.split("#")[-1].strip()[:1], x.uniform))
        for f in fields(x):
            v = getattr(x, f.name)
            for y in (v if isinstance(v, tuple) else (v,)):
                if isinstance(y, (ir.Expr, ir.Stmt)):
                    walk(y)
    for s in fn.body:
        walk(s)
    return out


def test_the_marks_follow_what_varies_between_lanes():
    got = uniform_marks(marks.ir)
    assert got == [(c, c == "U") for c, _ in got]
    assert [c for c, _ in got] == list("UUVUVVVVUVV")


def test_a_device_functions_parameters_are_varying():
    assert [u for _, u in uniform_marks(bump.ir)] == [False]
