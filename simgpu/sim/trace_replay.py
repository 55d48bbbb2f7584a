"""The ``trace-block`` engine: the ``timed-block`` timing model driven by recorded traces.

A functional pass runs waves of blocks in lockstep (:mod:`simgpu.sim.trace_record`)
and records, per block, the events that ``timed-block``'s block process takes from
its interpreter generator.  :class:`TraceSource` plays them back in its place: the
same SMs, miss entries, memory system and scoreboard arithmetic time them
(:func:`simgpu.sim.timed.run_timed` with ``trace=``), so the cycles and the report
are ``timed-block``'s.  Waves are recorded as the dispatcher reaches their first
block (blocks go out in grid order) and freed when their last block ends.

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

import numpy as np

from .interpreter import Counters
from .scoreboard import FENCE, Stall
from .timed import SharedBanks, run_timed
from .trace_record import MEMORY, WAIT, kernel_traits, record_wave

#: Lanes per recorded wave: enough for numpy to amortize its per-call cost, few enough
#: that a wave's trace (its transactions as Python lists) stays small.
TRACE_WAVE_LANES = 1 << 14


class TraceConflict(Exception):
    """Two blocks touch one element of an array the launch writes."""


class TracedAccess:
    """A memory instruction of one block, as the timed engine's ``serve`` takes it."""

    def __init__(self, kind, space, node):
        self.kind, self.space, self.node = kind, space, node


class Ownership:
    """Which block touched each element of the arrays a launch writes: raises
    :class:`TraceConflict` where an element written by one block is read or written
    by another (then the order of the blocks could change the results)."""

    def __init__(self, bindings: dict, stored: set, warps_per_block: int):
        bases = {bindings[n].base for n in stored if n in bindings}
        self.tracked = {n: b for n, b in bindings.items()
                        if b.space == "global" and b.base in bases}
        self.wpb = warps_per_block
        self.state: dict = {}

    def check(self, acc):
        b = self.tracked.get(acc.array)
        if b is None:
            return
        st = self.state.get(b.base)
        if st is None:
            st = self.state[b.base] = (np.full(b.size, -1, np.int64), np.zeros(b.size, bool))
        owner, written = st
        pos = (acc.address - b.base) // acc.word_size
        blk = acc.warp // self.wpb
        o = owner[pos]
        fresh = o == -1
        if fresh.any():
            owner[pos[fresh]] = blk[fresh]
            o = owner[pos]
        other = o != blk
        if other.any():
            owner[pos[other]] = -2
            o = owner[pos]
        shared = o == -2
        if acc.kind != "load":
            written[pos] = True
            bad = shared.any()
        else:
            bad = (shared & written[pos]).any()
        if bad:
            raise TraceConflict(f"blocks share elements of '{acc.array}', which the launch writes")


class TraceSource:
    """Each block's recorded events, played back as its interpreter generator would
    yield them; waves recorded on demand, in grid order."""

    def __init__(self, config, fn, geom, scalars, arrays, schedule, counters, traffic,
                 ownership, wave_lanes: int = TRACE_WAVE_LANES):
        self.banks = SharedBanks(config.gpu.arch)
        self.args = (fn, geom, scalars, arrays, schedule, counters, traffic, self.banks,
                     ownership)
        self.geom = geom
        self.per_wave = max(1, wave_lanes // geom.threads_per_block)
        self.waves: dict = {}
        self.recorded = 0                         # waves recorded so far
        self.peak_waves = 0

    def wave(self, block: int):
        i = block // self.per_wave
        while self.recorded <= i:                 # (blocks are handed out in grid order)
            first = self.recorded * self.per_wave
            count = min(self.per_wave, self.geom.blocks - first)
            self.waves[self.recorded] = record_wave(*self.args, first, count)
            self.recorded += 1
            self.peak_waves = max(self.peak_waves, len(self.waves))
        return self.waves[i]

    def block(self, block: int, env):
        """(the block's event generator, its Counters: warp instructions so far)."""
        wave = self.wave(block)
        wc = Counters()
        return self._replay(wave, block - wave.first, wc, env), wc

    def finished(self, block: int):
        i = block // self.per_wave
        wave = self.waves[i]
        wave.left -= 1
        if wave.left == 0:
            del self.waves[i]

    @staticmethod
    def _replay(wave, b: int, wc: Counters, env):
        items, item, ks, los, his = wave.items, wave.item, wave.k, wave.lo, wave.hi
        ready: dict = {}
        for e in range(wave.starts[b], wave.starts[b + 1]):
            j = item[e]
            it = items[j]
            wc.warp_instructions = ks[e]
            tag = it[0]
            if tag == MEMORY:
                acc = TracedAccess(it[1], it[2], it[3])
                if it[2] == "shared":
                    acc.replays = sum(it[4][los[e]:his[e]])
                else:
                    acc.per_warp = it[4][los[e]:his[e]]
                yield acc
                ready[j] = acc.ready
            elif tag == WAIT:
                until = 0.0
                for d, mask in it[1]:
                    if mask[b]:
                        r = ready[d]
                        if r > until:
                            until = r
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
        ownership = Ownership(bindings, stored, geom.warps_per_block)
        saved = {b.base: (b, b.data.copy()) for b in ownership.tracked.values()}
        l2, tlbs = copy.deepcopy(device.l2), copy.deepcopy(getattr(device, "tlbs", None))
        source = TraceSource(config, fn, geom, scalars, bindings, sched, counters, traffic,
                             ownership)
        try:
            run_timed(config, fn, geom, scalars, bindings, sched, counters, traffic, report,
                      granularity="block", l2=device.l2, tlbs=getattr(device, "tlbs", None),
                      trace=source)
        except TraceConflict as e:
            refusal = str(e)
            for b, data in saved.values():
                b.data[...] = data
            device.l2 = l2
            if tlbs is not None:
                device.tlbs = tlbs
            counters, traffic = make_counters()
        else:
            report.extra["engine_ran"] = "trace-block"
            report.extra["trace_waves_held_max"] = source.peak_waves
            return counters, traffic
    run_timed(config, fn, geom, scalars, bindings, sched, counters, traffic, report,
              granularity="block", l2=device.l2, tlbs=getattr(device, "tlbs", None))
    report.extra["engine_ran"] = "timed-block"
    report.extra["trace_fallback"] = refusal
    return counters, traffic
