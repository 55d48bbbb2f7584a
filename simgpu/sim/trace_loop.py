"""The ``trace-block`` replay loop compiled (numba): :func:`simgpu.sim.timed.run_timed`'s
event loop for a replayed launch on the compiled memory core, with no Python per
instruction.

:func:`~simgpu.sim.timed.run_timed` with ``trace=`` runs simpy processes: one slot per
resident block of each SM (``sm_slot``: hands out blocks, ``block_dispatch_ns`` apart),
one process per block (``run_block``), and the block's warp process, which takes the
recorded events (:class:`~simgpu.sim.trace_replay.TraceSource`) and books them: issue
on the SM's scheduler, the scoreboard's stalls, the memory pipeline's back-pressure,
loads and stores through the compiled core (:func:`simgpu.mem.fast_path.
serve_instruction`), its waits for free miss entries.  This module is the same
processes as state machines over arrays, and simpy's event queue as a heap of
``(time, priority, event id)``, the ids given in the order simpy gives them (process
starts are urgent; timeouts, a block's end, a process's end are normal), so that
every tie is broken as simpy breaks it and every time is the same double.

It leaves the loop for the Python side (:mod:`~simgpu.sim.trace_compiled`), which
resumes it, where a step needs the trace or the recorder: a block starts (its wave,
maybe a new one) or ends (its wave freed), a block has replayed the events handed to
it (the next batch, recorded on demand), a memory instruction carries the teaching
view's sample.  The Python replay stays the reference; tests compare the two reports.

Arrays (the layout is this module's and trace_compiled's contract): ``gf``/``gi`` the
loop's scalars (gi's first two are the heap's control, see compiled_heap); ``ht, hp,
he, hv`` the heap (time, priority, id; kind and slot); ``pf`` parameters; ``si``/``sf``
each slot's state; ``smf`` each SM's scheduler; ``ent, offs, txa, txs, deps`` each
slot's batch of events; ``ready`` when each memory instruction's data are back (numbered
by the Python side).
"""
from __future__ import annotations

from ..mem.deferred_reads import DEFERRED
from ..mem.fast_jit import njit, unowned
from ..mem.fast_path import serve_instruction
from .compiled_heap import C_EID, C_SIZE, pop, push

# --- gf, gi: the loop's scalars -----------------------------------------------------
G_NOW, G_DISPATCHER, G_PENDING_DELAY = range(3)
N_GF = 3
# (the first two are the compiled heap's: its size and next event id, as simpy numbers them)
I_HEAP, I_EID, I_NEXT_BLOCK, I_NBLOCKS, I_CUR_KIND, I_CUR_SLOT, I_RESUME, I_ARG = range(8)
N_GI = 8
assert (I_HEAP, I_EID) == (C_SIZE, C_EID)

# --- heap entries' kinds (what processing the event resumes) -------------------------
K_NOOP, K_SLOT, K_BLOCK, K_WARP = range(4)
URGENT, NORMAL = 0, 1

# --- pf: parameters -----------------------------------------------------------------
(P_INTERVAL, P_ISSUE_CYCLES, P_ALU, P_DISPATCH, P_FIRST_LOAD, P_SLACK, P_SHARED_LATENCY,
 P_PASS_CYCLES, P_SKIP_QUEUE, P_WARPS) = range(10)
N_PF = 10

# --- si, sf: a slot's state (its sm_slot process, its block's process, the warp's) ---
(S_SM, S_SLOT_PHASE, S_BLOCK_PHASE, S_BLOCK, S_PC, S_DONE, S_LOADED, S_PTR, S_N, S_CURK,
 S_I, S_FIRST, S_ENTRY) = range(13)
N_SI = 13
F_ACKED, F_READY, F_ISSUED, F_BACK, F_ACCEPTED, F_CLEARED = range(6)
N_SF = 6

# --- smf: an SM's issue ----------------------------------------------------------------
M_FREE, M_BUSY, M_MEMORY_FREE = range(3)
N_SMF = 3

# --- ent: a batch entry ------------------------------------------------------------------
E_TAG, E_K, E_FLAGS, E_OFF, E_NW, E_READY, E_DEP, E_NDEP, E_REPLAYS = range(9)
N_E = 9
T_MEMORY, T_WAIT, T_FENCE, T_END = range(4)
FL_WRITE, FL_SHARED, FL_LOAD, FL_SAMPLE = 1, 2, 4, 8

# --- exits (the loop's return value) -------------------------------------------------------
EXIT_DONE, EXIT_START, EXIT_FINISH, EXIT_NEED, EXIT_SAMPLE = range(5)
ERR_NEGATIVE_DELAY, ERR_HEAP = -1, -2

# --- the phases of the processes -----------------------------------------------------------
SLOT_RUN, SLOT_DISPATCHED, SLOT_WAITING, SLOT_OVER = range(4)
BLOCK_INIT, BLOCK_STARTED, BLOCK_WAITING, BLOCK_DONE, BLOCK_FINISHED = range(5)
PC_TOP, PC_MEMORY, PC_RESUME, PC_END, PC_DEAD = range(5)


@njit
def _issue(smf, pf, sm, now, k):
    """SM.issue for one scheduler (GT200) and a block's warps together: (issued, ready)."""
    if k == 0:
        return now, now
    free = smf[sm, M_FREE]
    start = free if free > now else now
    end = start + k * pf[P_INTERVAL]
    smf[sm, M_FREE] = end
    smf[sm, M_BUSY] += k * pf[P_ISSUE_CYCLES]
    alu = now + k / pf[P_WARPS] * pf[P_ALU]
    return end, (end if end >= alu else alu)


@njit
def _skip_to(gf, gi, ht, pf, t):
    """Environment.skip_to: True where the clock moved to t without the queue."""
    now = gf[G_NOW]
    delay = t - now
    if -1e-6 < delay < 0:
        delay = 0.0
    at = now + delay
    if pf[P_SKIP_QUEUE] == 0.0 or (gi[I_HEAP] > 0 and ht[0] <= at):
        gf[G_PENDING_DELAY] = delay
        return False
    gf[G_NOW] = at
    return True


@njit
def _timeout(gf, gi, ht, hp, he, hv, delay, kind, slot):
    """env.timeout(delay) for the process of ``kind`` in ``slot``: 0, or an error."""
    if delay < 0:
        return ERR_NEGATIVE_DELAY
    if not push(gi, ht, hp, he, hv, gf[G_NOW] + delay, NORMAL, kind, slot):
        return ERR_HEAP
    return 0


@njit
def _warp(s, st, gf, gi, ht, hp, he, hv, pf, si, sf, smf, ent, offs, txa, txs, deps,
          ready):
    """The block's warp process in ``slot`` s, from its program counter, until it waits
    (0), ends, or needs the Python side (an exit code)."""
    sm = si[s, S_SM]
    slack = pf[P_SLACK]
    while True:
        pc = si[s, S_PC]
        if pc == PC_TOP:
            # next(gen): TraceSource._replay's events
            ptr = si[s, S_PTR]
            n = si[s, S_N]
            kind = -1
            until = 0.0
            while True:
                if ptr >= n:
                    si[s, S_PTR] = ptr
                    return EXIT_NEED
                tag = ent[s, ptr, E_TAG]
                si[s, S_CURK] = ent[s, ptr, E_K]
                if tag == T_END:
                    kind = T_END
                    break
                if tag == T_WAIT:
                    until = 0.0
                    d0 = ent[s, ptr, E_DEP]
                    for q in range(d0, d0 + ent[s, ptr, E_NDEP]):
                        r = ready[deps[s, q]]
                        if r > until:
                            until = r
                    ptr += 1
                    # (the latest wait's time: what was back by then is not pending
                    # any more, as in TraceSource._replay)
                    if until > sf[s, F_CLEARED]:
                        sf[s, F_CLEARED] = until
                        if until > gf[G_NOW]:
                            kind = T_WAIT
                            break
                    continue
                if tag == T_MEMORY:
                    if ent[s, ptr, E_FLAGS] & FL_SAMPLE:
                        si[s, S_PTR] = ptr
                        gi[I_ARG] = ptr
                        return EXIT_SAMPLE
                    si[s, S_ENTRY] = ptr
                ptr += 1
                kind = tag
                break
            si[s, S_PTR] = ptr
            now = gf[G_NOW]
            curk = si[s, S_CURK]
            k = curk - si[s, S_DONE]
            si[s, S_DONE] = curk
            issued, rdy = _issue(smf, pf, sm, now, k)
            if kind == T_WAIT:                  # a Stall
                if until > rdy:
                    rdy = until
                if _skip_to(gf, gi, ht, pf, rdy):
                    continue
                return _timeout(gf, gi, ht, hp, he, hv, gf[G_PENDING_DELAY], K_WARP, s)
            if kind == T_END:
                si[s, S_PC] = PC_END
                return _timeout(gf, gi, ht, hp, he, hv, rdy - now, K_WARP, s)
            if kind == T_FENCE:
                if sf[s, F_ACKED] > rdy:
                    rdy = sf[s, F_ACKED]
                return _timeout(gf, gi, ht, hp, he, hv, rdy - now, K_WARP, s)
            # a memory instruction: the memory pipeline's back-pressure
            si[s, S_PC] = PC_MEMORY
            if smf[sm, M_MEMORY_FREE] > issued:
                issued = smf[sm, M_MEMORY_FREE]
                if issued > rdy:
                    rdy = issued
                if issued > now + slack:
                    sf[s, F_ISSUED], sf[s, F_READY] = issued, rdy
                    return _timeout(gf, gi, ht, hp, he, hv, issued - now, K_WARP, s)
            sf[s, F_ISSUED], sf[s, F_READY] = issued, rdy
            continue
        if pc == PC_MEMORY or pc == PC_RESUME:
            e = si[s, S_ENTRY]
            flags = ent[s, e, E_FLAGS]
            issued, rdy = sf[s, F_ISSUED], sf[s, F_READY]
            now = gf[G_NOW]
            if pc == PC_MEMORY:
                if si[s, S_LOADED] == 0 and flags & FL_LOAD:
                    si[s, S_LOADED] = 1
                    issued += pf[P_FIRST_LOAD]
                    if issued > rdy:
                        rdy = issued
                    sf[s, F_ISSUED], sf[s, F_READY] = issued, rdy
                if flags & FL_SHARED:
                    replays = ent[s, e, E_REPLAYS]
                    at = issued
                    if replays:
                        extra = replays * pf[P_PASS_CYCLES]
                        if smf[sm, M_FREE] > at:
                            at = smf[sm, M_FREE]
                        smf[sm, M_FREE] = at + extra
                        smf[sm, M_BUSY] += extra
                        at += extra
                    status, back, when = 0, at + pf[P_SHARED_LATENCY], 0.0
                    i = first = 0
                else:
                    o = ent[s, e, E_OFF]
                    status, at, back, i, first, when = serve_instruction(
                        st, (flags & FL_WRITE) != 0, txa[s], txs[s],
                        offs[s, o:o + ent[s, e, E_NW] + 1], 0, 0, issued, issued, sm, now,
                        slack)
            else:
                o = ent[s, e, E_OFF]
                status, at, back, i, first, when = serve_instruction(
                    st, (flags & FL_WRITE) != 0, txa[s], txs[s],
                    offs[s, o:o + ent[s, e, E_NW] + 1], si[s, S_I], si[s, S_FIRST],
                    sf[s, F_BACK], now, sm, now, slack)
            sf[s, F_ACCEPTED] = at
            if status:                          # miss entries, or held: resume at ``when``
                si[s, S_I], si[s, S_FIRST], sf[s, F_BACK] = i, first, back
                si[s, S_PC] = PC_RESUME
                return _timeout(gf, gi, ht, hp, he, hv, when - now, K_WARP, s)
            if at > issued:
                smf[sm, M_MEMORY_FREE] = at
                if at > rdy:
                    rdy = at
            ready[ent[s, e, E_READY]] = back
            si[s, S_PC] = PC_TOP
            # stores (kind != "load": the replay has no atomics) are acknowledged then
            if flags & FL_WRITE and sf[s, F_ACKED] < back < DEFERRED:
                sf[s, F_ACKED] = back
            if _skip_to(gf, gi, ht, pf, rdy):
                continue
            return _timeout(gf, gi, ht, hp, he, hv, gf[G_PENDING_DELAY], K_WARP, s)
        if pc == PC_END:                        # block_state.finish: done.succeed(), return
            si[s, S_PC] = PC_DEAD
            if not push(gi, ht, hp, he, hv, gf[G_NOW], NORMAL, K_BLOCK, s):
                return ERR_HEAP
            if not push(gi, ht, hp, he, hv, gf[G_NOW], NORMAL, K_NOOP, s):
                return ERR_HEAP
            return 0
        return 0                                # (PC_DEAD: nothing waits on it)


@njit
def run_loop(st, gf, gi, ht, hp, he, hv, pf, si, sf, smf, ent, offs, txa, txs, deps,
             ready):
    """Run the event loop until it ends (EXIT_DONE) or needs the Python side (an exit
    code, gi[I_CUR_SLOT] the slot; call again to go on)."""
    # the caller holds the arrays through the call: unowned, passing them on to _warp
    # and the heap's helpers touches no atomic reference count (fast_jit.unowned)
    gf, gi, ht, hp, he, hv = unowned(gf), unowned(gi), unowned(ht), unowned(hp), \
        unowned(he), unowned(hv)
    pf, si, sf, smf, ent, offs = unowned(pf), unowned(si), unowned(sf), unowned(smf), \
        unowned(ent), unowned(offs)
    txa, txs, deps, ready = unowned(txa), unowned(txs), unowned(deps), unowned(ready)
    while True:
        if gi[I_RESUME]:
            gi[I_RESUME] = 0
            kind, s = gi[I_CUR_KIND], gi[I_CUR_SLOT]
        else:
            if gi[I_HEAP] == 0:
                return EXIT_DONE
            j = pop(gi, ht, hp, he, hv)
            gf[G_NOW] = ht[j]
            kind, s = hv[j, 0], hv[j, 1]
            gi[I_CUR_KIND], gi[I_CUR_SLOT] = kind, s
        if kind == K_NOOP:
            continue
        if kind == K_WARP:
            code = _warp(s, st, gf, gi, ht, hp, he, hv, pf, si, sf, smf, ent, offs, txa,
                         txs, deps, ready)
            if code != 0:
                if code > 0:
                    gi[I_RESUME] = 1
                return code
            continue
        if kind == K_BLOCK:
            phase = si[s, S_BLOCK_PHASE]
            if phase == BLOCK_INIT:             # trace.block(): the Python side
                si[s, S_BLOCK_PHASE] = BLOCK_STARTED
                gi[I_RESUME] = 1
                return EXIT_START
            if phase == BLOCK_STARTED:          # env.process(warp(...)); yield state.done
                si[s, S_BLOCK_PHASE] = BLOCK_WAITING
                si[s, S_PC] = PC_TOP
                # an empty batch: the slot's last block stopped at its T_END entry
                # (not consumed), which the new block must not replay
                si[s, S_PTR] = 0
                si[s, S_N] = 0
                si[s, S_DONE] = 0
                si[s, S_LOADED] = 1 if pf[P_FIRST_LOAD] == 0.0 else 0
                sf[s, F_ACKED] = 0.0
                sf[s, F_CLEARED] = 0.0
                if not push(gi, ht, hp, he, hv, gf[G_NOW], URGENT, K_WARP, s):
                    return ERR_HEAP
                continue
            if phase == BLOCK_WAITING:          # state.done: trace.finished()
                si[s, S_BLOCK_PHASE] = BLOCK_DONE
                gi[I_RESUME] = 1
                return EXIT_FINISH
            # BLOCK_DONE: run_block returns; its process event resumes the slot
            si[s, S_BLOCK_PHASE] = BLOCK_FINISHED
            if not push(gi, ht, hp, he, hv, gf[G_NOW], NORMAL, K_SLOT, s):
                return ERR_HEAP
            continue
        # K_SLOT: sm_slot
        phase = si[s, S_SLOT_PHASE]
        if phase == SLOT_RUN or phase == SLOT_WAITING:
            if gi[I_NEXT_BLOCK] >= gi[I_NBLOCKS]:
                si[s, S_SLOT_PHASE] = SLOT_OVER      # the generator returns
                if not push(gi, ht, hp, he, hv, gf[G_NOW], NORMAL, K_NOOP, s):
                    return ERR_HEAP
                continue
            si[s, S_BLOCK] = gi[I_NEXT_BLOCK]
            gi[I_NEXT_BLOCK] += 1
            if pf[P_DISPATCH]:
                now = gf[G_NOW]
                d = gf[G_DISPATCHER]
                at = (now if now > d else d) + pf[P_DISPATCH]
                gf[G_DISPATCHER] = at
                si[s, S_SLOT_PHASE] = SLOT_DISPATCHED
                code = _timeout(gf, gi, ht, hp, he, hv, at - now, K_SLOT, s)
                if code:
                    return code
                continue
            phase = SLOT_DISPATCHED
        if phase == SLOT_DISPATCHED:            # yield env.process(run_block(block, sm))
            si[s, S_SLOT_PHASE] = SLOT_WAITING
            si[s, S_BLOCK_PHASE] = BLOCK_INIT
            if not push(gi, ht, hp, he, hv, gf[G_NOW], URGENT, K_BLOCK, s):
                return ERR_HEAP
