"""Errors that point at the user's kernel source: file:line, the line, a caret.

Every error a user can cause in a kernel — at definition (syntax, types) or
while it runs (out of bounds, divergent barrier, division by zero) — is a
:class:`KernelError`.  Its message is complete on its own, so the CLI prints
just the message and never a traceback from inside the simulator.
"""
from __future__ import annotations


class KernelError(Exception):
    """Base class: ``what`` went wrong at ``loc``; ``hint`` says what to write instead."""

    def __init__(self, what: str, loc=None, hint: str | None = None, detail: str | None = None):
        self.what = what
        self.loc = loc
        self.hint = hint
        self.detail = detail
        super().__init__(self.format())

    def format(self) -> str:
        parts = []
        if self.loc is not None:
            parts.append(f"{self.loc.file}:{self.loc.line}: {self.what}")
            parts.append(caret_lines(self.loc))
        else:
            parts.append(self.what)
        if self.detail:
            parts.append(self.detail)
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


class KernelSyntaxError(KernelError):
    """A construct outside the kernel language's subset of Python."""


class KernelTypeError(KernelError):
    """Operands, arguments or assignments whose types do not fit."""


class KernelRuntimeError(KernelError):
    """A fault while the kernel ran: bad index, divergent barrier, division by zero, ..."""


class LaunchError(ValueError):
    """A launch refused before it started: grid/block shape, argument count or types."""


def caret_lines(loc) -> str:
    """The source line with a caret under the node: ``    x = a[i] / 2`` / ``        ^^^^^^^^``."""
    text = loc.source.rstrip("\n")
    stripped = text.lstrip()
    indent = len(text) - len(stripped)
    start = max(loc.col - indent, 0)
    end_col = loc.end_col if loc.end_col > loc.col else loc.col + 1
    width = max(min(end_col, len(text)) - loc.col, 1)
    return f"    {stripped}\n    {' ' * start}{'^' * width}"
