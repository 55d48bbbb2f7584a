"""The cache fingerprint, derived from the sources (no list kept by hand).

What a cached number depends on is found by reading the code:

- in an experiment module, the compute function and every top-level function,
  class or constant it uses, transitively (by the names in their bodies);
  the module's analysis code (verdicts, tables) is left out, so changing a
  verdict does not recompute the points;
- every project module those import (at module level or inside a function,
  absolute or relative), transitively, whole, with the packages above it
  (their ``__init__`` runs on import);
- the data files (``*.toml``) beside every such module (the device configs);
- the backend a device name selects (``cuda`` -> ``cuda_backend``), as
  ``simgpu.get_device`` imports it by that convention.

``fingerprint(entries, extra_modules, read)`` hashes the text of all of it; ``read``
(a path -> text function) lets a test substitute a changed source.
"""
from __future__ import annotations

import ast
import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ("simgpu", "algorithms", "cuda_backend", "simgpu_apps")


def module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for f in (base.with_suffix(".py"), base / "__init__.py"):
        if f.is_file():
            return f
    return None


def _resolve(node: ast.ImportFrom | ast.Import, module: str, is_pkg: bool) -> set:
    """Project modules named by one import statement (submodules of ``from p import m`` too)."""
    out = set()
    if isinstance(node, ast.Import):
        for a in node.names:
            parts = a.name.split(".")
            out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    else:
        if node.level:
            pkg = module.split(".") if is_pkg else module.split(".")[:-1]
            pkg = pkg[:len(pkg) - (node.level - 1)]
            base = ".".join(pkg + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        parts = base.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        for a in node.names:
            if module_file(f"{base}.{a.name}") is not None:
                out.add(f"{base}.{a.name}")
    return {m for m in out if m.split(".")[0] in PROJECT and module_file(m) is not None}


def _imports_in(tree, module: str, is_pkg: bool) -> set:
    return set().union(*[_resolve(n, module, is_pkg) for n in ast.walk(tree)
                         if isinstance(n, (ast.Import, ast.ImportFrom))])


def _names(tree) -> set:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _bound_names(node) -> set:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return set()


def used_code(module: str, functions, read) -> tuple[list, set]:
    """(source segments, project modules imported) of ``functions`` of ``module`` and
    every top-level definition they use, transitively."""
    f = module_file(module)
    text = read(f)
    tree = ast.parse(text)
    is_pkg = f.name == "__init__.py"
    binders: dict = {}
    for node in tree.body:
        for name in _bound_names(node):
            binders.setdefault(name, []).append(node)
    todo, seen = list(functions), set()
    nodes = []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in binders.get(name, ()):
            if node not in nodes:
                nodes.append(node)
                todo += [n for n in _names(node) if n in binders]
                for d in getattr(node, "decorator_list", ()):
                    todo += [n for n in _names(d) if n in binders]
    nodes.sort(key=lambda n: n.lineno)
    segments = [ast.get_source_segment(text, n) or "" for n in nodes]
    imported = set()
    for n in nodes:
        imported |= _imports_in(n, module, is_pkg)
    return segments, {m for m in imported if m != module}


def module_closure(modules, read, exclude=()) -> set:
    """The project modules ``modules`` import, transitively, themselves included
    (not those in ``exclude``: the entry modules and their packages, whose other
    code -- analysis, reports -- the numbers do not depend on)."""
    todo, seen = list(modules), set()
    while todo:
        m = todo.pop()
        if m in seen or m in exclude or module_file(m) is None:
            continue
        seen.add(m)
        f = module_file(m)
        parts = m.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += list(_imports_in(ast.parse(read(f)), m, f.name == "__init__.py"))
    return seen


def dependencies(entries, extra_modules=(), read=None) -> tuple[list, list]:
    """(segments of the entry modules' used code, sorted files whose whole text counts).
    entries: {module: [function names]}."""
    read = read or (lambda p: Path(p).read_text())
    segments, modules = [], set(extra_modules)
    for module, functions in sorted(entries.items()):
        seg, imported = used_code(module, functions, read)
        segments += [f"# {module}\n{s}" for s in seg]
        modules |= imported
    exclude = set(entries) | {".".join(e.split(".")[:i]) for e in entries
                              for i in range(1, len(e.split(".")))}
    closure = module_closure(modules, read, exclude)
    files = {module_file(m) for m in closure}
    for f in list(files):                        # data files beside the code (device configs)
        files |= set(f.parent.glob("*.toml"))
    return segments, sorted(files)


def fingerprint(entries, extra_modules=(), read=None) -> str:
    read = read or (lambda p: Path(p).read_text())
    segments, files = dependencies(entries, extra_modules, read)
    h = hashlib.sha256()
    for s in segments:
        h.update(s.encode())
    for f in files:
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(read(f).encode())
    return h.hexdigest()[:12]
