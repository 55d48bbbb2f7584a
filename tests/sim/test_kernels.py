"""Kernels on the simulator against numpy references."""
import numpy as np
import pytest

from . import kernels as K


def test_elementwise_float(dev, rng):
    n = 1000
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    da, db, out = dev.to_device(a), dev.to_device(b), dev.empty(n, np.float32)
    dev.launch(K.scale_add, (n + 127) // 128, 128, da, db, out, 2.5, n)
    # f32 * f32 + f32 in float32 arithmetic, as the GPU does it (alpha is an f32 parameter)
    assert np.array_equal(out.to_host(), np.float32(2.5) * a + b)


@pytest.mark.parametrize("kern", [K.copy_striding, K.copy_partitioning])
@pytest.mark.parametrize("n,grid,block", [(1, 1, 32), (1000, 3, 64), (4097, 7, 128)])
def test_copy_loops(dev, rng, kern, n, grid, block):
    src = rng.integers(-2**31, 2**31, n, dtype=np.int32)
    d_src, d_dst = dev.to_device(src), dev.zeros(n, np.int32)
    dev.launch(kern, grid, block, d_src, d_dst, n)
    assert np.array_equal(d_dst.to_host(), src)


def test_striding_coalesces_and_partitioning_does_not(dev):
    # The paper's section 2.5: the same copy, two loop shapes, very different traffic.
    n = 1 << 14
    src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
    s = dev.launch(K.copy_striding, 4, 128, src, dst, n)
    p = dev.launch(K.copy_partitioning, 4, 128, src, dst, n)
    assert s.loads.bytes_requested == p.loads.bytes_requested == 4 * n
    # striding: each half-warp reads 64 aligned bytes, one transaction
    assert s.loads.transactions == n // 16
    assert s.loads.bytes == 4 * n
    # partitioning: each lane of a half-warp is in its own segment: 16 x 32 B per half-warp
    assert p.loads.transactions == n
    assert p.loads.bytes == 32 * n


def test_sum_with_atomics(dev, rng):
    n = 5000
    a = rng.integers(-10**9, 10**9, n, dtype=np.int64)
    total = dev.zeros(1, np.int64)
    rep = dev.launch(K.sum_atomic, 5, 128, dev.to_device(a), total, n)
    assert total.to_host()[0] == a.sum()
    # 640 threads = 20 warps; a warp issues the atomic once per iteration of its
    # lowest lane (which has the most iterations), over lanes t, t+640, ... < n
    per_warp = [len(range(32 * w, n, 640)) for w in range(20)]
    assert rep.atomics.instructions == sum(per_warp)
    # on CC 1.3 a request is per half-warp: one address for 16 lanes -> 1 transaction
    assert rep.atomics.transactions == rep.atomics.requests


def test_shared_memory_block_reduction(dev, rng):
    n = 1000
    a = rng.integers(-1000, 1000, n, dtype=np.int32)
    blocks = (n + K.BLOCK - 1) // K.BLOCK
    sums = dev.zeros(blocks, np.int64)
    rep = dev.launch(K.block_sums, blocks, K.BLOCK, dev.to_device(a), sums, n)
    padded = np.zeros(blocks * K.BLOCK, np.int64)
    padded[:n] = a
    assert np.array_equal(sums.to_host(), padded.reshape(blocks, K.BLOCK).sum(axis=1))
    assert rep.shared_loads > 0 and rep.shared_stores > 0


def collatz_reference(x):
    k = 0
    while x != 1 and k <= 1000:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        k += 1
    return k


def test_divergent_while_loop(dev, rng):
    n = 300
    start = rng.integers(1, 10**6, n).astype(np.int64)
    steps = dev.zeros(n, np.int32)
    rep = dev.launch(K.collatz_steps, 3, 128, dev.to_device(start), steps, n)
    assert steps.to_host().tolist() == [collatz_reference(int(x)) for x in start]
    assert rep.divergent_branches > 0


def test_break_and_continue_per_lane(dev, rng):
    rows, width, m = 200, 16, 7
    a = rng.integers(0, 50, rows * width).astype(np.int32)
    out = dev.zeros(rows, np.int32)
    dev.launch(K.first_multiple, 2, 128, dev.to_device(a), out, m, width, rows)
    expected = []
    for r in range(rows):
        row = a[r * width:(r + 1) * width]
        hits = [j for j, v in enumerate(row) if v != 0 and v % m == 0]
        expected.append(hits[0] if hits else -1)
    assert out.to_host().tolist() == expected


def test_device_function_with_returns(dev, rng):
    a = rng.integers(-100, 100, 500).astype(np.int64)
    d = dev.to_device(a)
    dev.launch(K.clamp_all, 4, 128, d, 500, -10, 20)
    assert np.array_equal(d.to_host(), np.clip(a, -10, 20))


def test_no_divergence_in_uniform_code(dev):
    n = 4096
    src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
    rep = dev.launch(K.copy_striding, 4, 128, src, dst, n)   # n is a multiple of the grid
    assert rep.divergent_branches == 0
    assert rep.branches > 0


def test_engines_agree_on_race_free_kernels(dev, rng):
    n = 700
    a = rng.integers(-1000, 1000, n, dtype=np.int32)
    blocks = (n + K.BLOCK - 1) // K.BLOCK
    reports = {}
    for engine in ("lockstep", "warps"):
        sums = dev.zeros(blocks, np.int64)
        reports[engine] = dev.launch(K.block_sums, blocks, K.BLOCK, dev.to_device(a), sums, n,
                                     engine=engine)
        reports[engine].result = sums.to_host()
    lock, warps = reports["lockstep"], reports["warps"]
    assert np.array_equal(lock.result, warps.result)
    assert lock.loads == warps.loads and lock.stores == warps.stores
    assert lock.warp_instructions == warps.warp_instructions
    assert lock.divergent_branches == warps.divergent_branches


def test_per_line_counts(dev):
    n = 1024
    src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
    rep = dev.launch(K.copy_strided, n // 128, 128, src, dst, 32, n)
    (line,) = [ln for ln, c in rep.by_line.items() if "loads" in c]
    assert rep.by_line[line]["loads"] == rep.loads
    assert rep.to_dict()["loads"]["transactions"] == rep.loads.transactions
    assert "loads" in rep.table()


def test_device_function_on_a_shared_array(dev):
    a = np.arange(128, dtype=np.int32)
    out = dev.zeros(128, np.int32)
    rep = dev.launch(K.reverse_in_shared, 2, 64, dev.to_device(a), out)
    assert np.array_equal(out.to_host(), a.reshape(2, 64)[:, ::-1].ravel())
    assert rep.shared_stores == 4 and rep.stores.instructions == 4   # 2 warps x 2 blocks each


from simgpu.lang import Array, i32, kernel, threadIdx  # noqa: E402


@kernel
def put_through_other_module(a: Array[i32], out: Array[i32]):
    K.put(out, threadIdx.x, a[threadIdx.x])


def test_per_line_counts_name_the_file(dev):
    a = dev.to_device(np.arange(32, dtype=np.int32))
    out = dev.zeros(32, np.int32)
    rep = dev.launch(put_through_other_module, 1, 32, a, out)
    keys = set(rep.by_line)
    assert any(k.startswith("test_kernels.py:") and "loads" in rep.by_line[k] for k in keys)
    assert any(k.startswith("kernels.py:") and "stores" in rep.by_line[k] for k in keys)
    assert rep.loads.lanes == rep.stores.lanes == 32
