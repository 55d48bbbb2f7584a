"""The layers import only downward: every module's imports (read with ast, so an import
inside a function counts too) stay within what its layer may see.

    simgpu (the core)  ->  nothing else of the project
    cuda_backend       ->  simgpu                     (the backend alone: render, device, nvcc)
    algorithms         ->  simgpu (the Device API), never a backend
    simgpu_apps        ->  anything below (CLI, experiments, lessons, the GPU tools)
    calibration, validation, benchmarks  ->  anything below, never each other: the probes,
                          the held-apart sets and the user-facing benchmarks are tools on top

No module edits sys.path (a script that needs it would hide a layering problem; tests
included), and no module imports, through others, one that imports it.
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
    "calibration": TOOLS,
    "validation": TOOLS,
    "benchmarks": TOOLS,
}
PROJECT = set(ALLOWED) | {"tests"}

# Cycles between modules of the core, each closed by an import inside a function (the
# core's own business, issue 22 items 4-5): excused here until they are taken apart.
# Nowhere else is a cycle excused.
CORE_CYCLES = [{"simgpu.device", "simgpu.sim.device"}]


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
        allowed = ALLOWED[layer] | {layer}
        for top in sorted(imported_packages(tree) - allowed):
            wrong.append(f"{rel} ({layer}) imports {top}")
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def test_no_module_edits_sys_path():
    paths = [path for _, path in modules()] + sorted((ROOT / "tests").rglob("*.py"))
    wrong = [path.relative_to(ROOT).as_posix() for path in paths
             if edits_sys_path(ast.parse(path.read_text()))]
    assert wrong == []


def test_the_top_level_packages_import_no_cycle():
    graph = {layer: set() for layer in ALLOWED}
    for layer, path in modules():
        graph[layer] |= imported_packages(ast.parse(path.read_text())) - {layer}
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


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: pathlib.Path, known: set) -> set:
    """The project modules ``path`` imports (absolute or relative, at the top or inside a
    function): ``from a.b import c`` names the module a.b.c where that is one, else a.b."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()

    def add(dotted):
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        if dotted:
            found.add(dotted)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return found - {name}


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one node (Tarjan), each a set."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_one_that_imports_it():
    """The calibration probes' GPU and model sides (kernel_overlap*, l2_fabric*) imported
    each other; now both import the experiment they share, and nothing else may cycle."""
    paths = [path for _, path in modules()]
    known = {module_name(path) for path in paths}
    graph = {module_name(path): imported_modules(path, known) for path in paths}
    found = [c for c in cycles(graph) if not any(c <= excused for excused in CORE_CYCLES)]
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(sorted(c)) for c in found)


def test_the_cycle_finder_sees_a_cycle_and_resolves_relative_imports(tmp_path):
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert cycles({"a": {"b"}, "b": set()}) == []
    known = {"calibration", "calibration.l2_fabric_cases", "calibration.l2_fabric", "simgpu",
             "simgpu.lang"}
    found = imported_modules(ROOT / "calibration" / "l2_fabric.py", known)
    assert {"calibration", "calibration.l2_fabric_cases"} <= found


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
