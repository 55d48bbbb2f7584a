"""The graph in CSR on the device, for union-find connected components
(:mod:`algorithms.connected_components.union_find`).

The graph goes to the device as given (as for Shiloach-Vishkin: one copy of the
(m, 2) array, or device memory read in place) and is turned into CSR there:

  cc_edges_count_*     the vertex ids checked and the non-loop edges counted (the SV
                       helper); the host reads its counters once, after every
                       kernel of the call is queued: an error names the first bad edge
  uf_degree_*          deg[u] += 1, deg[v] += 1 per non-loop edge (atomics); an edge
                       with an id out of range is left out here and below
  uf_scan_sums         per block: the sum of its chunk of deg
  uf_scan_write        off[v] = sum of deg before v, off[n] = 2m: each block adds up
                       the block sums before it, then prefix sums its chunk
  uf_fill_*            adj[off[u] + (--deg[u])] = v and the same for v (atomics: the
                       order inside a vertex's list depends on the schedule; the
                       labels do not)

No host round trip between the kernels (issue 20): the buffers are sized from what
the host knows (n, the input length) and the GPU runs the whole call back to back.
Every buffer that a kernel writes before any read (off, adj) is allocated
uninitialized: no memset on a real GPU (on an H100 the zeroing of adj alone took
0.09 ms of the Kronecker 21/16 graph's 5.2 ms); the simulator's check="uninit" run in
the tests shows that nothing reads a word before it is written.
"""
from __future__ import annotations

import numpy as np

from simgpu.lang import (Array, atomic_add, atomic_sub, blockDim, blockIdx, gridDim, i32, i64,
                         kernel, shared_array, syncthreads, threadIdx)

from . import kernels as K
from .kernels import SCAN_BLOCK, block_inclusive_scan, edge_status
from .shiloach_vishkin import check_counts  # the edge check, shared with SV's upload_edges


# --- CSR on the device ----------------------------------------------------------

@kernel
def uf_degree_i64(R: Array[i64], deg: Array[i32], n: i32, m_in: i32):
    """deg[u] += 1, deg[v] += 1 per non-loop edge with both ids in [0, n): an edge out of
    range is left out here (cc_edges_count counts it, and the host raises after the
    call's kernels are queued), so no atomic ever lands outside deg."""
    for k in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, m_in, i64(gridDim.x) * blockDim.x):
        a = R[2 * k]
        b = R[2 * k + 1]
        if edge_status(a, b, n) == 1:
            atomic_add(deg, i32(a), 1)
            atomic_add(deg, i32(b), 1)


@kernel
def uf_degree_i32(R: Array[i32], deg: Array[i32], n: i32, m_in: i32):
    for k in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, m_in, i64(gridDim.x) * blockDim.x):
        u = R[2 * k]
        v = R[2 * k + 1]
        if edge_status(i64(u), i64(v), n) == 1:
            atomic_add(deg, u, 1)
            atomic_add(deg, v, 1)


@kernel
def uf_scan_sums(deg: Array[i32], sums: Array[i64], n: i32, chunk: i64):
    """sums[b] = the degrees of block b's chunk of vertices."""
    total = i64(0)
    start = i64(blockIdx.x) * chunk
    end = min(start + chunk, i64(n))
    for i in range(start + threadIdx.x, end, blockDim.x):
        total += deg[i]
    if total != 0:
        atomic_add(sums, blockIdx.x, total)


@kernel
def uf_scan_write(deg: Array[i32], sums: Array[i64], off: Array[i32], n: i32, chunk: i64):
    """off[v] = the degrees before v; off[n] = all.  The degrees before block b's chunk
    are sums[0] + ... + sums[b - 1], which every block adds up itself (a grid of a few
    thousand blocks: a few thousand words from the L2 each), so that the offsets need no
    host prefix sum, no copy back and no copy up.  Every partial sum fits in an i32: all
    of them together are at most the directed edges, checked to fit before the launch."""
    s = shared_array(i32, SCAN_BLOCK)
    before = i64(0)
    for j in range(threadIdx.x, blockIdx.x, blockDim.x):
        before += sums[j]
    block_inclusive_scan(s, i32(before))
    acc = i64(s[blockDim.x - 1])
    syncthreads()
    start = i64(blockIdx.x) * chunk
    end = min(start + chunk, i64(n))
    for k0 in range(start, end, blockDim.x):
        k = k0 + threadIdx.x
        d = 0
        if k < end:
            d = deg[k]
        incl = acc + block_inclusive_scan(s, d)
        if k < end:
            off[k] = i32(incl - d)
            if k == n - 1:
                off[n] = i32(incl)
        acc += s[blockDim.x - 1]
        syncthreads()


@kernel
def uf_fill_i64(R: Array[i64], off: Array[i32], deg: Array[i32], adj: Array[i32], n: i32,
                m_in: i32):
    """The edges uf_degree counted (the same test), each into both lists."""
    for k in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, m_in, i64(gridDim.x) * blockDim.x):
        a = R[2 * k]
        b = R[2 * k + 1]
        if edge_status(a, b, n) == 1:
            u = i32(a)
            v = i32(b)
            adj[off[u] + atomic_sub(deg, u, 1) - 1] = v
            adj[off[v] + atomic_sub(deg, v, 1) - 1] = u


@kernel
def uf_fill_i32(R: Array[i32], off: Array[i32], deg: Array[i32], adj: Array[i32], n: i32,
                m_in: i32):
    for k in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, m_in, i64(gridDim.x) * blockDim.x):
        u = R[2 * k]
        v = R[2 * k + 1]
        if edge_status(i64(u), i64(v), n) == 1:
            adj[off[u] + atomic_sub(deg, u, 1) - 1] = v
            adj[off[v] + atomic_sub(deg, v, 1) - 1] = u

CSR_KERNELS = ("cc_edges_count_i64", "cc_edges_count_i32", "uf_degree_i64", "uf_degree_i32",
               "uf_scan_sums", "uf_scan_write", "uf_fill_i64", "uf_fill_i32")


# --- host side ------------------------------------------------------------------

class QueuedCsr:
    """A CSR build queued on the device and not yet checked (queue_csr): off, adj, and
    m, the directed edge count if the host already read it, else None and m_bound, a
    bound on it from the input length alone; counts: cc_edges_count's counters, which
    check_counts reads."""

    def __init__(self, off, adj, m, m_bound, counts, arr, grid):
        self.off, self.adj, self.m, self.m_bound = off, adj, m, m_bound
        self.counts, self.arr, self.grid = counts, arr, grid


def queue_csr(n: int, arr, device, grid: int, block: int, launch) -> QueuedCsr:
    """Queue the CSR build of the module docstring without waiting for the device:
    the edge check's counters are read later (check_counts), once everything after
    them is queued too, so the GPU never idles while the host reads.  The kernels
    that follow the check leave an out-of-range edge out, so they are safe to run
    before it is read.  adj has room for 2 x the input edges (self-loops do not go
    in: a little is unused); only where that bound does not fit the int32 edge index
    are the counts read first, to see whether the real count does."""
    from .sequential import INT32_MAX
    from .shiloach_vishkin import DeviceEdges, raw_edges
    m_in = len(arr)
    R = arr.R if isinstance(arr, DeviceEdges) else device.to_device(raw_edges(arr))
    wide = R.dtype == np.int64
    chunk = -(-m_in // (grid * block)) * block
    counts = device.zeros(grid + 1, np.int32)
    launch(K.cc_edges_count_i64 if wide else K.cc_edges_count_i32, R, counts, n, m_in, chunk)
    m = None
    if 2 * m_in > INT32_MAX:               # the bound may be too large: read the real count
        m, _ = check_counts(n, arr, counts, grid)
    deg = device.zeros(n, np.int32)
    launch(uf_degree_i64 if wide else uf_degree_i32, R, deg, n, m_in)
    vchunk = -(-n // (grid * block)) * block
    sums = device.zeros(grid, np.int64)
    launch(uf_scan_sums, deg, sums, n, vchunk)
    off = device.uninitialized(n + 1, np.int32)
    launch(uf_scan_write, deg, sums, off, n, vchunk)
    m_bound = 2 * m_in if m is None else m
    adj = device.uninitialized(max(m_bound, 1), np.int32)
    launch(uf_fill_i64 if wide else uf_fill_i32, R, off, deg, adj, n, m_in)
    return QueuedCsr(off, adj, m, m_bound, counts, arr, grid)


def build_csr(n: int, arr, device, grid: int, block: int, launch):
    """(off, adj, directed edges): the graph in CSR on the device (see the module
    docstring), checked; arr: the host edges or DeviceEdges (shiloach_vishkin.edge_input)."""
    csr = queue_csr(n, arr, device, grid, block, launch)
    m = csr.m if csr.m is not None else check_counts(n, arr, csr.counts, grid)[0]
    return csr.off, csr.adj, m


def default_geometry(device, items: int):
    """(grid, block) of the CSR build: blocks of 256, one thread per item up to four times
    the threads the device holds at once (4 x sm_count x max_threads_per_sm)."""
    from .shiloach_vishkin import BLOCK
    resident = int(device.sm_count) * int(device.max_threads_per_sm)
    return max(1, min(-(-items // BLOCK), 4 * resident // BLOCK)), BLOCK
