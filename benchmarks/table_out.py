"""What every benchmark script does with its table: print it, and write it to a file too
where the command line names one."""
from __future__ import annotations

import pathlib


def emit(text: str, path: str | None) -> int:
    """Print ``text``; also write it to ``path`` when given. Returns 0, the exit status."""
    print(text)
    if path:
        pathlib.Path(path).write_text(text + "\n")
    return 0
