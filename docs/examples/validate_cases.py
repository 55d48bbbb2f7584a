"""Seven small user-style kernels for ``simgpu validate`` (docs/validate-your-kernel.md).

    simgpu validate docs/examples/validate_cases.py                       # two simulated configs
    simgpu validate docs/examples/validate_cases.py --devices sim:h100,cuda --markdown --plot t.svg

Inputs are drawn from fixed seeds, so every run sees the same data.
"""
import numpy as np

from simgpu.lang import (Array, atomic_add, blockDim, blockIdx, f32, gridDim, i32, i64, kernel,
                         shared_array, syncthreads, threadIdx)

N = 1 << 17     # the H100 run's size (docs/results/validate-cases-h100.md); see the guide
BLOCK = 256
GRID = 264                      # 2 blocks per SM of an H100 (132 SMs), grid-stride loops
BINS = 256


@kernel
def copy(src: Array[i32], dst: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        dst[i] = src[i]


@kernel
def copy_offset(src: Array[i32], dst: Array[i32], n: i32):
    # every warp's 128 bytes start 4 bytes into a sector: 5 sectors per request, not 4
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n - 1, gridDim.x * blockDim.x):
        dst[i] = src[i + 1]


@kernel
def copy_strided(src: Array[i32], dst: Array[i32], stride: i32, n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        dst[i] = src[(i * stride) % n]


@kernel
def saxpy(x: Array[f32], y: Array[f32], a: f32, n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        y[i] = a * x[i] + y[i]


@kernel
def sum_blocks_atomic(a: Array[i32], total: Array[i64], n: i32):
    # a tree sum in shared memory per block, then one atomic per block
    buf = shared_array(i64, BLOCK)
    t = threadIdx.x
    acc = i64(0)
    for i in range(blockIdx.x * blockDim.x + t, n, gridDim.x * blockDim.x):
        acc += i64(a[i])
    buf[t] = acc
    syncthreads()
    s = BLOCK // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        syncthreads()
        s = s // 2
    if t == 0:
        atomic_add(total, 0, buf[0])


@kernel
def histogram(keys: Array[i32], counts: Array[i32], n: i32):
    # the atomics' results are unused: nvcc makes them reductions (RED), which the
    # comparison folds into atomics as the simulator counts them
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        atomic_add(counts, keys[i], 1)


@kernel
def gather(src: Array[i32], index: Array[i32], out: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        out[i] = src[index[i]]


_rng = np.random.default_rng(2026)
_a = _rng.integers(-1000, 1000, N, dtype=np.int32)
_x = _rng.standard_normal(N).astype(np.float32)

CASES = [
    dict(name="copy", kernel=copy, grid=GRID, block=BLOCK, args=[_a, np.zeros(N, np.int32), N]),
    dict(name="copy_offset", kernel=copy_offset, grid=GRID, block=BLOCK,
         args=[_a, np.zeros(N, np.int32), N]),
    dict(name="copy_strided 8", kernel=copy_strided, grid=GRID, block=BLOCK,
         args=[_a, np.zeros(N, np.int32), 8, N]),
    dict(name="saxpy", kernel=saxpy, grid=GRID, block=BLOCK, rtol=1e-6,
         args=[_x, _x[::-1].copy(), np.float32(2.5), N]),
    dict(name="sum_blocks_atomic", kernel=sum_blocks_atomic, grid=GRID, block=BLOCK,
         args=[_a, np.zeros(1, np.int64), N]),
    dict(name="histogram", kernel=histogram, grid=GRID, block=BLOCK,
         args=[_rng.integers(0, BINS, N, dtype=np.int32), np.zeros(BINS, np.int32), N]),
    dict(name="gather", kernel=gather, grid=GRID, block=BLOCK,
         args=[_a, _rng.permutation(N).astype(np.int32), np.zeros(N, np.int32), N]),
]
