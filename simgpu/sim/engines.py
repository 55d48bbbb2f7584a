"""Functional engines: how the lanes of a launch are cut into groups and driven.

* :func:`run_lockstep` — the PRAM view.  Waves of whole blocks are one vector
  of lanes each; every statement runs for all active lanes of the wave at
  once.  Fast; exact per-warp counts; no time.
* :func:`run_warps` — every warp is its own generator, and a schedule picks
  which warp advances to its next memory access or barrier: round-robin
  (``fixed``) or at random with a seed (``random``).  Slower; shows that a
  result does not depend on the interleaving, or finds one where it does.

The timed engine (``simgpu.sim.timed``) drives the same per-warp generators
from a simpy model of SMs and memory partitions instead of a schedule.
"""
from __future__ import annotations

import numpy as np

from ..ir import nodes as ir
from ..lang.errors import KernelRuntimeError
from ..mem.access import MemoryAccess
from .interpreter import ArrayBinding, Barrier, Counters, Executor
from .lanes import Geometry, LaneGroup

MAX_WAVE_LANES = 1 << 20          # lanes per lockstep wave: bounds memory, not results


def shared_bindings(fn: ir.Function, rows: int) -> dict:
    """Fresh shared arrays (zeroed, as the simulator defines them) for ``rows`` blocks."""
    return {name: ArrayBinding(name, np.zeros(rows * t.size, dtype=t.elem.dtype),
                               space="shared", size=t.size)
            for name, t in fn.shared}


def run_lockstep(fn, geom: Geometry, scalars, arrays, schedule, counters: Counters, traffic,
                 max_lanes: int = MAX_WAVE_LANES):
    per_wave = max(1, max_lanes // geom.threads_per_block)
    for first in range(0, geom.blocks, per_wave):
        count = min(per_wave, geom.blocks - first)
        group = LaneGroup.blocks(geom, first, count)
        bindings = {**arrays, **shared_bindings(fn, count)}
        ex = Executor(group, schedule, counters, lockstep=True)
        for event in ex.run(fn, scalars, bindings):
            traffic.add(event)


def warp_executors(fn, geom: Geometry, scalars, arrays, schedule, counters, blocks):
    """One (block, generator) per warp of ``blocks``, each block with its shared memory."""
    out = []
    for block in blocks:
        bindings = {**arrays, **shared_bindings(fn, 1)}
        for w in range(geom.warps_per_block):
            group = LaneGroup.warp(geom, block, w, 0, 1)
            gen = Executor(group, schedule, counters, lockstep=False).run(fn, scalars, bindings)
            out.append((block, gen))
    return out


class BarrierPool:
    """Warps of each block waiting at ``syncthreads()`` until all live warps arrive."""

    def __init__(self, warps):
        self.live: dict = {}
        for w, (block, _) in enumerate(warps):
            self.live.setdefault(block, set()).add(w)
        self.waiting: dict = {}

    def arrive(self, w, block, barrier: Barrier) -> list:
        self.waiting.setdefault(block, {})[w] = barrier
        return self.release(block)

    def finish(self, w, block) -> list:
        self.live[block].discard(w)
        return self.release(block)

    def release(self, block) -> list:
        """The warps to resume, once every live warp of ``block`` waits."""
        waiting = self.waiting.get(block, {})
        if not waiting or set(waiting) != self.live[block]:
            return []
        nodes = {id(b.node): b.node for b in waiting.values()}
        if len(nodes) > 1:
            a, b = list(nodes.values())[:2]
            raise KernelRuntimeError(
                "warps of one block wait at different syncthreads() calls", a.loc,
                "all threads of a block must reach the same syncthreads()",
                f"other warps of the block wait at line {b.loc.line}")
        del self.waiting[block]
        return list(waiting)

    def stuck(self):
        return {b: w for b, w in self.waiting.items() if w}


def run_warps(fn, geom: Geometry, scalars, arrays, schedule, counters: Counters, traffic):
    warps = warp_executors(fn, geom, scalars, arrays, schedule, counters, range(geom.blocks))
    pool = BarrierPool(warps)
    ready = list(range(len(warps)))
    turn = 0
    while ready:
        k = schedule.pick(len(ready)) if schedule.is_random else turn % len(ready)
        w = ready[k]
        block, gen = warps[w]
        try:
            event = next(gen)
        except StopIteration:
            ready[k] = ready[-1]
            ready.pop()
            ready.extend(pool.finish(w, block))
            continue
        if isinstance(event, MemoryAccess):
            traffic.add(event)
            turn = k + 1
        elif isinstance(event, Barrier):
            ready[k] = ready[-1]
            ready.pop()
            ready.extend(pool.arrive(w, block, event))
    if pool.stuck():   # pragma: no cover - release() raises first for divergent barriers
        raise RuntimeError(f"warps left waiting at barriers: {pool.stuck()}")
