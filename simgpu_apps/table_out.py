"""What every benchmark script does with its table: print it, and write it to a file too
where the command line names one; and, reading a GPU run's files back, say which one is
missing rather than fail deep inside."""
from __future__ import annotations

import pathlib


def emit(text: str, path: str | None) -> int:
    """Print ``text``; also write it to ``path`` when given. Returns 0, the exit status."""
    print(text)
    if path:
        pathlib.Path(path).write_text(text + "\n")
    return 0


def need(folder: pathlib.Path, *names: str) -> None:
    """Stop with a clear message if any of ``names`` is not in ``folder`` (the output
    folder of a ``--child`` run)."""
    missing = [n for n in names if not (pathlib.Path(folder) / n).exists()]
    if missing:
        raise SystemExit(f"{folder} has no {', '.join(missing)}: give the folder the --child "
                         "run wrote (see the script's docstring for the commands)")
