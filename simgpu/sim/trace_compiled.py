"""The Python side of the compiled ``trace-block`` replay (:mod:`~simgpu.sim.trace_loop`).

:func:`run_compiled` times a replayed launch as :func:`simgpu.sim.timed.run_timed`
with ``trace=`` does, and writes the same report, where the compiled loop covers it:
numba installed, the compiled memory core attached (GT200: no L2, reads booked at
arrival), one warp scheduler per SM.  Elsewhere it returns False and the caller runs
``run_timed``, the reference.  Set :data:`ENABLED` to False (or ``SIMGPU_TRACE_LOOP=0``)
to replay in Python everywhere: tests compare the two.

The loop asks for the trace a batch at a time: a block's recorded events, kept as
arrays by :class:`~simgpu.sim.trace_log.LoggedWave` (recorded on demand, as the Python
replay records its queues), are copied into the slot's rows, its transactions from
the wave's arena (no Python object per block, event, warp or transaction); a memory
instruction carries the number under which the loop keeps when its data are back,
and a wait the numbers of the instructions it waits for.  :func:`covers` says before
the recording whether the loop will time the launch (then its waves are logged).
"""
from __future__ import annotations

import gc
import os

import numpy as np

from ..mem.fast_jit import ENABLED as NUMBA
from ..mem.memory_system import MemorySystem
from . import trace_log
from .compiled_heap import push
from .occupancy import blocks_per_sm
from . import trace_loop as L

#: The compiled replay runs where it covers the launch (False: the Python replay).
ENABLED = NUMBA and os.environ.get("SIMGPU_TRACE_LOOP", "1") != "0"

#: Entries of a block's batch.  A refill also records ahead, beyond the one event the
#: Python replay would record, until the block has AHEAD entries queued (or MORE_LANES
#: more lanes of memory instructions are recorded), so that a block of a long wave is
#: not handed one event per call; what is held stays bounded (about AHEAD entries a
#: block more than the Python replay holds), not the wave's run.
#: Launches the compiled loop has timed in this process (tests read it).
RUNS = [0]

BATCH = 256
AHEAD = 32
MORE_LANES = 1 << 15


class _Feed:
    """Each slot's block: its wave, its place there, its batch's sample candidates."""

    def __init__(self, source, nslots: int, wpb: int, tpb: int):
        self.source = source
        self.traffic = source.traffic
        self.waves = [None] * nslots
        self.local = [0] * nslots
        self.samples = [None] * nslots       # per slot: {entry: (item, place)}
        self.ent = np.zeros((nslots, BATCH, L.N_E), np.int64)
        self.offs = np.zeros((nslots, BATCH * (wpb + 1) + 1), np.int64)
        cap = max(8192, 4 * tpb)
        self.txa = np.zeros((nslots, cap), np.int64)
        self.txs = np.zeros((nslots, cap), np.int64)
        self.deps = np.zeros((nslots, 1024), np.int64)
        self.ready = np.zeros(1 << 16)
        self.cand = np.zeros(3 * BATCH, np.int64)   # (trace_log.take's candidates)

    def start(self, s: int, block: int) -> None:
        wave = self.waves[s] = self.source.wave(block)
        self.local[s] = block - wave.first
        self.samples[s] = {}

    def finish(self, s: int, block: int) -> None:
        self.source.finished(block)
        self.waves[s] = self.samples[s] = None

    def sample(self, s: int, e: int) -> None:
        it, pos = self.samples[s].pop(e)
        self.source.sample(it, pos)
        self.ent[s, e, L.E_FLAGS] &= ~L.FL_SAMPLE

    def refill(self, s: int, si) -> None:
        """Slot s's next batch, from its block's rows in its wave's log (recorded on as
        needed), copied into the slot's arrays by trace_log.take."""
        wave, b = self.waves[s], self.local[s]
        log = wave.log
        while not log.held(b) and not wave.done:
            wave.advance()                      # (may raise TraceConflict)
        lanes = wave.lanes + MORE_LANES
        while log.held(b) < AHEAD and not wave.done and wave.lanes < lanes:
            wave.advance()
        need = wave.numbering[0]
        if need > self.ready.size:
            r = np.zeros(max(2 * self.ready.size, need))
            r[:self.ready.size] = self.ready
            self.ready = r
        final = wave.final[b] if wave.done else 0
        while True:
            n, nc = trace_log.take(log.rows, log.head, log.tail, log.dlog, log.taddr,
                                   log.tsize, log.tcut, b, s, self.ent, self.offs, self.txa,
                                   self.txs, self.deps, BATCH, wave.done, final, self.cand)
            if n >= 0:
                break
            t, o, d = self.cand[:3].tolist()      # (the first row does not fit)
            if t > self.txa.shape[1]:
                self._grow("txa", t)
                self._grow("txs", t)
            if o > self.offs.shape[1]:
                self._grow("offs", o)
            if d > self.deps.shape[1]:
                self._grow("deps", d)
        if nc:
            keys = self.traffic.samples
            samples = self.samples[s]
            got = self.cand[:3 * nc].tolist()
            for e, j, pos in zip(got[::3], got[1::3], got[2::3]):
                it = wave.sample_items[j]
                old = keys.get((it[3].loc.line, it[1]))
                if old is None or it[5][0][pos] < old["warp"]:
                    self.ent[s, e, L.E_FLAGS] |= L.FL_SAMPLE   # (a lower warp than the sample's)
                    samples[e] = (it, pos)
        si[s, L.S_PTR], si[s, L.S_N] = 0, n

    def _grow(self, name: str, need: int) -> None:
        a = getattr(self, name)
        b = np.zeros((a.shape[0], max(2 * a.shape[1], need)), np.int64)
        b[:, :a.shape[1]] = a
        setattr(self, name, b)


def covers(config, memory) -> bool:
    """Whether the compiled loop will time a launch with ``memory`` (a fresh launch's
    MemorySystem): then its trace is recorded as a WaveLog (trace_log), before the
    loop starts."""
    from ..mem.fast_memory import _core_works, supported
    return (ENABLED and config.issue.schedulers_per_sm == 1
            and config.dram.read_scheduling != "fr-fcfs" and supported(memory) is None
            and _core_works(memory))


def run_compiled(config, fn, geom, traffic, report, l2, tlbs, source, memory=None) -> bool:
    """Time the replayed launch with the compiled loop and write ``report`` as
    run_timed does; False (nothing done) where the loop does not cover it
    (:func:`covers`; ``memory``: the launch's MemorySystem, made here if None)."""
    from . import timed
    if not ENABLED or config.issue.schedulers_per_sm != 1:
        return False
    if memory is None:
        memory = MemorySystem(config, l2, tlbs)
    if config.dram.read_scheduling == "fr-fcfs" or not memory.use_fast():
        return False
    n_sms = config.gpu.sm_count
    resident, limit = blocks_per_sm(config, geom, fn)
    nslots = resident * n_sms
    issue = config.issue
    clock = config.gpu.core_clock_mhz
    pf = np.zeros(L.N_PF)
    pf[L.P_INTERVAL] = issue.warp_issue_cycles * issue.schedulers_per_sm
    pf[L.P_ISSUE_CYCLES] = issue.warp_issue_cycles
    pf[L.P_ALU] = issue.alu_latency_cycles
    pf[L.P_DISPATCH] = issue.block_dispatch_ns * clock / 1e3
    pf[L.P_FIRST_LOAD] = issue.warp_first_load_ns * clock / 1e3
    pf[L.P_SLACK] = timed.HELD_SLACK
    pf[L.P_SHARED_LATENCY] = issue.shared_memory_latency_cycles
    pf[L.P_PASS_CYCLES] = source.banks.pass_cycles
    pf[L.P_SKIP_QUEUE] = 1.0 if timed.SKIP_QUEUE else 0.0
    pf[L.P_WARPS] = geom.warps_per_block
    gf = np.zeros(L.N_GF)
    gi = np.zeros(L.N_GI, np.int64)
    gi[L.I_NBLOCKS] = geom.blocks
    cap = 8 * nslots + 16
    ht, hp, he, hv = (np.zeros(cap), np.zeros(cap, np.int64), np.zeros(cap, np.int64),
                      np.zeros((cap, 2), np.int64))
    si = np.zeros((nslots, L.N_SI), np.int64)
    sf = np.zeros((nslots, L.N_SF))
    smf = np.zeros((n_sms, L.N_SMF))
    for s in range(nslots):                      # round-robin: slot s on SM s % n_sms
        si[s, L.S_SM] = s % n_sms
        si[s, L.S_SLOT_PHASE] = L.SLOT_RUN
        push(gi, ht, hp, he, hv, 0.0, L.URGENT, L.K_SLOT, s)
    feed = _Feed(source, nslots, geom.warps_per_block, geom.threads_per_block)
    st = memory.fast.state
    collecting = gc.isenabled()
    gc.disable()
    try:
        while True:
            code = L.run_loop(st, gf, gi, ht, hp, he, hv, pf, si, sf, smf, feed.ent,
                              feed.offs, feed.txa, feed.txs, feed.deps, feed.ready)
            s = int(gi[L.I_CUR_SLOT])
            if code == L.EXIT_DONE:
                break
            if code == L.EXIT_NEED:
                feed.refill(s, si)
            elif code == L.EXIT_SAMPLE:
                feed.sample(s, int(gi[L.I_ARG]))
            elif code == L.EXIT_START:
                feed.start(s, int(si[s, L.S_BLOCK]))
            elif code == L.EXIT_FINISH:
                feed.finish(s, int(si[s, L.S_BLOCK]))
            elif code == L.ERR_NEGATIVE_DELAY:
                raise ValueError("Negative delay in the compiled trace replay")
            else:
                raise RuntimeError(f"the compiled trace replay stopped (code {code})")
    finally:
        if collecting:
            gc.enable()
    _report(config, geom, report, memory, float(gf[L.G_NOW]), smf, resident, limit,
            source.banks)
    RUNS[0] += 1
    return True


def _report(config, geom, report, memory, now, smf, resident, limit, banks) -> None:
    """run_timed's report, from the loop's clock and SMs (the same expressions)."""
    n_sms = smf.shape[0]
    cycles = max(now, memory.drained)
    memory.finish(cycles)
    issue = config.issue
    fixed_us = issue.kernel_fixed_us
    body_ms = cycles / (config.gpu.core_clock_mhz * 1e3)
    report.cycles = int(round(cycles + fixed_us * config.gpu.core_clock_mhz))
    report.time_ms = body_ms + max(issue.kernel_launch_overhead_us, fixed_us) / 1e3
    busy = sum(smf[:, L.M_BUSY].tolist())
    report.extra = {
        "granularity": "block",
        "occupancy": round(resident * geom.warps_per_block / config.limits.max_warps_per_sm, 3),
        "blocks_per_sm": resident, "occupancy_limit": limit,
        "sm_issue_utilization": round(busy / (cycles * n_sms), 3) if cycles else 0.0,
        "active_sms": min(n_sms, geom.blocks),
        **{k: (round(v, 3) if isinstance(v, float) else v)
           for k, v in memory.summary(cycles).items()},
        **banks.summary(),
    }
