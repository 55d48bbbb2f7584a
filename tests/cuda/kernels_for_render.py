"""Kernels that exercise every corner of the CUDA renderer (and compile with nvcc).

They are also usable on the simulator; tests/cuda/test_nvcc.py renders and
compiles each of them, together with every kernel under algorithms/.
"""
from simgpu.lang import (Array, atomic_add, atomic_and_, atomic_cas, atomic_exch, atomic_max,
                         atomic_min, atomic_or_, atomic_sub, atomic_xor, blockDim, blockIdx,
                         boolean, device_function, f32, f64, gridDim, i8, i16, i32, i64,
                         kernel, shared_array, syncthreads, threadIdx, u8, u16, u32, u64,
                         warp_size, FULL_MASK, activemask, all_sync, any_sync, ballot_sync,
                         shfl_down_sync, shfl_sync, shfl_up_sync, shfl_xor_sync, syncwarp)

BLOCK = 128
BIG = 5000000000
INF = float("inf")
I64_MIN = -2**63
TOO_BIG_FOR_F32 = -3.5e38


@kernel
def elementwise(a: Array[i32], out: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        out[i] = a[i] * 2 + 1


@kernel
def striding(rank: Array[i64], owner: Array[i32], head_rank: Array[i64], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        rank[i] = head_rank[owner[i]] - rank[i]


@kernel
def atomics_i32(a: Array[i32], old: Array[i32]):
    i = threadIdx.x
    old[0] = atomic_add(a, 0, i)
    old[1] = atomic_sub(a, 1, i)
    old[2] = atomic_min(a, 2, i)
    old[3] = atomic_max(a, 3, i)
    old[4] = atomic_exch(a, 4, i)
    old[5] = atomic_cas(a, 5, 0, i)
    old[6] = atomic_and_(a, 6, i)
    old[7] = atomic_or_(a, 7, i)
    old[8] = atomic_xor(a, 8, i)
    atomic_add(a, 9, 1)


@kernel
def atomics_u32(a: Array[u32], old: Array[u32]):
    v = u32(threadIdx.x)
    old[0] = atomic_add(a, 0, v)
    old[1] = atomic_sub(a, 1, v)
    old[2] = atomic_min(a, 2, v)
    old[3] = atomic_max(a, 3, v)
    old[4] = atomic_exch(a, 4, v)
    old[5] = atomic_cas(a, 5, u32(0), v)
    old[6] = atomic_and_(a, 6, v)
    old[7] = atomic_or_(a, 7, v)
    old[8] = atomic_xor(a, 8, v)


@kernel
def atomics_i64(a: Array[i64], old: Array[i64]):
    v = i64(threadIdx.x) - 3
    old[0] = atomic_add(a, 0, v)
    old[2] = atomic_min(a, 2, v)
    old[3] = atomic_max(a, 3, v)
    old[4] = atomic_exch(a, 4, v)
    old[5] = atomic_cas(a, 5, i64(0), v)
    old[6] = atomic_and_(a, 6, v)
    old[7] = atomic_or_(a, 7, v)
    old[8] = atomic_xor(a, 8, v)
    atomic_add(a, 9, v)


@kernel
def atomics_u64(a: Array[u64], old: Array[u64]):
    v = u64(threadIdx.x)
    old[0] = atomic_add(a, 0, v)
    old[2] = atomic_min(a, 2, v)
    old[3] = atomic_max(a, 3, v)
    old[4] = atomic_exch(a, 4, v)
    old[5] = atomic_cas(a, 5, u64(0), v)
    old[6] = atomic_and_(a, 6, v)
    old[7] = atomic_or_(a, 7, v)
    old[8] = atomic_xor(a, 8, v)


@kernel
def atomics_float(a: Array[f32], d: Array[f64], old: Array[f32], oldd: Array[f64]):
    x = f32(threadIdx.x) * f32(0.5)
    old[0] = atomic_add(a, 0, x)
    old[1] = atomic_exch(a, 1, x)
    oldd[0] = atomic_add(d, 0, f64(x))


@kernel
def block_sum(a: Array[i32], sums: Array[i32], n: i32):
    buf = shared_array(i32, BLOCK)
    flags = shared_array(boolean, 32)
    t = threadIdx.x
    i = blockIdx.x * blockDim.x + t
    buf[t] = 0                # shared memory starts undefined: this kernel needs zeros
    if i < n:
        buf[t] = a[i]
    if t < 32:
        flags[t] = True
    syncthreads()
    s = blockDim.x // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        syncthreads()
        s = s >> 1
    if t == 0 and flags[0]:
        sums[blockIdx.x] = buf[0]


@device_function
def mix(x: u32) -> u32:
    return (x ^ (x >> 16)) * u32(0x45d9f3b)


@device_function
def hash_sum(data: Array[u32], start: i32, count: i32) -> u32:
    h = u32(2166136261)
    for k in range(start, start + count):
        h = mix(h ^ data[k])
        if h == u32(0):
            return u32(1)
    return h


@device_function
def bump(counter: Array[i32]):
    atomic_add(counter, 0, 1)
    return


@kernel
def device_calls(data: Array[u32], out: Array[u32], counter: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i >= n:
        return
    out[i] = hash_sum(data, i, min(n - i, 4))
    bump(counter)


@kernel
def hash_only(data: Array[u32], out: Array[u32], n: i32):
    """Shares the device function mix with device_calls: a module defines it once."""
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        out[i] = mix(data[i])


@kernel
def loops(out: Array[i32], n: i32, step: i32):
    i = threadIdx.x
    acc = 0
    k = 0
    while True:
        k += 1
        if k > n:
            break
        if k % 3 == 0:
            continue
        acc += k
    for j in range(n, 0, -2):          # constant negative step
        acc -= j
    for j in range(0, n, step):        # runtime step: either direction
        acc ^= j
    for j in range(10):
        if j == i:
            continue
        elif j > 7:
            break
        else:
            acc += 1
    out[i] = acc


@kernel
def scalar_types(i8s: Array[i8], i16s: Array[i16], i32s: Array[i32], i64s: Array[i64],
                 u8s: Array[u8], u16s: Array[u16], u32s: Array[u32], u64s: Array[u64],
                 f32s: Array[f32], f64s: Array[f64], bools: Array[boolean], s: i32):
    a8 = i8s[0]
    a16 = i16s[0]
    a32 = i32s[0]
    a64 = i64s[0]
    b8 = u8s[0]
    b16 = u16s[0]
    b32 = u32s[0]
    b64 = u64s[0]
    x = f32s[0]
    y = f64s[0]
    flag = bools[0]
    # arithmetic with wrap-around, truncating division, shifts, bit ops
    i32s[1] = a32 + a32 * a32 - (a32 << s) + (a32 >> 2) + a32 // 7 + a32 % 7 + a32 // s + a32 % s
    i64s[1] = a64 + a64 * a64 - (a64 << s) + (a64 >> s) + a64 // i64(s) + a64 % i64(s)
    u32s[1] = b32 + b32 * b32 - (b32 << u32(s)) + (b32 >> 3) + b32 // u32(7) + b32 % u32(s)
    u64s[1] = b64 + b64 * b64 - (b64 << 5) + (b64 >> 5) + b64 // u64(3) + (b64 & ~b64 | b64 ^ b64)
    i8s[1] = i8(a8 + a8)
    i16s[1] = i16(a16 * a16)
    u8s[1] = u8(b8 + b8)
    u16s[1] = u16(b16 * b16)
    i32s[2] = -a32 + abs(a32) + ~a32 + min(a32, 3) + max(a32, s) + a8 + a16 + b8 + b16
    i64s[2] = -a64 + abs(a64) + min(a64, i64(3)) + max(a64, i64(-3))
    u64s[2] = min(b64, u64(3)) + max(b64, u64(s)) + b32
    # floats: fused multiply-add must not appear, min/max are fminf/fmaxf
    f32s[1] = x * x + x / f32(3.0) - abs(x) + min(x, f32(0.1)) + max(x, -x) - f32(1e-30)
    f64s[1] = y * y + y / 3.0 - abs(y) + min(y, 0.1) + max(y, -y) + f64(x) + 1e300
    # casts both ways
    i32s[3] = i32(x) + i32(y) + i32(a64) + i32(b64) + i32(b32) + i32(flag)
    f32s[2] = f32(a32) + f32(b64) + f32(y) + f32(a8)
    u8s[2] = u8(u8(a32) + u8(flag))
    bools[1] = boolean(a32) or boolean(x) and not flag
    # comparisons of every type
    bools[2] = a8 < a16 and a32 <= a64 and b8 > b16 and b32 >= b64 and x != y and a32 == b32
    bools[3] = flag == bools[1]


@kernel
def select_logical(a: Array[i32], out: Array[i32], n: i32):
    i = threadIdx.x
    lo = a[i] if i < n and a[i] > 0 else -a[i] if i < n else 0
    ok = i < n or i == 0 and not (i > 5)
    out[2 * i] = lo if ok else 1
    out[2 * i + 1] = 1 if 0 < i < n else 2


@kernel
def constants_64(out64: Array[i64], outu: Array[u64], out32: Array[i32], outu32: Array[u32],
                 outf: Array[f32], outd: Array[f64]):
    out64[0] = BIG
    out64[1] = I64_MIN
    out64[2] = 9223372036854775807
    out64[3] = -BIG
    outu[0] = 18446744073709551615
    outu[1] = u64(9223372036854775808)
    out32[0] = -2147483648
    out32[1] = 2147483647
    out32[2] = -1
    outu32[0] = u32(4294967295)
    outf[0] = f32(0.1)
    outf[1] = f32(TOO_BIG_FOR_F32)
    outd[0] = 0.1
    outd[1] = -1e-300
    outd[2] = INF if out32[0] < 0 else -INF


@kernel
def int_ops_i32(xs: Array[i32], ys: Array[i32], out: Array[i32], n: i32):
    """The operations where C's undefined behaviour differs from the kernel language."""
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        a = xs[i]
        b = ys[i]
        out[8 * i] = a + b
        out[8 * i + 1] = a - b
        out[8 * i + 2] = a * b
        out[8 * i + 3] = a // b if b != 0 else 0
        out[8 * i + 4] = a % b if b != 0 else 0
        out[8 * i + 5] = -a
        out[8 * i + 6] = abs(a)
        out[8 * i + 7] = (a << (b & 31)) + (a >> (b & 31))


@kernel
def int_ops_i64(xs: Array[i64], ys: Array[i64], out: Array[i64], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        a = xs[i]
        b = ys[i]
        out[8 * i] = a + b
        out[8 * i + 1] = a - b
        out[8 * i + 2] = a * b
        out[8 * i + 3] = a // b if b != 0 else i64(0)
        out[8 * i + 4] = a % b if b != 0 else i64(0)
        out[8 * i + 5] = -a
        out[8 * i + 6] = abs(a)
        out[8 * i + 7] = (a << (b & 63)) + (a >> (b & 63))


@kernel
def float_ops(xs: Array[f32], ys: Array[f32], out: Array[f32], ds: Array[f64], dout: Array[f64],
              n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        x = xs[i]
        y = ys[i]
        out[4 * i] = x * y + x          # no fused multiply-add: rounded twice, as numpy
        out[4 * i + 1] = x / y
        out[4 * i + 2] = min(x, y) - max(x, y)
        out[4 * i + 3] = abs(x) * f32(0.1) - y
        d = ds[i]
        dout[2 * i] = d * d - d
        dout[2 * i + 1] = min(d, f64(y)) + max(d, 0.1)


@kernel
def thread_geometry(out: Array[i32]):
    tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)
    block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)
    lane = tid % warp_size
    out[block * blockDim.x * blockDim.y * blockDim.z + tid] = lane


@kernel
def double(a: Array[i32], out: Array[i32], n: i32):
    """Named after a C keyword, as in simgpu.lang's docstring: renders as double_."""
    i = blockIdx.x * blockDim.x + threadIdx.x
    char = 2
    auto = i
    if auto < n:
        out[auto] = a[auto] * char
        out[auto] += 1


@kernel
def fresh_loads(i8s: Array[i8], i16s: Array[i16], i32s: Array[i32], i64s: Array[i64],
                u8s: Array[u8], u16s: Array[u16], u32s: Array[u32], u64s: Array[u64],
                f32s: Array[f32], f64s: Array[f64], bools: Array[boolean], n: i32):
    """Each array holds 2n values: the first half takes the second's, and the loads that
    read it back after the store (fresh: ld.relaxed.gpu, simgpu.ir.fresh) put it back,
    negated or flipped through a shared array, in the second half."""
    swap = shared_array(i64, BLOCK)
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        i8s[i] = i8s[i + n]
        i8s[i + n] = i8(-i8s[i])
        i16s[i] = i16s[i + n]
        i16s[i + n] = i16(-i16s[i])
        i32s[i] = i32s[i + n]
        i32s[i + n] = -i32s[i]
        i64s[i] = i64s[i + n]
        swap[threadIdx.x] = i64s[i]
        i64s[i + n] = -swap[threadIdx.x]
        u8s[i] = u8s[i + n]
        u8s[i + n] = u8(~u8s[i])
        u16s[i] = u16s[i + n]
        u16s[i + n] = u16(~u16s[i])
        u32s[i] = u32s[i + n]
        u32s[i + n] = ~u32s[i]
        u64s[i] = u64s[i + n]
        u64s[i + n] = ~u64s[i]
        f32s[i] = f32s[i + n]
        f32s[i + n] = -f32s[i]
        f64s[i] = f64s[i + n]
        f64s[i + n] = -f64s[i]
        bools[i] = bools[i + n]
        bools[i + n] = not bools[i]


@kernel
def warp_intrinsics(xs: Array[i32], ds: Array[f64], us: Array[u64], out: Array[i32],
                    dout: Array[f64], uout: Array[u64], votes: Array[u32]):
    """Every warp intrinsic and its corners: the source lane modulo the width, deltas
    past the segment (own value), a delta's low five bits, a lane mask reaching
    the next segment, 64-bit and float values, votes of a sub-warp mask."""
    i = blockIdx.x * blockDim.x + threadIdx.x
    lane = threadIdx.x % 32
    v = xs[i]
    out[10 * i] = shfl_sync(FULL_MASK, v, (lane * 7 + 3) % 32)
    out[10 * i + 1] = shfl_sync(FULL_MASK, v, lane + 5, 8)
    out[10 * i + 2] = shfl_sync(FULL_MASK, v, -1)
    out[10 * i + 3] = shfl_up_sync(FULL_MASK, v, 3)
    out[10 * i + 4] = shfl_up_sync(FULL_MASK, v, 2, 4)
    out[10 * i + 5] = shfl_down_sync(FULL_MASK, v, 5, 16)
    out[10 * i + 6] = shfl_down_sync(FULL_MASK, v, 33)
    out[10 * i + 7] = shfl_xor_sync(FULL_MASK, v, 17, 16)
    out[10 * i + 8] = shfl_xor_sync(FULL_MASK, i8(v), 1)
    dout[i] = shfl_xor_sync(FULL_MASK, ds[i], 3)
    uout[i] = shfl_down_sync(u32(4294967295), us[i], u32(1))
    votes[6 * i] = ballot_sync(FULL_MASK, v > 0)
    votes[6 * i + 1] = u32(any_sync(FULL_MASK, v > 1000))
    votes[6 * i + 2] = u32(all_sync(FULL_MASK, v > -1000))
    votes[6 * i + 3] = ballot_sync(-1, v % 3)
    syncwarp()
    if lane < 12:
        votes[6 * i + 4] = ballot_sync(0xFFF, v % 2 == 0)
        out[10 * i + 9] = shfl_sync(0xFFF, v, (lane + 1) % 12)
        votes[6 * i + 5] = u32(all_sync(0xFFF, v < 2000))
        syncwarp(0xFFF)
    else:
        votes[6 * i + 4] = activemask() & u32(0)


ALL = [elementwise, striding, atomics_i32, atomics_u32, atomics_i64, atomics_u64, atomics_float,
       block_sum, device_calls, hash_only, loops, scalar_types, select_logical, constants_64,
       int_ops_i32, int_ops_i64, float_ops, thread_geometry, double, fresh_loads,
       warp_intrinsics]
