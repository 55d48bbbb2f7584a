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
