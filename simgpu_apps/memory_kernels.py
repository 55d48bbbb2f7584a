"""Memory-bound kernels that more than one tool on top launches, defined once here (the
layer below them: calibration/, validation/ and benchmarks/ may not import each other).

- ``read_sum``: a grid-stride read, each thread summing its words (one store per
  thread): the calibration's streaming read (calibration/stream_limits.py,
  calibration/loaded_latency_probe_sim.py) and benchmarks/dram_bandwidth.py's read-only
  shape;
- ``read_wide``: the same loop with eight independent loads per iteration (eight lines
  per warp in flight; ``n`` a multiple of 8 x the threads): stream_limits' ``wide``
  shape and benchmarks/frfcfs_speed.py's;
- ``stencil_1d`` and ``gather_scatter``: two kernels of the H100 held-out set
  (validation/h100_kernels.py, validation/README.md), which calibration/stream_limits.py
  (``stencil``, to diagnose) and benchmarks/frfcfs_speed.py (CPU cost) run as well.
  They belong to the held-out set: nothing may be fitted to them, and a change to
  either changes that set.
"""
from simgpu.lang import Array, blockDim, blockIdx, gridDim, i32, kernel, threadIdx


@kernel
def read_sum(src: Array[i32], out: Array[i32], n: i32):
    t = blockIdx.x * blockDim.x + threadIdx.x
    acc = 0
    for i in range(t, n, gridDim.x * blockDim.x):
        acc += src[i]
    out[t] = acc


@kernel
def read_wide(src: Array[i32], out: Array[i32], n: i32):
    t = blockIdx.x * blockDim.x + threadIdx.x
    s = gridDim.x * blockDim.x
    acc = 0
    for i in range(t, n, 8 * s):     # n is a multiple of 8 s
        a0 = src[i]
        a1 = src[i + s]
        a2 = src[i + 2 * s]
        a3 = src[i + 3 * s]
        a4 = src[i + 4 * s]
        a5 = src[i + 5 * s]
        a6 = src[i + 6 * s]
        a7 = src[i + 7 * s]
        acc += a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
    out[t] = acc


@kernel
def stencil_1d(src: Array[i32], dst: Array[i32], n: i32):
    # 5-point sum; the two cells at each end copy their input
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        if i >= 2 and i < n - 2:
            dst[i] = src[i - 2] + src[i - 1] + src[i] + src[i + 1] + src[i + 2]
        else:
            dst[i] = src[i]


@kernel
def gather_scatter(src: Array[i32], idx_a: Array[i32], idx_b: Array[i32], perm: Array[i32],
                   dst: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        dst[perm[i]] = src[idx_a[i]] + src[idx_b[i]]
