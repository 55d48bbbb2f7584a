"""Whole runs on sim:gtx260 with the compiled memory core (simgpu.mem.fast_memory, numba)
and with the Python memory units: the same cycles, times, counts and report fields, on
both engines that use it (trace-block, timed-block), for the kernels of issue 19 (list
ranking with both packings and Wylie's, connected components: its atomics hand the
launch back to the Python units mid-way)."""
import numpy as np
import pytest

pytest.importorskip("numba")

from algorithms.connected_components import label  # noqa: E402
from algorithms.list_ranking import rank  # noqa: E402
from simgpu.mem import fast_memory  # noqa: E402


def random_list(n, seed):
    order = np.random.default_rng(seed).permutation(n)
    succ = np.empty(n, dtype=np.int64)
    succ[order[:-1]] = order[1:]
    succ[order[-1]] = order[-1]
    return succ, order


def run(case, engine, fast, monkeypatch):
    """(every launch's report as a dict, the result) with the core on or off."""
    monkeypatch.setattr(fast_memory, "ENABLED", fast)
    used = []
    real = fast_memory.attach
    monkeypatch.setattr(fast_memory, "attach", lambda m: used.append(real(m)) or used[-1])
    opts = {"engine": engine}
    if case.startswith("cc"):
        edges = np.random.default_rng(3).integers(0, 400, size=(900, 2))
        method = "union-find" if case == "cc-uf" else "shiloach-vishkin"
        r = label(400, edges, method=method, device="sim:gtx260", launch_options=opts)
        result = r.labels.tolist()
    else:
        succ, _ = random_list(1 << 12, 1)
        kw = {"rs64": {}, "rs48": {"packing": 48}, "wylie": {"method": "wylie"}}[case]
        r = rank(succ, device="sim:gtx260", launch_options=opts, **kw)
        result = r.ranks.tolist()
    reports = [x.to_dict() for x in r.launches]
    return reports, result, sum(u is not None for u in used)


@pytest.mark.parametrize("engine", ["trace-block", "timed-block"])
@pytest.mark.parametrize("case", ["rs64", "rs48", "wylie", "cc", "cc-uf"])
def test_same_reports_with_the_core_on_and_off(case, engine, monkeypatch):
    slow, slow_result, none = run(case, engine, False, monkeypatch)
    fast, fast_result, attached = run(case, engine, True, monkeypatch)
    assert none == 0 and attached >= len(fast)     # every launch ran on the core
    assert fast_result == slow_result
    if case.startswith("cc"):    # atomics ran, on the Python units the core handed over to
        assert any(r["extra"].get("atomic_operations") for r in fast)
    assert len(fast) == len(slow)
    for a, b in zip(slow, fast):
        assert a == b


def test_simgpu_numba_0_runs_the_python_units():
    """SIMGPU_NUMBA=0 (read at import): numba is not even imported, and a launch's memory
    system books on the Python units."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    code = ("import sys, numpy as np, simgpu\n"
            "from simgpu.mem import fast_jit\n"
            "from simgpu.mem.memory_system import MemorySystem\n"
            "from simgpu.mem.tlb import TlbState\n"
            "c = simgpu.get_device('sim:gtx260').config\n"
            "m = MemorySystem(c, None, TlbState(c))\n"
            "print(fast_jit.ENABLED, m.use_fast(), 'numba' in sys.modules)\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "SIMGPU_NUMBA": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False", "False"]


# --- the compiled coalescing (simgpu.mem.fast_coalesce) on the core's path ---------------

from simgpu.lang import Array, atomic_add, blockDim, blockIdx, gridDim, i32, i64, kernel, threadIdx  # noqa: E402,E501
from simgpu.mem import fast_coalesce  # noqa: E402


@kernel
def gather_then_count(a: Array[i32], idx: Array[i32], out: Array[i32], hits: Array[i32], n: i32):
    """Scattered loads of many warps (their instructions wait for the SM's miss entries),
    then an atomic per block: the core goes off while other blocks' loads still wait."""
    s = 0
    for i in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, n, i64(gridDim.x) * blockDim.x):
        s += a[idx[i]]
        out[i] = s
    if threadIdx.x == 0:
        atomic_add(hits, 0, s)


def coalesced_runs(engine, monkeypatch, packed: bool):
    monkeypatch.setattr(fast_coalesce, "USE", packed)
    lists = []
    real = fast_coalesce.LazyPackedWarps.lists
    monkeypatch.setattr(fast_coalesce.LazyPackedWarps, "lists",
                        lambda self: lists.append(1) or real(self))
    import simgpu
    dev = simgpu.get_device("sim:gtx260")
    rng = np.random.default_rng(7)
    n = 1 << 14
    a = dev.to_device(rng.integers(0, 100, n, dtype=np.int32))
    idx = dev.to_device(rng.integers(0, n, n, dtype=np.int32))
    out, hits = dev.zeros(n, np.int32), dev.zeros(1, np.int32)
    rep = dev.launch(gather_then_count, 60, 256, a, idx, out, hits, n, engine=engine)
    v = 3000 if engine == "timed-block" else 1000      # (timed: every warp a process)
    edges = np.random.default_rng(3).integers(0, v, size=(2 * v, 2))
    r = label(v, edges, method="shiloach-vishkin", device=dev, launch_options={"engine": engine})
    reports = [rep.to_dict()] + [x.to_dict() for x in r.launches]
    return reports, (out.to_host().tolist(), hits.to_host().tolist(), r.labels.tolist()), lists


@pytest.mark.parametrize("engine", ["timed-block", "timed"])
def test_compiled_coalescing_gives_the_same_runs(engine, monkeypatch):
    """Loads and stores coalesced by the compiled rules straight into the core's packed
    form, or through the coalescer's lists: the same results and reports, field for
    field (cycles, times, counts); including instructions still waiting for miss entries
    when an atomic hands the launch to the Python units (they then take the lists)."""
    if not fast_coalesce.ENABLED:
        pytest.skip("SIMGPU_NUMBA=0")
    ref, ref_out, _ = coalesced_runs(engine, monkeypatch, False)
    got, got_out, lists = coalesced_runs(engine, monkeypatch, True)
    assert got_out == ref_out
    assert len(got) == len(ref)
    for a, b in zip(ref, got):
        assert a == b
    if engine == "timed-block":
        assert lists                       # the hand-over mid-instruction was exercised
