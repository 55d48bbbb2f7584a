"""The ``trace-block`` engine: the ``timed-block`` timing model driven by recorded traces.

A functional pass runs waves of blocks in lockstep (:mod:`simgpu.sim.trace_record`)
and records, per block, the events that ``timed-block``'s block process takes from
its interpreter generator.  :class:`TraceSource` plays them back in its place: the
same SMs, miss entries, memory system and scoreboard arithmetic time them
(:func:`simgpu.sim.timed.run_timed` with ``trace=``), so the cycles and the report
are ``timed-block``'s.  A wave's pass starts as the dispatcher reaches its first
block (blocks go out in grid order) and goes on as far as its blocks' replay asks:
a block that has replayed all it recorded runs the pass to its next event.  What is
held is what the fastest block has recorded ahead of the slowest (plus the
``RECORD_AHEAD_LANES`` recorded before the timing starts), not a wave's whole run: a
list-ranking walk of 64M nodes is one wave of 14 blocks (random splitters,
sim:gtx260) and would otherwise hold all its transactions.

Only launches whose results cannot depend on the order in which blocks run are
replayed, because the functional pass runs them in another order than the timed one:

* statically: no atomics (in the kernel or a function it calls), the fixed
  schedule, no ``check=``, and DRAM reads booked at arrival (``[dram]
  read_scheduling = "fr-fcfs"`` decides reads later, and the interpreter's
  scoreboard then forgets values by the undecided times, which a trace does not
  replay);
* dynamically: no element of a global array that the launch writes is touched by
  two blocks (:class:`Ownership`).  A launch that breaks this is found during the
  functional pass; its written arrays and the device's caches are put back as they
  were and it runs on ``timed-block``.

``report.extra["engine_ran"]`` says which engine timed the launch, and
``extra["trace_fallback"]`` why a launch was not replayed.
"""
from __future__ import annotations

import copy
import gc

import numpy as np

from ..mem.access import MemoryAccess
from ..mem.caches import write_mask_sector
from ..mem.coalescer import FlatWarps
from ..mem.memory_system import MemorySystem
from .interpreter import Counters
from .scoreboard import FENCE, Stall
from .shared_banks import SharedBanks
from .timed import run_timed
from .trace_compiled import covers, run_compiled
from .trace_log import LoggedWave
from .trace_record import MEMORY, WAIT, MaskedStores, Wave, kernel_traits

#: Lanes per recorded wave: enough for numpy to amortize its per-call cost, few enough
#: that a wave's live lane arrays stay small.
TRACE_WAVE_LANES = 1 << 14

#: A launch whose trace holds at most this many lanes of memory instructions is
#: recorded whole before its timing starts: an order conflict then shows up before
#: the device's caches have changed, and they need no copy to come back to (a warm
#: H100 L2 takes seconds to copy).  The list-ranking walk's trace holds about 28
#: bytes a lane (9 for RS5's; tracemalloc, 2^19 nodes, sim:gtx260, 2026-11-26), so
#: some 110 MiB at most.
RECORD_AHEAD_LANES = 1 << 22


def _no_sample(acc):
    pass


class TraceConflict(Exception):
    """Two blocks touch one element of an array the launch writes."""


class TracedAccess:
    """A memory instruction of one block, as the timed engine's ``serve`` takes it."""

    def __init__(self, kind, space, node):
        self.kind, self.space, self.node = kind, space, node


class Ownership:
    """Which blocks read and wrote each element of the arrays a launch writes, seen
    through the interpreter's checker hooks (before each store changes the data):
    raises :class:`TraceConflict` where one block reads an element another writes, or
    two blocks write different values to one element (the same value, as a flag set
    by many, is no conflict: any order leaves it).

    One table per written array, one code per element (1 byte for up to 41 blocks, as
    the list-ranking walk's 14; 2 up to 10,921; else 4 or 8): ``-1`` untouched;
    ``3b``, ``3b + 1``, ``3b + 2``: read, written, read and written by block ``b``
    only; ``READ_BY_SEVERAL``; ``WRITTEN_BY_SEVERAL`` (the same value, and read by
    none).  No other state can be reached without a conflict."""

    READ_BY_SEVERAL, WRITTEN_BY_SEVERAL = -2, -3

    def __init__(self, bindings: dict, stored: set, blocks: int = 0):
        self.bases = {bindings[n].base for n in stored
                      if n in bindings and bindings[n].space == "global"}
        self.dtype = next(t for t in (np.int8, np.int16, np.int32, np.int64)
                          if 3 * blocks + 3 <= np.iinfo(t).max)
        self.state: dict = {}
        self._blk = (None, None, None)

    def _table(self, b):
        t = self.state.get(b.base)
        if t is None:
            t = self.state[b.base] = np.full(b.size, -1, self.dtype)
        return t

    def _blocks3(self, ex, idx):
        """3 x the block of each lane of ``idx`` (kept for the next call on the same lanes)."""
        if self._blk[0] is not idx or self._blk[1] is not ex:
            self._blk = (idx, ex, ex.group.block_lin[idx] * 3)
        return self._blk[2]

    @staticmethod
    def _settle(table, pos, new, several):
        """Write each lane's new code; an element that lanes of two blocks touched in this
        one instruction (their codes differ) is touched by several."""
        table[pos] = new
        if pos.size > 1:
            mixed = table[pos] != new
            if mixed.any():
                table[pos[mixed]] = several

    def load(self, ex, e, b, idx, pos):
        if b.space != "global" or b.base not in self.bases:
            return
        table = self._table(b)
        blk3 = self._blocks3(ex, idx)
        t = table[pos]
        if (t == -1).all():                       # (the usual case: first touch)
            self._settle(table, pos, blk3, self.READ_BY_SEVERAL)
            return
        own = (t >= blk3) & (t < blk3 + 3)
        if ((t == self.WRITTEN_BY_SEVERAL) | ((t >= 0) & ~own & (t % 3 != 0))).any():
            raise TraceConflict(f"a block reads elements of '{b.name}' that another writes")
        new = np.where(t == -1, blk3, np.where(own, np.where(t == blk3 + 1, blk3 + 2, t),
                                               self.READ_BY_SEVERAL))
        self._settle(table, pos, new, self.READ_BY_SEVERAL)

    def store(self, ex, s, b, idx, pos, value):
        if b.space != "global" or b.base not in self.bases:
            return
        table = self._table(b)
        blk3 = self._blocks3(ex, idx)
        t = table[pos]
        value = np.broadcast_to(value, pos.shape)
        if (t == -1).all():                       # (the usual case: first touch)
            new = blk3 + 1
        else:
            own = (t >= blk3) & (t < blk3 + 3)
            foreign = (t >= 0) & ~own
            if ((t == self.READ_BY_SEVERAL) | (foreign & (t % 3 != 1))).any():
                raise TraceConflict(f"a block writes elements of '{b.name}' that another reads")
            other = (t == self.WRITTEN_BY_SEVERAL) | foreign
            if other.any() and (b.data[pos[other]] != value[other]).any():
                raise TraceConflict(f"blocks write different values to elements of '{b.name}'")
            new = np.where(t == -1, blk3 + 1, np.where(own, np.where(t == blk3, blk3 + 2, t),
                                                       self.WRITTEN_BY_SEVERAL))
        table[pos] = new
        if pos.size > 1:
            # lanes of two blocks on one element in this store: their new codes differ
            # (each block's own, or an element another touched first, whose value the
            # check above has compared); the sort below looks at values only where some
            # element has them (the list-ranking stores scatter: none), since without
            # two blocks on one element it cannot find a conflict
            mixed = table[pos] != new
            if mixed.any():
                self._several_values(b, pos, value, blk3)
                table[pos[mixed]] = self.WRITTEN_BY_SEVERAL

    @staticmethod
    def _several_values(b, pos, value, blk3):
        """Raise where an element has lanes of more than one block with more than one
        value (whichever block runs last decides the value), however they are ordered."""
        order = np.argsort(pos, kind="stable")
        p, v, k = pos[order], value[order], blk3[order]
        starts = np.flatnonzero(np.r_[True, p[1:] != p[:-1]])
        if starts.size < p.size:             # some element has several lanes
            several = (np.minimum.reduceat(k, starts) != np.maximum.reduceat(k, starts))
            values = (np.minimum.reduceat(v, starts) != np.maximum.reduceat(v, starts))
            if (several & values).any():
                raise TraceConflict(
                    f"blocks write different values to elements of '{b.name}'")

    def atomic(self, ex, e, b, idx, pos):     # pragma: no cover - atomics are refused first
        raise TraceConflict("atomics are not replayed")

    def syncthreads(self, group, idx):
        pass

    def syncwarp(self, group, idx):
        pass


class TraceSource:
    """Each block's recorded events, played back as its interpreter generator would
    yield them.  Waves start recording as the dispatcher reaches their first block
    (blocks go out in grid order) and record as far as their blocks' replay asks:
    a block that finds its queue empty runs its wave's pass to its next event."""

    def __init__(self, config, fn, geom, scalars, arrays, schedule, counters, traffic,
                 ownership, wave_lanes: int = TRACE_WAVE_LANES, logged: bool = False):
        self.banks = SharedBanks(config.gpu.arch)
        self.args = (fn, geom, scalars, arrays, schedule, counters, traffic, self.banks,
                     ownership)
        self.geom = geom
        # samples (TrafficCounter.keep_sample) are taken as the replay meets them: the
        # lowest warp of each instruction, as the other engines keep it
        self.traffic = traffic
        self.keep_sample, traffic.keep_sample = traffic.keep_sample, _no_sample
        self.per_wave = max(1, wave_lanes // geom.threads_per_block)
        self.waves: dict = {}
        self.started = 0                          # waves started so far
        self.peak_waves = 0
        # for the compiled loop: waves recorded as arrays (trace_log), their memory
        # items numbered from numbering[0] across the launch
        self.logged = logged
        self.numbering = [0]
        # stores' bytes per sector, recorded where the L2 keeps write masks
        self.write_masks = write_mask_sector(config.cache)

    def _start_next(self):
        first = self.started * self.per_wave
        count = min(self.per_wave, self.geom.blocks - first)
        wave = self.waves[self.started] = (
            LoggedWave(*self.args, first, count, numbering=self.numbering) if self.logged
            else Wave(*self.args, first, count))
        wave.write_masks = self.write_masks
        self.started += 1
        self.peak_waves = max(self.peak_waves, len(self.waves))
        return wave

    def record_ahead(self, lanes: int) -> bool:
        """Record before the replay starts until the memory instructions recorded hold
        ``lanes`` lanes; True if that was the whole launch (then a conflict can no
        longer show up once the timing has begun)."""
        held = 0
        wave = None
        while True:
            if wave is None or wave.done:
                if self.started * self.per_wave >= self.geom.blocks:
                    return True
                wave = self._start_next()
            if held >= lanes:
                return False
            before = wave.lanes
            wave.advance()
            held += wave.lanes - before

    def wave(self, block: int):
        i = block // self.per_wave
        while self.started <= i:                  # (blocks are handed out in grid order)
            self._start_next()
        return self.waves[i]

    def block(self, block: int, env):
        """(the block's event generator, its Counters: warp instructions so far)."""
        wave = self.wave(block)
        wc = Counters()
        return self._replay(wave, block - wave.first, wc, env, self), wc

    def sample(self, it, e_index: int):
        """The sample of memory item ``it`` from this block (the ``e_index``-th of the
        item's blocks)."""
        key = (it[3].loc.line, it[1])
        first_warp, offsets, lanes, addresses = it[5]
        k = e_index
        old = self.traffic.samples.get(key)
        if old is not None and old["warp"] <= first_warp[k]:
            return                                   # (the lowest warp is kept)
        acc = object.__new__(MemoryAccess)
        a, z = offsets[k], offsets[k + 1]
        acc.__dict__.update(kind=it[1], node=it[3], array=it[6], warp=np.full(z - a, first_warp[k]),
                            lane=lanes[a:z], address=addresses[a:z], word_size=it[7])
        self.keep_sample(acc)

    def finished(self, block: int):
        i = block // self.per_wave
        wave = self.waves[i]
        wave.left -= 1
        if wave.left == 0:
            del self.waves[i]

    @staticmethod
    def _replay(wave, b: int, wc: Counters, env, source):
        queue = wave.queues[b]
        ready: dict = {}
        # The latest time a wait asked for: the interpreter's scoreboard forgets every
        # pending value back by then (ScoreboardWaits.stall), so a later wait on one of
        # them does not stall, even where the clock woke an ulp before that time.
        cleared = 0.0
        while True:
            if not queue:
                if wave.done:
                    break
                wave.advance()                    # (may raise TraceConflict)
                continue
            it, j, k, lo, hi, pos = queue.popleft()
            wc.warp_instructions = k
            tag = it[0]
            if tag == MEMORY:
                acc = TracedAccess(it[1], it[2], it[3])
                tx = it[4]
                if tx.__class__ is MaskedStores:
                    acc.masks = tx.masks[lo:hi]
                    tx = tx.tx
                if it[2] == "shared":
                    acc.replays = sum(tx[lo:hi])
                elif tx.__class__ is FlatWarps:
                    acc.per_warp = tx.warps(lo, hi)
                else:
                    acc.per_warp = tx[lo:hi]
                if len(it) > 5:
                    source.sample(it, pos)
                yield acc
                ready[j] = acc.ready
            elif tag == WAIT:
                until = 0.0
                for d, mask in it[1]:
                    if mask[b]:
                        r = ready[d]
                        if r > until:
                            until = r
                if until > cleared:
                    cleared = until
                    if until > env.now:
                        yield Stall(until)
            else:
                yield FENCE
        wc.warp_instructions = wave.final[b]


def static_refusal(device, fn, sched, checks) -> str | None:
    """Why a launch cannot be replayed whatever its data, or None."""
    if sched.is_random:
        return "the random schedule orders lanes per access"
    if checks is not None:
        return "check= runs on timed-block"
    if device.config.dram.read_scheduling == "fr-fcfs":
        return "[dram] read_scheduling = \"fr-fcfs\" is not replayed"
    issue = device.config.issue
    if issue.block_groups == "scheduler" and issue.schedulers_per_sm > 1:
        return "[issue] block_groups = \"scheduler\" is not replayed (its traces are per block)"
    atomic, _ = kernel_traits(fn)
    if atomic:
        return "the kernel has atomics"
    return None


def run_trace_block(device, fn, geom, scalars, bindings, sched, checks, counters, traffic,
                    report, make_counters):
    """Replay the launch if it qualifies, else run timed-block (the state it started
    from restored where a conflict showed up midway).  Returns (counters, traffic)."""
    config = device.config
    refusal = static_refusal(device, fn, sched, checks)
    if refusal is None:
        _, stored = kernel_traits(fn)
        ownership = Ownership(bindings, stored, geom.blocks)
        saved = {b.base: (b, b.data.copy()) for b in bindings.values() if b.base in ownership.bases}
        tlbs = getattr(device, "tlbs", None)
        memory = MemorySystem(config, device.l2, tlbs)
        logged = covers(config, memory)         # (then the compiled loop times it)
        source = TraceSource(config, fn, geom, scalars, bindings, sched, counters, traffic,
                             ownership, logged=logged)
        caches = None                 # the device's caches as the launch found them
        # Python's cyclic collector stays off while the trace is recorded and replayed,
        # as run_timed keeps it off while it runs: its passes walk every live object,
        # and the recorded queues hold millions of tuples (rs48's 2^19-node walk: gc
        # took 13% of the point's CPU time; perf, this machine, 2026-11-26)
        collecting = gc.isenabled()
        gc.disable()
        try:
            if not source.record_ahead(RECORD_AHEAD_LANES):
                caches = (copy.deepcopy(device.l2), copy.deepcopy(getattr(device, "tlbs", None)))
            # the compiled loop where it covers the launch, else the Python replay
            if not run_compiled(config, fn, geom, traffic, report, device.l2, tlbs, source,
                                memory):
                if logged:                  # pragma: no cover - covers() said it would run
                    raise RuntimeError("the compiled trace replay refused a logged trace")
                run_timed(config, fn, geom, scalars, bindings, sched, counters, traffic,
                          report, granularity="block", l2=device.l2, tlbs=tlbs, trace=source)
        except TraceConflict as e:
            refusal = str(e)
            for b, data in saved.values():
                b.data[...] = data
            if caches is not None:
                device.l2 = caches[0]
                if caches[1] is not None:
                    device.tlbs = caches[1]
            counters, traffic = make_counters()
        else:
            report.extra["engine_ran"] = "trace-block"
            report.extra["trace_waves_held_max"] = source.peak_waves
            return counters, traffic
        finally:
            if collecting:
                gc.enable()
    run_timed(config, fn, geom, scalars, bindings, sched, counters, traffic, report,
              granularity="block", l2=device.l2, tlbs=getattr(device, "tlbs", None))
    report.extra["engine_ran"] = "timed-block"
    report.extra["trace_fallback"] = refusal
    return counters, traffic
