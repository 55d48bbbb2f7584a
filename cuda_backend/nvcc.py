"""Compile generated CUDA C to PTX with nvcc, mapping errors back to the Python kernel.

    from cuda_backend.nvcc import compile_ptx, CudaCompileError
    ptx = compile_ptx(render(my_kernel))          # -> PTX text; needs nvcc, not a GPU

The renderer puts ``// file.py:LINE: source`` above every statement, so an
nvcc error at line N of the generated file is reported with the generated
line, the Python line it came from, and the kernel it belongs to.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

CUDA_HOMES = ("/usr/local/cuda/bin",)

# "kernel.cu(12): error: ..." (EDG front end) or "kernel.cu:12:5: error: ..." (host compiler)
_DIAG = re.compile(r"^(?P<file>[^\s(:][^(:]*?)(?:\((?P<l1>\d+)\)|:(?P<l2>\d+)(?::\d+)?):\s*"
                   r"(?P<kind>(?:catastrophic )?error|warning)\b[^:]*:\s*(?P<msg>.*)$")
_SOURCE_COMMENT = re.compile(r"//\s*(?P<where>[^\s:]+:\d+): (?P<text>.*)$")
_FUNCTION = re.compile(r"^(?:extern \"C\" __global__ void|__device__ [\w ]+?)\s+(?P<name>\w+)\(")
_KERNEL = re.compile(r"__global__\s+void\s+(\w+)\s*\(")


class NvccNotFound(FileNotFoundError):
    """No nvcc on PATH nor in /usr/local/cuda/bin."""


@dataclass
class Diagnostic:
    """One nvcc error, located in the generated source and in the Python kernel."""
    cu_line: int
    message: str
    generated: str          # the generated C line
    python: str | None      # "kernels.py:12: out[i] = a[i] * 2", or None (prelude)
    function: str | None    # the kernel or device function holding the line

    def format(self) -> str:
        where = f"in {self.function}, " if self.function else ""
        lines = [f"  {where}generated line {self.cu_line}: error: {self.message}",
                 f"    C:      {self.generated.strip()}"]
        lines.append(f"    Python: {self.python}" if self.python
                     else "    Python: (none: the line is in the generated prelude)")
        return "\n".join(lines)


class CudaCompileError(RuntimeError):
    """nvcc refused generated CUDA C; the message names the kernel(s) and the Python lines."""

    def __init__(self, kernels, diagnostics, stderr: str, source: str, arch: str):
        self.kernels = list(kernels)
        self.diagnostics = list(diagnostics)
        self.stderr = stderr
        self.source = source
        self.arch = arch
        names = ", ".join(f"'{k}'" for k in self.kernels) or "(no kernel found in the source)"
        head = f"nvcc could not compile kernel {names} for {arch}"
        body = [d.format() for d in self.diagnostics] or \
            ["  nvcc output:"] + ["    " + ln for ln in stderr.strip().splitlines()[:40]]
        super().__init__("\n".join([head + ":"] + body))


def find_nvcc() -> str | None:
    """Path of nvcc (PATH first, then the usual CUDA install), or None."""
    found = shutil.which("nvcc")
    if found:
        return found
    for d in CUDA_HOMES:
        path = os.path.join(d, "nvcc")
        if os.access(path, os.X_OK):
            return path
    return None


def compile_ptx(source: str, arch: str = "sm_90", *, options=(), timeout: float = 300) -> str:
    """PTX for ``source`` (CUDA C from ``cuda_backend.render``), compiled by ``nvcc -ptx``."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise NvccNotFound("nvcc not found on PATH or in " + ", ".join(CUDA_HOMES)
                           + "; install the CUDA toolkit to compile generated CUDA C")
    with tempfile.TemporaryDirectory(prefix="simgpu-nvcc-") as tmp:
        cu, ptx = os.path.join(tmp, "kernel.cu"), os.path.join(tmp, "kernel.ptx")
        with open(cu, "w") as f:
            f.write(source)
        cmd = [nvcc, f"-arch={arch}", "-ptx", *options, cu, "-o", ptx]
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0 or not os.path.exists(ptx):
            output = (proc.stderr + proc.stdout).replace(tmp + os.sep, "")
            raise CudaCompileError(kernel_names(source), diagnostics(output, source), output,
                                   source, arch)
        with open(ptx) as f:
            return f.read()


def kernel_names(source: str) -> list:
    """The ``__global__`` functions defined in ``source``, in order."""
    return _KERNEL.findall(source)


def diagnostics(output: str, source: str) -> list:
    """nvcc's errors on ``source``, each mapped to its generated and Python line."""
    lines = source.splitlines()
    out = []
    for raw in output.splitlines():
        m = _DIAG.match(raw.strip())
        if not m or "error" not in m["kind"]:
            continue
        n = int(m["l1"] or m["l2"])
        generated = lines[n - 1] if 0 < n <= len(lines) else ""
        out.append(Diagnostic(n, m["msg"].strip(), generated, python_line(source, n),
                              function_at(source, n)))
    return out


def python_line(source: str, cu_line: int) -> str | None:
    """The ``file.py:LINE: text`` of the source comment governing generated line ``cu_line``.

    A line's own trailing comment wins (``} else if (...) {  // f.py:5: elif``);
    otherwise the nearest comment above it, not crossing into another function.
    """
    lines = source.splitlines()
    for i in range(min(cu_line, len(lines)) - 1, -1, -1):
        text = lines[i]
        if i < cu_line - 1 and _FUNCTION.match(text):
            return None
        m = _SOURCE_COMMENT.search(text)
        if m and not text.lstrip().startswith("// kernel ") \
                and not text.lstrip().startswith("// device function "):
            return f"{m['where']}: {m['text']}"
        if _FUNCTION.match(text):
            return None
    return None


def function_at(source: str, cu_line: int) -> str | None:
    """'kernel NAME' or 'device function NAME' holding generated line ``cu_line``."""
    lines = source.splitlines()
    for i in range(min(cu_line, len(lines)) - 1, -1, -1):
        m = _FUNCTION.match(lines[i])
        if m:
            kind = "kernel" if "__global__" in lines[i] else "device function"
            return f"{kind} '{m['name']}'"
        if lines[i] == "}" and i < cu_line - 1:
            return None
    return None
