"""Shiloach-Vishkin connected components on a device: the host driver.

    D = SV0()                          # D[i] = i, Q[i] = 0
    for s = 1, 2, ...:                 # one round
        SV1a  shortcut                 # step 1
        SV1b  mark non-star trees      # step 1 (a kernel of its own: see README)
        SV2   conditional hooking      # step 2
        SV3   hook stagnant stars      # step 3
        SV4   shortcut                 # step 4
        w = 0; SV5; if w == 0: stop    # step 5

When the loop stops every tree is a star and no edge joins two stars, so D[i]
is the root of i's component.  The labels are then normalized on the device
(helper kernels): every vertex gets the smallest vertex id of its star.
The edge array E is built on the device too, from the input array as given
(helper kernels before SV0): the host does only O(1) checks and copies.

The kernels are in kernels.py; the reasoning for why this is right under any
schedule (any winner of a concurrent write, any interleaving of warps) is in
README.md.
"""
from __future__ import annotations

import math

import numpy as np

from . import kernels as K
from simgpu.device import is_device_array

from .sequential import INT32_MAX, check_graph, directed_edge_count, validate_edges

BLOCK = 256                 # threads per block unless `threads` is smaller
DEFAULT_MAX_BLOCKS = 128    # default p: one thread per item, at most 128 blocks


class ConvergenceError(RuntimeError):
    """The round loop ran past its limit (only the deliberately wrong variant does)."""


def round_bound(n: int) -> int:
    """floor(log_{3/2} n) + 2: Shiloach and Vishkin's bound on the rounds (n >= 1)."""
    if n <= 1:
        return 2
    b = int(math.floor(math.log(n) / math.log(1.5)))
    # guard against floating-point error at exact powers of 3/2
    while 3 ** (b + 1) <= n * 2 ** (b + 1):
        b += 1
    while b > 0 and 3 ** b > n * 2 ** b:
        b -= 1
    return b + 2


def prepare_edges(n: int, edges) -> np.ndarray:
    """Validate and return the device edge words (int64): both orientations of
    every edge that is not a self-loop, packed as (i << 32) | j."""
    arr = np.asarray(edges)
    if arr.size == 0 and arr.ndim <= 2:       # [] or np.empty((0, 2)), any dtype
        arr = np.empty((0, 2), dtype=np.int64)
    e = validate_edges(n, arr)
    e = e[e[:, 0] != e[:, 1]]                 # self-loops never join anything
    directed_edge_count(len(e))               # raises where they do not fit int32 indices
    u, v = e[:, 0], e[:, 1]
    i = np.concatenate([u, v])
    j = np.concatenate([v, u])
    return (i << 32) | j


def geometry(threads, items: int):
    """(grid, block) for p = `threads` threads (default: one per item, capped)."""
    if threads is None:
        block = BLOCK
        grid = max(1, min(-(-items // block), DEFAULT_MAX_BLOCKS))
        return grid, block
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    threads = int(threads)
    block = min(threads, BLOCK)
    if threads % block:
        raise ValueError(f"threads = {threads} is not a whole number of blocks of {block}: "
                         f"use at most {BLOCK} threads or a multiple of {BLOCK}")
    return threads // block, block


def shiloach_vishkin(n, edges, device, threads=None, seed=0, launch_options=None,
                     fused_step1=False, max_rounds=None, observer=None, device_out=False):
    """Run SV on `device`; returns (labels int64, rounds, launches, p, m_directed).

    The input edges go to the device as they are (one copy of the (m, 2)
    array, no host-side conversion for int32/int64/uint32/uint64); the helper
    kernels check the vertex ids, drop self-loops and write E there, and,
    after the last round, turn D into labels (see upload_edges, device_labels).
    launch_options: passed to every launch (engine=..., schedule=..., seed=...).
    Under schedule="random" every launch gets its own seed, derived from the
    base seed (launch_options["seed"] if given, else `seed`) and the launch's
    position (the SV kernels' positions among the SV launches, as before the
    helper kernels existed; the helpers' from a stream of their own).
    fused_step1: use the WRONG fused step 1 (demonstration only).
    max_rounds: stop with ConvergenceError after this many rounds (default:
    4 * (floor(log_{3/2} n) + 2), far above what the correct variant needs).
    edges: a host array, or device memory (see edge_input).  device_out: return the
    labels as a device array (int64) instead of a numpy copy.
    observer: called as observer(kernel_name, s, D, Q) after every launch,
    helpers included (D, Q: the device arrays; s: the round, 0 for SV0 and
    the edge kernels), for tests that check invariants between kernels.
    """
    arr = edge_input(n, edges, device)        # O(1) checks; the ids are checked on the device
    n = int(n)
    if n == 0:
        if len(arr):
            validate_edges(n, host_edges(arr))    # any edge is out of range
        return (device.zeros(0, np.int64) if device_out else np.empty(0, dtype=np.int64)), \
            0, [], 0, 0
    grid, block = geometry(threads, max(n, 2 * len(arr)))
    opts = dict(launch_options or {})
    base_seed = opts.pop("seed", seed)
    randomized = opts.get("schedule", "fixed") == "random"
    launches = []
    sv_launches = 0

    def launch(kernel, *args, helper=False):
        nonlocal sv_launches
        o = dict(opts)
        if randomized:
            entropy = [int(base_seed), len(launches) - sv_launches, 1] if helper \
                else [int(base_seed), sv_launches]
            o["seed"] = int(np.random.SeedSequence(entropy).generate_state(1)[0] & 0x7FFFFFFF)
        elif "seed" in (launch_options or {}):
            o["seed"] = base_seed
        rep = device.launch(kernel, grid, block, *args, **o)
        launches.append(rep)
        sv_launches += not helper
        if observer is not None:
            observer(rep.kernel, s, D, Q)
        return rep

    s = 0
    D = device.zeros(n, np.int32)
    Q = device.zeros(n, np.int32)
    E, m = upload_edges(n, arr, device, grid, block, lambda k, *a: launch(k, *a, helper=True))
    w = device.zeros(1, np.int32)
    zero = np.zeros(1, dtype=np.int32)
    limit = max_rounds if max_rounds is not None else 4 * round_bound(n)

    launch(K.sv0_init, D, Q, n)
    while True:
        s += 1
        if s > limit:
            d = D.to_host()
            cur = d[d]
            for _ in range(n.bit_length()):
                cur = cur[cur]
            forest = bool(np.array_equal(d[cur], cur))
            raise ConvergenceError(
                f"Shiloach-Vishkin did not finish in {limit} rounds (n = {n}, "
                f"{m} directed edges); the parent array "
                + ("is still a forest" if forest else "holds a cycle"))
        if fused_step1:
            launch(K.sv1_shortcut_mark_fused, D, Q, s, n)
        else:
            launch(K.sv1a_shortcut, D, n)
            launch(K.sv1b_mark, D, Q, s, n)
        launch(K.sv2_hook, E, D, Q, s, m)
        launch(K.sv3_hook_stagnant, E, D, Q, s, m)
        launch(K.sv4_shortcut, D, n)
        w.copy_from(zero)
        launch(K.sv5_any_change, Q, w, s, n)
        if int(w.to_host()[0]) == 0:
            break

    labels = device_labels(D, n, device, lambda k, *a: launch(k, *a, helper=True))
    return (labels if device_out else labels.to_host()), s, launches, grid * block, m


class DeviceEdges:
    """Edges already in device memory: R, the flat (u0, v0, u1, v1, ...) ids as a
    signed int32 or int64 DeviceArray; len() is the number of edges m."""

    def __init__(self, R):
        self.R = R

    def __len__(self):
        return self.R.size // 2


def edge_input(n, edges, device):
    """The O(1) checks of the graph (check_graph) and the edges as label() reads
    them: a host array (np.ndarray, (m, 2)), or DeviceEdges for device memory (a
    DeviceArray or CUDA memory such as a CuPy array) of shape (m, 2) or (2m,),
    int32/int64 (uint32/uint64 read as signed: ids >= 2^31 / 2^63 are out of range)."""
    if not is_device_array(edges):
        arr = np.asarray(edges)
        if arr.size == 0 and arr.ndim <= 2:       # [] or np.empty((0, 2)), any dtype
            arr = np.empty((0, 2), dtype=np.int64)
        return check_graph(n, arr)
    shape = tuple(edges.shape)
    R = device.as_device_array(edges, ravel=True)
    if not (len(shape) == 2 and shape[1] == 2 or len(shape) == 1 and shape[0] % 2 == 0):
        raise ValueError(f"edges on the device must have shape (m, 2) or (2m,) (u0, v0, u1, "
                         f"v1, ...), got {shape}")
    dt = R.dtype
    if dt.kind not in "iu" or dt.itemsize not in (4, 8):
        raise ValueError(f"edges on the device must be int32 or int64 (or uint32/uint64), "
                         f"not {dt}: convert them on the device first")
    if dt.kind == "u":
        R = R.view(np.int32 if dt.itemsize == 4 else np.int64)
    check_graph(n, np.empty((0, 2), dtype=np.int64))         # n's checks
    if R.size // 2 > INT32_MAX:
        raise ValueError(f"m={R.size // 2} edges do not fit the int32 index type "
                         f"(max {INT32_MAX})")
    return DeviceEdges(R)


def host_edges(arr) -> np.ndarray:
    """The edges as an (m, 2) host array (a copy back for DeviceEdges): for messages."""
    if isinstance(arr, DeviceEdges):
        return arr.R.to_host().reshape(-1, 2)
    return arr


def raw_edges(arr: np.ndarray) -> np.ndarray:
    """The (m, 2) edge array as the flat int64 or int32 array the edge kernels
    read: a view (no copy) of a contiguous int64/uint64/int32/uint32 array in
    native byte order; unsigned ids >= 2^63 or 2^31 become negative, which
    the kernels report as out of range.  Narrower types are widened to int32."""
    dt = arr.dtype
    if dt.isnative and dt.itemsize in (4, 8):
        return np.ascontiguousarray(arr).reshape(-1).view(np.int64 if dt.itemsize == 8
                                                          else np.int32)
    return np.ascontiguousarray(arr, dtype=np.int64 if dt.itemsize == 8 else np.int32).reshape(-1)


def upload_edges(n: int, arr: np.ndarray, device, grid: int, block: int, launch):
    """(E, m): the device edge words, as prepare_edges makes them on the host,
    built on the device: one copy of the input array, then
      cc_edges_count_*  per block of the grid, the non-loop edges of its chunk
                        of the input, and the edges with an id outside [0, n);
      (host)            grid + 1 counts back: an error names the first bad edge
                        (validate_edges on the host, only then); exclusive
                        prefix sum of the grid counts, sent back as offsets;
      cc_edges_pack_*   every block writes its non-loop edges, both
                        orientations, at their input positions.
    m = len(E) = 2 x (non-loop edges); E is a 1-word dummy when m == 0."""
    m_in = len(arr)
    if m_in == 0:
        return device.zeros(1, np.int64), 0
    if isinstance(arr, DeviceEdges):
        R = arr.R
    else:
        R = device.to_device(raw_edges(arr))
    wide = R.dtype == np.int64
    chunk = -(-m_in // (grid * block)) * block        # a multiple of the block, >= 1 tile
    counts = device.zeros(grid + 1, np.int32)
    launch(K.cc_edges_count_i64 if wide else K.cc_edges_count_i32, R, counts, n, m_in, chunk)
    m, per_block = check_counts(n, arr, counts, grid)
    if m == 0:
        return device.zeros(1, np.int64), 0          # never read when m == 0
    offsets = np.zeros(grid, dtype=np.int64)
    np.cumsum(per_block[:-1], out=offsets[1:])
    E = device.empty(m, np.int64)
    launch(K.cc_edges_pack_i64 if wide else K.cc_edges_pack_i32, R, device.to_device(offsets), E,
           m // 2, m_in, chunk)
    return E, m


def check_counts(n: int, arr, counts, grid: int):
    """(m, per_block) from cc_edges_count's grid + 1 counters (a host read, which waits
    for the kernels queued so far): per_block, the non-loop edges of each block's chunk
    of the input (int64, length grid); m = 2 x their sum, the directed edge count.
    Raises ValueError naming the first bad edge where an id was out of range, or where
    the edges do not fit int32 indices (directed_edge_count)."""
    c = counts.to_host().astype(np.int64)
    if c[grid]:
        validate_edges(n, host_edges(arr))            # raises, naming the first bad edge
        raise RuntimeError(f"the device counted {c[grid]} edges out of range, the host none")
    per_block = c[:grid]
    return directed_edge_count(int(per_block.sum())), per_block


def device_labels(D, n: int, device, launch):
    """Labels from the final parent array D (stars) on the device: the
    smallest vertex of every star, int64.  M[r] = r - min(star of r) by
    atomic_max from M = 0 (cc_label_offsets), then labels[i] = D[i] - M[D[i]]
    (cc_label_gather).  Equal to normalize(D) when D is a forest of stars."""
    M = device.zeros(n, np.int32)
    labels = device.empty(n, np.int64)
    launch(K.cc_label_offsets, D, M, n)
    launch(K.cc_label_gather, D, M, labels, n)
    return labels


def normalize(root: np.ndarray) -> np.ndarray:
    """Labels from the final parent array: the smallest vertex id among the
    vertices with the same D value (host, numpy; the reference for
    device_labels, which the driver uses)."""
    n = len(root)
    smallest = np.full(n, n, dtype=np.int64)
    np.minimum.at(smallest, root, np.arange(n, dtype=np.int64))
    return smallest[root]
