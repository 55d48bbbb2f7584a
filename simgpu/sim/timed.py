"""The timed engine: warps as simpy processes on SMs, memory through the partitions.

Each warp runs the same interpreter generator as the other engines and is
resumed at its simulated time, so interleavings follow the timing model:

* **block scheduler** — blocks go to SMs round-robin, as many per SM as the
  occupancy limits allow (threads, warps, blocks, shared memory, registers);
  a finished block frees its slot for the next one in the grid;
* **SM** — ``schedulers_per_sm`` warp schedulers (:mod:`simgpu.sim.sm`): a warp's
  run of k warp instructions takes k issue slots of its scheduler, and the warp
  cannot issue again before the ALU latency of those instructions has passed
  (other warps fill the gap); a warp stalled on pending data takes no slot;
* **memory** — a load or atomic goes through the coalescer to the
  partitions (``simgpu.mem.memory_system``); the warp goes on and stalls at the
  first use of its data (the scoreboard); a store does not wait.  An SM has at
  most ``max_outstanding_misses_per_sm`` transactions of loads and atomics in
  flight: an instruction whose transactions find too few free entries waits for
  them in simulated time.  On GPUs with caches the
  SM's L1 and the L2 serve hits before the partitions; where the L2 is two
  halves, a load's data from the far half cross the link between them when
  they get there (one more event: the link serves in arrival order).  Shared
  memory costs its latency plus the replays of its bank conflicts
  (``simgpu.mem.banks``).
  ``syncthreads()`` parks the warp until its block arrives.

One simulation event per warp and memory instruction: the instructions in
between are charged arithmetically (k x issue cycles, k x ALU latency), and
a warp that is ready again before anything else is scheduled skips the
event queue altogether (:meth:`Environment.skip_to`).

Time is counted in SM cycles and reported in milliseconds with the kernel
launch overhead added.
"""
from __future__ import annotations

import gc
from heapq import heappop

import numpy as np
import simpy

from ..mem.memory_system import MemorySystem
from .deferred import DEFERRED, DeferredLoads
from .engines import BarrierPool, shared_bindings
from .interpreter import Barrier, Counters, Executor
from .lanes import Geometry, LaneGroup, WarpGroups
from .occupancy import blocks_per_sm
from .scoreboard import Fence, Stall
from .shared_banks import SharedBanks
from .timed_waits import WaitQueue, stale
from .sm import SM, atomic_lanes, store_masks


#: Let a warp that would be the next event anyway go on without the event queue
#: (results and times are the same either way; tests compare the two).
SKIP_QUEUE = True

#: Book a memory instruction's waits for miss entries or the pipeline's slack on the
#: compiled core as queue entries, without the warp's process (timed_waits; the same
#: events in the same order: tests compare the two).
FAST_WAITS = True


class Environment(simpy.Environment):
    """simpy's environment, plus a short cut for a process that would be next anyway."""

    pending_delay = 0.0

    def skip_to(self, t: float) -> bool:
        """Advance the clock to ``t`` now if a timeout to ``t`` would be the next event
        (strictly before every queued one: a tie goes to the queued event, as simpy
        orders equal times by scheduling order).  The clock takes exactly the value
        the timeout would give it.  Otherwise remember the delay and return False."""
        delay = t - self._now
        if -1e-6 < delay < 0:        # a cycle computed as a + (b - a): rounding, not the past
            delay = 0.0
        at = self._now + delay
        queue = self._queue
        while queue and queue[0][0] <= at and stale(queue[0][3]):
            heappop(queue)            # (a WaitQueue's entry that stands for nothing now)
        if not SKIP_QUEUE or queue and queue[0][0] <= at:
            self.pending_delay = delay
            return False
        self._now = at
        return True


GRANULARITIES = ("warp", "block")

#: A request the memory pipeline accepts later than this many cycles ahead of the
#: simulation (a full queue held it back) is booked when the simulation gets there:
#: booked now, it would reserve the partitions ahead of other SMs' earlier requests.
#: Within it, it is booked at once, as the issue pipeline's own few cycles ahead are
#: (each wait is a simulation event, which costs CPU time).
HELD_SLACK = 64.0


def crossed(late: list, until: float) -> float:
    """When the data a warp waits for until ``until`` are through the link between
    the L2's halves (``until`` if none of them crossed it, or none later)."""
    keep = []
    for cell in late:
        # (a crossing not booked yet is kept for a later wait: ``until`` may have
        # grown past the data the warp waited for when this began)
        if cell[0] <= until and cell[1] is not None:
            if cell[1] > until:
                until = cell[1]
        else:
            keep.append(cell)
    late[:] = keep
    return until


def run_timed(config, fn, geom: Geometry, scalars, arrays, schedule, counters: Counters,
              traffic, report, granularity: str = "warp", l2=None, tlbs=None, trace=None):
    """``trace``: a :class:`simgpu.sim.trace_replay.TraceSource` (engine ``trace-block``):
    each block's events come from its recorded trace instead of an interpreter, and
    the launch's counts from the functional pass that recorded it."""
    if granularity not in GRANULARITIES:
        raise ValueError(f"timed granularity must be one of {GRANULARITIES}, not {granularity!r}")
    env = Environment()
    memory = MemorySystem(config, l2, tlbs)
    # [dram] read_scheduling = "fr-fcfs": loads' reads decided as the clock gets there
    deferred = DeferredLoads(env, memory) if config.dram.read_scheduling == "fr-fcfs" else None
    if deferred is None:
        memory.use_fast()         # the compiled memory core, where it covers the config
    # the waits of memory instructions booked on the core (timed_waits), while it books
    waits = WaitQueue(env, memory, HELD_SLACK) if FAST_WAITS and memory.fast is not None else None
    sms = [SM(i, config) for i in range(config.gpu.sm_count)]
    resident, limit = blocks_per_sm(config, geom, fn)
    shared_latency = config.issue.shared_memory_latency_cycles
    pending = list(range(geom.blocks))
    pending.reverse()                            # pop() hands out block 0 first
    warp_counters: list = []

    banks = SharedBanks(config.gpu.arch) if trace is None else trace.banks
    warp_groups = WarpGroups(geom)
    # timed-block: lane groups per block (one, or one per warp scheduler)
    per_scheduler = 1
    if granularity == "block" and trace is None and config.issue.block_groups == "scheduler":
        per_scheduler = min(config.issue.schedulers_per_sm, geom.warps_per_block)

    def serve(event, issued, sm: SM, resume=None):
        """Book ``event`` (memory traffic is per warp): (when the memory pipeline has
        accepted it, so that the warp may go on; when its data or, for a store, its
        acknowledgement is back; None, or where to resume once the SM's miss entries
        free; when the next one frees).  ``resume``: that state, after the wait."""
        if event.space == "shared":
            replays = event.__dict__.get("replays")     # (traced: counted when recorded)
            if replays is None:
                traffic.add(event)
                replays = banks.replays(event)
            if replays:
                # Bank conflicts: the extra passes hold the SM's pipeline (replays) and
                # the warp waits for the last one.
                extra = replays * banks.pass_cycles
                issued = max(issued, sm.issue_free)
                sm.issue_free = issued + extra
                sm.busy += extra
                issued += extra
            return issued, issued + shared_latency, None, None
        kind = event.kind
        l1 = not (kind == "load" and event.node.fresh)     # fresh loads read at the L2
        if resume is None:
            back = at = issued
            per_warp = event.__dict__.get("per_warp")     # (traced: counted when recorded)
            if per_warp is None and memory.fast is not None and kind != "atomic":
                # the compiled core's loads and stores: coalesced straight into its
                # packed form, the same transactions and counts (None: not that way)
                per_warp = traffic.add_packed(event)
            if per_warp is None:
                per_warp = traffic.add_timed(event)
            # atomics: each warp's lanes per word, for the atomic unit (which serializes
            # the lanes on one address that the coalescer merged into one transaction);
            # stores, where the L2 keeps write masks: each warp's bytes per sector
            lanes = None
            if kind == "atomic":
                lanes = atomic_lanes(event, len(per_warp))
            elif kind == "store" and memory.write_masks:   # (traced: recorded with it)
                lanes = event.__dict__.get("masks")
                if lanes is None:
                    lanes = store_masks(event, len(per_warp), memory.write_masks)
            i = first = 0
        else:
            per_warp, lanes, i, first, back = resume
            at = issued
            if memory.fast is None and hasattr(per_warp, "lists"):
                # packed only (fast_coalesce.LazyPackedWarps), and the core went off while
                # it waited (an atomic): the Python units take the per-warp lists
                per_warp = per_warp.lists()
        if memory.fast is not None:   # (simgpu.mem.fast_memory: one call per instruction)
            if kind != "atomic":
                return memory.fast.serve(kind, per_warp, i, first, back, at, sm.index,
                                         env.now, HELD_SLACK)
            memory.fast_off()         # atomics: the Python units from here on
        # the SM's miss entries (MSHRs) bound its loads' and atomics' transactions in flight
        mshr = memory.mshr if kind != "store" else None
        while i < len(per_warp):
            addresses, sizes = per_warp[i]
            end = len(addresses)
            if mshr is not None and end:
                # a warp instruction's transactions go on together once entries are free
                # for all of its L1 misses (for at most the limit at a time, where it has
                # more); its L1 hits take none (MemorySystem.entry_positions)
                if mshr.free_at(sm.index, at) < end - first:   # (else room for all)
                    misses = memory.entry_positions(kind, addresses, sm.index, l1, first)
                    need = len(misses) if len(misses) < mshr.limit else mshr.limit
                    if need and mshr.free_at(sm.index, at) < need:   # the warp (the LSU) waits
                        when = mshr.when_free(sm.index, need)
                        mshr.waits += need
                        if deferred is not None:     # (entries of undecided loads: an event)
                            when = deferred.entries(sm.index, need, when, at)
                        else:
                            mshr.wait_cycles += (when - at) * need
                        return at, back, (per_warp, lanes, i, first, back), when
                    if need < len(misses):
                        end = misses[need]           # up to its next miss
            done = memory.access(kind, addresses[first:end] if first or end < len(addresses)
                                 else addresses, sizes[first:end], at, sm.index, l1=l1,
                                 lanes=lanes[i] if lanes else None)
            if done > back:
                back = done
            # Back-pressure: the next warp instruction of the group goes to the memory
            # pipeline once it has accepted this one (full queues accept later).
            accepted = getattr(memory, "accepted", at)
            if end < len(addresses):
                first = end
            else:
                i, first = i + 1, 0
            if accepted > at:
                at = accepted
                if i < len(per_warp) and accepted > env.now + HELD_SLACK:
                    # the rest once the simulation is there: booked now, the partitions
                    # would be reserved ahead of other SMs' earlier requests
                    return at, back, (per_warp, lanes, i, first, back), accepted
        return at, back, None, None

    # A warp's first global load costs it warp_first_load_ns more than its later ones,
    # in every wave of blocks (calibration/first_access.py), before the memory system
    # sees it: a cold kernel's first data come back later than an at-once issue allows
    # (calibration/dram_ramp.py), and a wait added after the data would not delay a
    # bandwidth-bound kernel, as the GPU's first loads do.
    first_load = config.issue.warp_first_load_ns * config.gpu.core_clock_mhz / 1e3

    def book_crossings(crossings, first, cell):
        """Far loads' data cross between the L2's halves in the order they reach the
        link: book them once the simulation is there (``cell[1]``: when they are through)."""
        if first > env.now:
            yield env.timeout(first - env.now)
        cell[1] = memory.cross(crossings)
        cell[2].succeed()

    def warp(gen, wc: Counters, sm: SM, block_state, w, warps: int, pinned: bool = False):
        """A warp's process (or a group's, when ``warps`` > 1 run as one group: a whole
        block, or with ``pinned`` the warps of the block on scheduler ``w``).

        The warp issues without waiting for its loads (the interpreter's scoreboard
        yields a Stall where a value is used before its data are back); stores are
        fire and forget until ``syncthreads()``, which waits for their acknowledgements.
        """
        done = 0
        loaded = not first_load                  # its first global load issued yet?
        acked = 0.0                              # when its stores so far are acknowledged
        late: list = []                          # [back, through the link] of far loads
        mine: list = []                          # its deferred loads (DeferredLoads)
        acks: list = []                          # and stores, atomics (with an L2)
        real = 0.0                               # its latest load's real ready time
        while True:
            try:
                event = next(gen)                # functional execution, at this cycle
            except StopIteration:
                event = None
            k, done = wc.warp_instructions - done, wc.warp_instructions
            issued, ready = sm.issue(env.now, k, warps, w, pinned)
            cls = event.__class__
            if cls is Stall:                     # the next instruction needs pending data
                until = event.until
                if until >= DEFERRED:            # a deferred load's: wait for its decision
                    until = yield from deferred.wait(until, mine, real, late)
                if until > ready:
                    ready = until
                if late:
                    # Far loads' data: booked on the link by now (their process runs
                    # before the warp at the same cycle); the warp waits for them too.
                    yield env.timeout(ready - env.now)
                    # Bookings not made yet (their first crossing is later than the
                    # data's return, or at this cycle and not yet run): wait for them.
                    # (Polling with zero timeouts here never let the clock reach a
                    # booking later than ``ready``: the engine spun at one cycle.)
                    for c in late:
                        if c[0] <= ready and c[1] is None:
                            yield c[2]
                    ready = crossed(late, ready)
                    if ready < env.now:          # (the clock may be an ulp past it)
                        ready = env.now
                if not env.skip_to(ready):
                    yield env.timeout(env.pending_delay)
                continue
            if event is None:
                yield env.timeout(ready - env.now)
                block_state.finish(w)
                return
            if cls is Barrier or cls is Fence:
                if acks:                         # (stores waiting on undecided loads)
                    acked = yield from deferred.acked(acks, acked)
                if acked > ready:                # syncthreads waits for the warp's stores
                    ready = acked
                yield env.timeout(ready - env.now)
                if cls is Barrier:
                    yield block_state.arrive(w, event)
                continue
            if sm.memory_free > issued:          # back-pressure: the LSU takes it later
                issued = sm.memory_free
                if issued > ready:
                    ready = issued
                if issued > env.now + HELD_SLACK:   # (and is booked when the simulation
                    yield env.timeout(issued - env.now)   # is there, as other SMs' are)
            if not loaded and event.kind == "load" and event.space == "global":
                loaded = True
                issued += first_load
                if issued > ready:
                    ready = issued
            accepted, back, resume, when = serve(event, issued, sm)
            if deferred is not None:             # (taken before the warp yields, as below)
                deferred.take(mine, acks)
            # Far loads' crossings are this access's: taken before the warp yields, so
            # that no other warp, served while this one waits, takes them as its own.
            crossings = memory.crossings
            if crossings:
                memory.crossings = []
            while resume is not None:            # the SM's miss entries are all taken:
                # wait in simulated time (booking it now for later would reserve the
                # partitions ahead of other SMs' earlier requests); the SM's other warps
                # find the entries taken too
                if waits is not None and memory.fast is not None and event.kind != "atomic":
                    # (the compiled core books the waits as queue entries: timed_waits)
                    got = yield waits.wait(event.kind == "store", resume, when, sm.index)
                    if got[0] != "off":
                        accepted, back = got
                        break
                    resume = got[1]              # (the core went off: the Python units)
                else:
                    yield when if isinstance(when, simpy.Event) else env.timeout(when - env.now)
                accepted, back, resume, when = serve(event, env.now, sm, resume)
                if deferred is not None:
                    deferred.take(mine, acks)
                if memory.crossings:
                    crossings, memory.crossings = crossings + memory.crossings, []
            if accepted > issued:
                sm.memory_free = accepted
                if accepted > ready:
                    ready = accepted
            # The scoreboard: the interpreter reads when the data are back.
            event.__dict__["ready"] = back       # (MemoryAccess is frozen for its users)
            if real < back < DEFERRED and event.kind != "store":
                real = back
            if event.kind != "load" and acked < back < DEFERRED:
                acked = back                     # stores and atomics: acknowledged then
            if crossings:
                cell = [back, None, env.event()]    # [back, through, booked]
                late.append(cell)
                env.process(book_crossings(crossings, min(c[0] for c in crossings), cell))
            # Between two memory accesses a warp touches only its registers: if it is
            # ready again before anything else is scheduled, nothing can happen in
            # between, and it goes on without a trip through the event queue.
            if not env.skip_to(ready):
                yield env.timeout(env.pending_delay)

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
        if trace is not None:
            gen, wc = trace.block(block, env)
            state = BlockState(block, 1)
            env.process(warp(gen, wc, sm, state, 0, geom.warps_per_block))
            yield state.done
            trace.finished(block)
            return
        bindings = {**arrays, **shared_bindings(fn, 1)}
        if granularity != "block":
            groups = warp_groups.block(block)
        elif per_scheduler > 1:
            # A lane group per warp scheduler, in lockstep within it: warp w runs on
            # scheduler w mod schedulers_per_sm, as the SM's sub-partitions take warps,
            # and the groups drift apart as their memory waits differ.
            groups = [LaneGroup.warps(geom, block, range(s, geom.warps_per_block, per_scheduler))
                      for s in range(per_scheduler)]
        else:
            # The block's warps run as one lane group, in lockstep with each other.
            groups = [LaneGroup.blocks(geom, block, 1)]
        state = BlockState(block, len(groups))
        for w, group in enumerate(groups):
            wc = Counters()
            warp_counters.append(wc)
            ex = Executor(group, schedule, wc, lockstep=granularity == "block")
            ex.clock = env                       # the scoreboard compares with env.now
            gen = ex.run(fn, scalars, bindings)
            env.process(warp(gen, wc, sm, state, w, 1 if group.single_warp else
                             group.count_warps(np.arange(group.n)), per_scheduler > 1))
        yield state.done

    # The GPU hands blocks out one at a time, block_dispatch_ns each (an empty kernel's
    # time grows by that per block): a block starts once it is handed out, while the
    # ones before it already run, so dispatch overlaps with the kernel's work.
    dispatch_cycles = config.issue.block_dispatch_ns * config.gpu.core_clock_mhz / 1e3
    dispatcher = [0.0]                          # when it has handed out the blocks so far

    def sm_slot(sm):
        """One resident-block slot of an SM: runs blocks one after another."""
        while pending:
            block = pending.pop()
            if dispatch_cycles:
                at = dispatcher[0] = max(env.now, dispatcher[0]) + dispatch_cycles
                yield env.timeout(at - env.now)
            yield env.process(run_block(block, sm))

    for _ in range(resident):                    # round-robin: block 0 on SM 0, 1 on SM 1, ...
        for sm in sms:
            env.process(sm_slot(sm))
    # Python's cyclic collector stays off while the simulation runs: its full passes walk
    # every live object (the caches' lines and entries, the queues), and the launch's
    # own garbage is collected afterwards (docs/results/frfcfs-speed.md: sim:h100's
    # gather_scatter 2^18 at arrival 8.4 -> 5.7 CPU s, the same peak memory)
    collecting = gc.isenabled()
    gc.disable()
    try:
        env.run()
    finally:
        if collecting:
            gc.enable()

    for wc in warp_counters:
        counters.merge(wc)
    # A kernel is complete when its stores have reached memory, not only when
    # its last warp has issued them.
    cycles = max(env.now, memory.drained)
    memory.finish(cycles)
    # The GPU's own fixed cost per kernel (launch, drain: an empty kernel's time less
    # its block dispatch, which is in the cycles above) is part of the kernel's device
    # time (cycles, what Nsight Compute's gpu__time_duration measures). In a sequence
    # of launches it overlaps the host's launch interval, so time_ms adds the larger
    # of the two to the kernel's body.
    issue = config.issue
    fixed_us = issue.kernel_fixed_us
    body_ms = cycles / (config.gpu.core_clock_mhz * 1e3)
    report.cycles = int(round(cycles + fixed_us * config.gpu.core_clock_mhz))
    report.time_ms = body_ms + max(issue.kernel_launch_overhead_us, fixed_us) / 1e3
    report.extra = {
        "granularity": granularity,
        "occupancy": round(resident * geom.warps_per_block / config.limits.max_warps_per_sm, 3),
        "blocks_per_sm": resident, "occupancy_limit": limit,
        "sm_issue_utilization": round(sum(s.busy for s in sms) / (cycles * len(sms)), 3) if cycles else 0.0,
        "active_sms": min(len(sms), geom.blocks),
        **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in memory.summary(cycles).items()},
        **banks.summary(),
    }
