"""Loading the compiled memory core ahead of use (:mod:`~simgpu.mem.fast_memory`)."""
from __future__ import annotations

from ..configs import load_config
from .fast_jit import ENABLED
from .memory_system import MemorySystem
from .tlb import TlbState

__all__ = ["warm_up"]


def warm_up() -> bool:
    """Load the core's compiled functions now (compiling them where this checkout has no
    cache yet: some 30-60 s, once) rather than in the first launch; whether it runs."""
    if not ENABLED:
        return False
    config = load_config("gtx260")
    memory = MemorySystem(config, None, TlbState(config))
    if not memory.use_fast():
        return False
    memory.fast.serve("load", [([0, 1 << 20], [32, 64])], 0, 0, 0.0, 0.0, 0, 0.0, 64.0)
    memory.access("store", [4096], [32], 10.0, 1)
    memory.summary(memory.drained)
    return True
