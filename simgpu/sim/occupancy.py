"""Occupancy: how many blocks of a launch an SM holds at once, and which limit sets it
(threads, warps, blocks, shared memory, registers), as the block scheduler of the timed
engines and of trace-block's compiled loop hands them out."""
from __future__ import annotations

from .lanes import Geometry


def blocks_per_sm(config, geom: Geometry, fn) -> tuple[int, str]:
    """Resident blocks per SM and the limit that sets it."""
    lim = config.limits
    warps = geom.warps_per_block
    shared = sum(t.size * t.elem.itemsize for _, t in fn.shared)
    regs = estimate_registers(fn)
    options = {
        "blocks": lim.max_blocks_per_sm,
        "threads": lim.max_threads_per_sm // geom.threads_per_block,
        "warps": lim.max_warps_per_sm // warps,
        "registers": lim.registers_per_sm // (regs * warps * 32),
    }
    if shared:
        options["shared memory"] = lim.shared_memory_per_sm_bytes // shared
    limit = min(options, key=options.get)
    return max(1, options[limit]), limit


def estimate_registers(fn) -> int:
    """Registers per thread: a few for indices plus one per 32 bits of each scalar.

    The simulator does not allocate registers; this estimate only feeds the
    occupancy limit, as nvcc's count would.
    """
    scalars = [t for _, t in fn.locals] + [p.type for p in fn.params if hasattr(p.type, "bits")]
    return min(255, 6 + sum(max(1, t.bits // 32) for t in scalars))
