"""The input of a device list ranking, checked and prepared on the device.

``prepare`` takes succ as given (a host array, a DeviceArray, or CUDA memory such
as a CuPy array) and returns the int32 successor array the kernels read, the
heads of the lists (a device array) and what the checks found.  Everything is
O(n) streaming or one scatter of in-degrees, in kernels; the host reads a few
counters back, never an array of n:

  lr_scan_i32 / _i64   one coalesced pass: successors out of range (count, first
                       node), tails (count, one of them), the sum of the
                       successors of the non-tails; _i64 also writes the int32
                       copy.  Warp sums (shfl_xor_sync), one atomic per warp.
  one tail             a single list: its head is the one id no successor
                       names, n(n - 1)/2 minus that sum (no scatter at all).
                       Validation then checks rank[head] == n - 1 (below).
  more tails           lr_indegree: in-degrees by atomic_add (one random
                       reduction per node); lr_heads_count / lr_heads_pack:
                       the nodes of in-degree 0, in increasing order (block
                       prefix sums, as the connected components' edge packing),
                       and the nodes of in-degree 2 or more (an error).
  lr_check_ranks       after the ranking, with validate=True, for the methods that
                       do not check in their walk (all but the random splitter's
                       fused walk: random_splitter.py): rank[t] == 0 at
                       the tails, rank[i] == rank[succ[i]] + 1 elsewhere (one
                       gather), and rank[head] == n - 1 for a single list.  A
                       consistent ranking exists only without cycles; with the
                       in-degrees checked (or the single list's head reaching
                       all n nodes) succ is then a forest of lists.

Only when a check fails does the host copy succ back and run the sequential
diagnosis (sequential.validate_succ), which names the offending nodes.
"""
from __future__ import annotations

import numpy as np

from algorithms.connected_components.kernels import SCAN_BLOCK, block_inclusive_scan
from simgpu.lang import (FULL_MASK, Array, atomic_add, atomic_max, atomic_min, blockDim, blockIdx,
                         device_function, gridDim, i32, i64, kernel, shared_array, shfl_xor_sync,
                         syncthreads, threadIdx, u64)

from .sequential import validate_succ

BLOCK = 256                  # threads per block of these kernels (full warps: the sums shuffle)
# stats words written by lr_scan_* into zeros (no host array to copy up): the bad ids,
# n - the first bad node, the tails, one tail + 1, the sum of the non-tails' successors
BAD, FIRST_BAD, TAILS, A_TAIL, SUCC_SUM = range(5)


@device_function
def warp_sum(v: i64) -> i64:
    off = 16
    while off > 0:
        v += shfl_xor_sync(FULL_MASK, v, off)
        off = off // 2
    return v


@device_function
def warp_min(v: i64) -> i64:
    off = 16
    while off > 0:
        v = min(v, shfl_xor_sync(FULL_MASK, v, off))
        off = off // 2
    return v


@device_function
def warp_max(v: i64) -> i64:
    off = 16
    while off > 0:
        v = max(v, shfl_xor_sync(FULL_MASK, v, off))
        off = off // 2
    return v


@device_function
def scan_totals(stats: Array[i64], n: i64, bad: i64, first: i64, tails: i64, tail: i64,
                total: i64):
    bad = warp_sum(bad)
    first = warp_min(first)
    tails = warp_sum(tails)
    tail = warp_max(tail)
    total = warp_sum(total)
    if threadIdx.x % 32 == 0:
        if bad != 0:
            atomic_add(stats, BAD, bad)
            atomic_max(stats, FIRST_BAD, i64(n) - first)
        if tails != 0:
            atomic_add(stats, TAILS, tails)
            atomic_max(stats, A_TAIL, tail + 1)
        if total != 0:
            atomic_add(stats, SUCC_SUM, total)


@kernel
def lr_scan_i32(src: Array[i32], stats: Array[i64], n: i32):
    """stats (5 zeros): see BAD, FIRST_BAD, ... above and the module docstring."""
    bad = i64(0)
    first = i64(n)
    tails = i64(0)
    tail = i64(-1)
    total = i64(0)
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        s = i64(src[i])
        if s < 0 or s >= n:
            bad += 1
            first = min(first, i)
        elif s == i:
            tails += 1
            tail = i
        else:
            total += s
    scan_totals(stats, i64(n), bad, first, tails, tail, total)


@kernel
def lr_scan_i64(src: Array[i64], succ: Array[i32], stats: Array[i64], n: i32):
    """lr_scan_i32 for int64 input, also writing the int32 successors the kernels read."""
    bad = i64(0)
    first = i64(n)
    tails = i64(0)
    tail = i64(-1)
    total = i64(0)
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        s = src[i]
        if s < 0 or s >= n:
            bad += 1
            first = min(first, i)
        else:
            succ[i] = i32(s)
            if s == i:
                tails += 1
                tail = i
            else:
                total += s
    scan_totals(stats, i64(n), bad, first, tails, tail, total)


@kernel
def lr_indegree(succ: Array[i32], deg: Array[i32], n: i32):
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        s = succ[i]
        if s != i:
            atomic_add(deg, s, 1)


@kernel
def lr_heads_count(deg: Array[i32], counts: Array[i32], n: i32, chunk: i64):
    """counts[b] = the heads (in-degree 0) in block b's chunk of nodes; counts[gridDim.x]
    += the nodes with two or more predecessors."""
    heads = 0
    multi = 0
    start = i64(blockIdx.x) * chunk
    end = min(start + chunk, i64(n))
    for i in range(start + threadIdx.x, end, blockDim.x):
        d = deg[i]
        if d == 0:
            heads += 1
        elif d > 1:
            multi += 1
    if heads != 0:
        atomic_add(counts, blockIdx.x, heads)
    if multi != 0:
        atomic_add(counts, gridDim.x, multi)


@kernel
def lr_heads_pack(deg: Array[i32], offsets: Array[i64], heads: Array[i32], n: i32, chunk: i64):
    """heads[...] = the nodes of in-degree 0 in increasing order (offsets[b]: the heads
    before block b's chunk)."""
    s = shared_array(i32, SCAN_BLOCK)
    start = i64(blockIdx.x) * chunk
    end = min(start + chunk, i64(n))
    base = offsets[blockIdx.x]
    for k0 in range(start, end, blockDim.x):
        k = k0 + threadIdx.x
        f = 0
        if k < end:
            if deg[k] == 0:
                f = 1
        pos = base + block_inclusive_scan(s, f) - 1
        if f != 0:
            heads[pos] = i32(k)
        base += s[blockDim.x - 1]
        syncthreads()


@kernel
def lr_check_ranks(succ: Array[i32], ranks: Array[i64], bad: Array[i64], n: i32, head: i32,
                   last: i64):
    """bad[0] += the nodes whose rank is not consistent (see the module docstring)."""
    cnt = i64(0)
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        s = succ[i]
        r = ranks[i]
        if s == i:
            if r != 0:
                cnt += 1
        elif ranks[s] != r - 1:
            cnt += 1
        if i == head and r != last:
            cnt += 1
    cnt = warp_sum(cnt)
    if threadIdx.x % 32 == 0 and cnt != 0:
        atomic_add(bad, 0, cnt)


@kernel
def lr_widen(src: Array[i32], dst: Array[i64], n: i32):
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        dst[i] = i64(src[i])


@kernel
def lr_low_words(src: Array[u64], dst: Array[i64], off: i32, n: i32):
    """dst[i] = the low 32 bits of src[off + i] (Wylie's rank field)."""
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        dst[i] = i64(src[off + i] & u64(0xFFFFFFFF))


# --- host side ------------------------------------------------------------------

class Prepared:
    """What prepare() found: succ32 (int32 device array), n, tails, heads (device
    array of the heads in increasing order; None where not needed and for a single
    list, whose head is ``head``), n_heads, head (the single list's head, else -1),
    source (the caller's array, for a diagnosis), early (what ``early`` returned)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def grid_for(ctx, items: int) -> int:
    """Blocks of BLOCK threads for a striding pass over items: one per item, at most
    what the device holds at once."""
    return max(1, min(-(-items // BLOCK), max(1, ctx.resident_threads() // BLOCK)))


def helper_launch(ctx, kernel, grid: int, *args, step: str):
    rep = ctx.device.launch(kernel, grid, BLOCK, *args, **ctx.options)
    rep.extra["step"] = step
    ctx.helpers.append(rep)
    return rep


def to_device_succ(dev, succ):
    """(succ on the device as an int32 or int64 signed view, whether that memory is
    ours): the caller's own device array (not ours: it must not be written), or one
    copy of a host array (ours). A host array whose ids are all in range goes up as
    int32, the kernels' id type, so the device holds 4n bytes of it and not 8n (the
    paper's 64-bit run fits the 896 MB card by that: docs/paper); one with ids out of
    range goes up as given, for the device's range check to name them."""
    arr = dev.as_device_array(succ)
    if arr is not None:
        owned = False
    else:                                           # a host array: one copy
        host = np.asarray(succ)
        if host.dtype.kind not in "iu":
            raise ValueError(f"succ must have an integer dtype, got {host.dtype}")
        if host.dtype.itemsize not in (4, 8) or not host.dtype.isnative:
            host = host.astype(np.int64)
        if host.dtype != np.int32 and host.size and 0 <= host.min() and host.max() < host.size:
            host = host.astype(np.int32)            # (n <= MAX_N: every id fits)
        arr, owned = dev.to_device(host), True
    dt = arr.dtype
    if dt.kind not in "iu" or dt.itemsize not in (4, 8):
        raise ValueError(f"succ on the device must be int32 or int64 (or uint32/uint64), "
                         f"not {dt}: convert it on the device first")
    if dt.kind == "u":                              # ids >= 2^31 / 2^63 read as negative: out of range
        arr = arr.view(np.int32 if dt.itemsize == 4 else np.int64)
    return arr, owned


def diagnose(src) -> None:
    """The slow path, only after a check failed: the host's sequential checks name
    the offending nodes (ValueError)."""
    host = src.to_host()
    validate_succ(host)
    raise RuntimeError("the device checks found succ invalid but the host's did not; "
                       "please report this input")


def scan(ctx, src):
    """Queue the input scan (lr_scan_*); returns (its counters: a device array of 5
    int64, BAD ..., the int32 successors).  Nothing is read back here."""
    dev = ctx.device
    n = src.size
    stats = dev.zeros(5, np.int64)
    grid = grid_for(ctx, n)
    if src.dtype == np.int32:
        succ32 = src
        helper_launch(ctx, lr_scan_i32, grid, src, stats, n, step="check")
    else:
        succ32 = dev.empty(n, np.int32)
        helper_launch(ctx, lr_scan_i64, grid, src, succ32, stats, n, step="check")
    return stats, succ32


def prepare(ctx, src, validate: bool, need_heads: bool, early=None, scanned=None) -> Prepared:
    """Check succ on the device (see the module docstring) and find the heads.
    The range check always runs (an id out of range would make the kernels read
    outside the arrays); with validate=False the in-degrees are computed only where
    the heads are needed, and not checked.  early(succ32): called once the scan is
    queued, before the host waits for its counters, to queue work that reads no
    successor's target (the random splitter's RS1): the host's time to queue it then
    overlaps the GPU's instead of leaving the GPU idle.  scanned: what scan() returned,
    where the caller queued the scan already."""
    dev = ctx.device
    n = src.size
    grid = grid_for(ctx, n)
    stats, succ32 = scanned if scanned is not None else scan(ctx, src)
    started = early(succ32) if early is not None else None
    st = stats.to_host()
    if st[BAD] or st[TAILS] == 0:
        diagnose(src)
    tails = int(st[TAILS])
    info = Prepared(succ32=succ32, n=n, tails=tails, heads=None, n_heads=0, head=-1, source=src,
                    early=started)
    if tails == 1:
        head = n * (n - 1) // 2 - int(st[SUCC_SUM])
        if not 0 <= head < n:                       # no valid single list sums to this
            diagnose(src)
        info.head, info.n_heads = head, 1
        return info
    if not (need_heads or validate):
        return info
    deg = dev.zeros(n, np.int32)
    helper_launch(ctx, lr_indegree, grid, succ32, deg, n, step="heads")
    chunk = -(-n // (grid * BLOCK)) * BLOCK
    counts = dev.zeros(grid + 1, np.int32)
    helper_launch(ctx, lr_heads_count, grid, deg, counts, n, chunk, step="heads")
    c = counts.to_host().astype(np.int64)
    if validate and c[grid]:
        diagnose(src)
    offsets = np.zeros(grid, dtype=np.int64)
    np.cumsum(c[:grid - 1], out=offsets[1:])
    info.n_heads = int(c[:grid].sum())
    heads = dev.uninitialized(max(info.n_heads, 1), np.int32)   # lr_heads_pack writes each
    helper_launch(ctx, lr_heads_pack, grid, deg, dev.to_device(offsets), heads, n, chunk,
                  step="heads")
    info.heads = heads
    return info


def check_ranks(ctx, info: Prepared, ranks) -> None:
    """lr_check_ranks; on failure the diagnosis (ValueError naming the nodes)."""
    dev = ctx.device
    bad = dev.zeros(1, np.int64)
    helper_launch(ctx, lr_check_ranks, grid_for(ctx, info.n), info.succ32, ranks, bad, info.n,
                  info.head, info.n - 1, step="validate")
    if bad.to_host()[0]:
        diagnose(info.source)


def widen(ctx, src) -> object:
    out = ctx.device.uninitialized(src.size, np.int64)      # every element written
    helper_launch(ctx, lr_widen, grid_for(ctx, src.size), src, out, src.size, step="output")
    return out


def low_words(ctx, src, n: int, off: int = 0) -> object:
    out = ctx.device.uninitialized(n, np.int64)             # every element written
    helper_launch(ctx, lr_low_words, grid_for(ctx, n), src, out, off, n, step="output")
    return out
