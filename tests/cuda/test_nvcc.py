"""Every kernel of the project renders to CUDA C that nvcc compiles for sm_90.

nvcc is compile-only here (no GPU needed).  Without nvcc the compile tests are
skipped, except under CI=true, where a missing nvcc is a failure: CI must not
go green without having compiled anything.

The kernels come from ``all_project_kernels()``: the renderer's own test
kernels (tests/cuda/kernels_for_render.py) and every ``@kernel`` found in a
module under ``algorithms/``.  A module there that fails to import is a
failing test, never a silent skip.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import re
import traceback
from functools import lru_cache

import pytest

from cuda_backend.nvcc import (CudaCompileError, NvccNotFound, compile_ptx, find_nvcc,
                               python_line)
from cuda_backend.render import kernel_symbol, render, render_module
from simgpu.lang import Kernel

from . import kernels_for_render

ARCH = "sm_90"


# --- the kernels ------------------------------------------------------------------

def module_kernels(module) -> list:
    """The ``@kernel`` objects defined in ``module`` (not those it merely imports)."""
    return [obj for obj in vars(module).values()
            if isinstance(obj, Kernel) and obj.__module__ == module.__name__]


def algorithm_modules(errors: list | None = None) -> list:
    """Every module under algorithms/, imported.  Import failures raise, or go to ``errors``."""
    import algorithms
    modules = []
    names = [algorithms.__name__] + [info.name for info in pkgutil.walk_packages(
        algorithms.__path__, algorithms.__name__ + ".", onerror=lambda name: None)]
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except Exception as exc:
            if errors is None:
                raise ImportError(f"{name} failed to import: {exc}") from exc
            errors.append((name, traceback.format_exc()))
    return modules


def all_project_kernels(errors: list | None = None) -> list:
    """Every kernel the project defines (renderer test kernels + algorithms/), deduplicated."""
    kernels, seen = [], set()
    for module in [kernels_for_render] + algorithm_modules(errors):
        for k in module_kernels(module):
            if id(k) not in seen:
                seen.add(id(k))
                kernels.append(k)
    return kernels


def kernel_id(k) -> str:
    """``list_ranking.wylie.wylie_jump``, ``kernels_for_render.loops``."""
    module = k.__module__.removeprefix("algorithms.").removeprefix("tests.cuda.")
    return f"{module}.{k.name}"


def _params():
    errors: list = []
    params = [pytest.param(k, id=kernel_id(k)) for k in all_project_kernels(errors)]
    params += [pytest.param(("import error", name, tb), id=f"import:{name}") for name, tb in errors]
    return params


# --- nvcc ------------------------------------------------------------------------

@pytest.fixture(scope="session")
def nvcc():
    path = find_nvcc()
    if path is None:
        msg = "nvcc not found (PATH, /usr/local/cuda/bin): the CUDA C cannot be compiled here"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg + "; CI=true requires nvcc")
        pytest.skip(msg)
    return path


def batches(kernels) -> list:
    """Kernels split into modules with distinct kernel names, so one nvcc call compiles many."""
    out: list = []
    for k in kernels:
        for batch in out:
            if all(kernel_symbol(o) != kernel_symbol(k) for o in batch):
                batch.append(k)
                break
        else:
            out.append([k])
    return out


@lru_cache(maxsize=None)
def _compiled_batches():
    """{id(kernel): None if it compiled, else the error text}; one nvcc call per batch."""
    kernels = [p.values[0] for p in _params() if isinstance(p.values[0], Kernel)]
    result = {}
    for batch in batches(kernels):
        buildable = []
        for k in batch:
            try:
                k.ir
                buildable.append(k)
            except Exception as exc:            # the front end refused it: report per kernel
                result[id(k)] = f"{type(exc).__name__}: {exc}"
        try:
            ptx = compile_ptx(render_module(buildable), ARCH)
            for k in buildable:
                ok = re.search(rf"\.entry\s+{re.escape(kernel_symbol(k))}\s*\(", ptx)
                result[id(k)] = None if ok else f"no .entry {kernel_symbol(k)} in the PTX"
        except Exception:
            # Something in the batch is broken: compile each alone to pin it down.
            for k in buildable:
                try:
                    compile_ptx(render(k), ARCH)
                    result[id(k)] = None
                except Exception as exc:
                    result[id(k)] = f"{type(exc).__name__}: {exc}"
    return result


@pytest.mark.parametrize("kern", _params())
def test_kernel_compiles_with_nvcc(kern, nvcc):
    if isinstance(kern, tuple):
        _, name, tb = kern
        pytest.fail(f"module {name} under algorithms/ failed to import:\n{tb}")
    error = _compiled_batches()[id(kern)]
    if error is not None:
        pytest.fail(f"kernel {kernel_id(kern)} does not compile:\n{error}")


def test_the_walk_finds_the_renderer_kernels_and_reports_broken_modules(monkeypatch, tmp_path):
    names = {kernel_id(k) for k in all_project_kernels()}
    assert {f"kernels_for_render.{k.name}" for k in kernels_for_render.ALL} <= names
    # A broken module under algorithms/ is an error, never silently skipped.
    import algorithms
    (tmp_path / "broken_for_test.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.setattr(algorithms, "__path__", list(algorithms.__path__) + [str(tmp_path)])
    errors: list = []
    all_project_kernels(errors)
    assert [name for name, _ in errors] == ["algorithms.broken_for_test"]
    assert "boom" in errors[0][1]
    with pytest.raises(ImportError, match="algorithms.broken_for_test failed to import: boom"):
        all_project_kernels()


# --- compile errors point at the Python line ---------------------------------------

def test_compile_error_shows_generated_and_python_lines(nvcc):
    src = render(kernels_for_render.elementwise)
    good = "out[i] = add_i32(mul_i32(a[i], 2), 1);"
    assert good in src
    bad = src.replace(good, "out[i] = add_i32(mul_i32(a[i], 2), no_such_thing);")
    with pytest.raises(CudaCompileError) as info:
        compile_ptx(bad, ARCH)
    msg = str(info.value)
    line = next(n for n, ln in enumerate(open(kernels_for_render.__file__), 1)
                if "out[i] = a[i] * 2 + 1" in ln)
    assert "kernel 'elementwise'" in msg
    assert 'identifier "no_such_thing" is undefined' in msg
    assert "C:      out[i] = add_i32(mul_i32(a[i], 2), no_such_thing);" in msg
    assert f"Python: kernels_for_render.py:{line}: out[i] = a[i] * 2 + 1" in msg
    cu_line = bad.splitlines().index("        out[i] = add_i32(mul_i32(a[i], 2), no_such_thing);") + 1
    assert f"generated line {cu_line}:" in msg
    d = info.value.diagnostics[0]
    assert (d.cu_line, d.function) == (cu_line, "kernel 'elementwise'")


def test_compile_error_in_a_device_function_names_it(nvcc):
    src = render(kernels_for_render.device_calls)
    bad = src.replace("return h;", "return h + undefined_h;")
    with pytest.raises(CudaCompileError) as info:
        compile_ptx(bad, ARCH)
    d = info.value.diagnostics[0]
    assert d.function == "device function 'hash_sum'"
    assert d.python.endswith(": return h")


def test_compile_error_in_the_prelude_has_no_python_line(nvcc):
    src = "this is not C;\n" + render(kernels_for_render.elementwise)
    with pytest.raises(CudaCompileError) as info:
        compile_ptx(src, ARCH)
    assert "Python: (none: the line is in the generated prelude)" in str(info.value)


def test_python_line_lookup_uses_the_nearest_comment_above():
    src = ('extern "C" __global__ void k(int32_t n) {\n'
           "    // k.py:3: x = 1\n"
           "    x = 1;\n"
           "    if (x) {  // k.py:4: elif x:\n"
           "        y = 2;\n"
           "}\n")
    assert python_line(src, 3) == "k.py:3: x = 1"
    assert python_line(src, 4) == "k.py:4: elif x:"
    assert python_line(src, 1) is None


def test_missing_nvcc_is_a_clear_error(monkeypatch):
    import cuda_backend.nvcc as nv
    monkeypatch.setattr(nv.shutil, "which", lambda name: None)
    monkeypatch.setattr(nv, "CUDA_HOMES", ())
    with pytest.raises(NvccNotFound, match="nvcc not found"):
        compile_ptx("", ARCH)


# --- on a GPU machine: NVRTC (CuPy) accepts the same source -------------------------

@pytest.mark.gpu
def test_nvrtc_compiles_every_kernel():
    cupy = pytest.importorskip("cupy")
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # pragma: no cover - CuPy without a usable GPU
        pytest.skip(f"no CUDA device: {exc}")
    kernels = [p.values[0] for p in _params() if isinstance(p.values[0], Kernel)]
    for batch in batches(kernels):
        module = cupy.RawModule(code=render_module(batch))
        for k in batch:
            module.get_function(kernel_symbol(k))
