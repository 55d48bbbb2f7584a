"""Compiled memory units (optional): the same Python source, compiled with mypyc.

The timed engines spend most of their CPU time in the memory pipeline's
per-transaction code (DRAM sub-channels, partitions, interconnect ports, the
GT200's uncached path).  ``python -m simgpu.native build`` compiles those modules
(:data:`~simgpu.mem.native_load.MODULES`) with mypyc (``pip install mypy
setuptools`` and a C compiler) into a cache directory; from then on ``import
simgpu`` loads the compiled modules in place of the source ones
(:mod:`simgpu.mem.native_load`).  Nothing else changes: the source stays the
reference (it is what runs where nothing was built, or with ``SIMGPU_NATIVE=0``),
and the compiled modules are the same code, so every simulated time and count is
the same bit for bit (tests/test_native.py compares the two on whole runs).

A build is keyed by a digest of the modules' source and the interpreter: after
any edit to one of them the old build is simply not found (``status`` says so),
so a stale compiled module can never run in place of newer source.

    python -m simgpu.native build     # compile (about 15-60 s)
    python -m simgpu.native status    # built? loaded? where?
    SIMGPU_NATIVE=0 python ...        # the pure-Python modules even where built
    SIMGPU_NATIVE_DIR=/some/dir       # where builds go (default ~/.cache/simgpu/native)
"""
from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .mem.native_load import _SUFFIX, MODULES, _source, build_dir, digest

__all__ = ["build", "main"]


def build(quiet: bool = False) -> Path:
    """Compile :data:`MODULES` with mypyc into :func:`build_dir`; return it."""
    try:
        import mypyc  # noqa: F401
    except ImportError:
        raise SystemExit("simgpu.native build needs mypyc: pip install mypy setuptools") from None
    key = digest()
    dest = build_dir(key)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for pkg in ("simgpu", "simgpu/mem"):
            (work / pkg).mkdir(parents=True, exist_ok=True)
            (work / pkg / "__init__.py").write_text("")
        files = []
        for m in MODULES:
            rel = Path(*m.split(".")).with_suffix(".py")
            shutil.copyfile(_source(m), work / rel)
            files.append(str(rel))
        (work / "setup.py").write_text(
            "from setuptools import setup\nfrom mypyc.build import mypycify\n"
            "setup(name='simgpu_native', packages=[], ext_modules=mypycify("
            f"['--follow-imports=skip', '--check-untyped-defs', *{files!r}]))\n")
        run = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=work,
                             capture_output=True, text=True)
        if run.returncode:
            raise SystemExit(f"mypyc failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for so in work.rglob(f"*{_SUFFIX}"):
            rel = so.relative_to(work)
            if rel.parts[0] == "build":
                continue
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(so, dest / rel)
    (dest / "complete").write_text(" ".join(MODULES) + "\n")
    if not quiet:
        print(f"compiled {len(MODULES)} modules into {dest}")
    return dest


def _status() -> None:
    where = build_dir()
    built = (where / "complete").is_file()
    print(f"build for this source: {where} ({'present' if built else 'not built'})")
    if os.environ.get("SIMGPU_NATIVE", "1") == "0":
        print("SIMGPU_NATIVE=0: the pure-Python modules run")
    import simgpu.mem  # noqa: F401  (installs the build, where there is one)
    for m in MODULES:
        mod = importlib.import_module(m)
        print(f"{m}: {'compiled' if not str(mod.__file__).endswith('.py') else 'source'} "
              f"({mod.__file__})")


def main(argv=None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args == ["build"]:
        build()
    elif args == ["status"]:
        _status()
    else:
        raise SystemExit("usage: python -m simgpu.native build|status")


if __name__ == "__main__":
    main()
