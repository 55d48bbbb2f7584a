"""What nvcc does to the loops and loads of rendered kernels, from their SASS.

    python -m validation.compiler_sass [--arch sm_90] [--markdown]

Renders the held-out kernels with loops or several loads (validation/h100_kernels.py)
and three probe kernels (a constant loop of 4, 16 and 64 trips of a global load and a
shared store) to CUDA C (cuda_backend.render), compiles each with ``nvcc -cubin``, and
prints its memory instructions in SASS order (``cuobjdump -sass``): LDG/STG global,
LDS/STS shared, BAR a barrier, BRA a branch.  simgpu/sim/compiler_passes.py's rules come
from this table (constant loops unrolled whole; loads ahead of their uses, never past a
store to the same space) and validation/unroll_counts.py (runtime loops by four, from
the card's ncu counts).

Needs nvcc and cuobjdump (``CUOBJDUMP`` names it where it is not on the PATH); no GPU.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from simgpu.lang import Array, i32, kernel, shared_array, syncthreads, threadIdx

HELD_OUT = ("transpose_tiled", "transpose_naive", "spmv_csr", "bfs_expand", "stencil_2d",
            "gather_scatter")
_OPS = re.compile(r"\b(LDG|STG|LDS|STS|BAR|BRA)\b")


# One kernel per trip count: a loop's bounds are literals or module constants.
@kernel
def constant_loop_4(a: Array[i32], b: Array[i32], n: i32):
    t = shared_array(i32, 2048)
    x = threadIdx.x
    for j in range(0, 4):
        t[x + j * 32] = a[x + j * n]
    syncthreads()
    b[x] = t[x ^ 1]


@kernel
def constant_loop_16(a: Array[i32], b: Array[i32], n: i32):
    t = shared_array(i32, 2048)
    x = threadIdx.x
    for j in range(0, 16):
        t[x + j * 32] = a[x + j * n]
    syncthreads()
    b[x] = t[x ^ 1]


@kernel
def constant_loop_64(a: Array[i32], b: Array[i32], n: i32):
    t = shared_array(i32, 2048)
    x = threadIdx.x
    for j in range(0, 64):
        t[x + j * 32] = a[x + j * n]
    syncthreads()
    b[x] = t[x ^ 1]


def sass_ops(source: str, arch: str) -> list:
    """The memory/branch instructions of ``source``'s one kernel, in SASS order."""
    from cuda_backend.nvcc import find_nvcc
    nvcc = find_nvcc()
    dump = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if nvcc is None or dump is None:
        raise SystemExit("validation.compiler_sass needs nvcc and cuobjdump (set CUOBJDUMP)")
    with tempfile.TemporaryDirectory() as tmp:
        cu, cubin = os.path.join(tmp, "k.cu"), os.path.join(tmp, "k.cubin")
        with open(cu, "w") as f:
            f.write(source)
        subprocess.run([nvcc, f"-arch={arch}", "-cubin", "--std=c++17", cu, "-o", cubin],
                       check=True, capture_output=True)
        sass = subprocess.run([dump, "-sass", cubin], check=True, capture_output=True,
                              text=True).stdout
    return [m.group(1) for line in sass.splitlines() for m in [_OPS.search(line)] if m]


def _compact(ops: list) -> str:
    """``LDG x4 STS x4 ...``: runs of one instruction counted."""
    out, k = [], 0
    while k < len(ops):
        j = k
        while j < len(ops) and ops[j] == ops[k]:
            j += 1
        out.append(ops[k] + (f" x{j - k}" if j - k > 1 else ""))
        k = j
    return ", ".join(out)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m validation.compiler_sass")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    from cuda_backend.render import render
    from validation import h100_kernels as K
    kernels = [(name, getattr(K, name)) for name in HELD_OUT]
    kernels += [(k.name + " (probe)", k) for k in (constant_loop_4, constant_loop_16,
                                                   constant_loop_64)]
    if args.markdown:
        print(f"| kernel | SASS memory instructions and branches, in order ({args.arch}) |")
        print("|---|---|")
    for name, k in kernels:
        line = _compact(sass_ops(render(k), args.arch))
        print(f"| {name} | {line} |" if args.markdown else f"{name}: {line}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
