"""Loads after a thread's own store to the same array are marked fresh (simgpu.ir.fresh):
the renderer makes them loads the compiler must issue, the simulator sends them to the L2."""
import numpy as np
import pytest

import simgpu
from simgpu.ir import nodes as ir
from simgpu.lang import Array, i32, kernel, syncthreads, threadIdx


def fresh_lines(kern) -> list:
    """(array, line offset from the def) of every fresh load of ``kern``."""
    first = kern.ir.loc.line
    return sorted((n.array.name, n.loc.line - first) for n in ir.walk(kern.ir)
                  if isinstance(n, ir.Load) and n.fresh)


@kernel
def read_back(a: Array[i32], b: Array[i32], out: Array[i32]):
    i = threadIdx.x
    a[i] = a[i] + 1             # its own load comes before the store: not fresh
    out[i] = b[i] + a[i]        # a[i] after the store: fresh; b: never stored
    syncthreads()
    out[i] = a[i]               # after the barrier: not fresh


@kernel
def branches_and_loops(a: Array[i32], out: Array[i32], n: i32):
    i = threadIdx.x
    if i < n:
        a[i] = 1
    out[i] = a[i]               # after the if whose branch stored: fresh
    for k in range(n):
        out[k] = a[k + 1]       # a stored before the loop: fresh
        a[k] = out[k]           # out stored before the loop and just above: fresh
    out[0] = a[0]               # fresh


@kernel
def loop_carried(a: Array[i32], out: Array[i32], n: i32):
    for k in range(n):
        out[k] = a[k + 1]       # a is stored later in the iteration only: not fresh
        a[k] = out[k]           # out stored just above: fresh


def test_loads_after_a_store_to_their_array_are_fresh():
    assert fresh_lines(read_back) == [("a", 3)]
    assert fresh_lines(branches_and_loops) == [("a", 4), ("a", 6), ("a", 8), ("out", 7)]
    # an earlier iteration's store is forwarded only to an address provably the same,
    # which a striding index is not (simgpu.ir.fresh: "Not covered")
    assert fresh_lines(loop_carried) == [("out", 3)]


def test_the_hooking_read_back_is_fresh():
    from algorithms.connected_components import kernels as K
    fresh = [n for n in ir.walk(K.sv2_hook.ir) if isinstance(n, ir.Load) and n.fresh]
    assert [(n.array.name, n.index) for n in fresh] == [("D", ir.Var(name="di", type=fresh[0].index.type,
                                                                         loc=None))]
    assert not [n for n in ir.walk(K.sv3_hook_stagnant.ir) if isinstance(n, ir.Load) and n.fresh]


def test_the_renderer_makes_fresh_loads_relaxed_device_scope_loads():
    from algorithms.connected_components import kernels as K
    from cuda_backend.render import render
    source = render(K.sv2_hook)
    assert "Q[ld_fresh_i32(&D[di])] = s;" in source
    assert 'asm volatile("ld.relaxed.gpu.b32 %0, [%1];"' in source
    assert "ld_fresh" not in render(K.sv3_hook_stagnant)


def test_nvcc_keeps_the_read_back_that_it_dropped_before():
    """nvcc forwarded D[di] = dj to the load of D[di] (the H100's counts: four loads per
    edge, never five); a relaxed load it must issue."""
    from algorithms.connected_components import kernels as K
    from cuda_backend.nvcc import NvccNotFound, compile_ptx
    from cuda_backend.render import render
    try:
        ptx = compile_ptx(render(K.sv2_hook), arch="sm_90")
    except NvccNotFound as exc:   # tests/cuda/test_nvcc.py fails under CI=true instead
        pytest.skip(str(exc))
    assert ptx.count("ld.relaxed.gpu") == 1
    assert ptx.count("ld.global") == 4             # E[k], D[i], D[di], D[j]


@pytest.mark.parametrize("stored, hit_rate", [(True, 0.0), (False, 0.5)])
def test_a_fresh_load_passes_the_l1_by(stored, hit_rate):
    """The second load of a[i] would hit the L1 (the first allocated the line); after a
    store to a it is fresh and read at the L2, as ld.relaxed.gpu on the GPU."""
    dev = simgpu.get_device("sim:h100")
    a, b, out = (dev.to_device(np.arange(64, dtype=np.int32)) for _ in range(3))
    kern = store_then_load if stored else store_elsewhere_then_load
    rep = dev.launch(kern, 1, 32, a, b, out, engine="timed-block")
    assert rep.extra["l1_hit_rate"] == hit_rate
    assert np.array_equal(out.to_host()[:32], np.arange(32) + (1 if stored else 0))


@kernel
def store_then_load(a: Array[i32], b: Array[i32], out: Array[i32]):
    i = threadIdx.x
    x = a[i]
    a[i] = x + 1
    out[i] = a[i]


@kernel
def store_elsewhere_then_load(a: Array[i32], b: Array[i32], out: Array[i32]):
    i = threadIdx.x
    x = a[i]
    b[i] = x + 1
    out[i] = a[i]
