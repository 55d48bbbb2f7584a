"""What a memory instruction touches: the arrays as a kernel sees them, the
bounds-checked storage positions of an index, and the record of the access that
the interpreter yields to the engines (moved out of simgpu/sim/interpreter.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import nodes as ir
from ..mem.access import MemoryAccess
from .semantics import _nnz

_new_object = object.__new__


@dataclass
class ArrayBinding:
    """An array as the kernel sees it: its storage, base address and name."""
    name: str
    data: np.ndarray              # global: the device array; shared: rows x size, flattened
    base: int = 0                 # byte address of element 0 (global memory)
    space: str = "global"
    size: int = 0                 # elements per block (shared) or in all (global)


class MemoryInstructions:
    """The :class:`~simgpu.sim.interpreter.Executor`'s helpers for loads, stores and
    atomics (it supplies ``frame``, ``group`` and ``fault``)."""

    def binding(self, ref: ir.ArrayRef) -> ArrayBinding:
        return self.frame.arrays[ref.name]

    def element(self, node, b: ArrayBinding, index, idx):
        """Storage positions of ``index`` (bounds-checked) for lanes ``idx``."""
        size = b.size
        pos = index.astype(np.int64)
        # One unsigned compare finds negative and too-large indices alike (an
        # index of a signed type is < 0 exactly when its int64 view as uint64
        # is >= 2**63 > size; unsigned indices convert without changing value
        # unless they exceed 2**63, which is out of bounds either way).
        bad = pos.view(np.uint64) >= size if index.dtype.kind == "i" else index >= size
        if _nnz(bad):
            lanes = idx[bad]
            where = "shared array" if b.space == "shared" else "array"
            raise self.fault(node, f"index {int(index[bad][0])} is out of bounds for {where} "
                                   f"'{b.name}' of length {size}", lanes,
                             "check the index against the array's length (e.g. 'if i < n:')")
        if b.space == "shared":
            pos = self.group.block_row[idx] * size + pos
        return pos

    def access(self, kind, node, b: ArrayBinding, idx, index, pos=None) -> MemoryAccess:
        """The record of one memory instruction; ``pos`` (from :meth:`element`) is the
        int64 index itself for global arrays, which saves converting it again."""
        g = self.group
        word = b.data.dtype.itemsize
        if pos is None or b.space != "global":
            pos = index.astype(np.int64)
        address = pos * word
        address += b.base
        # MemoryAccess(...) without the frozen dataclass's per-field object.__setattr__
        # (a third of the cost of a warp's memory instruction in the timed engine).
        acc = _new_object(MemoryAccess)
        acc.__dict__.update(kind=kind, space=b.space, node=node, array=b.name,
                            warp=g.warp[idx], lane=g.lane[idx], address=address, word_size=word,
                            ready=0.0)       # a timed engine sets when its data are back
        return acc
