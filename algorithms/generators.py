"""Input generators and readers for the paper's experiments (host side, numpy).

Randomness.  Everything random comes from KISS (algorithms.kiss), as in the
paper, which generated its input lists with KISS too.  Draws are made the way a
GPU kernel with GEN_THREADS threads striding over the items would make them:
item i is handled by thread i % GEN_THREADS, which draws its values for item i
after those for items i - GEN_THREADS, i - 2*GEN_THREADS, ...; thread t starts
from seed_words(stream_seed(seed, stream), t).  Each purpose inside a
generator (the node order, tree parents, edge endpoints, ...) uses its own
`stream` number, so the results depend only on the arguments and the code here,
not on numpy's version (numpy's Generator does not promise stable streams).

Random permutations sort 64-bit KISS keys (two draws per item) with a stable
argsort: a uniform permutation unless two of the n keys collide (probability
about n^2 / 2^65, 7e-5 at n = 5e7), and even then deterministic, the tie going
to the smaller index.

Lists are `succ` arrays (int64): the tail of each list has succ[t] == t.
Graphs are (n, edges) with edges an int64 array of shape (m, 2).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .kiss import KissStreams, mix64, GOLDEN64, MASK64, uniform_below

__all__ = [
    "GEN_THREADS", "stream_seed", "kiss_u32", "random_permutation",
    "ordered_list", "random_list", "random_forest", "blocked_list",
    "random_lists_graph", "random_trees_graph", "random_components_graph",
    "components_graph_size", "uniform_random_graph", "rmat_graph",
    "read_succ", "read_edges", "as_edge_array",
]

GEN_THREADS = 1 << 16

# stream numbers, one per purpose, so that no two purposes share draws
_S_ORDER, _S_PARENT, _S_EXTRA, _S_SHUFFLE, _S_UNIFORM, _S_RMAT, _S_RMAT_IDS = range(7)


def stream_seed(seed: int, stream: int) -> int:
    """The KissStreams seed of stream `stream` of run `seed`:
    mix64(mix64(seed) + (stream + 1) * GOLDEN64), all mod 2^64."""
    return mix64(mix64(int(seed)) + ((int(stream) + 1) * GOLDEN64 & MASK64))


def _strided_rounds(n: int, seed: int, stream: int, draws: int):
    """Yield (start, stop, d) for rounds of GEN_THREADS items: d[k] holds the
    k-th draw (of `draws` per item) of items start..stop-1 (uint32 arrays)."""
    if n <= 0:
        return
    ks = KissStreams(stream_seed(seed, stream), min(n, GEN_THREADS))
    for start in range(0, n, GEN_THREADS):
        stop = min(start + GEN_THREADS, n)
        d = [ks.next()[: stop - start] for _ in range(draws)]
        yield start, stop, d


def kiss_u32(n: int, seed: int, stream: int = 0, draws: int = 1) -> np.ndarray:
    """KISS draws for n items, shape (draws, n), uint32 (see module docstring)."""
    out = np.empty((draws, max(n, 0)), dtype=np.uint32)
    for start, stop, d in _strided_rounds(n, seed, stream, draws):
        for k in range(draws):
            out[k, start:stop] = d[k]
    return out


def _keys64(n: int, seed: int, stream: int) -> np.ndarray:
    hi, lo = kiss_u32(n, seed, stream, draws=2)
    return (hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64)


def random_permutation(n: int, seed: int, stream: int = _S_ORDER) -> np.ndarray:
    """A uniformly random permutation of 0..n-1 (int64) from sorted KISS keys."""
    return np.argsort(_keys64(n, seed, stream), kind="stable").astype(np.int64)


def _check_count(name: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name}={value} must be in [{low}, {high}]")
    return int(value)


def _check_n(n) -> int:
    return _check_count("n", n, 0, 2**31 - 1)  # node ids are int32 on the device


# --------------------------------------------------------------------------
# lists
# --------------------------------------------------------------------------

def _succ_from_order(order: np.ndarray, lists: int) -> np.ndarray:
    """Cut `order` into `lists` consecutive, near-equal pieces (sizes n // lists
    or one more, the longer ones last) and link each piece into one list."""
    n = len(order)
    succ = np.empty(n, dtype=np.int64)
    if n == 0:
        return succ
    succ[order[:-1]] = order[1:]
    ends = (np.arange(1, lists + 1, dtype=np.int64) * n) // lists  # exclusive
    tails = order[ends - 1]
    succ[tails] = tails
    return succ


def _head_at_zero(order: np.ndarray) -> np.ndarray:
    # Swap node 0 to the front: the first list starts at node 0, the paper's
    # convention, so kernels that need the head (RS2) can use it directly.
    if len(order):
        pos = int(np.flatnonzero(order == 0)[0])
        order[pos], order[0] = order[0], 0
    return order


def ordered_list(n: int) -> np.ndarray:
    """The list 0 -> 1 -> ... -> n-1 (succ[i] = i + 1, tail n - 1)."""
    n = _check_n(n)
    succ = np.arange(1, n + 1, dtype=np.int64)
    if n:
        succ[-1] = n - 1
    return succ


def random_forest(n: int, lists: int, seed: int) -> np.ndarray:
    """`lists` lists over n nodes in one uniformly random node order, cut into
    near-equal lengths; node 0 is the head of the first list (the other heads
    are wherever the random order puts them).  n = 0 needs lists = 0."""
    n = _check_n(n)
    lists = _check_count("lists", lists, 1 if n else 0, n)
    return _succ_from_order(_head_at_zero(random_permutation(n, seed)), lists)


def random_list(n: int, seed: int) -> np.ndarray:
    """One list through all n nodes in random order, head 0 (random_forest(n, 1))."""
    n = _check_n(n)
    return random_forest(n, 1 if n else 0, seed)


def blocked_list(n: int, window: int, seed: int) -> np.ndarray:
    """One list with locality `window`: nodes are split into consecutive blocks
    [0, W), [W, 2W), ... (the last one shorter); the list visits the blocks in
    order, each block's nodes in a uniformly random order, and starts at node
    0.  So every successor stays within the same or the next block (|succ[i] -
    i| < 2W).  window = 1 gives 0 -> 1 -> ... -> n-1; window >= n gives exactly
    random_list(n, seed) (same keys, one block)."""
    n = _check_n(n)
    window = _check_count("window", window, 1, 2**63 - 1)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    window = min(window, n)
    keys = _keys64(n, seed, _S_ORDER)  # the same keys as random_list
    full = (n // window) * window
    order = np.empty(n, dtype=np.int64)
    # rows are blocks; a stable argsort along each row orders a block by key
    rows = np.argsort(keys[:full].reshape(-1, window), axis=1, kind="stable")
    order[:full] = (rows + np.arange(0, full, window, dtype=np.int64)[:, None]).ravel()
    order[full:] = np.argsort(keys[full:], kind="stable") + full
    return _succ_from_order(_head_at_zero(order), 1)


# --------------------------------------------------------------------------
# graph families of section 4 (edges int64 (m, 2))
# --------------------------------------------------------------------------

def _groups(n: int, count: int):
    """Near-equal consecutive groups of positions 0..n-1: (starts, sizes, group of each position)."""
    bounds = (np.arange(count + 1, dtype=np.int64) * n) // count
    sizes = np.diff(bounds)
    return bounds[:-1], sizes, np.repeat(np.arange(count, dtype=np.int64), sizes)


def random_lists_graph(n: int, lists: int, seed: int) -> tuple[int, np.ndarray]:
    """Collection of `lists` random lists (the paper's degree-1 family): the
    edges (i, succ[i]) of random_forest(n, lists, seed), by increasing i;
    n - lists edges, `lists` components."""
    succ = random_forest(n, lists, seed)
    src = np.flatnonzero(succ != np.arange(len(succ)))
    return len(succ), np.stack([src, succ[src]], axis=1).astype(np.int64)


def random_trees_graph(n: int, trees: int, k: int, seed: int) -> tuple[int, np.ndarray]:
    """Collection of `trees` random trees of degree k (k children per inner node).

    The nodes, in a uniformly random order, are cut into `trees` near-equal
    groups; in a group g[0..s-1] node g[j] (j >= 1) is a child of g[(j-1)//k].
    So each tree is a complete k-ary tree shape (depth about log_k s) with
    random labels; k = 1 gives random lists.  Edges are (child, parent), by
    increasing child id; n - trees edges, `trees` components.
    """
    n = _check_n(n)
    trees = _check_count("trees", trees, 1 if n else 0, n)
    k = _check_count("k", k, 1, 2**31 - 1)
    if n == 0:
        return 0, np.empty((0, 2), dtype=np.int64)
    order = random_permutation(n, seed, _S_ORDER)
    starts, _, group = _groups(n, trees)
    local = np.arange(n, dtype=np.int64) - starts[group]
    child_pos = np.flatnonzero(local > 0)
    parent_pos = starts[group[child_pos]] + (local[child_pos] - 1) // k
    parent = np.full(n, -1, dtype=np.int64)
    parent[order[child_pos]] = order[parent_pos]
    child = np.flatnonzero(parent >= 0)
    return n, np.stack([child, parent[child]], axis=1)


def random_components_graph(n: int, density: float, components: int,
                            seed: int) -> tuple[int, np.ndarray]:
    """Random graph of `components` connected components with edge density d.

    Our reading of the paper's family ("randomly created connected components
    with edge density d = 0.1% or 1%"): the nodes, in a uniformly random
    order, are cut into `components` near-equal groups; a group of s nodes gets
        m_g = max(s - 1, round(d * s * (s - 1) / 2))
    edges, i.e. density d among its own pairs: first a random recursive tree
    (the j-th node of the group links to a uniformly random earlier one), which
    makes the group connected, then m_g - (s - 1) pairs of distinct group
    nodes drawn uniformly with replacement (so a few duplicates, also of tree
    edges, can occur: fine for connected components, rare for small d).  All
    edges are then put in one random order.  Exactly `components` components.
    components_graph_size gives n for a target m.
    """
    n = _check_n(n)
    components = _check_count("components", components, 1 if n else 0, n)
    if not (isinstance(density, (int, float, np.floating)) and 0.0 <= density <= 1.0):
        raise ValueError(f"density must be a number in [0, 1], got {density!r}")
    if n == 0:
        return 0, np.empty((0, 2), dtype=np.int64)
    order = random_permutation(n, seed, _S_ORDER)
    starts, sizes, group = _groups(n, components)
    local = np.arange(n, dtype=np.int64) - starts[group]
    # spanning trees: position p (local index j >= 1) links to an earlier one
    child = np.flatnonzero(local > 0)
    draw = kiss_u32(n, seed, _S_PARENT)[0][child]
    parent = starts[group[child]] + uniform_below(draw, local[child])
    tree_edges = np.stack([child, parent], axis=1)
    # extra edges to reach density d inside each group
    target = np.rint(density * sizes * (sizes - 1) / 2.0).astype(np.int64)
    extra = np.maximum(target, sizes - 1) - (sizes - 1)
    g = np.repeat(np.arange(components, dtype=np.int64), extra)
    r = kiss_u32(len(g), seed, _S_EXTRA, draws=2)
    s = sizes[g]
    u = uniform_below(r[0], s)
    v = (u + 1 + uniform_below(r[1], np.maximum(s - 1, 1))) % s  # v != u
    extra_edges = np.stack([starts[g] + u, starts[g] + v], axis=1)
    edges = order[np.concatenate([tree_edges, extra_edges])]  # positions -> nodes
    return n, edges[random_permutation(len(edges), seed, _S_SHUFFLE)]


def components_graph_size(m: int, density: float, components: int = 1) -> int:
    """The n for which random_components_graph(n, density, components) has
    about m edges (solves components * d * s (s-1) / 2 = m for s = n / components)."""
    if not 0 < density <= 1 or m < 0 or components < 1:
        raise ValueError("need m >= 0, 0 < density <= 1, components >= 1")
    per = m / components
    s = (1 + np.sqrt(1 + 8 * per / density)) / 2
    return int(round(s * components))


def uniform_random_graph(n: int, m: int, seed: int) -> tuple[int, np.ndarray]:
    """m edges with both ends uniform on 0..n-1 (self-loops and duplicates kept,
    as in GAP's uniform generator).  Endpoint = uniform_below(KISS draw, n)."""
    n = _check_n(n)
    m = _check_count("m", m, 0, 2**31 - 1)
    if n == 0 and m:
        raise ValueError("a graph with n = 0 vertices cannot have edges")
    r = kiss_u32(m, seed, _S_UNIFORM, draws=2)
    return n, np.stack([uniform_below(r[0], max(n, 1)), uniform_below(r[1], max(n, 1))], axis=1)


def rmat_graph(scale: int, edge_factor: int = 16, seed: int = 0, a: float = 0.57,
               b: float = 0.19, c: float = 0.19) -> tuple[int, np.ndarray]:
    """R-MAT / Kronecker graph as GAP's generator makes it (Graph500 parameters).

    n = 2^scale, m = edge_factor * n.  For each edge and each of the `scale` bit
    levels, one KISS draw r (read as r / 2^32) picks a quadrant exactly as in
    GAP's MakeRMatEL: r < a+b -> src bit 0 and dst bit (r > a); otherwise src
    bit 1 and dst bit (r > a+b+c).  Then vertex ids are relabelled by a random
    permutation (GAP's PermuteIDs).  Self-loops and duplicates are kept.
    """
    scale = _check_count("scale", scale, 0, 30)
    edge_factor = _check_count("edge_factor", edge_factor, 0, 2**31 - 1)
    if not (0 <= a and 0 <= b and 0 <= c and a + b + c <= 1):
        raise ValueError(f"need a, b, c >= 0 and a + b + c <= 1, got {a}, {b}, {c}")
    n = 1 << scale
    m = _check_count("edge count", edge_factor * n, 0, 2**31 - 1)
    # thresholds on the 32-bit draw: r/2^32 > t  <=>  r > floor(t * 2^32)
    ta, tab, tabc = (np.uint32(min(int(t * 2**32), 2**32 - 1)) for t in (a, a + b, a + b + c))
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    for start, stop, draws in _strided_rounds(m, seed, _S_RMAT, scale):
        s = np.zeros(stop - start, dtype=np.int64)
        d = np.zeros(stop - start, dtype=np.int64)
        for r in draws:  # one draw per bit level, most significant first
            top = r < tab
            s = (s << 1) | ~top
            d = (d << 1) | np.where(top, r > ta, r > tabc)
        src[start:stop], dst[start:stop] = s, d
    ids = random_permutation(n, seed, _S_RMAT_IDS)
    return n, np.stack([ids[src], ids[dst]], axis=1)


# --------------------------------------------------------------------------
# readers and normalizers
# --------------------------------------------------------------------------

# read_succ / read_edges live in readers.py (the format found by content), with
# as_edge_array, which they use; they are imported here too, where they were first.
from .readers import as_edge_array, read_edges, read_succ  # noqa: E402,F401
