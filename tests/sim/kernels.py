"""Kernels the simulator tests run (kept in a module: the front end reads source files)."""
from simgpu.lang import (Array, atomic_add, atomic_cas, atomic_exch, atomic_max, atomic_min,
                         atomic_or_, blockDim, blockIdx, device_function, f32, gridDim, i32,
                         i64, kernel, shared_array, syncthreads, threadIdx, u32)

BLOCK = 128


@kernel
def scale_add(a: Array[f32], b: Array[f32], out: Array[f32], alpha: f32, n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        out[i] = alpha * a[i] + b[i]


# The paper's striding and partitioning copies live with the teaching examples.
from simgpu_apps.lessons.coalescing import copy_partitioning, copy_striding  # noqa: E402,F401


@kernel
def copy_strided(src: Array[i32], dst: Array[i32], stride: i32, n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        dst[i] = src[(i * stride) % n]


@kernel
def sum_atomic(a: Array[i64], total: Array[i64], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        atomic_add(total, 0, a[i])


@kernel
def block_sums(a: Array[i32], sums: Array[i64], n: i32):
    buf = shared_array(i64, BLOCK)
    t = threadIdx.x
    i = blockIdx.x * blockDim.x + t
    buf[t] = i64(a[i]) if i < n else 0
    syncthreads()
    s = BLOCK // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        syncthreads()
        s = s // 2
    if t == 0:
        sums[blockIdx.x] = buf[0]


@kernel
def collatz_steps(start: Array[i64], steps: Array[i32], n: i32):
    # A divergent while loop: every lane iterates a different number of times.
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i >= n:
        return
    x = start[i]
    k = 0
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        k += 1
        if k > 1000:
            break
    steps[i] = k


@kernel
def first_multiple(a: Array[i32], out: Array[i32], m: i32, width: i32, rows: i32):
    # break/continue per lane: position of the first multiple of m in each row, or -1.
    r = blockIdx.x * blockDim.x + threadIdx.x
    if r < rows:
        found = -1
        for j in range(width):
            v = a[r * width + j]
            if v == 0:
                continue
            if v % m == 0:
                found = j
                break
        out[r] = found


@device_function
def clamp(x: i64, lo: i64, hi: i64) -> i64:
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@kernel
def clamp_all(a: Array[i64], n: i32, lo: i64, hi: i64):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        a[i] = clamp(a[i], lo, hi)


@kernel
def histogram(keys: Array[i32], counts: Array[i32], old: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        old[i] = atomic_add(counts, keys[i], 1)


@kernel
def atomic_ops(keys: Array[i32], vals: Array[i32], mins: Array[i32], maxs: Array[i32],
               exch: Array[i32], ors: Array[u32], old_min: Array[i32], old_exch: Array[i32],
               n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        k = keys[i]
        old_min[i] = atomic_min(mins, k, vals[i])
        atomic_max(maxs, k, vals[i])
        old_exch[i] = atomic_exch(exch, k, vals[i])
        atomic_or_(ors, k, u32(1) << u32(i % 32))


@kernel
def cas_increment(counter: Array[i32], n: i32):
    # A lock-free increment with compare-and-swap retries.
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        done = False
        while not done:
            cur = counter[0]
            done = atomic_cas(counter, 0, cur, cur + 1) == cur


@kernel
def scatter(idx: Array[i32], vals: Array[i32], out: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        out[idx[i]] = vals[i]


@device_function
def put(buf: Array[i32], i: i32, v: i32):
    buf[i] = v


@kernel
def reverse_in_shared(a: Array[i32], out: Array[i32]):
    s = shared_array(i32, 64)
    t = threadIdx.x
    put(s, 63 - t, a[blockIdx.x * 64 + t])     # a device function writing shared memory
    syncthreads()
    out[blockIdx.x * 64 + t] = s[t]


@kernel
def rotate_in_shared(a: Array[i32], out: Array[i32]):
    # 512 threads: each reads the word of the thread 200 places on, written by a warp of
    # another scheduler's group before the barrier (and a shared array per block).
    s = shared_array(i32, 512)
    t = threadIdx.x
    s[t] = a[blockIdx.x * 512 + t] * 3
    syncthreads()
    out[blockIdx.x * 512 + t] = s[(t + 200) % 512]


@kernel
def barrier_in_a_branch(a: Array[i32]):
    t = threadIdx.x
    if t < 96:                          # warps 0-2: part of the groups of warps 0, 1, 2
        syncthreads()
    a[t] = t


@kernel
def arithmetic_only(a: Array[i32], rounds: i32):
    t = blockIdx.x * blockDim.x + threadIdx.x
    x = t
    for _ in range(rounds):
        x = x * 1103515245 + 12345
    if x == 7:                          # (never for these lanes: no store is timed)
        a[0] = x
