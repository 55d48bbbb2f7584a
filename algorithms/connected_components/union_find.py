"""Union-find connected components with the design of ECL-CC (Jaiganesh and
Burtscher, HPDC 2018), written here from the paper's description.

    label(n, edges, method="union-find", device=...)

The graph goes to the device as given and is turned into CSR there, by the kernels of
:mod:`.csr_build` (no host round trip between them: issue 20).  Every buffer that a
kernel writes before any read (parent, the worklists, labels) is allocated
uninitialized (no memset on a real GPU); the simulator's check="uninit" run in the
tests shows that nothing reads a word before it is written.

Then the four kernels of ECL-CC's design, on parent[] (every vertex points to a
smaller or equal vertex at all times, so roots are the smallest vertex of their
tree and the final labels are the smallest vertex id of each component, as the
other methods give):

  uf_init      parent[v] = v's smallest neighbour if below v, else v (of the first
               warp_degree neighbours: a hub's thread does not walk its list)
  uf_compute1  a thread per vertex of degree <= warp_degree: for every neighbour
               u < v (each edge is processed once, from its larger end): hook the
               two representatives, the larger onto the smaller, by atomic_cas
               (a failed CAS returns the winner's value: the loop climbs from it);
               vertices of larger degree go to worklists: those up to
               block_degree to the warp list, the others (hubs) to the hub list
               in chunks of hub_chunk neighbours
  uf_compute2  a warp per warp list vertex: the lanes split its neighbours
  uf_compute3  a block per hub list chunk: the block's threads split its
               neighbours (ECL-CC: a block per whole vertex, hub_chunk=0 here;
               Kronecker graphs' largest hubs made that kernel's tail)
  uf_flatten   labels[v] = the root of v's tree (int64)

``representative`` is ECL-CC's intermediate pointer jumping: while following the
path to the root, each visited vertex is made to point to its grandparent
(plain stores: whichever store wins, parent[x] stays an ancestor of x).

Why it is right under every schedule: parent[x] only ever decreases and stays
an ancestor's id (init: a neighbour, which is in x's component; a hook: CAS
only succeeds on a root, which is replaced by a smaller vertex of the same
component; a jump: the grandparent).  A hook of the representatives a > b
succeeds only while a is a root, so no cycle can form (every pointer goes to a
smaller id).  When every edge (v, u) has been processed, some CAS made
rep(v) == rep(u) or found them equal; roots never come back, so at the end
every component is one tree.  (A hook that finds parent[u] == vstat stops there:
u is then in v's tree, which is what rep(v) == rep(u) proves.  Chunks of one hub
run in several blocks at once, each from v's representative: the same hooks a
block's threads race on for a whole vertex.)  The simulator checks this with random
interleavings and store winners (tests/algorithms/test_union_find.py).
"""
from __future__ import annotations

import numpy as np

from simgpu.lang import (Array, atomic_add, atomic_cas, blockDim, blockIdx, device_function,
                         gridDim, i32, i64, kernel, threadIdx)

# the CSR build (its names stay importable from here, as they were)
from .csr_build import (CSR_KERNELS, QueuedCsr, build_csr, check_counts,  # noqa: F401
                        default_geometry, queue_csr, uf_degree_i32, uf_degree_i64,
                        uf_fill_i32, uf_fill_i64, uf_scan_sums, uf_scan_write)

WARP_DEGREE = 16      # above: a warp per vertex (half a warp of neighbours is still one
                      # thread's work; ASSUMED, as in the published design's spirit)
BLOCK_DEGREE = 352    # above: a block per vertex (11 warps' worth of neighbours)
HUB_CHUNK = 2048      # a block takes at most this many neighbours of one vertex (8 strides
                      # of a 256-thread block): on Kronecker 21/16 one hub has 209,613
                      # neighbours, ~600 dependent hooks per thread for a single block,
                      # the kernel's tail; 0: a block per whole vertex (ECL-CC's split).
                      # H100, 2026-11-26 (docs/results/gpu-end-to-end-h100.md): uf_compute3
                      # 0.72 ms at 0, 0.21 ms at 1024 to 4096, 0.24 at 8192
WARP_LISTS = 1        # the warp list in parts, each with its own counter (uf_compute1).
                      # Same run, Kronecker 21/16: 32 parts cut uf_compute1 from 0.330 to
                      # 0.190 ms (its ~340k pushes no longer on one atomic) but uf_compute2,
                      # each warp reading 32 counters, went from 0.175 to 0.297 ms (and
                      # 0.016 to 0.107 on the uniform graph): no gain, so one part


# --- union-find -----------------------------------------------------------------

@device_function
def climb(parent: Array[i32], x: i32, curr: i32) -> i32:
    """The root of x's tree, curr = parent[x] already read; every vertex passed on the
    way is made to point to its grandparent (intermediate pointer jumping).  The next
    link is read before the jump is stored: the load then follows no store of this
    iteration, so it needs no fresh (L2) read (simgpu.ir.fresh) and may hit in the L1;
    a stale value is still an ancestor, since parent[] only ever moves up the tree."""
    if curr != x:
        prev = x
        nxt = parent[curr]
        while curr > nxt:
            after = parent[nxt]
            parent[prev] = nxt
            prev = curr
            curr = nxt
            nxt = after
    return curr


@device_function
def representative(parent: Array[i32], x: i32) -> i32:
    """The root of x's tree (climb from parent[x])."""
    return climb(parent, x, parent[x])


@device_function
def hook(parent: Array[i32], vstat: i32, u: i32) -> i32:
    """Join the trees of the root vstat (or a vertex above it) and of u: the larger
    root is CAS'd onto the smaller; a lost CAS climbs from the value it returns.
    Returns v's representative as last seen.
    If u's parent is vstat, u is in v's tree already (trees only merge) and the walk
    to the root is skipped: on a hub, whose neighbours hang from its root once their
    own hooks and jumps ran, that saves the dependent read of parent[vstat]."""
    ostat = parent[u]
    if ostat != vstat:
        ostat = climb(parent, u, ostat)
    while vstat != ostat:
        if vstat < ostat:
            ret = atomic_cas(parent, ostat, ostat, vstat)
            if ret == ostat:
                break
            ostat = ret
        else:
            ret = atomic_cas(parent, vstat, vstat, ostat)
            if ret == vstat:
                break
            vstat = ret
    return vstat


@kernel
def uf_init(off: Array[i32], adj: Array[i32], parent: Array[i32], n: i32, scan: i32):
    """parent[v] = the smallest of v's first `scan` neighbours if it is below v, else v.
    With scan >= v's degree that is v's smallest neighbour: what ECL-CC's "first smaller
    neighbour" gives on its sorted CSR (our lists come in fill order), the shallowest
    start.  Bounded by scan so that a hub's thread does not walk its whole list."""
    for v in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        beg = off[v]
        first = v
        for i in range(beg, min(off[v + 1], beg + scan)):
            first = min(first, adj[i])
        parent[v] = first


@kernel
def uf_compute1(off: Array[i32], adj: Array[i32], parent: Array[i32], wl: Array[i32],
                top: Array[i32], hub_v: Array[i32], hub_beg: Array[i32], n: i32,
                warp_degree: i32, block_degree: i32, hub_chunk: i32, lists: i32, region: i32):
    """A thread per vertex of small degree; the others onto worklists: the warp list (a
    warp each) in `lists` parts, part k = (v // 32) % lists at wl[k * region:], counted
    by top[32 * k] (counters 128 bytes apart: fewer atomics on each of them), and the
    hub list (a block each), counted by top[1].  A vertex of
    degree above block_degree goes to the hub list in chunks of hub_chunk neighbours
    (0: one chunk, its whole list), each entry its vertex and its chunk's first
    neighbour, so that several blocks share a large hub.
    As in ECL-CC, a small vertex that uf_init left a root has no smaller neighbour and
    no work.  The edge to up = parent[v] is skipped: v already hangs in up's tree (trees
    only merge), so its hook would only walk to the common root (the init edge of
    nearly every vertex: about one hook in five on a random graph of degree 8)."""
    for v in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        beg = off[v]
        end = off[v + 1]
        if end - beg > warp_degree:
            if end - beg > block_degree:
                chunks = 1
                if hub_chunk > 0:
                    chunks = (end - beg - 1) // hub_chunk + 1     # no overflow near 2^31
                first = atomic_add(top, 1, chunks)
                for c in range(chunks):
                    hub_v[first + c] = v
                    hub_beg[first + c] = beg + c * hub_chunk
            else:
                k = (v // 32) % lists
                wl[k * region + atomic_add(top, 32 * k, 1)] = v
        else:
            up = parent[v]
            if up != v:                  # else v has no smaller neighbour (it was scanned whole)
                vstat = representative(parent, up)
                for i in range(beg, end):
                    u = adj[i]
                    if v > u and u != up:
                        vstat = hook(parent, vstat, u)


@kernel
def uf_compute2(off: Array[i32], adj: Array[i32], parent: Array[i32], wl: Array[i32],
                top: Array[i32], lists: i32, region: i32):
    """A warp per warp list vertex (part after part); its lanes stride over the
    neighbours."""
    lane = threadIdx.x % 32
    warps = (gridDim.x * blockDim.x) // 32
    for k in range(lists):
        count = top[32 * k]
        for w in range((blockIdx.x * blockDim.x + threadIdx.x) // 32, count, warps):
            v = wl[k * region + w]
            up = parent[v]
            vstat = representative(parent, up)
            for i in range(off[v] + lane, off[v + 1], 32):
                u = adj[i]
                if v > u and u != up:
                    vstat = hook(parent, vstat, u)


@kernel
def uf_compute3(off: Array[i32], adj: Array[i32], parent: Array[i32], hub_v: Array[i32],
                hub_beg: Array[i32], top: Array[i32], hub_chunk: i32):
    """A block per hub list entry (a chunk of a vertex's neighbours); its threads stride
    over the chunk."""
    count = top[1]
    for b in range(blockIdx.x, count, gridDim.x):
        v = hub_v[b]
        beg = hub_beg[b]
        end = off[v + 1]
        if hub_chunk > 0:
            end = beg + min(end - beg, hub_chunk)
        up = parent[v]
        vstat = representative(parent, up)
        for i in range(beg + threadIdx.x, end, blockDim.x):
            u = adj[i]
            if v > u and u != up:
                vstat = hook(parent, vstat, u)


@kernel
def uf_flatten(parent: Array[i32], labels: Array[i64], n: i32):
    """labels[v] = the root of v's tree: the smallest vertex of v's component."""
    for v in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        r = parent[v]
        while r > parent[r]:
            r = parent[r]
        labels[v] = i64(r)


UF_KERNELS = ("uf_init", "uf_compute1", "uf_compute2", "uf_compute3", "uf_flatten")


# --- host side ------------------------------------------------------------------

def hub_capacity(n: int, m: int, block_degree: int, hub_chunk: int) -> int:
    """Room for every hub list entry: at most min(n, m / (block_degree + 1)) vertices
    have more than block_degree of the m directed edges, and their chunks add at most
    m / hub_chunk entries to one per vertex."""
    hubs = min(int(n), int(m) // (int(block_degree) + 1))
    return max(1, hubs + (int(m) // int(hub_chunk) if hub_chunk > 0 else 0))


def union_find_csr(n: int, off, adj, device, grid: int, block: int, launch,
                   warp_degree: int = WARP_DEGREE, block_degree: int = BLOCK_DEGREE,
                   hub_chunk: int = HUB_CHUNK, m: int | None = None,
                   warp_lists: int = WARP_LISTS):
    """The ECL-CC kernels on a CSR graph already on the device; labels (int64 device
    array).  m: the directed edge count or a bound on it (sizes the hub list; read
    from the device, off[n], when not given)."""
    if m is None:
        m = int(off.to_host()[n])
    parent = device.uninitialized(n, np.int32)
    lists = max(1, min(int(warp_lists), -(-n // 32)))
    region = -(-(-(-n // 32)) // lists) * 32       # the most vertices one part can get
    wl = device.uninitialized(max(1, lists * region), np.int32)
    cap = hub_capacity(n, m, block_degree, hub_chunk)
    hub_v = device.uninitialized(cap, np.int32)
    hub_beg = device.uninitialized(cap, np.int32)
    top = device.zeros(32 * lists, np.int32)
    labels = device.uninitialized(n, np.int64)
    launch(uf_init, off, adj, parent, n, warp_degree)
    launch(uf_compute1, off, adj, parent, wl, top, hub_v, hub_beg, n, warp_degree, block_degree,
           hub_chunk, lists, region)
    launch(uf_compute2, off, adj, parent, wl, top, lists, region)
    launch(uf_compute3, off, adj, parent, hub_v, hub_beg, top, hub_chunk)
    launch(uf_flatten, parent, labels, n)
    return labels


def vertex_geometry(n: int):
    """(grid, block) of the union-find kernels by default: a thread per vertex, no
    striding.  Their walks are chains of dependent random reads: latency-bound, they
    need every resident warp, and a thread that owns one vertex keeps one walk's
    latency, not several in series; the GPU hands out blocks as others finish, which
    balances the uneven walks.  On an H100 (docs/results/gpu-end-to-end-h100.md,
    2026-11-25, uniform 2^22 / 2^24 and Kronecker 21/16) the union-find kernels took,
    by threads: 2.64 / 13.78 ms at 32,768, 0.91 / 1.46 ms at 1,081,344 (4x resident,
    the default before) and 0.511 / 1.243 ms at a thread per vertex."""
    from .shiloach_vishkin import BLOCK
    return max(1, -(-int(n) // BLOCK)), BLOCK


def union_find(n, edges, device, threads=None, seed=0, launch_options=None,
               warp_degree: int = WARP_DEGREE, block_degree: int = BLOCK_DEGREE,
               hub_chunk: int = HUB_CHUNK, warp_lists: int = WARP_LISTS, export=None):
    """label(..., method="union-find"): (labels int64 device array, launches, p of the
    union-find kernels, m_directed); with export, (export(labels), ...): label() passes
    its export, so that a copy back to the host (numpy edges in) starts, and page-locks
    its host array, while the kernels still run, before the edge check's read.  threads (None: default_geometry for the CSR build,
    vertex_geometry for the union-find kernels) and launch_options as for Shiloach-Vishkin (every launch gets its own seed
    under schedule="random", derived from the base seed and its position).
    warp_degree / block_degree: the degree thresholds of the thread / warp / block
    kernels; hub_chunk: the most neighbours of one hub a block takes (0: all);
    warp_lists: the warp list's parts (see the constants above)."""
    from .shiloach_vishkin import edge_input, geometry, host_edges
    from .sequential import validate_edges
    if isinstance(warp_degree, bool) or int(warp_degree) < 0 or int(block_degree) < int(warp_degree):
        raise ValueError("need 0 <= warp_degree <= block_degree, got "
                         f"{warp_degree!r}, {block_degree!r}")
    if isinstance(hub_chunk, bool) or not isinstance(hub_chunk, (int, np.integer)) \
            or not 0 <= int(hub_chunk) <= 2**31 - 1:
        raise ValueError(f"hub_chunk must be an int in [0, 2^31 - 1] (0: a block per whole "
                         f"hub), got {hub_chunk!r}")
    if isinstance(warp_lists, bool) or not isinstance(warp_lists, (int, np.integer)) \
            or not 1 <= int(warp_lists) <= 1024:
        raise ValueError(f"warp_lists must be an int in [1, 1024], got {warp_lists!r}")
    arr = edge_input(n, edges, device)
    n = int(n)
    if n == 0:
        if len(arr):
            validate_edges(n, host_edges(arr))
        labels = device.zeros(0, np.int64)
        return (labels if export is None else export(labels)), [], 0, 0
    if threads is None:
        grid, block = default_geometry(device, max(n, len(arr)))
        uf_grid, _ = vertex_geometry(n)
    else:
        grid, block = geometry(threads, max(n, len(arr)))
        uf_grid = grid
    opts = dict(launch_options or {})
    base_seed = opts.pop("seed", seed)
    randomized = opts.get("schedule", "fixed") == "random"
    launches = []

    def launch(kernel, *args, kernel_grid=grid):
        o = dict(opts)
        if randomized:
            o["seed"] = int(np.random.SeedSequence([int(base_seed), len(launches), 2])
                            .generate_state(1)[0] & 0x7FFFFFFF)
        launches.append(device.launch(kernel, kernel_grid, block, *args, **o))

    def uf_launch(kernel, *args):
        launch(kernel, *args, kernel_grid=uf_grid)

    if len(arr):
        csr = queue_csr(n, arr, device, grid, block, launch)
        off, adj, m_bound = csr.off, csr.adj, csr.m_bound
    else:
        csr = None
        off, adj, m_bound = device.zeros(n + 1, np.int32), device.zeros(1, np.int32), 0
    labels = union_find_csr(n, off, adj, device, uf_grid, block, uf_launch, int(warp_degree),
                            int(block_degree), int(hub_chunk), m_bound, int(warp_lists))
    if export is not None:
        labels = export(labels)
    # The call's one host read, with every kernel queued: the edge check (an error names
    # the first bad edge; the labels computed without those edges are dropped).
    m = 0 if csr is None else csr.m if csr.m is not None else \
        check_counts(n, arr, csr.counts, grid)[0]
    return labels, launches, uf_grid * block, m
