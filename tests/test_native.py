"""The compiled memory units (simgpu.native): the same results as the source, and never
a stale build.

The equality test compiles the modules with mypyc (about 20 s) and runs the same
launches in two processes, one with the compiled modules and one with the source
(SIMGPU_NATIVE=0), comparing every report field; it is skipped where mypyc is not
installed (pip install mypy setuptools).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simgpu.mem import native_load

ROOT = Path(__file__).resolve().parent.parent

# Launches that go through every compiled module: the GT200's uncached path (timed and
# timed-block, loads, stores, the write queue), a GPU with an L2 (HBM sub-channels and
# bank groups, write-backs) and atomics at the partitions.
WORKLOAD = r"""
import json, sys
import numpy as np
from algorithms.list_ranking import rank
from algorithms.connected_components import label
from simgpu.mem import native_load
out = {"loaded": native_load.loaded(), "runs": []}
order = np.random.default_rng(1).permutation(1 << 11)
succ = np.empty(order.size, dtype=np.int64)
succ[order[:-1]] = order[1:]
succ[order[-1]] = order[-1]
edges = np.random.default_rng(3).integers(0, 300, size=(700, 2))
for dev in ("sim:gtx260", "sim:h100"):
    for engine in ("timed-block", "timed"):
        r = rank(succ, device=dev, launch_options={"engine": engine})
        out["runs"].append([x.to_dict() for x in r.launches] + [r.ranks.tolist()])
    c = label(300, edges, method="union-find", device=dev)
    out["runs"].append([x.to_dict() for x in c.launches] + [c.labels.tolist()])
json.dump(out, sys.stdout, default=str)
"""


def _run(env_extra: dict) -> dict:
    # (SIMGPU_NUMBA=0: the GT200 path on the mypyc units, not the numba core, which
    # tests/mem/test_fast_core.py checks against them)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIMGPU_NUMBA": "0", **env_extra}
    done = subprocess.run([sys.executable, "-c", WORKLOAD], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_build_key_changes_with_any_compiled_source(tmp_path, monkeypatch):
    for m in native_load.MODULES:
        rel = Path(*m.split(".")).with_suffix(".py")
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, tmp_path / rel)
    monkeypatch.setattr(native_load, "_ROOT", tmp_path)
    before = native_load.digest()
    assert native_load.digest() == before
    last = tmp_path / Path(*native_load.MODULES[-1].split(".")).with_suffix(".py")
    last.write_text(last.read_text() + "\n# edited\n")
    assert native_load.digest() != before


def test_without_a_build_the_source_runs(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIMGPU_NATIVE_DIR": str(tmp_path)}
    code = ("import simgpu.mem.dram as d, simgpu.mem.native_load as n; "
            "print(d.__file__, n.loaded())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.split()[0].endswith("dram.py") and out.strip().endswith("[]")


def test_a_build_that_does_not_load_leaves_the_source_running(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIMGPU_NATIVE_DIR": str(tmp_path)}
    key = subprocess.run([sys.executable, "-c", "from simgpu.mem import native_load as n; "
                          "print(n.digest())"], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    where = tmp_path / key
    (where / "simgpu" / "mem").mkdir(parents=True)
    (where / "complete").write_text("")
    suffix = native_load._SUFFIX
    (where / "simgpu" / "mem" / f"dram_timing{suffix}").write_bytes(b"not a shared library")
    code = ("import simgpu.mem.dram_timing as d, simgpu.mem.native_load as n; "
            "print(d.__file__, n.loaded())")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True)
    assert done.stdout.split()[0].endswith("dram_timing.py")
    assert done.stdout.strip().endswith("[]")
    assert "do not load" in done.stderr and "simgpu.native build" in done.stderr


def test_compiled_modules_give_the_same_reports_as_the_source(tmp_path):
    pytest.importorskip("mypyc", reason="mypyc not installed (pip install mypy setuptools)")
    env = {"SIMGPU_NATIVE_DIR": str(tmp_path)}
    build = subprocess.run([sys.executable, "-m", "simgpu.native", "build"], cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                           capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    compiled = _run(env)
    source = _run({**env, "SIMGPU_NATIVE": "0"})
    assert compiled["loaded"] == list(native_load.MODULES)
    assert source["loaded"] == []
    assert compiled["runs"] == source["runs"]
