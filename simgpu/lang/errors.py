"""Errors that point at the user's kernel source: file:line, the line, a caret.

Every error a user can cause in a kernel — at definition (syntax, types) or
while it runs (out of bounds, divergent barrier, division by zero) — is a
:class:`KernelError`.  Its message is complete on its own, so the CLI prints
just the message and never a traceback from inside the simulator.

The family, all under :class:`SimgpuError` (catch that for "the user's input was
refused"; each message says what was wrong, where, and what to do):

* :class:`KernelError` — the kernel's source or its run (``KernelSyntaxError``,
  ``KernelTypeError``, ``KernelRuntimeError``; ``KernelTimeoutError`` when a loop
  runs past the launch's ``max_loop_iterations``);
* :class:`ArgumentError` (a ``ValueError``) — an argument of a public function
  (device arrays, list ranking, connected components, coalescing helpers) has the
  wrong type or value; nothing was done.  :class:`LaunchError` is the one of
  ``Device.launch``;
* :class:`InputFileError` (a ``ValueError``) — a file that cannot be read as the
  format asked for or detected: ``path[:line]: what``;
* ``simgpu.DeviceMemoryError`` (a ``MemoryError``) — an allocation larger than the
  device's memory (defined with the allocator).
"""
from __future__ import annotations


class SimgpuError(Exception):
    """Base of every error simgpu raises on purpose about the user's input."""


class KernelError(SimgpuError):
    """Base class: ``what`` went wrong at ``loc``; ``hint`` says what to write instead."""

    def __init__(self, what: str, loc=None, hint: str | None = None, detail: str | None = None):
        self.what = what
        self.loc = loc
        self.hint = hint
        self.detail = detail
        # args are the constructor's, so that a copy made as type(e)(*e.args) (simpy does
        # so when a failure passes from one process to another; pickling does so across
        # processes) is the same error, not one whose 'what' is the whole message.
        super().__init__(what, loc, hint, detail)

    def __str__(self) -> str:
        return self.format()

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


class KernelTimeoutError(KernelRuntimeError):
    """A loop ran past the launch's ``max_loop_iterations`` (a kernel that never ends)."""


class ArgumentError(SimgpuError, ValueError):
    """A public function's argument has the wrong type or value; nothing was done."""


class LaunchError(ArgumentError):
    """A launch refused before it started: grid/block shape, argument count or types."""


class InputFileError(SimgpuError, ValueError):
    """A file that cannot be read: missing, a directory, unreadable, or not the format."""


def caret_lines(loc) -> str:
    """The source line with a caret under the node: ``    x = a[i] / 2`` / ``        ^^^^^^^^``."""
    text = loc.source.rstrip("\n")
    stripped = text.lstrip()
    indent = len(text) - len(stripped)
    start = max(loc.col - indent, 0)
    end_col = loc.end_col if loc.end_col > loc.col else loc.col + 1
    width = max(min(end_col, len(text)) - loc.col, 1)
    return f"    {stripped}\n    {' ' * start}{'^' * width}"
