"""The helper kernels around the SV loop: the edge array E built on the device
from the input as given (every integer dtype, any layout, any block size,
any schedule) equals the host's prepare_edges; bad vertex ids are reported
as the host reports them; the labels made on the device from a forest of
stars equal the host's normalize."""
import numpy as np
import pytest

import simgpu
from algorithms import connected_components as cc
from algorithms import generators as gen
from algorithms.connected_components.sequential import validate_edges
from algorithms.connected_components.shiloach_vishkin import (device_labels, geometry, normalize,
                                                              prepare_edges, raw_edges,
                                                              upload_edges)

RANDOM_WARPS = dict(engine="warps", schedule="random")


def launcher(dev, grid, block, seed=0, **options):
    """A launch function for the helpers; with options, launch k gets seed + k."""
    reports = []

    def launch(kernel, *args):
        reports.append(dev.launch(kernel, grid, block, *args, seed=seed + len(reports), **options)
                       if options else dev.launch(kernel, grid, block, *args))
    return launch, reports


def device_edges(n, arr, threads, seed=0, **options):
    dev = simgpu.get_device("sim:gtx260")
    grid, block = geometry(threads, max(n, 2 * len(arr)))
    launch, reports = launcher(dev, grid, block, seed, **options)
    E, m = upload_edges(n, arr, dev, grid, block, launch)
    return E.to_host()[:m], reports


def graph_with_loops_and_duplicates(n=300, m=700, seed=3):
    n, edges = gen.uniform_random_graph(n, m, seed=seed)
    rng = np.random.default_rng(seed)
    loops = rng.integers(0, n, 40)
    edges = np.concatenate([edges, np.stack([loops, loops], axis=1), edges[:25]])
    return n, edges[rng.permutation(len(edges))]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32",
                                   "int64", "uint64", ">i8", ">u4"])
def test_device_edges_equal_prepare_edges_for_every_dtype(dtype):
    n, edges = graph_with_loops_and_duplicates(n=120)
    arr = edges.astype(dtype)
    raw = raw_edges(arr)
    assert raw.dtype in (np.int32, np.int64) and raw.ndim == 1
    if np.dtype(dtype).isnative and np.dtype(dtype).itemsize >= 4:
        assert np.shares_memory(raw, arr)                 # a view: no host copy
    E, reports = device_edges(n, arr, threads=64)
    assert np.array_equal(E, prepare_edges(n, edges))
    wide = "i64" if np.dtype(dtype).itemsize == 8 else "i32"
    assert [r.kernel for r in reports] == [f"cc_edges_count_{wide}", f"cc_edges_pack_{wide}"]


@pytest.mark.parametrize("threads", [1, 32, 100, 256, 512, 1024, None])
def test_device_edges_any_block_size_and_many_tiles(threads):
    # m_in = 1,105 edges: with p <= 1024 a block walks several tiles of its chunk
    n, edges = graph_with_loops_and_duplicates()
    E, _ = device_edges(n, edges, threads)
    assert np.array_equal(E, prepare_edges(n, edges))


def test_device_edges_non_contiguous_inputs():
    n, edges = graph_with_loops_and_duplicates()
    for arr in (np.asfortranarray(edges), edges[::2], edges.T.copy().T, edges[:, ::-1]):
        assert not arr.flags.c_contiguous or arr is edges
        E, _ = device_edges(n, arr, threads=256)
        assert np.array_equal(E, prepare_edges(n, arr))


def test_device_edges_under_random_schedules():
    # shared-memory prefix sum with barriers, counts by atomics: the same E
    # under every interleaving
    n, edges = graph_with_loops_and_duplicates(n=200, m=300, seed=8)
    expected = prepare_edges(n, edges)
    for seed in range(5):
        E, _ = device_edges(n, edges, threads=64, seed=10 * seed, **RANDOM_WARPS)
        assert np.array_equal(E, expected), seed


def test_device_edges_only_loops_and_none():
    assert device_edges(5, np.array([[1, 1], [3, 3]]), threads=32)[0].size == 0
    assert device_edges(5, np.empty((0, 2), np.int64), threads=32)[0].size == 0


@pytest.mark.parametrize("n, edges", [
    (10, np.array([[0, 1], [2, 10], [3, 4], [11, 0]], dtype=np.int64)),
    (10, np.array([[0, 1], [-3, 2]], dtype=np.int8)),
    (10, np.array([[0, 1], [1, 2**63 + 5]], dtype=np.uint64)),    # negative as int64
    (10, np.array([[0, 1], [2**31 + 1, 2]], dtype=np.uint32)),    # negative as int32
    (2**31 - 1, np.array([[0, 1], [5, -1]], dtype=np.int32)),
    (0, np.array([[0, 0]])),
])
def test_bad_ids_are_reported_as_on_the_host(n, edges):
    with pytest.raises(ValueError) as host:
        validate_edges(n, edges)
    assert "out of range" in str(host.value)
    with pytest.raises(ValueError) as device:
        if n:
            device_edges(n, edges, threads=32)
        else:
            cc.label(n, edges)                  # n = 0: no launch at all
    assert str(device.value) == str(host.value)


def star_forest(n, stars, seed):
    """D of a forest of stars with random roots (often not the smallest id)."""
    rng = np.random.default_rng(seed)
    roots = rng.choice(n, size=stars, replace=False)
    D = roots[rng.integers(0, stars, n)].astype(np.int32)
    D[roots] = roots
    return D


@pytest.mark.parametrize("threads", [32, 256, None])
def test_device_labels_equal_normalize(threads):
    dev = simgpu.get_device("sim:gtx260")
    for n, stars, seed in [(1, 1, 0), (50, 1, 1), (500, 7, 2), (777, 200, 3), (300, 300, 4)]:
        D = star_forest(n, stars, seed)
        grid, block = geometry(threads, n)
        launch, reports = launcher(dev, grid, block)
        labels = device_labels(dev.to_device(D), n, dev, launch).to_host()
        assert labels.dtype == np.int64
        assert np.array_equal(labels, normalize(D.astype(np.int64)))
        assert [r.kernel for r in reports] == ["cc_label_offsets", "cc_label_gather"]


def test_device_labels_under_random_schedules():
    dev = simgpu.get_device("sim:gtx260")
    D = star_forest(400, 5, 9)
    for seed in range(5):
        launch, _ = launcher(dev, 1, 64, 10 * seed, **RANDOM_WARPS)
        labels = device_labels(dev.to_device(D), len(D), dev, launch).to_host()
        assert np.array_equal(labels, normalize(D.astype(np.int64))), seed


# --- on a real GPU (skipped where there is none) --------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint32", "uint8"])
@pytest.mark.parametrize("threads", [64, 1024, None])
def test_helpers_on_the_gpu(gpu, dtype, threads):
    n, edges = graph_with_loops_and_duplicates(n=250, m=600, seed=4)
    arr = edges.astype(dtype)
    grid, block = geometry(threads, max(n, 2 * len(arr)))
    E, m = upload_edges(n, arr, gpu, grid, block, launcher(gpu, grid, block)[0])
    assert np.array_equal(E.to_host()[:m], prepare_edges(n, edges))
    r = cc.label(n, arr, device=gpu, threads=threads)
    assert np.array_equal(r.labels, cc.label(n, edges, method="sequential").labels)
    D = star_forest(n, 9, 5)
    labels = device_labels(gpu.to_device(D), n, gpu, launcher(gpu, grid, block)[0]).to_host()
    assert np.array_equal(labels, normalize(D.astype(np.int64)))
    bad = arr.copy()
    bad[3, 1] = 255                             # n = 250
    with pytest.raises(ValueError, match=r"edge 3 = \(\d+, 255\): vertex id 255 is out of range"):
        cc.label(n, bad, device=gpu, threads=threads)
