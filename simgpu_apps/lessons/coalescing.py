"""The paper's section 2.5 lesson: striding vs partitioning loops.

Both kernels copy n words with p threads.  *Striding* hands thread t the
elements t, t+p, t+2p, ...: at every step a warp's lanes read consecutive
words, one segment per half-warp.  *Partitioning* hands thread t one
contiguous chunk: at every step neighbouring lanes are a chunk apart, so a
half-warp spreads over many segments (one transaction per lane once a chunk
is 32 words or more).  Same work, same bytes wanted; very different
bytes moved and time.
"""
from simgpu.lang import Array, blockDim, blockIdx, gridDim, i32, kernel, threadIdx


@kernel
def copy_striding(src: Array[i32], dst: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        dst[i] = src[i]


@kernel
def copy_partitioning(src: Array[i32], dst: Array[i32], n: i32):
    t = blockIdx.x * blockDim.x + threadIdx.x
    threads = gridDim.x * blockDim.x
    chunk = (n + threads - 1) // threads
    for i in range(t * chunk, min(t * chunk + chunk, n)):
        dst[i] = src[i]


@kernel
def copy_with_stride(src: Array[i32], dst: Array[i32], stride: i32, n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        dst[i] = src[(i * stride) % n]
