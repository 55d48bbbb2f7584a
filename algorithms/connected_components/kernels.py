"""Shiloach-Vishkin connected components: the GPU kernels (kernel language).

Dehne & Yogaratnam, section 4, Algorithm 3 / Table 4: kernels SV0 .. SV5, every
one striding over its items with p = gridDim.x * blockDim.x threads
(thread t handles items t, t + p, t + 2p, ...), concurrent plain writes (no
atomics), and the host running the round loop (see shiloach_vishkin.py).

Device data
    D  Array[i32]  the parent array (a forest; D[r] == r for a root)
    Q  Array[i32]  Q[v] == s: v was marked in round s ("its tree is not stagnant")
    E  Array[i64]  directed edges, one 64-bit word each: (i << 32) | j.  Every
                   undirected edge {u, v} of the input is stored as (u, v) and
                   (v, u), so "for each edge <i, j>" of the PRAM algorithm is one
                   striding loop over E (m = len(E) in Table 4's formulas).
                   One word per edge instead of two i32 arrays: striding over
                   E is coalesced either way (consecutive lanes read consecutive
                   words: a half-warp reads one 128-byte segment on CC 1.3, as
                   two i32 arrays would read two 64-byte ones), moves the same
                   bytes, and needs half the load instructions and requests.
                   It is also the one edge read per edge that Table 4's 4m and
                   5m count (see README.md).
    w  Array[i32]  one word: the "any change?" flag of step 5

Loop indices are i64, so that i + p cannot wrap around for n or m close to
2^31 - 1; vertex ids and D, Q values are i32.

Prefetching (the paper: "within each kernel the same global memory address is
accessed only once"; SV1b, SV2 and SV3): the edge kernels load everything they
test into registers first, unconditionally, then test and write.  That makes
their read counts exact (4 and 5 per edge), not data dependent, except for
SV2's one read-back per edge that hooks (see sv2_hook).

The kernel ``sv1_shortcut_mark_fused`` is the *wrong* step 1 the paper warns
about (shortcutting and marking in one kernel under striding).  It exists only
to show, on the simulator, why step 1 needs two kernels; the correct driver
never uses it.

Helper kernels (not the paper's; they keep the O(m) and O(n) work before
and after the SV loop on the device, see README.md "Host and device"):
    cc_edges_count_i64/_i32  per block: count the input edges that are not
                             self-loops; count the edges with a vertex id
                             outside [0, n) (one word, atomics)
    cc_edges_pack_i64/_i32   write E from the raw (m, 2) input array: both
                             orientations of every non-loop edge, in input
                             order (a block-wide prefix sum in shared memory)
    cc_label_offsets         per star: how far below its root its smallest
                             vertex lies (atomic_max)
    cc_label_gather          labels[i] = D[i] - that offset (int64)
Atomics are fine there: they only add counts or take maxima, so their results
do not depend on the schedule.  The SV kernels stay atomic-free.
"""
from __future__ import annotations

from simgpu.lang import (Array, atomic_add, atomic_max, blockDim, blockIdx, device_function,
                         gridDim, i32, i64, kernel, shared_array, syncthreads, threadIdx)

LOW32 = 0xFFFFFFFF          # mask of j in an edge word (i64 constant)
SCAN_BLOCK = 256            # largest block of the helper kernels' shared prefix sum


@kernel
def sv0_init(D: Array[i32], Q: Array[i32], n: i32):
    """SV0: D[i] = i, Q[i] = 0.  Reads 0, writes 2n."""
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        D[i] = i32(i)
        Q[i] = 0


@kernel
def sv1a_shortcut(D: Array[i32], n: i32):
    """SV1a (step 1, first half): shortcut D[i] = D[D[i]].  Reads 2n, writes n."""
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        D[i] = D[D[i]]  # benign race: pointer jumping, any D value read is an ancestor


@kernel
def sv1b_mark(D: Array[i32], Q: Array[i32], s: i32, n: i32):
    """SV1b (step 1, second half): every vertex i that is not in a star after
    SV1a (D[i] != D[D[i]]) marks its grandparent with the round number s.
    Every tree that is not a star has a vertex at depth exactly 2, whose
    grandparent is the root: so the root of every non-star tree is marked.
    D is only read here, so the marks do not depend on the schedule.
    Reads 2n; writes one per vertex at depth >= 2 (<= n)."""
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        d = D[i]
        dd = D[d]
        if d != dd:
            Q[dd] = s


@kernel
def sv1_shortcut_mark_fused(D: Array[i32], Q: Array[i32], s: i32, n: i32):
    """WRONG on purpose: SV1a and SV1b fused into one striding kernel.

    A vertex is marked from D as it is at that moment, while other threads
    (other warps, or this thread's own later strides) have not shortcut their
    vertices yet.  A tree that is still not a star when the kernel ends can
    then be left without a mark on its root, and step 3 lets that unmarked
    non-star tree hook unconditionally: parent cycles and split components
    follow.  See README.md ("the step-1 lesson") and the race tests.
    Reads 3n (D[i], D[D[i]], D[new D[i]]); writes n + (marks)."""
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        d = D[D[i]]
        D[i] = d
        dd = D[d]
        if d != dd:
            Q[dd] = s


@kernel
def sv2_hook(E: Array[i64], D: Array[i32], Q: Array[i32], s: i32, m: i32):
    """SV2 (step 2), conditional hooking: for each directed edge <i, j>, if i's
    parent is a root (D[i] == D[D[i]]) and D[j] < D[i], hook that root onto
    D[j] (D[D[i]] = D[j], a concurrent write: any one writer wins), then read
    the root's parent back and mark the target that won, Q[D[D[i]]] = s.

    Marking Q[D[j]] directly would mark every target *tried*: stars that no
    root was actually hooked onto would then look non-stagnant, would not
    hook in SV3, and the log_{3/2} n bound on the rounds breaks (a star whose
    centre has the largest id takes n rounds when the largest target wins).
    The read-back costs one read per edge that hooks.  The last writer of a
    root reads its own value back (no store to that word follows), so the
    final parent of every hooked root is marked under any interleaving.
    Reads 4m + h (E[k], D[i], D[D[i]], D[j]; D[D[i]] again for the h edges
    that pass the test); writes 2h."""
    for k in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, m, i64(gridDim.x) * blockDim.x):
        e = E[k]
        i = i32(e >> 32)
        j = i32(e & LOW32)
        di = D[i]  # benign race: CRCW hooking, any one writer wins (see docstring)
        ddi = D[di]  # benign race: CRCW hooking, any one writer wins (see docstring)
        dj = D[j]  # benign race: CRCW hooking, any one writer wins (see docstring)
        if di == ddi and dj < di:
            D[di] = dj  # benign race: CRCW hooking, any one writer wins (see docstring)
            Q[D[di]] = s  # benign race: CRCW hooking, any one writer wins (see docstring)


@kernel
def sv3_hook_stagnant(E: Array[i64], D: Array[i32], Q: Array[i32], s: i32, m: i32):
    """SV3 (step 3), unconditional hooking of stagnant trees: for each directed
    edge <i, j>, if i's parent is a root that was not marked in this round
    (Q[D[i]] < s: its tree is a star that neither hooked nor was hooked onto
    in SV2) and D[j] != D[i], hook it: D[D[i]] = D[j].  Reads 5m (E[k], D[i],
    D[D[i]], D[j], Q[D[i]]); writes one per edge that passes the test."""
    for k in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, m, i64(gridDim.x) * blockDim.x):
        e = E[k]
        i = i32(e >> 32)
        j = i32(e & LOW32)
        di = D[i]  # benign race: CRCW hooking, any one writer wins (see docstring)
        ddi = D[di]  # benign race: CRCW hooking, any one writer wins (see docstring)
        dj = D[j]  # benign race: CRCW hooking, any one writer wins (see docstring)
        qi = Q[di]
        if di == ddi and qi < s and dj != di:
            D[di] = dj  # benign race: CRCW hooking, any one writer wins (see docstring)


@kernel
def sv4_shortcut(D: Array[i32], n: i32):
    """SV4 (step 4): shortcut D[i] = D[D[i]] again.  Reads 2n, writes n."""
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        D[i] = D[D[i]]  # benign race: pointer jumping, any D value read is an ancestor


@kernel
def sv5_any_change(Q: Array[i32], w: Array[i32], s: i32, n: i32):
    """SV5 (step 5): did this round change anything?  A change in round s
    always leaves a mark Q[v] == s (SV1b marks every non-star tree, SV2 marks
    every hook target; SV3 can only hook when some tree was marked).  Each
    thread checks its vertices and, if it saw a mark, sets w[0] = 1: a
    parallel OR by concurrent plain writes (all writers write the same 1).
    Reads n; writes one per thread that saw a mark (<= p)."""
    seen = 0
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        if Q[i] == s:
            seen = 1
    if seen != 0:
        w[0] = 1


# --- helpers: the input edges onto the device, the labels off it ------------------
#
# The raw input is the (m_in, 2) array as the user gave it, uploaded as one
# flat array R (R[2k], R[2k + 1] = edge k), int64 or int32 (uint64 and uint32
# arrays are uploaded as their signed views: an id >= 2^63 or >= 2^31 then
# reads as negative and is reported as out of range).  Block b of the helper
# launches owns the edges [b * chunk, (b + 1) * chunk) (chunk: a multiple of
# blockDim.x, from the host), so that a block-wide prefix sum puts every edge
# at its input position among the non-loop edges: E has the same layout as
# the host's prepare_edges, on every device and under every schedule.


@device_function
def edge_status(u: i64, v: i64, n: i32) -> i32:
    """0: a self-loop; 1: an edge to keep; 2: a vertex id outside [0, n)."""
    if u < 0 or u >= n or v < 0 or v >= n:
        return 2
    if u == v:
        return 0
    return 1


@device_function
def block_inclusive_scan(s: Array[i32], f: i32) -> i32:
    """Inclusive prefix sum of f over the threads of the block (Hillis-Steele
    in the shared array s of at least blockDim.x words).  Every thread of
    the block must call it; afterwards s[blockDim.x - 1] is the block's total,
    valid until the block's next syncthreads()."""
    t = threadIdx.x
    s[t] = f
    syncthreads()
    off = 1
    while off < blockDim.x:
        x = s[t - off] if t >= off else 0
        syncthreads()
        s[t] += x
        syncthreads()
        off *= 2
    return s[t]


@kernel
def cc_edges_count_i64(R: Array[i64], counts: Array[i32], n: i32, m_in: i32, chunk: i64):
    """counts[b] += the non-loop edges of block b's chunk; counts[gridDim.x] +=
    the edges with a vertex id outside [0, n).  counts: gridDim.x + 1 zeros."""
    keep = 0
    bad = 0
    start = i64(blockIdx.x) * chunk
    end = min(start + chunk, i64(m_in))
    for k in range(start + threadIdx.x, end, blockDim.x):
        st = edge_status(R[2 * k], R[2 * k + 1], n)
        if st == 1:
            keep += 1
        elif st == 2:
            bad += 1
    if keep != 0:
        atomic_add(counts, blockIdx.x, keep)
    if bad != 0:
        atomic_add(counts, gridDim.x, bad)


@kernel
def cc_edges_count_i32(R: Array[i32], counts: Array[i32], n: i32, m_in: i32, chunk: i64):
    """cc_edges_count_i64 for an int32 input array."""
    keep = 0
    bad = 0
    start = i64(blockIdx.x) * chunk
    end = min(start + chunk, i64(m_in))
    for k in range(start + threadIdx.x, end, blockDim.x):
        st = edge_status(i64(R[2 * k]), i64(R[2 * k + 1]), n)
        if st == 1:
            keep += 1
        elif st == 2:
            bad += 1
    if keep != 0:
        atomic_add(counts, blockIdx.x, keep)
    if bad != 0:
        atomic_add(counts, gridDim.x, bad)


@kernel
def cc_edges_pack_i64(R: Array[i64], offsets: Array[i64], E: Array[i64], half: i64, m_in: i32,
                      chunk: i64):
    """E[pos] = (u << 32) | v and E[half + pos] = (v << 32) | u for the non-loop
    edge (u, v) of input position k, pos = the non-loop edges before k
    (offsets[b]: those before block b's chunk; half: all of them).  The block
    walks its chunk in tiles of blockDim.x edges, the same number of tiles for
    every thread (the prefix sum has barriers)."""
    s = shared_array(i32, SCAN_BLOCK)
    start = i64(blockIdx.x) * chunk
    end = min(start + chunk, i64(m_in))
    base = offsets[blockIdx.x]
    for k0 in range(start, end, blockDim.x):
        k = k0 + threadIdx.x
        u = i64(0)
        v = i64(0)
        f = 0
        if k < end:
            u = R[2 * k]
            v = R[2 * k + 1]
            if u != v:
                f = 1
        pos = base + block_inclusive_scan(s, f) - 1
        if f != 0:
            E[pos] = (u << 32) | v
            E[half + pos] = (v << 32) | u
        base += s[blockDim.x - 1]
        syncthreads()


@kernel
def cc_edges_pack_i32(R: Array[i32], offsets: Array[i64], E: Array[i64], half: i64, m_in: i32,
                      chunk: i64):
    """cc_edges_pack_i64 for an int32 input array."""
    s = shared_array(i32, SCAN_BLOCK)
    start = i64(blockIdx.x) * chunk
    end = min(start + chunk, i64(m_in))
    base = offsets[blockIdx.x]
    for k0 in range(start, end, blockDim.x):
        k = k0 + threadIdx.x
        u = i64(0)
        v = i64(0)
        f = 0
        if k < end:
            u = i64(R[2 * k])
            v = i64(R[2 * k + 1])
            if u != v:
                f = 1
        pos = base + block_inclusive_scan(s, f) - 1
        if f != 0:
            E[pos] = (u << 32) | v
            E[half + pos] = (v << 32) | u
        base += s[blockDim.x - 1]
        syncthreads()


@kernel
def cc_label_offsets(D: Array[i32], M: Array[i32], n: i32):
    """After the SV loop (D: stars): M[r] = r - (the smallest vertex of r's
    star), from M = 0.  Only vertices below their root take part, and only
    while they would raise M[r] (a plain read first: few atomics per word
    even when a star's root is its largest vertex)."""
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        r = D[i]
        if i < r and r - i > M[r]:
            atomic_max(M, r, i32(r - i))


@kernel
def cc_label_gather(D: Array[i32], M: Array[i32], labels: Array[i64], n: i32):
    """labels[i] = the smallest vertex of i's star: D[i] - M[D[i]]."""
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        r = D[i]
        labels[i] = i64(r - M[r])


# The kernels of one round, in order (SV0 runs once before the first round).
ROUND_KERNELS = ("sv1a_shortcut", "sv1b_mark", "sv2_hook", "sv3_hook_stagnant",
                 "sv4_shortcut", "sv5_any_change")
ALL_KERNELS = ("sv0_init",) + ROUND_KERNELS
# Helpers: before SV0 (one pair, by the input's dtype) and after the last round.
EDGE_KERNELS = ("cc_edges_count_i64", "cc_edges_pack_i64", "cc_edges_count_i32",
                "cc_edges_pack_i32")
LABEL_KERNELS = ("cc_label_offsets", "cc_label_gather")
