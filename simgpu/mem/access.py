"""The memory-request record: where functional execution meets the memory model.

The interpreter emits one :class:`MemoryAccess` per memory instruction it
executes (for a batch of warps in the lockstep engine, for one warp in the
per-warp engines); the counters, the coalescer and the timing model consume
it and nothing else.  This mirrors GPGPU-Sim's split between functional
simulation and the performance model.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class MemoryAccess:
    kind: str              # "load", "store" or "atomic"
    space: str             # "global" or "shared"
    node: object           # the IR node (Load, Store, Atomic): its .loc names the line
    array: str             # the array's name in the kernel
    warp: np.ndarray       # global warp id of each active lane (non-decreasing)
    lane: np.ndarray       # lane within its warp, 0..31
    address: np.ndarray    # byte address of each active lane's word
    word_size: int         # bytes per word: 1, 2, 4, 8 (16 for vector types)

    @property
    def lanes(self) -> int:
        return len(self.address)
