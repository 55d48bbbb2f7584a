"""The layers import only downward: every module's imports (read with ast, so an import
inside a function counts too) stay within what its layer may see.

    simgpu (the core)  ->  nothing else of the project
    cuda_backend       ->  simgpu
    algorithms         ->  simgpu (the Device API), never a backend
    simgpu_apps        ->  anything below
    calibration, validation, benchmarks  ->  anything below (they are tools on top)

and no module edits sys.path (a script that needs it would hide a layering problem).
"""
import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

BELOW_APPS = {"simgpu", "cuda_backend", "algorithms"}
TOOLS = BELOW_APPS | {"simgpu_apps"}
ALLOWED = {
    "simgpu": set(),
    "cuda_backend": {"simgpu"},
    "algorithms": {"simgpu"},
    "simgpu_apps": BELOW_APPS,
    "calibration": TOOLS | {"validation"},
    "validation": TOOLS,
    "benchmarks": TOOLS,
}
PROJECT = set(ALLOWED) | {"tests"}

# Imports that break the rules today and are scheduled to move (issue 22, phase B):
# the GPU validation and calibration tools still live in cuda_backend, and the one-off
# probes in benchmarks/ edit sys.path. Each entry: file -> the packages it may still reach.
PENDING_IMPORTS = {
    "cuda_backend/validate.py": {"algorithms", "simgpu_apps"},
}
PENDING_SYS_PATH = {"benchmarks/l2_fabric.py", "benchmarks/kernel_counters.py",
                    "benchmarks/first_access.py", "benchmarks/hook_cache_ops.py",
                    "benchmarks/hook_stores.py", "benchmarks/coherence.py",
                    "benchmarks/l2_chunks.py", "benchmarks/kernel_overlap.py"}


def modules():
    for layer in ALLOWED:
        for path in sorted((ROOT / layer).rglob("*.py")):
            yield layer, path


def imported_packages(tree: ast.AST) -> set:
    """Top-level project packages named by absolute imports (relative imports stay
    inside their own package, and scripts' imports of their neighbours by bare name
    name no project package)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in PROJECT:
                found.add(top)
    return found


def edits_sys_path(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "path" and \
                isinstance(node.value, ast.Name) and node.value.id == "sys":
            return True
    return False


def test_every_module_imports_only_layers_below_it():
    wrong = []
    for layer, path in modules():
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(), str(path))
        allowed = ALLOWED[layer] | {layer} | PENDING_IMPORTS.get(rel, set())
        for top in sorted(imported_packages(tree) - allowed):
            wrong.append(f"{rel} ({layer}) imports {top}")
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def test_no_module_edits_sys_path():
    wrong = [path.relative_to(ROOT).as_posix() for _, path in modules()
             if edits_sys_path(ast.parse(path.read_text()))]
    assert sorted(set(wrong) - PENDING_SYS_PATH) == []


def test_the_pending_exceptions_are_still_needed():
    """An exception that no longer matches anything is removed, so the list only shrinks."""
    for rel, tops in PENDING_IMPORTS.items():
        path = ROOT / rel
        if path.exists():
            assert tops <= imported_packages(ast.parse(path.read_text())), rel
    for rel in PENDING_SYS_PATH:
        path = ROOT / rel
        if path.exists():
            assert edits_sys_path(ast.parse(path.read_text())), rel


def test_the_top_level_packages_import_no_cycle():
    graph = {layer: set() for layer in ALLOWED}
    for layer, path in modules():
        pending = PENDING_IMPORTS.get(path.relative_to(ROOT).as_posix(), set())
        graph[layer] |= imported_packages(ast.parse(path.read_text())) - {layer} - pending
    seen, done = set(), set()

    def visit(node, stack):
        assert node not in stack, f"import cycle: {' -> '.join(stack + [node])}"
        if node in done:
            return
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, stack + [node])
        done.add(node)
    for node in graph:
        visit(node, [])


def test_the_checker_sees_a_wrong_import():
    tree = ast.parse("def f():\n    from algorithms import kiss\nimport simgpu_apps.cli\n"
                     "import os\nfrom . import sibling\n")
    assert imported_packages(tree) == {"algorithms", "simgpu_apps"}
    assert edits_sys_path(ast.parse("import sys\nsys.path.insert(0, 'x')\n"))
    assert not edits_sys_path(ast.parse("import os\nos.path.join('a')\n"))


def test_importing_simgpu_loads_no_layer_above_and_cuda_is_found_by_name():
    """At run time too: ``import simgpu`` loads no backend, algorithms or apps; asking for
    "cuda" imports cuda_backend by the registry's naming convention (where CuPy or a GPU
    is missing, the device then refuses with CudaUnavailable, which is fine here)."""
    code = (
        "import sys, simgpu\n"
        "above = {'cuda_backend', 'algorithms', 'simgpu_apps'}\n"
        "print(sorted(above & set(sys.modules)))\n"
        "try:\n"
        "    simgpu.get_device('cuda')\n"
        "except Exception as exc:\n"
        "    assert type(exc).__name__ == 'CudaUnavailable', exc\n"
        "print('cuda' in simgpu.device.registered_devices(), 'cuda_backend' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "True True"]


def test_a_backend_registers_a_prefix():
    import simgpu
    from simgpu.device import _FACTORIES
    made = []

    def factory(spec):
        made.append(spec)
        return simgpu.get_device("sim:gtx260")
    simgpu.register_device("testdev", factory)
    try:
        assert simgpu.get_device("testdev").name == "sim:gtx260"
        simgpu.get_device("testdev:7")
        assert made == [None, "7"]
    finally:
        del _FACTORIES["testdev"]
    with pytest.raises(ValueError, match="unknown device 'nothere:1'"):
        simgpu.get_device("nothere:1")
    with pytest.raises(ValueError, match="name the simulated GPU"):
        simgpu.get_device("sim")


def test_devices_tell_their_capabilities(dev):
    assert dev.is_simulated
    assert (dev.sm_count, dev.max_threads_per_sm, dev.gpu_name) == (
        dev.config.gpu.sm_count, dev.config.limits.max_threads_per_sm, dev.config.gpu.name)
