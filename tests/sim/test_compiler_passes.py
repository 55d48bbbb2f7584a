"""The compiler's passes (simgpu/sim/compiler_passes.py): unrolled and scheduled kernels
compute what the source says (against numpy, over random inputs and launch shapes),
count as nvcc's unrolled loops count (validation/unroll_counts.py's formula), keep
every store to a space ahead of the loads after it, and let independent loads overlap."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simgpu
from simgpu.configs import ConfigError, load_config, parse_config
from simgpu.lang import Array, blockDim, blockIdx, i32, kernel, shared_array, syncthreads, threadIdx
from simgpu.ir import nodes as ir
from simgpu.sim.compiler_passes import compiled_form
from validation.h100_kernels import spmv_csr as row_sums   # the held-out SpMV: a row loop

ON = dict(unroll_loops=4, unroll_straight_copies=16, unroll_full_max_trips=16, schedule_loads=True)
BY_FOUR = dict(ON, unroll_straight_copies=None)
OFF = dict(unroll_loops=None, unroll_straight_copies=None, unroll_full_max_trips=None,
           schedule_loads=False)


def device(passes, name="sim:h100"):
    dev = simgpu.get_device(name)
    c = dev.config
    dev.config = dataclasses.replace(c, issue=dataclasses.replace(c.issue, **passes))
    return dev


@kernel
def shift_in_place(a: Array[i32], n: i32):
    # each thread moves its four elements up by one, in order: every load follows the
    # store before it to the same array (a compiler without restrict keeps that order)
    base = (blockIdx.x * blockDim.x + threadIdx.x) * 5
    if base + 4 < n:
        for j in range(3, -1, -1):
            a[base + j + 1] = a[base + j]


@kernel
def tile_rotate(src: Array[i32], dst: Array[i32]):
    tile = shared_array(i32, 256)
    t = threadIdx.x
    for j in range(0, 4):
        tile[t * 4 + j] = src[blockIdx.x * 256 + t * 4 + j]
    syncthreads()
    for j in range(0, 4):
        dst[blockIdx.x * 256 + t * 4 + j] = tile[(t * 4 + j + 1) % 256]


@kernel
def guarded_runs(a: Array[i32], starts: Array[i32], stops: Array[i32], out: Array[i32],
                 last: Array[i32], n: i32):
    # empty and reversed ranges, a load behind ``and``, a conditional expression, and
    # a copy of the loop variable read after the loop
    t = blockIdx.x * blockDim.x + threadIdx.x
    seen = -1
    s = 0
    for k in range(starts[t], stops[t]):
        if k < n and a[k] > 0:
            s += a[k]
        s += a[k] if k < n else 1000
        seen = k
    out[t] = s
    last[t] = seen


def _csr(lengths, seed=0):
    rng = np.random.default_rng(seed)
    row_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    nnz = int(row_ptr[-1])
    col = rng.integers(0, 64, max(nnz, 1)).astype(np.int32)
    val = rng.random(max(nnz, 1)).astype(np.float32)
    x = rng.random(64).astype(np.float32)
    return row_ptr, col, val, x


def _run_row_sums(dev, lengths):
    row_ptr, col, val, x = _csr(lengths)
    rows = len(lengths)
    y = dev.zeros(rows, np.float32)
    blocks = (rows + 63) // 64
    rep = dev.launch(row_sums, blocks, 64, dev.to_device(row_ptr), dev.to_device(col),
                     dev.to_device(val), dev.to_device(x), y, np.int32(rows), engine="lockstep")
    return y.to_host(), rep


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=200))
def test_an_unrolled_loop_sums_and_counts_as_nvcc_s(lengths):
    from validation.unroll_counts import spmv_requests, spmv_requests_sass
    got, rep = _run_row_sums(device(ON), lengths)
    four, rep4 = _run_row_sums(device(BY_FOUR), lengths)
    want, plain = _run_row_sums(device(OFF), lengths)
    row_ptr, col, val, x = _csr(lengths)
    ref = np.array([sum(np.float32(val[k]) * x[col[k]] for k in range(row_ptr[r], row_ptr[r + 1]))
                    for r in range(len(lengths))], np.float32)
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    for other in (four, want):                      # the same adds in the same order
        np.testing.assert_array_equal(got.view(np.int32), other.view(np.int32))
    # validation/unroll_counts.py's formulas, per warp (lanes past the rows: 0 iterations,
    # warps with no row: none)
    L = np.asarray(lengths)
    L = np.concatenate([L, np.zeros(-len(L) % 32, int)])
    live = (np.arange(L.size) < len(lengths)).reshape(-1, 32).any(1)
    L = L.reshape(-1, 32)[live].ravel()
    ir_loop, by_four = spmv_requests(L)
    assert plain.loads.requests == ir_loop
    assert rep4.loads.requests == by_four
    assert rep.loads.requests == spmv_requests_sass(L)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 4), st.sampled_from([32, 64, 96]), st.integers(0, 2**31 - 1))
def test_stores_stay_ahead_of_the_loads_after_them(blocks, threads, seed):
    n = blocks * threads * 5
    a = np.random.default_rng(seed).integers(-99, 99, n).astype(np.int32)
    want = a.copy().reshape(-1, 5)
    want[:, 1:] = want[:, :4].copy()
    for passes in (ON, OFF):
        dev = device(passes)
        d = dev.to_device(a)
        dev.launch(shift_in_place, blocks, threads, d, np.int32(n), engine="lockstep")
        np.testing.assert_array_equal(d.to_host().reshape(-1, 5), want)


@pytest.mark.parametrize("engine", ["lockstep", "timed-block", "timed"])
def test_shared_tiles_and_guards_compute_the_source_s_results(engine):
    rng = np.random.default_rng(5)
    dev = device(ON)
    src = rng.integers(0, 1000, 512).astype(np.int32)
    dst = dev.zeros(512, np.int32)
    dev.launch(tile_rotate, 2, 64, dev.to_device(src), dst, engine=engine)
    want = np.concatenate([np.roll(src[:256], -1), np.roll(src[256:], -1)])
    np.testing.assert_array_equal(dst.to_host(), want)

    n, m = 50, 64
    a = rng.integers(-5, 5, n).astype(np.int32)
    starts = rng.integers(0, 60, m).astype(np.int32)
    stops = (starts + rng.integers(-4, 12, m)).astype(np.int32)
    out, last = dev.zeros(m, np.int32), dev.zeros(m, np.int32)
    dev.launch(guarded_runs, 1, m, dev.to_device(a), dev.to_device(starts), dev.to_device(stops),
               out, last, np.int32(n), engine=engine)
    s_want, k_want = [], []
    for s0, s1 in zip(starts, stops):
        s = 0
        for k in range(s0, s1):
            if k < n and a[k] > 0:
                s += a[k]
            s += a[k] if k < n else 1000
        s_want.append(s)
        k_want.append(s1 - 1 if s1 > s0 else -1)
    np.testing.assert_array_equal(out.to_host(), s_want)
    np.testing.assert_array_equal(last.to_host(), k_want)


def _order(fn):
    """The kernel's memory instructions in issue order: 'G' a global load, 'S' a shared
    store, 'g' a global store, 's' a shared load."""
    shared = {n for n, _ in fn.shared}
    out = []
    for node in ir.walk(fn.body):
        if type(node) is ir.Store:
            out.append("S" if node.array.name in shared else "g")
        elif type(node) is ir.Load:
            out.append("s" if node.array.name in shared else "G")
    return "".join(out)


def test_the_scheduled_order_is_nvcc_s():
    """SASS of the rendered transpose_tiled (validation/compiler_sass.py): LDG x4, STS x4,
    BAR, LDS x4, STG x4; of transpose_naive: LDG, STG, four times (dst may alias src)."""
    from validation import h100_kernels as K
    issue = device(ON).config.issue
    # (a store's value is walked after it: "S" then the load it stores, in source order)
    assert _order(K.transpose_tiled.ir).startswith("SG")
    assert _order(compiled_form(K.transpose_tiled.ir, issue)) == "GGGGSSSSssssgggg"
    assert _order(compiled_form(K.transpose_naive.ir, issue)) == "GgGgGgGg"


def test_four_independent_loads_of_an_unrolled_loop_overlap():
    """transpose_tiled's loop on sim:h100: with the passes the four loads of a thread
    overlap; without them each waits for the one before (its shared store needs it)."""
    from validation import h100_kernels as K
    times = {}
    for name, passes in (("on", ON), ("off", OFF)):
        dev = device(passes)
        dev.cache_control = "all"
        src = dev.to_device(np.arange(64 * 64, dtype=np.int32))
        dst = dev.zeros(64 * 64, np.int32)
        rep = dev.launch(K.transpose_tiled, (2, 2, 1), (32, 8, 1), src, dst, np.int32(64),
                         np.int32(64), engine="timed-block")
        np.testing.assert_array_equal(dst.to_host(), np.arange(64 * 64).reshape(64, 64).T.ravel())
        times[name] = rep.cycles
    assert times["on"] < 0.75 * times["off"], times


def test_nothing_changes_without_the_passes():
    fn = row_sums.ir
    issue = device(OFF).config.issue
    assert compiled_form(fn, issue) is fn
    assert compiled_form(fn, device(ON).config.issue) is compiled_form(fn, device(ON).config.issue)


def test_the_straight_copies_need_a_power_of_two_past_the_factor():
    import tomllib
    import pathlib
    import simgpu.configs as configs
    data = tomllib.loads((pathlib.Path(configs.__file__).parent / "h100.toml").read_text())
    data["issue"]["unroll_straight_copies"] = 2
    with pytest.raises(ConfigError, match="issue.unroll_straight_copies: 2: give a power of two"):
        parse_config(data, "mygpu.toml")


def test_an_unroll_factor_must_be_a_power_of_two():
    import tomllib
    import pathlib
    import simgpu.configs as configs
    data = tomllib.loads((pathlib.Path(configs.__file__).parent / "h100.toml").read_text())
    data["issue"]["unroll_loops"] = 3
    with pytest.raises(ConfigError, match="issue.unroll_loops: 3 is not a power of two"):
        parse_config(data, "mygpu.toml")
    assert load_config("h100").issue.unroll_loops == 4
