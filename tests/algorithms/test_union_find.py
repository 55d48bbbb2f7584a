"""Union-find connected components (ECL-CC's design, union_find.py) against scipy:
every graph family, hypothesis graphs, random schedules and store winners on the
simulator with low degree thresholds (so that the thread, warp and block kernels
all get vertices), the CSR built on the device, device arrays in and out, and the
same on a real GPU (marked gpu)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import simgpu
from algorithms import connected_components as cc
from algorithms import generators as gen
from algorithms.connected_components import union_find as uf
from algorithms.connected_components.shiloach_vishkin import edge_input, geometry
from simgpu.testing import strategies as gst

from .test_connected_components import reference

RANDOM_WARPS = dict(engine="warps", schedule="random")


def run(n, edges, device="sim:gtx260", **kw):
    dev = simgpu.get_device(device)
    labels, launches, p, m = uf.union_find(n, edges, dev, **kw)
    return labels.to_host(), launches


def families(seed=0):
    yield gen.uniform_random_graph(200, 260, seed=seed)
    yield gen.uniform_random_graph(300, 1500, seed=seed)
    n = 120                                      # a star: the centre has degree n - 1
    yield n, np.stack([np.full(n - 1, n - 1), np.arange(n - 1)], axis=1)
    yield 90, np.stack([np.arange(89), np.arange(1, 90)], axis=1)[::-1].copy()   # a path
    yield 50, np.empty((0, 2), np.int64)


@pytest.mark.parametrize("k", range(5))
def test_families_lockstep_match_scipy(k):
    n, edges = list(families(k))[k]
    labels, launches = run(n, edges)
    assert np.array_equal(labels, reference(n, edges))
    assert [r.kernel for r in launches][-5:] == list(uf.UF_KERNELS)


@pytest.mark.parametrize("seed", range(6))
def test_random_schedules_every_path(seed):
    """warp_degree=2, block_degree=6: vertices of every kind (thread, warp, block),
    racing hooks and jumps under random interleavings and store winners; the warp
    list in 1 to 6 parts (160 vertices: at most 5 of 32)."""
    n, edges = gen.uniform_random_graph(160, 500, seed=seed)
    deg = np.bincount(edges[edges[:, 0] != edges[:, 1]].ravel(), minlength=n)
    assert (deg <= 2).any() and ((deg > 2) & (deg <= 6)).any() and (deg > 6).any()
    labels, launches = run(n, edges, threads=128, warp_degree=2, block_degree=6,
                           warp_lists=1 + seed, launch_options=dict(RANDOM_WARPS, seed=seed))
    assert np.array_equal(labels, reference(n, edges))
    assert all(r.schedule == "random" for r in launches)


def test_warp_list_parts_hold_every_warp_vertex():
    """Each vertex of degree in (warp_degree, block_degree] is in exactly one part,
    the part (v // 32) % lists, counted by top[32 * part]."""
    n, edges = gen.uniform_random_graph(300, 900, seed=3)
    dev = simgpu.get_device("sim:gtx260")
    grid, block = geometry(128, n)
    off, adj, m = uf.build_csr(n, edge_input(n, edges, dev), dev, grid, block,
                               lambda k, *a: dev.launch(k, grid, block, *a))
    o = off.to_host()
    deg = np.diff(o)
    want = np.flatnonzero((deg > 2) & (deg <= 9))
    for lists in (1, 3, 10):
        region = -(-(-(-n // 32)) // lists) * 32
        parent, wl = dev.empty(n, np.int32), dev.empty(lists * region, np.int32)
        top = dev.zeros(32 * lists, np.int32)
        cap = uf.hub_capacity(n, m, 9, 0)
        hub_v, hub_beg = dev.empty(cap, np.int32), dev.empty(cap, np.int32)
        dev.launch(uf.uf_init, grid, block, off, adj, parent, n, 2)
        dev.launch(uf.uf_compute1, grid, block, off, adj, parent, wl, top, hub_v, hub_beg, n, 2,
                   9, 0, lists, region)
        t, w = top.to_host(), wl.to_host()
        got = []
        for k in range(lists):
            part = w[k * region:k * region + t[32 * k]]
            assert ((part // 32) % lists == k).all()
            got += part.tolist()
        assert sorted(got) == want.tolist()
        assert t[1] == (deg > 9).sum()


def test_star_centre_goes_to_a_block_and_leaves_to_threads():
    n = 40
    edges = np.stack([np.full(n - 1, 7), np.delete(np.arange(n), 7)], axis=1)
    dev = simgpu.get_device("sim:gtx260")
    grid, block = geometry(64, n)
    launches = []

    def launch(k, *a):
        launches.append(dev.launch(k, grid, block, *a))
    off, adj, m = uf.build_csr(n, edge_input(n, edges, dev), dev, grid, block, launch)
    o, a = off.to_host(), adj.to_host()
    assert m == 2 * (n - 1) and o[-1] == m
    for v in range(n):                           # the CSR holds every neighbour once
        want = sorted(np.delete(np.arange(n), 7)) if v == 7 else [7]
        assert sorted(a[o[v]:o[v + 1]]) == want
    for chunk, want_beg in ((0, [0]), (16, [0, 16, 32]), (39, [0]), (38, [0, 38])):
        parent, wl, top = dev.empty(n, np.int32), dev.empty(n, np.int32), dev.zeros(32, np.int32)
        cap = uf.hub_capacity(n, m, 16, chunk)
        hub_v, hub_beg = dev.empty(cap, np.int32), dev.empty(cap, np.int32)
        dev.launch(uf.uf_init, grid, block, off, adj, parent, n, 4)
        dev.launch(uf.uf_compute1, grid, block, off, adj, parent, wl, top, hub_v, hub_beg, n, 4,
                   16, chunk, 1, n)
        k = len(want_beg)        # the centre's 39 neighbours in chunks of `chunk` (0: one)
        assert top.to_host().tolist() == [0, k] + [0] * 30 and k <= cap
        assert hub_v.to_host()[:k].tolist() == [7] * k
        assert hub_beg.to_host()[:k].tolist() == [o[7] + b for b in want_beg]


def test_hub_capacity_bounds_the_chunks():
    """Every vertex of degree > block_degree needs ceil(deg / chunk) entries (one for
    chunk 0); hub_capacity must hold them all, on graphs with skewed degrees."""
    for seed in range(5):
        n, edges = gen.rmat_graph(9, 8, seed=seed)
        e = edges[edges[:, 0] != edges[:, 1]]
        deg = np.bincount(e.ravel(), minlength=n)
        for block_degree in (0, 3, 40):
            for chunk in (0, 1, 7, 64):
                hubs = deg[deg > block_degree]
                need = len(hubs) if chunk == 0 else int((-(-hubs // chunk)).sum())
                assert need <= uf.hub_capacity(n, 2 * len(e), block_degree, chunk)


@pytest.mark.parametrize("seed", range(4))
def test_hubs_in_chunks_random_schedules(seed):
    """Skewed degrees (R-MAT) with the hubs cut into chunks of 3 to 9 neighbours: several
    blocks hook from one vertex at once, under random interleavings and store winners."""
    n, edges = gen.rmat_graph(8, 4, seed=seed)
    chunk = 3 + 2 * seed
    labels, launches = run(n, edges, threads=128, warp_degree=2, block_degree=6,
                           hub_chunk=chunk, launch_options=dict(RANDOM_WARPS, seed=seed))
    assert np.array_equal(labels, reference(n, edges))
    deg = np.bincount(edges[edges[:, 0] != edges[:, 1]].ravel(), minlength=n)
    assert (deg > 2 * chunk).any()                 # some vertex really is split


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=gst.graphs(max_n=48), seed=st.integers(0, 2**31 - 1),
       degrees=st.sampled_from([(1, 3), (16, 352), (0, 0)]),
       hub_chunk=st.sampled_from([0, 1, 2, 5]), warp_lists=st.sampled_from([1, 2, 32]))
def test_hypothesis_graphs_random_schedules(graph, seed, degrees, hub_chunk, warp_lists):
    n, edges = graph
    labels, _ = run(n, edges, threads=64, warp_degree=degrees[0], block_degree=degrees[1],
                    hub_chunk=hub_chunk, warp_lists=warp_lists,
                    launch_options=dict(RANDOM_WARPS, seed=seed))
    assert np.array_equal(labels, reference(n, edges))


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64"])
def test_device_edges_in_device_labels_out(dtype):
    dev = simgpu.get_device("sim:gtx260")
    n, edges = gen.uniform_random_graph(150, 200, seed=5)
    for method in ("union-find", "shiloach-vishkin"):
        src = dev.to_device(edges.astype(dtype).ravel())
        r = cc.label(n, src, method=method, device=dev)
        assert isinstance(r.labels, simgpu.DeviceArray) and r.labels.dtype == np.int64
        assert np.array_equal(r.labels.to_host(), reference(n, edges))
        assert np.array_equal(src.to_host(), edges.astype(dtype).ravel())
    r = cc.label(n, dev.to_device(edges.ravel()), method="sequential")
    assert np.array_equal(r.labels, reference(n, edges))


def test_one_host_read_and_no_copy_up_per_call(monkeypatch):
    """Issue 20 item 3: from device edges, label(method="union-find") queues every kernel
    before it reads anything back, reads the device once (the edge check's counters, after
    the last kernel) and copies nothing up; a bad edge is still refused by name, among
    them an int64 id of 2^32 + 1 that an int32 cast would take for vertex 1."""
    dev = simgpu.get_device("sim:gtx260")
    n, edges = gen.rmat_graph(7, 6, seed=4)
    srcs = [dev.to_device(edges.astype(np.int64).ravel()),
            dev.to_device(edges.astype(np.int32).ravel())]
    events = []
    real_launch, real_to_host = dev.launch, dev._to_host
    monkeypatch.setattr(dev, "launch", lambda k, *a, **o: events.append(k.name) or
                        real_launch(k, *a, **o))
    monkeypatch.setattr(dev, "_to_host", lambda arr: events.append("read") or real_to_host(arr))
    monkeypatch.setattr(dev, "to_device", lambda host: pytest.fail("a copy up"))
    for src in srcs:
        events.clear()
        r = cc.label(n, src, method="union-find", device=dev)
        assert events[-1] == "read" and events.count("read") == 1
        assert events[-2] == "uf_flatten" and len(events) == len(r.launches) + 1
        assert r.directed_edges == 2 * int((edges[:, 0] != edges[:, 1]).sum())
        monkeypatch.setattr(dev, "_to_host", real_to_host)
        assert np.array_equal(r.labels.to_host(), reference(n, edges))
        monkeypatch.setattr(dev, "_to_host", lambda arr: events.append("read") or
                            real_to_host(arr))
    monkeypatch.undo()
    for bad_id in (2**32 + 1, -(2**32) + 1, n):
        bad = edges.astype(np.int64).copy()
        bad[17] = (3, bad_id)
        with pytest.raises(ValueError, match=rf"edge 17 = \(3, {bad_id}\): vertex id {bad_id} "
                           "is out of range"):
            cc.label(n, dev.to_device(bad.ravel()), method="union-find", device=dev)


def test_numpy_edges_labels_copied_back_before_the_edge_check(monkeypatch):
    """From host edges the labels' copy back starts before the edge check's read (its
    host array is page-locked while the kernels run), and a bad edge is still refused."""
    dev = simgpu.get_device("sim:gtx260")
    n, edges = gen.uniform_random_graph(200, 500, seed=1)
    reads = []
    real_to_host = dev._to_host
    monkeypatch.setattr(dev, "_to_host", lambda arr: reads.append(arr.size) or real_to_host(arr))
    r = cc.label(n, edges, method="union-find", device=dev)
    assert isinstance(r.labels, np.ndarray) and np.array_equal(r.labels, reference(n, edges))
    assert reads[0] == n and len(reads) == 2           # the labels, then the counters
    r = cc.label(0, np.empty((0, 2), np.int64), method="union-find", device=dev)
    assert isinstance(r.labels, np.ndarray) and r.labels.size == 0
    bad = edges.copy()
    bad[3] = (2, n)
    with pytest.raises(ValueError, match=rf"edge 3 = \(2, {n}\): vertex id {n} is out of range"):
        cc.label(n, bad, method="union-find", device=dev)


def test_edge_bound_over_int32_reads_the_count_first(monkeypatch):
    """Where 2 x the input edges would not fit the int32 edge index (INT32_MAX made 100
    here), the counts are read before adj is sized: the real count may still fit (self-
    loops do not count), else a clear error, as before."""
    from algorithms.connected_components import sequential
    monkeypatch.setattr(sequential, "INT32_MAX", 100)
    dev = simgpu.get_device("sim:gtx260")
    rng = np.random.default_rng(2)
    loops = np.repeat(np.arange(15), 2).reshape(-1, 2)           # 15 self-loops
    edges = rng.integers(0, 40, (90, 2))
    edges = edges[edges[:, 0] != edges[:, 1]][:45]
    fits = np.concatenate([edges, loops])                        # 60 in, 45 non-loop: 90
    r = cc.label(40, fits, method="union-find", device=dev)
    assert r.directed_edges == 90 and np.array_equal(r.labels, reference(40, fits))
    x = rng.integers(0, 39, 51)
    over = np.stack([x, x + 1], axis=1)                          # 51 non-loop edges: 102
    with pytest.raises(ValueError, match="more than the int32 edge index allows"):
        cc.label(40, over, method="union-find", device=dev)


@pytest.mark.parametrize("seed", range(2))
def test_no_kernel_reads_a_word_before_it_is_written(seed):
    """The buffers union-find allocates uninitialized (no memset on a GPU): under
    check="uninit" every read of a word nothing wrote yet is an error; low thresholds
    and small hub chunks put vertices on the warp and hub lists too."""
    n, edges = gen.rmat_graph(8, 4, seed=seed)
    labels, _ = run(n, edges, threads=128, warp_degree=2, block_degree=6, hub_chunk=5,
                    launch_options=dict(engine="warps", check="uninit"))
    assert np.array_equal(labels, reference(n, edges))


@pytest.mark.parametrize("method", ["union-find", "shiloach-vishkin"])
def test_bad_device_edges(method):
    dev = simgpu.get_device("sim:gtx260")
    bad = np.array([0, 1, 1, 7], dtype=np.int32)
    with pytest.raises(ValueError, match=r"edge 1 = \(1, 7\): vertex id 7 is out of range"):
        cc.label(5, dev.to_device(bad), method=method, device=dev)
    with pytest.raises(ValueError, match=r"shape \(m, 2\) or \(2m,\)"):
        cc.label(5, dev.to_device(np.array([0, 1, 2], np.int32)), method=method, device=dev)
    with pytest.raises(ValueError, match="int32 or int64"):
        cc.label(5, dev.to_device(np.array([0, 1], np.int16)), method=method, device=dev)
    with pytest.raises(ValueError, match="lives on sim:gtx260, not on sim:h100"):
        cc.label(5, dev.to_device(np.array([0, 1], np.int32)), method=method, device="sim:h100")


def test_degree_arguments():
    with pytest.raises(ValueError, match="warp_degree <= block_degree"):
        uf.union_find(3, [(0, 1)], simgpu.get_device("sim:gtx260"), warp_degree=5, block_degree=2)
    for bad in (-1, 2**31, 2.0, True, "8"):
        with pytest.raises(ValueError, match="hub_chunk must be an int"):
            uf.union_find(3, [(0, 1)], simgpu.get_device("sim:gtx260"), hub_chunk=bad)
    for bad in (0, 1025, 2.0, False):
        with pytest.raises(ValueError, match="warp_lists must be an int"):
            uf.union_find(3, [(0, 1)], simgpu.get_device("sim:gtx260"), warp_lists=bad)


def test_benchmark_script_runs_on_the_simulator():
    """benchmarks/gpu_union_find.py --sim at tiny sizes: every variant's labels are
    checked against scipy inside the script; a bad variant is refused by name."""
    import pathlib
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parents[2]
    cmd = [sys.executable, str(root / "benchmarks" / "gpu_union_find.py"), "--sim", "--graph",
           "7", "8", "--kron", "6", "4", "--repeats", "1"]
    out = subprocess.run(cmd + ["--variants", "default", "0/1", "3/2"], capture_output=True,
                         text=True, cwd=root, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = [ln for ln in out.stdout.splitlines() if ln.startswith("| Kronecker 6/4 |")]
    assert [r.split(" | ")[1] for r in rows] == ["default", "0/1", "3/2"]
    bad = subprocess.run(cmd + ["--variants", "8/2/1"], capture_output=True, text=True,
                         cwd=root, timeout=120)
    assert bad.returncode != 0 and "give default, CHUNK or CHUNK/LISTS" in bad.stderr
    assert "Traceback" not in bad.stderr


# --- on a real GPU (skipped where there is none) --------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("degrees", [(16, 352, uf.HUB_CHUNK), (1, 4, 0), (1, 4, 3)])
def test_union_find_on_the_gpu(gpu, degrees):
    for n, edges in list(families(1)) + [gen.uniform_random_graph(20000, 60000, seed=2),
                                         gen.rmat_graph(14, 16, seed=2)]:
        labels, _ = run(n, edges, device=gpu, warp_degree=degrees[0], block_degree=degrees[1],
                        hub_chunk=degrees[2])
        assert np.array_equal(labels, reference(n, edges))


@pytest.mark.gpu
def test_cupy_arrays_in_and_out_on_the_gpu(gpu):
    import cupy as cp
    from algorithms import list_ranking as LR
    from algorithms.list_ranking.sequential import rank_sequential
    n, edges = gen.uniform_random_graph(5000, 9000, seed=3)
    for method in ("union-find", "shiloach-vishkin"):
        for dev_edges in (cp.asarray(edges), cp.asarray(edges.astype(np.int32)).ravel()):
            r = cc.label(n, dev_edges, method=method, device=gpu)
            assert isinstance(r.labels, cp.ndarray)
            assert np.array_equal(cp.asnumpy(r.labels), reference(n, edges))
    succ = gen.random_forest(30000, 20, seed=1)
    for method in ("random-splitter", "wylie"):
        d = cp.asarray(succ.astype(np.int32))
        r = LR.rank(d, method=method, device=gpu)
        assert isinstance(r.ranks, cp.ndarray)
        assert np.array_equal(cp.asnumpy(r.ranks), rank_sequential(succ))
        assert np.array_equal(cp.asnumpy(d), succ)
    bad = succ.copy()
    bad[5] = bad[6]                               # two predecessors
    with pytest.raises(ValueError, match="two or more predecessors"):
        LR.rank(cp.asarray(bad), device=gpu)
    cyc = gen.random_list(1000, 1)
    tail = int(np.flatnonzero(cyc == np.arange(1000))[0])
    cyc2 = np.concatenate([cyc, [1001, 1002, 1000]])           # a 3-cycle beside the list
    with pytest.raises(ValueError, match="lie on a cycle"):
        LR.rank(cp.asarray(cyc2), device=gpu)
    assert tail >= 0


def test_init_takes_the_smallest_of_the_first_scan_neighbours():
    """uf_init against numpy: parent[v] = min(v, the first `scan` entries of v's list)."""
    n, edges = gen.uniform_random_graph(300, 1200, seed=3)
    dev = simgpu.get_device("sim:gtx260")
    grid, block = geometry(256, n)
    off, adj, m = uf.build_csr(n, edge_input(n, edges, dev), dev, grid, block,
                               lambda k, *a: dev.launch(k, grid, block, *a))
    o, a = off.to_host(), adj.to_host()
    for scan in (0, 3, 1000):
        parent = dev.empty(n, np.int32)
        dev.launch(uf.uf_init, grid, block, off, adj, parent, n, scan)
        want = [min([v] + list(a[o[v]:min(o[v + 1], o[v] + scan)])) for v in range(n)]
        assert parent.to_host().tolist() == want


def test_default_geometry_a_thread_per_vertex_for_union_find():
    """CSR build kernels at default_geometry; the union-find kernels one thread per vertex."""
    n, edges = gen.uniform_random_graph(700, 2000, seed=1)
    dev = simgpu.get_device("sim:gtx260")
    labels, launches, p, m = uf.union_find(n, edges, dev)
    assert np.array_equal(labels.to_host(), reference(n, edges))
    csr_grid = uf.default_geometry(dev, max(n, len(edges)))[0]
    for r in launches:
        want = -(-n // 256) if r.kernel in uf.UF_KERNELS else csr_grid
        assert (r.grid[0], r.block[0]) == (want, 256), r.kernel
    assert p == -(-n // 256) * 256
