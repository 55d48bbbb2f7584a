"""The kernels of the published GT200 experiments (validation/gt200/), in the kernel
language, as the publications describe them.

- offset_copy, stride_copy: the CUDA C Best Practices Guide's offsetCopy and
  strideCopy, float copies with an offset or a stride between threads.
- copy, copy_shared, transpose_naive, transpose_coalesced, transpose_no_bank_conflicts,
  transpose_diagonal: the kernel sequence of NVIDIA's "Optimizing Matrix Transpose in
  CUDA" (Ruetsch & Micikevicius): TILE x TILE tiles, blocks of TILE x BLOCK_ROWS threads,
  each thread handling TILE / BLOCK_ROWS elements; the diagonal variant remaps blockIdx
  so that concurrently running blocks spread over the partitions (square matrices).
- chase_stride: a single thread following a chain of 32-bit indices laid out with a
  fixed stride over a footprint (the pointer chase of Wong et al.'s global-memory and
  TLB microbenchmark); the time per load is the kernel's cycles over its steps.
"""
from simgpu.lang import (Array, blockDim, blockIdx, f32, gridDim, i32, kernel, shared_array,
                         syncthreads, threadIdx)

TILE = 32
BLOCK_ROWS = 8
TILE_WORDS = TILE * TILE
PADDED_WORDS = TILE * (TILE + 1)


@kernel
def offset_copy(odata: Array[f32], idata: Array[f32], offset: i32):
    xid = blockIdx.x * blockDim.x + threadIdx.x + offset
    odata[xid] = idata[xid]


@kernel
def stride_copy(odata: Array[f32], idata: Array[f32], stride: i32):
    xid = (blockIdx.x * blockDim.x + threadIdx.x) * stride
    odata[xid] = idata[xid]


@kernel
def copy(odata: Array[f32], idata: Array[f32], width: i32, height: i32):
    x = blockIdx.x * TILE + threadIdx.x
    y = blockIdx.y * TILE + threadIdx.y
    for i in range(0, TILE, BLOCK_ROWS):
        odata[(y + i) * width + x] = idata[(y + i) * width + x]


@kernel
def copy_shared(odata: Array[f32], idata: Array[f32], width: i32, height: i32):
    tile = shared_array(f32, TILE_WORDS)
    x = blockIdx.x * TILE + threadIdx.x
    y = blockIdx.y * TILE + threadIdx.y
    for i in range(0, TILE, BLOCK_ROWS):
        tile[(threadIdx.y + i) * TILE + threadIdx.x] = idata[(y + i) * width + x]
    syncthreads()
    for i in range(0, TILE, BLOCK_ROWS):
        odata[(y + i) * width + x] = tile[(threadIdx.y + i) * TILE + threadIdx.x]


@kernel
def transpose_naive(odata: Array[f32], idata: Array[f32], width: i32, height: i32):
    x = blockIdx.x * TILE + threadIdx.x
    y = blockIdx.y * TILE + threadIdx.y
    for i in range(0, TILE, BLOCK_ROWS):
        odata[x * height + y + i] = idata[(y + i) * width + x]


@kernel
def transpose_coalesced(odata: Array[f32], idata: Array[f32], width: i32, height: i32):
    tile = shared_array(f32, TILE_WORDS)          # no padding: bank conflicts on the read-out
    x = blockIdx.x * TILE + threadIdx.x
    y = blockIdx.y * TILE + threadIdx.y
    for i in range(0, TILE, BLOCK_ROWS):
        tile[(threadIdx.y + i) * TILE + threadIdx.x] = idata[(y + i) * width + x]
    syncthreads()
    x = blockIdx.y * TILE + threadIdx.x
    y = blockIdx.x * TILE + threadIdx.y
    for i in range(0, TILE, BLOCK_ROWS):
        odata[(y + i) * height + x] = tile[threadIdx.x * TILE + threadIdx.y + i]


@kernel
def transpose_no_bank_conflicts(odata: Array[f32], idata: Array[f32], width: i32, height: i32):
    tile = shared_array(f32, PADDED_WORDS)
    x = blockIdx.x * TILE + threadIdx.x
    y = blockIdx.y * TILE + threadIdx.y
    for i in range(0, TILE, BLOCK_ROWS):
        tile[(threadIdx.y + i) * (TILE + 1) + threadIdx.x] = idata[(y + i) * width + x]
    syncthreads()
    x = blockIdx.y * TILE + threadIdx.x
    y = blockIdx.x * TILE + threadIdx.y
    for i in range(0, TILE, BLOCK_ROWS):
        odata[(y + i) * height + x] = tile[threadIdx.x * (TILE + 1) + threadIdx.y + i]


@kernel
def transpose_diagonal(odata: Array[f32], idata: Array[f32], width: i32, height: i32):
    tile = shared_array(f32, PADDED_WORDS)
    by = blockIdx.x                                # diagonal coordinates (square grids)
    bx = (blockIdx.x + blockIdx.y) % gridDim.x
    x = bx * TILE + threadIdx.x
    y = by * TILE + threadIdx.y
    for i in range(0, TILE, BLOCK_ROWS):
        tile[(threadIdx.y + i) * (TILE + 1) + threadIdx.x] = idata[(y + i) * width + x]
    syncthreads()
    x = by * TILE + threadIdx.x
    y = bx * TILE + threadIdx.y
    for i in range(0, TILE, BLOCK_ROWS):
        odata[(y + i) * height + x] = tile[threadIdx.x * (TILE + 1) + threadIdx.y + i]


@kernel
def chase_stride(nxt: Array[i32], out: Array[i32], steps: i32):
    j = 0
    for k in range(steps):
        j = nxt[j]
    out[0] = j
