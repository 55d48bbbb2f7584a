"""Kernels that exercise one timing mechanism each, shared by the benchmarks that print
their tables (benchmarks/memory_units.py, benchmarks/scoreboard.py) and the tests that
hold the mechanisms' properties (tests/sim/test_mshr_issue.py, tests/sim/test_scoreboard.py,
tests/sim/test_atomic_unit.py, tests/mem/test_interconnect.py).

One thread (or a whole GPU for the atomics) walks ``m`` iterations of loads 4,096 ints
apart, so that each load is a transaction of its own:

- ``mlp_loads_k`` (k = 1..4): k independent loads per iteration from four arrays (the
  same signature for every k): memory-level parallelism, the scoreboard and the miss
  entries (MSHRs);
- ``sb_*``: the scoreboard's cases: loads whose results are used, chained
  (``sb_chain_2``: a load's address from a load), unused, or none at all; stores alone,
  with a barrier after each, and atomics with and without their result used;
- ``count_many``, ``lanes_add``: atomics spread over many words or all on one (the atomic
  unit's serialization); ``read_chunks``: warps reading 256-byte chunks ``step`` apart
  (partition camping).
"""
from simgpu.lang import Array, atomic_add, blockDim, blockIdx, gridDim, i32, kernel, syncthreads, threadIdx


@kernel
def mlp_loads_1(a: Array[i32], b: Array[i32], c: Array[i32], d: Array[i32], out: Array[i32], m: i32):
    s = 0
    for j in range(m):
        i = j * 4096
        s += a[i]
    out[0] = s


@kernel
def mlp_loads_2(a: Array[i32], b: Array[i32], c: Array[i32], d: Array[i32], out: Array[i32], m: i32):
    s = 0
    for j in range(m):
        i = j * 4096
        s += a[i] + b[i]
    out[0] = s


@kernel
def mlp_loads_3(a: Array[i32], b: Array[i32], c: Array[i32], d: Array[i32], out: Array[i32], m: i32):
    s = 0
    for j in range(m):
        i = j * 4096
        s += a[i] + b[i] + c[i]
    out[0] = s


@kernel
def mlp_loads_4(a: Array[i32], b: Array[i32], c: Array[i32], d: Array[i32], out: Array[i32], m: i32):
    s = 0
    for j in range(m):
        i = j * 4096
        s += a[i] + b[i] + c[i] + d[i]
    out[0] = s


@kernel
def count_many(c: Array[i32], spread: i32, reps: i32):
    # spread = 0: every thread adds to c[0], reps times; 1: each add to its own word
    t = blockIdx.x * blockDim.x + threadIdx.x
    n = gridDim.x * blockDim.x
    for j in range(reps):
        atomic_add(c, (j * n + t) * spread, 1)


@kernel
def lanes_add(c: Array[i32], out: Array[i32], n: i32):
    t = threadIdx.x
    if t < n:
        out[t] = atomic_add(c, 0, 1)          # n lanes of one warp, one address


@kernel
def read_chunks(src: Array[i32], out: Array[i32], chunks: i32, step: i32):
    # each warp reads 256-B chunks (one partition's interleave); chunk k of the walk is
    # chunk k * step: step = 7 (the partition count) keeps every read on one partition
    t = blockIdx.x * blockDim.x + threadIdx.x
    w = t // 32
    lane = t % 32
    s = 0
    for k in range(w, chunks, gridDim.x * blockDim.x // 32):
        s += src[(k * step) * 64 + lane]
    out[t] = s


@kernel
def sb_loads_1(a: Array[i32], out: Array[i32], m: i32):
    s = 0
    for j in range(m):
        i = j * 4096
        s += a[i]
    out[0] = s


@kernel
def sb_loads_2(a: Array[i32], b: Array[i32], out: Array[i32], m: i32):
    s = 0
    for j in range(m):
        i = j * 4096
        s += a[i] + b[i]
    out[0] = s


sb_loads_4 = mlp_loads_4                # the same four independent loads


@kernel
def sb_chain_2(a: Array[i32], b: Array[i32], out: Array[i32], m: i32):
    s = 0
    for j in range(m):
        i = j * 4096
        s += a[b[i]]
    out[0] = s


@kernel
def sb_no_load(a: Array[i32], out: Array[i32], m: i32):
    for j in range(m):
        i = j * 4096
    out[0] = m


@kernel
def sb_unused_load(a: Array[i32], out: Array[i32], m: i32):
    for j in range(m):
        i = j * 4096
        x = a[i]
    out[0] = m


@kernel
def sb_stores_only(out: Array[i32], m: i32):
    for j in range(m):
        out[j * 4096] = j


@kernel
def sb_index_only(out: Array[i32], m: i32):
    for j in range(m):
        i = j * 4096
    out[0] = m


@kernel
def sb_stores_sync(out: Array[i32], m: i32):
    for j in range(m):
        out[j * 4096] = j
        syncthreads()


@kernel
def sb_atomics_unused(c: Array[i32], m: i32):
    for j in range(m):
        atomic_add(c, j * 4096, 1)


@kernel
def sb_atomics_used(c: Array[i32], out: Array[i32], m: i32):
    s = 0
    for j in range(m):
        s += atomic_add(c, j * 4096, 1)
    out[0] = s
