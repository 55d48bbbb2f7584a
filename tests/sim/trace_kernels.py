"""Kernels for tests/sim/test_trace_engine.py (kept in a module: the front end reads
source files).  Each mixes what the trace recorder must get right per block: loads
used far from where they issue, data-dependent loops and branches (blocks leave a
loop at different turns), a device function returning a load, conditional
expressions on pending values, shared memory with syncthreads()."""
from simgpu.lang import (Array, blockDim, blockIdx, device_function, gridDim, i32, kernel,
                         shared_array, syncthreads, threadIdx)


@device_function
def fetch(a: Array[i32], i: i32, n: i32) -> i32:
    return a[i % n]


@kernel
def far_uses(a: Array[i32], b: Array[i32], out: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        x = a[i]                       # pending over the next statements
        y = b[(i * 7) % n]
        k = 0
        z = 0
        while k < (y & 7):             # data-dependent trip count
            z += fetch(a, z + k + i, n)
            k += 1
        if x > 50:
            w = b[i] + 1               # some blocks take this, others not
        else:
            w = 3
        v = a[(x + 13) % n] if y % 3 == 0 else b[(y + i) % n]
        if y > 1 and b[(y + i) % n] > 40:
            v += 1
        out[i] = x + y + z + w + v


@kernel
def shared_rotate(a: Array[i32], out: Array[i32], n: i32, turns: i32):
    buf = shared_array(i32, 64)
    t = threadIdx.x
    i = blockIdx.x * 64 + t
    buf[t] = a[i % n]
    syncthreads()
    s = 0
    for r in range(turns):
        s += buf[(t + r * 5) % 64]
        if buf[t] % 2 == 0:
            s += a[(i + r) % n]
        syncthreads()
    if i < n:
        out[i] = s


@kernel
def grid_stride_copy(src: Array[i32], dst: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        dst[i] = src[i] * 2


@kernel
def transpose_2d(a: Array[i32], out: Array[i32], w: i32, h: i32):
    x = blockIdx.x * blockDim.x + threadIdx.x
    y = blockIdx.y * blockDim.y + threadIdx.y
    if x < w and y < h:
        out[x * h + y] = a[y * w + x]
