"""The timed engine: warps as simpy processes on SMs, memory through the partitions.

Each warp runs the same interpreter generator as the other engines and is
resumed at its simulated time, so interleavings follow the timing model:

* **block scheduler** — blocks go to SMs round-robin, as many per SM as the
  occupancy limits allow (threads, warps, blocks, shared memory, registers);
  a finished block frees its slot for the next one in the grid;
* **SM** — one issue pipeline: a warp's run of k warp instructions takes
  ``k * warp_issue_cycles`` of it, and the warp cannot issue again before the
  ALU latency of those instructions has passed (other warps fill the gap);
* **memory** — a load or atomic goes through the coalescer to the
  partitions (``simgpu.mem.dram``) and the warp sleeps until the last of its
  transactions is back; a store does not wait.  Shared memory costs its
  latency only.  ``syncthreads()`` parks the warp until its block arrives.
  On GPUs with caches an L2 of sectors serves hits before the partitions.

Time is counted in SM cycles and reported in milliseconds with the kernel
launch overhead added.  L1 caches are not modeled (see docs/fidelity.md).
"""
from __future__ import annotations

import numpy as np
import simpy

from ..mem.access import MemoryAccess
from ..mem.dram import MemorySystem
from .engines import BarrierPool, shared_bindings
from .interpreter import Barrier, Counters, Executor
from .lanes import Geometry, LaneGroup


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


class SM:
    def __init__(self, index: int, config):
        self.index = index
        self.issue_cycles = config.issue.warp_issue_cycles
        self.alu_latency = config.issue.alu_latency_cycles
        self.issue_free = 0.0
        self.busy = 0.0

    def issue(self, now: float, k: int, warps: int = 1) -> tuple[float, float]:
        """Reserve the issue pipeline for k warp instructions of ``warps`` warps
        running together: (issued at, ready again at)."""
        if k == 0:
            return now, now
        start = max(now, self.issue_free)
        self.issue_free = start + k * self.issue_cycles
        self.busy += k * self.issue_cycles
        return self.issue_free, max(self.issue_free, now + k / warps * self.alu_latency)


GRANULARITIES = ("warp", "block")


def run_timed(config, fn, geom: Geometry, scalars, arrays, schedule, counters: Counters,
              traffic, report, granularity: str = "warp", l2=None):
    if granularity not in GRANULARITIES:
        raise ValueError(f"timed granularity must be one of {GRANULARITIES}, not {granularity!r}")
    env = simpy.Environment()
    memory = MemorySystem(config, l2)
    sms = [SM(i, config) for i in range(config.gpu.sm_count)]
    resident, limit = blocks_per_sm(config, geom, fn)
    shared_latency = config.issue.shared_memory_latency_cycles
    pending = list(range(geom.blocks))
    pending.reverse()                            # pop() hands out block 0 first
    warp_counters: list = []

    def serve(event, issued, ready):
        """When the issuing warp(s) may go on after ``event``; memory traffic is per warp."""
        batch = traffic.add(event)
        if batch is None:                        # shared memory
            return max(ready, issued + shared_latency)
        bounds = np.flatnonzero(np.diff(batch.txn_warp)) + 1
        for lo, hi in zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [batch.transactions]))):
            back = memory.access(event.kind, batch.txn_address[lo:hi], batch.txn_size[lo:hi], issued)
            if event.kind != "store":            # loads and atomics wait for their data
                ready = max(ready, back)
        return ready

    def warp(gen, wc: Counters, sm: SM, block_state, w, warps: int):
        """A warp's process (or a whole block's, when ``warps`` > 1 run as one group)."""
        done = 0
        while True:
            try:
                event = next(gen)                # functional execution, at this cycle
            except StopIteration:
                event = None
            k, done = wc.warp_instructions - done, wc.warp_instructions
            issued, ready = sm.issue(env.now, k, warps)
            if event is None:
                yield env.timeout(ready - env.now)
                block_state.finish(w)
                return
            if isinstance(event, MemoryAccess):
                yield env.timeout(serve(event, issued, ready) - env.now)
            elif isinstance(event, Barrier):
                yield env.timeout(ready - env.now)
                yield block_state.arrive(w, event)

    class BlockState:
        def __init__(self, block, count):
            self.pool = BarrierPool([(block, None)] * count)
            self.block = block
            self.events = {}
            self.left = count
            self.done = env.event()

        def arrive(self, w, barrier):
            ev = self.events[w] = env.event()
            self.wake(self.pool.arrive(w, self.block, barrier))
            return ev

        def finish(self, w):
            self.left -= 1
            self.wake(self.pool.finish(w, self.block))
            if self.left == 0:
                self.done.succeed()

        def wake(self, warps):
            for v in warps:
                self.events.pop(v).succeed()

    def run_block(block, sm):
        bindings = {**arrays, **shared_bindings(fn, 1)}
        if granularity == "block":
            # The block's warps run as one lane group, in lockstep with each other.
            groups = [LaneGroup.blocks(geom, block, 1)]
        else:
            groups = [LaneGroup.warp(geom, block, w, 0, 1) for w in range(geom.warps_per_block)]
        state = BlockState(block, len(groups))
        for w, group in enumerate(groups):
            wc = Counters()
            warp_counters.append(wc)
            gen = Executor(group, schedule, wc, lockstep=granularity == "block").run(fn, scalars, bindings)
            env.process(warp(gen, wc, sm, state, w, group.count_warps(np.arange(group.n))))
        yield state.done

    def sm_slot(sm):
        """One resident-block slot of an SM: runs blocks one after another."""
        while pending:
            yield env.process(run_block(pending.pop(), sm))

    for _ in range(resident):                    # round-robin: block 0 on SM 0, 1 on SM 1, ...
        for sm in sms:
            env.process(sm_slot(sm))
    env.run()

    for wc in warp_counters:
        counters.merge(wc)
    # A kernel is complete when its stores have reached memory, not only when
    # its last warp has issued them.
    cycles = max(env.now, memory.drained)
    overhead_ms = config.issue.kernel_launch_overhead_us / 1e3
    report.cycles = int(round(cycles))
    report.time_ms = cycles / (config.gpu.core_clock_mhz * 1e3) + overhead_ms
    report.extra = {
        "granularity": granularity,
        "occupancy": round(resident * geom.warps_per_block / config.limits.max_warps_per_sm, 3),
        "blocks_per_sm": resident, "occupancy_limit": limit,
        "sm_issue_utilization": round(sum(s.busy for s in sms) / (cycles * len(sms)), 3) if cycles else 0.0,
        "active_sms": min(len(sms), geom.blocks),
        **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in memory.summary(cycles).items()},
    }
