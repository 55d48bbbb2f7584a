"""Atomics whose address and operand are the same in every lane of a warp.

nvcc (CUDA 9 on) aggregates such an atomic: one lane of the warp does it for all of
them (``VOTEU.ANY``, ``POPC``, then one ``REDG`` in the SASS of
``atomic_add(counter, 0, 1)``; docs/calibration/atomic-sectors-h100.md), and the
memory system sees one lane's request. NVIDIA: "the NVCC compiler now performs warp
aggregation for atomics automatically in many cases" ("CUDA Pro Tip: Optimized
Filtering with Warp-Aggregated Atomics", updated for CUDA 9). A GPU of the paper's
day, compiled by CUDA 2.x, did not: each lane's operation reached memory.

With a value that differs by lane, nvcc adds the lanes' values up first (``VOTEU.ANY``,
``REDUX.SUM``, one ``REDG`` in the SASS of ``atomic_add(counter, blockIdx.x, vals[i])``:
1 sector per warp under ncu, the same page), which ``REDUX`` does for 32-bit integers.

The front end marks an integer ``atomic_add``/``atomic_sub`` ``uniform`` when its index
is warp-uniform by construction, and its value too unless it is a 32-bit integer (a
64-bit value that varies was not measured; it is left unmarked): built from constants, scalar
parameters and ``blockIdx``/``blockDim``/``gridDim``/``warp_size`` only, through
locals that are assigned nothing else and not under control flow that lanes may take
differently. This is a divergence analysis: a local starts uniform and becomes varying
when one of its assignments is varying or sits under a varying condition (or in a loop
with varying bounds), until nothing changes. Loads, other atomics, warp operations and
calls give varying values (the compiler may know better; the analysis is conservative,
so it marks only what nvcc certainly sees as uniform). Each backend gives the mark its
meaning: the simulator sends one lane per warp to memory where its config says the
compiler aggregates (``atomics.compiler_aggregates_uniform``); the CUDA renderer needs
nothing, nvcc does it. Results are the same either way (integer addition).
"""
from __future__ import annotations

from dataclasses import fields, replace

from . import nodes as ir
from .ops import AtomicOp
from .types import INT_TYPES

_UNIFORM_SPECIALS = ("blockIdx", "blockDim", "gridDim", "warp_size")
_AGGREGATED = (AtomicOp.ADD, AtomicOp.SUB)


def mark_uniform_atomics(fn: ir.Function) -> ir.Function:
    """``fn`` with its warp-uniform integer add/sub atomics marked ``uniform``."""
    varying = varying_locals(fn)
    body = tuple(_stmt(s, varying) for s in fn.body)
    return replace(fn, body=body) if body != fn.body else fn


def varying_locals(fn: ir.Function) -> set:
    """The locals that may differ between the lanes of a warp."""
    # a kernel's scalar parameters are the same for every thread; a device function's
    # are whatever its callers pass: varying
    varying = set() if fn.is_kernel else {p.name for p in fn.params}
    while True:
        before = len(varying)
        _walk(fn.body, False, varying)
        if len(varying) == before:
            return varying


def warp_uniform(e, varying: set) -> bool:
    """Whether expression ``e`` is the same in every lane of a warp, given the varying
    locals. (simgpu.sim.semantics.is_uniform asks more: the same in every lane of the
    launch, so without blockIdx or variables.)"""
    if isinstance(e, ir.Const):
        return True
    if isinstance(e, ir.Special):
        return e.name in _UNIFORM_SPECIALS
    if isinstance(e, ir.Var):
        return e.name not in varying
    if isinstance(e, (ir.Load, ir.Atomic, ir.WarpOp, ir.Call)):
        return False
    for f in fields(e):
        value = getattr(e, f.name)
        if isinstance(value, ir.Expr) and not warp_uniform(value, varying):
            return False
    return True


def _exits(stmts) -> bool:
    """Whether a loop body may leave early (break, continue, return anywhere in it):
    lanes may then leave after different iterations, and what the loop assigns
    differs between them afterwards."""
    for s in stmts:
        if isinstance(s, (ir.Break, ir.Continue, ir.Return)):
            return True
        if isinstance(s, ir.If) and (_exits(s.then) or _exits(s.orelse)):
            return True
        if isinstance(s, (ir.While, ir.For)) and _exits(s.body):
            return True
    return False


def _walk(stmts, diverged: bool, varying: set) -> None:
    """One pass: mark varying the locals assigned a varying value or under divergence."""
    for s in stmts:
        if isinstance(s, ir.Assign):
            if diverged or not warp_uniform(s.value, varying):
                varying.add(s.name)
        elif isinstance(s, ir.If):
            inner = diverged or not warp_uniform(s.cond, varying)
            _walk(s.then, inner, varying)
            _walk(s.orelse, inner, varying)
        elif isinstance(s, ir.While):
            inner = diverged or not warp_uniform(s.cond, varying) or _exits(s.body)
            _walk(s.body, inner, varying)
        elif isinstance(s, ir.For):
            inner = diverged or _exits(s.body) or not all(
                warp_uniform(x, varying) for x in (s.start, s.stop, s.step))
            if inner:
                varying.add(s.var)
            _walk(s.body, inner, varying)


def _stmt(s, varying: set):
    """``s`` with the uniform atomics of its expressions and nested statements marked."""
    if isinstance(s, ir.If):
        s = replace(s, then=tuple(_stmt(x, varying) for x in s.then),
                    orelse=tuple(_stmt(x, varying) for x in s.orelse))
    elif isinstance(s, (ir.While, ir.For)):
        s = replace(s, body=tuple(_stmt(x, varying) for x in s.body))
    changes = ir.child_changes(s, lambda x: _expr(x, varying))
    return replace(s, **changes) if changes else s


def _expr(e, varying: set):
    """``e`` with its uniform atomics marked (an atomic's operands are marked first)."""
    changes = ir.child_changes(e, lambda x: _expr(x, varying))
    if (isinstance(e, ir.Atomic) and e.op in _AGGREGATED and e.type in INT_TYPES
            and not e.uniform and warp_uniform(e.index, varying)
            and (warp_uniform(e.value, varying) or e.type.bits == 32)):
        changes["uniform"] = True
    return replace(e, **changes) if changes else e
