"""The DRAM sub-channels of the compiled memory core: :mod:`~simgpu.mem.dram_timing`'s
``SubChannel`` over :class:`~simgpu.mem.fast_layout.FastState`'s arrays (a partition's
batches: :mod:`~simgpu.mem.fast_partition`).

A line-by-line transcription of the Python units for the GT200's DRAM (GDDR3: one
sub-channel and one bank group per partition, no four-activate window, bursts
``tCCD`` apart, reads booked at arrival): the same arithmetic, operand by operand, so
every time is the same double (tests/mem/test_fast_core.py checks that on random
streams).  The Python units are the reference; :func:`simgpu.mem.fast_memory.
supported` says which configs this covers.  The read and drained-write heaps are kept
as unordered sets (the units only take their least, their largest and their size).
"""
from __future__ import annotations

import numpy as np

from .fast_jit import njit
from .fast_layout import (
    ACT_CAP, B_ACT_AT, B_COL_OK, B_PRE_OK, BUS_CAP, F_BURST, F_BURST_SLOT, F_CL, F_HORIZON,
    F_RAS, F_RC, F_RCD, F_REFI, F_RFC, F_RP, F_RRD, F_RTP, F_RTW, F_WL, F_WR,
    F_WRITE_TO_READ, I_HIGH, I_LOW, I_PER_GROUP, I_READ_DEPTH, I_WRITE_DEPTH, N_ACT, N_BUS,
    N_PEND, N_READS, N_WRITES, R_DR_BATCH, R_DR_BANK, R_DR_BURSTS, R_DR_HIT, R_DR_ROW,
    R_DR_TAKEN, RF_DR_ENTER, S_ACTIVATIONS, S_BUSY, S_CONFLICTS, S_DRAIN_DUE,
    S_NEXT_REFRESH, S_QMAX, S_QTOTAL, S_REFRESHED, S_REFRESHES, S_ROW_HITS, S_SAMPLES,
    S_STALL, S_TAIL,
)


@njit(inline=True)
def scratch(st, row, m):
    """Row ``row`` of the int scratch, m items (a fresh array where m exceeds it)."""
    if m <= st.scr.shape[1]:
        return st.scr[row, :m]
    return np.empty(m, np.int64)


@njit(inline=True)
def scratch_f(st, row, m):
    """Row ``row`` of the float scratch, m items (a fresh array where m exceeds it)."""
    if m <= st.scf.shape[1]:
        return st.scf[row, :m]
    return np.empty(m)


@njit(inline=True)
def bisect_right(a, n, x):
    """Python's bisect.bisect_right over a[0:n] (the same probes, sorted or not)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


# --- the bus ---------------------------------------------------------------------------

@njit(inline=True)
def _bus_delete(st, s, i, k):
    """Delete bus reservations i..i+k-1 of sub-channel s."""
    bus, n = st.bus, st.sn[s, N_BUS]
    for j in range(i, n - k):
        bus[s, 0, j] = bus[s, 0, j + k]
        bus[s, 1, j] = bus[s, 1, j + k]
        bus[s, 2, j] = bus[s, 2, j + k]
    st.sn[s, N_BUS] = n - k


@njit(inline=True)
def _bus_insert(st, s, i, start, end, write):
    bus, n = st.bus, st.sn[s, N_BUS]
    if n >= BUS_CAP:
        raise RuntimeError("simgpu fast memory core: a sub-channel's bus reservations "
                           "overflowed; rerun with SIMGPU_NUMBA=0 and report it")
    for j in range(n, i, -1):
        bus[s, 0, j] = bus[s, 0, j - 1]
        bus[s, 1, j] = bus[s, 1, j - 1]
        bus[s, 2, j] = bus[s, 2, j - 1]
    bus[s, 0, i] = start
    bus[s, 1, i] = end
    bus[s, 2, i] = 1.0 if write else 0.0
    st.sn[s, N_BUS] = n + 1


@njit(inline=True)
def _prune(st, s, t):
    """SubChannel._prune: forget reservations too old to constrain one placed from t on."""
    n = st.sn[s, N_BUS]
    limit = t - st.pf[F_HORIZON]
    if n and st.bus[s, 1, 0] < limit:
        drop = bisect_right(st.bus[s, 1], n, limit)
        _bus_delete(st, s, 0, drop)


@njit
def _place(st, s, first, span, write, record):
    """SubChannel._place: the earliest bus slot of ``span`` from ``first`` on."""
    if st.sn[s, N_BUS] > 32:
        _prune(st, s, first)
    pf = st.pf
    wr, rw = pf[F_WRITE_TO_READ], pf[F_RTW]
    starts, ends, kinds = st.bus[s, 0], st.bus[s, 1], st.bus[s, 2]
    n = st.sn[s, N_BUS]
    c = first
    i = bisect_right(starts, n, c)
    if i:
        if kinds[i - 1] == 0.0:
            pad = rw if write else 0.0
        else:
            pad = 0.0 if write else wr
        e = ends[i - 1] + pad
        if e > c:
            c = e
    while i < n:
        if kinds[i] != 0.0:
            pad = rw if not write else 0.0
        else:
            pad = wr if write else 0.0
        if c + span + pad <= starts[i]:
            break
        if kinds[i] == 0.0:
            pad = rw if write else 0.0
        else:
            pad = 0.0 if write else wr
        if ends[i] + pad > c:
            c = ends[i] + pad
        i += 1
    if not record:
        return c
    end = c + span
    kw = 1.0 if write else 0.0
    if i and ends[i - 1] == c and kinds[i - 1] == kw:
        ends[i - 1] = end
        if i < n and starts[i] == end and kinds[i] == kw:
            ends[i - 1] = ends[i]
            _bus_delete(st, s, i, 1)
    elif i < n and starts[i] == end and kinds[i] == kw:
        starts[i] = c
    else:
        _bus_insert(st, s, i, c, end, write)
    if c + span > st.sf[s, S_TAIL]:
        st.sf[s, S_TAIL] = c + span
    return c


@njit
def _refresh(st, s, t):
    """SubChannel._refresh: the refreshes due by t."""
    sf = st.sf
    while sf[s, S_NEXT_REFRESH] <= t:
        at = _place(st, s, sf[s, S_NEXT_REFRESH], st.pf[F_RFC], False, True)
        sf[s, S_REFRESHED] = at + st.pf[F_RFC]
        st.orow[s, :] = -1
        sf[s, S_REFRESHES] += 1.0
        sf[s, S_NEXT_REFRESH] += st.pf[F_REFI]


# --- the banks ---------------------------------------------------------------------------

@njit
def _activate_slot(st, s, c, group, t):
    """SubChannel._activate_slot, GDDR3's branch (tRRD only, no tFAW)."""
    acts, groups = st.acts[s], st.actg[s]
    rrd = st.pf[F_RRD]
    n = st.sn[s, N_ACT]
    k = n
    if k and c < acts[n - 1] + rrd:
        while True:
            k = bisect_right(acts, n, c)
            if k and c < acts[k - 1] + rrd:
                c = acts[k - 1] + rrd
            elif k < n and acts[k] < c + rrd:
                c = acts[k] + rrd
            else:
                break
    if n >= ACT_CAP:
        raise RuntimeError("simgpu fast memory core: a sub-channel's activates "
                           "overflowed; rerun with SIMGPU_NUMBA=0 and report it")
    for j in range(n, k, -1):
        acts[j] = acts[j - 1]
        groups[j] = groups[j - 1]
    acts[k] = c
    groups[k] = group
    n += 1
    horizon = st.pf[F_HORIZON]
    if n > 64 and acts[0] < t - horizon:
        drop = bisect_right(acts, n, t - horizon)
        for j in range(n - drop):
            acts[j] = acts[j + drop]
            groups[j] = groups[j + drop]
        n -= drop
    st.sn[s, N_ACT] = n
    return c


@njit
def _open(st, s, bank, row, t):
    """SubChannel._open: open ``row`` in ``bank`` no sooner than t."""
    sf, bt, pf = st.sf, st.bt, st.pf
    sf[s, S_ACTIVATIONS] += 1.0
    if st.orow[s, bank] != -1:
        sf[s, S_CONFLICTS] += 1.0
        act = bt[s, B_PRE_OK, bank]
        act = (act if act > t else t) + pf[F_RP]
    else:
        act = t
    ready = bt[s, B_ACT_AT, bank] + pf[F_RC]
    if ready > act:
        act = ready
    if sf[s, S_REFRESHED] > act:
        act = sf[s, S_REFRESHED]
    act = _activate_slot(st, s, act, bank // st.pi[I_PER_GROUP], t)
    st.orow[s, bank] = row
    bt[s, B_ACT_AT, bank] = act
    cmd = act + pf[F_RCD]
    bt[s, B_COL_OK, bank] = cmd
    bt[s, B_PRE_OK, bank] = act + pf[F_RAS]
    return cmd


@njit
def _access(st, s, bank, row, bursts, t, write):
    """SubChannel._access (no tCCD_L spacing): (data start, data end)."""
    sf, bt, pf = st.sf, st.bt, st.pf
    if t >= sf[s, S_NEXT_REFRESH]:
        _refresh(st, s, t)
    if st.orow[s, bank] == row:
        sf[s, S_ROW_HITS] += 1.0
        cmd = bt[s, B_COL_OK, bank]
        if cmd < t:
            cmd = t
    else:
        cmd = _open(st, s, bank, row, t)
    burst = pf[F_BURST]
    if write:
        first = cmd + pf[F_WL]
    else:
        first = cmd + pf[F_CL]
    if bursts == 1:
        span = burst
    else:
        span = burst + (bursts - 1) * pf[F_BURST_SLOT]
    n = st.sn[s, N_BUS]
    if n and first < st.bus[s, 0, n - 1]:
        start = _place(st, s, first, span, write, True)
        end = start + span
    else:
        start = first
        end = start + span
        if n:
            prev = st.bus[s, 2, n - 1] != 0.0
            e = st.bus[s, 1, n - 1]
            if prev != write:
                e = e + (pf[F_WRITE_TO_READ] if prev else pf[F_RTW])
            if e > start:
                start = e
                end = start + span
            if prev == write and start == st.bus[s, 1, n - 1]:
                st.bus[s, 1, n - 1] = end
            else:
                _bus_insert(st, s, n, start, end, write)
                if n + 1 > 64:
                    _prune(st, s, t)
        else:
            _bus_insert(st, s, 0, start, end, write)
        if end > sf[s, S_TAIL]:
            sf[s, S_TAIL] = end
    if write:
        ok = end + pf[F_WR]
    else:
        ok = end - burst - pf[F_CL] + pf[F_RTP]
    if ok > bt[s, B_PRE_OK, bank]:
        bt[s, B_PRE_OK, bank] = ok
    sf[s, S_BUSY] += bursts * burst
    return start, end


# --- the queues ------------------------------------------------------------------------

@njit(inline=True)
def _pop_min(a, n):
    """Remove and return the least of a[0:n] (the caller shortens n)."""
    j = 0
    for i in range(1, n):
        if a[i] < a[j]:
            j = i
    v = a[j]
    a[j] = a[n - 1]
    return v


@njit(inline=True)
def _drop_upto(a, n, t):
    """Remove every item <= t from a[0:n]; the new length."""
    m = 0
    for i in range(n):
        if a[i] > t:
            a[m] = a[i]
            m += 1
    return m


@njit(inline=True)
def _reads_issued(st, s):
    n = st.sn[s, N_READS]
    if not n:
        return 0.0
    return st.rq[s, :n].max()


@njit(inline=True)
def _push_write(st, s, v):
    n = st.sn[s, N_WRITES]
    if n >= st.wq.shape[1]:
        raise RuntimeError("simgpu fast memory core: the drained-write heap overflowed")
    st.wq[s, n] = v
    st.sn[s, N_WRITES] = n + 1


@njit
def _drain(st, s, k, now):
    """SubChannel._drain: send k queued writes from ``now`` on, FR-FCFS."""
    pe, pq = st.pq_enter, st.pq
    n = st.sn[s, N_PEND]
    wl = st.pf[F_WL]
    if k == 1:
        enter, bank, row, bursts = pe[s, 0], pq[s, 0, 0], pq[s, 1, 0], pq[s, 2, 0]
        for j in range(n - 1):
            pe[s, j] = pe[s, j + 1]
            pq[s, 0, j] = pq[s, 0, j + 1]
            pq[s, 1, j] = pq[s, 1, j + 1]
            pq[s, 2, j] = pq[s, 2, j + 1]
        st.sn[s, N_PEND] = n - 1
        start, _ = _access(st, s, bank, row, bursts, enter if enter > now else now, True)
        _push_write(st, s, start - wl)
        return
    hit = scratch(st, R_DR_HIT, n)
    for i in range(n):
        hit[i] = st.orow[s, pq[s, 0, i]] == pq[s, 1, i]
    batch = scratch(st, R_DR_BATCH, n)     # positions in the queue, in service order
    nb = 0
    for i in range(n):
        if hit[i] and nb < k:
            batch[nb] = i
            nb += 1
    taken = scratch(st, R_DR_TAKEN, n)
    taken[:] = 0
    for i in range(nb):
        taken[batch[i]] = 1
    if nb < k:
        # the other writes grouped by (bank, row) in order of each group's oldest
        for i in range(n):
            if hit[i] or nb >= k:
                continue
            leader = True
            for j in range(i):
                if not hit[j] and pq[s, 0, j] == pq[s, 0, i] and pq[s, 1, j] == pq[s, 1, i]:
                    leader = False
                    break
            if not leader:
                continue
            for j in range(i, n):
                if nb >= k:
                    break
                if not hit[j] and pq[s, 0, j] == pq[s, 0, i] and pq[s, 1, j] == pq[s, 1, i]:
                    batch[nb] = j
                    nb += 1
                    taken[j] = 1
    # the batch's writes, then the queue without them
    b_enter = scratch_f(st, RF_DR_ENTER, nb)
    b_bank = scratch(st, R_DR_BANK, nb)
    b_row = scratch(st, R_DR_ROW, nb)
    b_bursts = scratch(st, R_DR_BURSTS, nb)
    for i in range(nb):
        j = batch[i]
        b_enter[i] = pe[s, j]
        b_bank[i], b_row[i], b_bursts[i] = pq[s, 0, j], pq[s, 1, j], pq[s, 2, j]
    m = 0
    for i in range(n):
        if not taken[i]:
            pe[s, m] = pe[s, i]
            pq[s, 0, m], pq[s, 1, m], pq[s, 2, m] = pq[s, 0, i], pq[s, 1, i], pq[s, 2, i]
            m += 1
    st.sn[s, N_PEND] = m
    for i in range(nb):
        enter = b_enter[i]
        start, _ = _access(st, s, b_bank[i], b_row[i], b_bursts[i],
                           enter if enter > now else now, True)
        _push_write(st, s, start - wl)


@njit
def sub_read(st, s, bank, row, bursts, arrive):
    """SubChannel.read: (its data are out, how long it waited for a place)."""
    sf, sn = st.sf, st.sn
    n = _drop_upto(st.rq[s], sn[s, N_READS], arrive)
    queued = n
    sf[s, S_SAMPLES] += 1.0
    sf[s, S_QTOTAL] += queued
    if queued > sf[s, S_QMAX]:
        sf[s, S_QMAX] = queued
    if queued >= st.pi[I_READ_DEPTH]:
        enter = _pop_min(st.rq[s], n)
        n -= 1
        sf[s, S_STALL] += enter - arrive
    else:
        enter = arrive
    sn[s, N_READS] = n
    if sn[s, N_PEND] and sf[s, S_TAIL] <= enter:
        _drain(st, s, sn[s, N_PEND], _reads_issued(st, s))
    start, end = _access(st, s, bank, row, bursts, enter, False)
    n = sn[s, N_READS]
    if n >= st.rq.shape[1]:
        raise RuntimeError("simgpu fast memory core: the read queue overflowed")
    st.rq[s, n] = start - st.pf[F_CL]
    sn[s, N_READS] = n + 1
    return end, enter - arrive


@njit
def sub_write(st, s, bank, row, bursts, arrive):
    """SubChannel.write (reads booked at arrival: none wait for a scheduler)."""
    sf, sn, pi = st.sf, st.sn, st.pi
    nw = _drop_upto(st.wq[s], sn[s, N_WRITES], arrive)
    enter = arrive
    if nw + sn[s, N_PEND] >= pi[I_WRITE_DEPTH] and nw:
        enter = _pop_min(st.wq[s], nw)
        nw -= 1
        sf[s, S_STALL] += enter - arrive
    sn[s, N_WRITES] = nw
    p = sn[s, N_PEND]
    if p >= st.pq_enter.shape[1]:
        raise RuntimeError("simgpu fast memory core: the write queue overflowed")
    st.pq_enter[s, p] = enter
    st.pq[s, 0, p], st.pq[s, 1, p], st.pq[s, 2, p] = bank, row, bursts
    p += 1
    sn[s, N_PEND] = p
    sf[s, S_DRAIN_DUE] = -1.0
    if sf[s, S_TAIL] <= enter:
        _drain(st, s, p, _reads_issued(st, s))
    elif p >= pi[I_HIGH]:
        _drain(st, s, p - pi[I_LOW], enter)
    return enter, enter - arrive


@njit
def sub_flush(st, s):
    """SubChannel.flush: drain every queued write; when the bus's last reservation ends."""
    st.sf[s, S_DRAIN_DUE] = -1.0
    if st.sn[s, N_PEND]:
        _drain(st, s, st.sn[s, N_PEND], _reads_issued(st, s))
    return st.sf[s, S_TAIL]
