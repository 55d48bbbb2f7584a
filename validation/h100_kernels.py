"""The kernels of the H100 held-out set (validation/README.md, "H100 held-out set").

None of them is a calibration kernel (cuda_backend/calibrate.py: empty, copy, read,
write, gather, chase, atomic_one_counter, atomic_spread) or a built-in validation
kernel (the lessons' copies, list ranking, connected components): they differ in
element type, indexing (one element per thread, 2-D grids), shared memory, or
access pattern. Each is launched by a case in validation/heldout.py, which also
holds its numpy reference.  Two of them, ``stencil_1d`` and ``gather_scatter``, are
defined in simgpu_apps/memory_kernels.py (calibration/ and benchmarks/ run them too and
may not import this package) and imported here.
"""
from simgpu.lang import (FULL_MASK, Array, atomic_add, blockDim, blockIdx, f32, gridDim, i32,
                         i64, kernel, shared_array, shfl_down_sync, syncthreads, threadIdx)
from simgpu_apps.memory_kernels import gather_scatter, stencil_1d  # noqa: F401 (held-out)

TILE = 32            # transpose tile edge (threads: TILE x TILE_ROWS)
TILE_ROWS = 8
REDUCE_BLOCK = 256   # threads of the shared-memory reduction
BINS = 256           # histogram bins
TILE_WORDS = TILE * (TILE + 1)   # one tile with a padding column: no bank conflicts


@kernel
def copy_f32(src: Array[f32], dst: Array[f32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        dst[i] = src[i]


@kernel
def triad_f32(a: Array[f32], b: Array[f32], c: Array[f32], s: f32, n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        a[i] = b[i] + s * c[i]


@kernel
def scale_i64(x: Array[i64], y: Array[i64], k: i64, n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        y[i] = k * x[i]


@kernel
def strided_read(src: Array[i32], dst: Array[i32], stride: i32, n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        dst[i] = src[i64(i) * stride]


@kernel
def transpose_naive(src: Array[i32], dst: Array[i32], width: i32, height: i32):
    # src is height x width (row-major); a block of TILE x TILE_ROWS threads walks a tile
    x = blockIdx.x * TILE + threadIdx.x
    y = blockIdx.y * TILE + threadIdx.y
    for j in range(0, TILE, TILE_ROWS):
        dst[x * height + y + j] = src[(y + j) * width + x]


@kernel
def transpose_tiled(src: Array[i32], dst: Array[i32], width: i32, height: i32):
    tile = shared_array(i32, TILE_WORDS)
    x = blockIdx.x * TILE + threadIdx.x
    y = blockIdx.y * TILE + threadIdx.y
    for j in range(0, TILE, TILE_ROWS):
        tile[(threadIdx.y + j) * (TILE + 1) + threadIdx.x] = src[(y + j) * width + x]
    syncthreads()
    x = blockIdx.y * TILE + threadIdx.x
    y = blockIdx.x * TILE + threadIdx.y
    for j in range(0, TILE, TILE_ROWS):
        dst[(y + j) * height + x] = tile[threadIdx.x * (TILE + 1) + threadIdx.y + j]


@kernel
def reduce_shared(a: Array[i32], partial: Array[i64], n: i32):
    # each thread adds two elements a block apart, then a tree in shared memory
    buf = shared_array(i64, REDUCE_BLOCK)
    t = threadIdx.x
    i = blockIdx.x * (REDUCE_BLOCK * 2) + t
    v = i64(0)
    if i < n:
        v = i64(a[i])
    if i + REDUCE_BLOCK < n:
        v += i64(a[i + REDUCE_BLOCK])
    buf[t] = v
    syncthreads()
    s = REDUCE_BLOCK // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        syncthreads()
        s = s // 2
    if t == 0:
        partial[blockIdx.x] = buf[0]


@kernel
def reduce_warp_atomic(a: Array[i32], total: Array[i64], n: i32):
    # grid-stride sum per thread, warp sum with shuffles, one atomic per warp
    v = i64(0)
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        v += i64(a[i])
    offset = 16
    while offset > 0:
        v += shfl_down_sync(FULL_MASK, v, offset)
        offset = offset // 2
    if threadIdx.x % 32 == 0:
        atomic_add(total, 0, v)


@kernel
def histogram_atomic(keys: Array[i32], hist: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        atomic_add(hist, keys[i] & (BINS - 1), 1)


@kernel
def stencil_2d(src: Array[f32], dst: Array[f32], width: i32, height: i32):
    # 5-point Jacobi step on the interior of a height x width grid; the border copies
    x = blockIdx.x * blockDim.x + threadIdx.x
    y = blockIdx.y * blockDim.y + threadIdx.y
    if x < width and y < height:
        k = y * width + x
        if x > 0 and x < width - 1 and y > 0 and y < height - 1:
            dst[k] = f32(0.25) * (src[k - 1] + src[k + 1] + src[k - width] + src[k + width])
        else:
            dst[k] = src[k]


@kernel
def spmv_csr(row_ptr: Array[i32], col: Array[i32], val: Array[f32], x: Array[f32],
             y: Array[f32], rows: i32):
    r = blockIdx.x * blockDim.x + threadIdx.x
    if r < rows:
        acc = f32(0.0)
        for k in range(row_ptr[r], row_ptr[r + 1]):
            acc += val[k] * x[col[k]]
        y[r] = acc


@kernel
def bfs_expand(frontier: Array[i32], row_ptr: Array[i32], col: Array[i32],
               visited: Array[i32], next_flag: Array[i32], nf: i32):
    # one top-down step: mark every unvisited neighbour of the frontier (all writers
    # write 1, so the result and the counts do not depend on the order)
    t = blockIdx.x * blockDim.x + threadIdx.x
    if t < nf:
        v = frontier[t]
        for k in range(row_ptr[v], row_ptr[v + 1]):
            u = col[k]
            if visited[u] == 0:
                next_flag[u] = 1


@kernel
def chain_link(nxt: Array[i64], pos: Array[i64], m: i32):
    # setup of the chase: nxt[pos[i]] = pos[i + 1], the last back to the first
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < m:
        nxt[pos[i]] = pos[(i + 1) % m]


@kernel
def chase_i64(nxt: Array[i64], out: Array[i64], steps: i32):
    # one thread: a dependent chain of loads; out = (last position, sum of positions)
    p = out[0]                  # the start, written by the host
    acc = i64(0)
    for k in range(steps):
        p = nxt[p]
        acc += p
    out[0] = p
    out[1] = acc
