"""Every op of the IR's table (simgpu.ir.ops) has its row in each place that must
know it: a spelling in the front end (a Python operator or an intrinsic), the
simulator's numpy table and the CUDA renderer's C table.  Adding an op to an enum
without its rows fails here, naming the op and the table it is missing from."""
from __future__ import annotations

import numpy as np
import pytest

from cuda_backend import render
from simgpu.ir.ops import (PY_BINARY, PY_COMPARE, PY_LOGICAL, PY_UNARY, AtomicOp, BinaryOp,
                           CompareOp, LogicalOp, UnaryOp)
from simgpu.lang import frontend
from simgpu.sim import ops as sim_ops
from simgpu.sim.atomics import atomic_update

ENUMS = [BinaryOp, UnaryOp, CompareOp, LogicalOp, AtomicOp]


def front_end_ops() -> dict:
    """Op enum -> the members a kernel can spell."""
    spelled = (list(PY_BINARY.values()) + list(PY_UNARY.values()) + list(PY_COMPARE.values())
               + list(PY_LOGICAL.values()) + list(frontend.INTRINSIC_OPS.values()))
    return {enum: {op for op in spelled if isinstance(op, enum)} for enum in ENUMS}


@pytest.mark.parametrize("enum", ENUMS, ids=lambda e: e.__name__)
@pytest.mark.parametrize("where, table", [("the front end", front_end_ops),
                                          ("the simulator (simgpu.sim.ops)", sim_ops.covered_ops),
                                          ("the CUDA renderer", render.covered_ops)])
def test_every_op_has_a_row(enum, where, table):
    missing = set(enum) - table()[enum]
    assert not missing, f"{sorted(op.name for op in missing)} have no row in {where}"


def test_every_intrinsic_is_in_the_front_ends_table():
    for name in frontend.INTRINSIC_OPS:
        assert name in frontend.INTRINSICS


@pytest.mark.parametrize("op", list(AtomicOp))
def test_every_atomic_row_runs(op):
    """One lane per address: each atomic's row gives the C result (old value back,
    the new value stored)."""
    mem = np.array([12, 10], dtype=np.int32)
    index = np.array([0, 1])
    value = np.array([5, 3], dtype=np.int32)
    compare = np.array([12, 9], dtype=np.int32)
    old = atomic_update(mem, op, index, value, compare, np.arange(2))
    expect = {AtomicOp.ADD: [17, 13], AtomicOp.SUB: [7, 7], AtomicOp.MIN: [5, 3],
              AtomicOp.MAX: [12, 10], AtomicOp.EXCH: [5, 3], AtomicOp.CAS: [5, 10],
              AtomicOp.AND: [12 & 5, 10 & 3], AtomicOp.OR: [12 | 5, 10 | 3],
              AtomicOp.XOR: [12 ^ 5, 10 ^ 3]}[op]
    assert old.tolist() == [12, 10]
    assert mem.tolist() == expect
