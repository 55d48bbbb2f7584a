"""Checks of the ``simgpu`` command line made before any command runs, and what the
modules of its subcommands (cli.py, cli_coalesce.py) share: UserError, the help
formatter, the device an option names.

Paths a command will write (``--output``, ``--out``, ``--plot``) and options whose
values argparse cannot judge alone are checked here, so that a wrong one ends the
command with one line on stderr before anything is computed.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from simgpu import get_device


class UserError(Exception):
    """A mistake in the command line; printed as one line."""


def help_formatter(prog):
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def user_device(name):
    """The device a ``--device`` option names; a CUDA device that cannot start is a UserError."""
    try:
        return get_device(name)
    except RuntimeError as exc:          # no CuPy or no GPU for "cuda"
        raise UserError(str(exc)) from None


def sim_device(name):
    """user_device, for a command that runs only on a simulated device."""
    if not str(name).startswith("sim:"):
        raise UserError(f"this command runs on a simulated device (sim:...), not {name}")
    return user_device(name)


def one_line(exc: BaseException) -> str:
    """An exception's message for the one-line CLI error: OSError's with its file."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror}"
    text = str(exc) or type(exc).__name__
    return text


def check_file_to_write(option: str, path, error) -> None:
    """``path`` can be created or overwritten as a file."""
    p = Path(path)
    if p.is_dir():
        raise error(f"{option} {path} is a directory; give a file name inside it")
    if p.exists() and not p.is_file():
        raise error(f"{option} {path} is not a regular file (a device or a pipe); give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise error(f"{option} {path}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK) or p.exists() and not os.access(p, os.W_OK):
        raise error(f"{option} {path}: no permission to write there")


def check_dir_to_write(option: str, path, error) -> None:
    """``path`` is a folder, or can be made as one."""
    p = Path(path)
    for q in [p, *p.parents]:
        if q.exists():
            if not q.is_dir():
                raise error(f"{option} {path}: {q} is a file, not a folder; give a folder")
            if not os.access(q, os.W_OK):
                raise error(f"{option} {path}: no permission to write in {q}")
            return


def check_plot(option: str, path, error) -> None:
    check_file_to_write(option, path, error)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise error(f"{option} needs matplotlib: pip install 'simgpu[plot]' "
                    f"(or leave out {option})") from None


def check_args(args, error) -> None:
    """Every path and value the parsed ``args`` of a command name, else ``error(...)``."""
    if getattr(args, "output", None):
        check_file_to_write("--output", args.output, error)
    if getattr(args, "plot", None):
        check_plot("--plot", args.plot, error)
    if args.command == "paper" and getattr(args, "out", None):
        check_dir_to_write("--out", args.out, error)
    if args.command == "coalesce" and getattr(args, "example", None) and args.n < 1:
        raise error(f"-n (the elements of --example) must be >= 1, not {args.n}")
    if args.command in ("rank", "cc"):
        for name, low in (("random", 0), ("threads", 1)):
            value = getattr(args, name, None)
            if value is not None and value < low:
                raise error(f"--{name} must be >= {low}, not {value}")


def import_user_module(name: str):
    """The module ``name``, as an import finds it, else from the current folder (where a
    user runs ``simgpu show-cuda mykernels:k`` beside mykernels.py): loaded from its file,
    so that sys.path stays as it is."""
    import importlib
    import importlib.util
    import sys
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        top = name.split(".")[0]
        if exc.name != top:
            raise
        here = Path.cwd() / (name.replace(".", "/") + ".py")
        if not here.is_file():
            raise
    spec = importlib.util.spec_from_file_location(name, here)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module          # kernels read their source through the module
    spec.loader.exec_module(module)
    return module
