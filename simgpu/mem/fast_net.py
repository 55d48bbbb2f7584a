"""The interconnect and the uncached path of the compiled memory core:
:class:`~simgpu.mem.interconnect.Port`'s booking, ``Interconnect.requests`` and
:func:`~simgpu.mem.uncached.uncached`, over :class:`~simgpu.mem.fast_layout.FastState`.

A port's reservation windows (a dict window -> flits in the Python unit) are a ring of
``I_RING`` windows per port, each slot tagged with its window: a slot's window is
forgotten when a window a ring later takes the slot over.  The ring spans four times
the windows a Python port keeps behind the interconnect's clock (``G_NET_CLOCK``, the
newest request, as ``Interconnect.clock``), so a booking up to three quarters of the
ring (1.5M SM cycles) ahead of the clock never takes over a window the Python port
would keep; one further ahead forgets that window (the core books no atomics, whose
replies may come that late).  A booking that would need a forgotten window stops the
run with an error instead of booking a wrong time.
"""
from __future__ import annotations

import numpy as np

from .fast_dram import scratch, scratch_f
from .fast_partition import serve_partition
from .fast_jit import njit
from .fast_layout import (
    F_CAPACITY, F_FLIT_CYCLES, F_HALF_TRIP, F_QUEUE_CYCLES, G_FLITS, G_HELD, G_NET_CLOCK, I_BANKS,
    I_FLIT, I_HEADER, I_INTERLEAVE, I_PARTS, I_PER_PORT, I_RING, I_ROW_BYTES, I_SKIP,
    I_SM_PORTS, PS_FLOOR, PS_MAX_WAIT, PS_WAITED, R_BACK, R_BANKS, R_COUNT, R_IDX, R_ORDER,
    R_OUT, R_PART_OF, R_ROWS, R_SIZES, RF_WAITS,
)

WINDOW = 64.0          # as simgpu.mem.interconnect.WINDOW


@njit(inline=True)
def locate(st, a):
    """AddressMap.locate of one address (one sub-channel, one bank group): (partition,
    bank, row)."""
    pi = st.pi
    interleave, n = pi[I_INTERLEAVE], pi[I_PARTS]
    chunk = a // interleave
    s = pi[I_SKIP]
    if s >= 0:
        low = chunk & ((1 << s) - 1)
        bit = (chunk >> s) & 1
        chunk = low | ((chunk >> (s + 1)) << s)
        local = ((chunk // n) * 2 + bit) * interleave + a % interleave
    else:
        local = (chunk // n) * interleave + a % interleave
    page = local // pi[I_ROW_BYTES]
    return chunk % n, page % pi[I_BANKS], page // pi[I_BANKS]


@njit(inline=True)
def _slot(st, port, k):
    """The ring slot of window k of ``port`` (taking it over from an older window)."""
    ring = st.pi[I_RING]
    j = k % ring
    tag = st.ptag[port, j]
    if tag != k:
        if k <= st.pstat[port, PS_FLOOR] or tag > k:
            raise RuntimeError("simgpu fast memory core: an interconnect booking in a window "
                               "its port's ring has forgotten (far behind the clock, or "
                               "taken over by a booking far ahead of it); rerun with "
                               "SIMGPU_NUMBA=0 and report it")
        if tag >= 0:
            if st.pused[port, j] != 0.0 and tag > st.pstat[port, PS_FLOOR]:
                st.pstat[port, PS_FLOOR] = tag
        st.ptag[port, j] = k
        st.pused[port, j] = 0.0
    return j


@njit
def _spill(st, port, t, kf, flits):
    """Port._spill: the booking when the window of t has no room for all of it."""
    capacity, fc = st.pf[F_CAPACITY], st.pf[F_FLIT_CYCLES]
    offset = t - kf * WINDOW
    left = float(flits)
    while True:
        j = _slot(st, port, np.int64(kf))
        have = st.pused[port, j]
        room = capacity - have
        if room >= left:
            st.pused[port, j] = have + left
            start = offset if offset > have * fc else have * fc
            end = kf * WINDOW + start + left * fc
            break
        if room > 0:
            st.pused[port, j] = capacity
            left -= room
        kf += 1.0
        offset = 0.0
    wait = end - t - flits * fc
    return wait if wait > 0 else 0.0


@njit
def book(st, port, t, flits):
    """Port.book: how long ``flits`` arriving at t wait beyond their own transfer."""
    kf = t // WINDOW
    j = _slot(st, port, np.int64(kf))
    have = st.pused[port, j]
    if have + flits <= st.pf[F_CAPACITY]:
        st.pused[port, j] = have + flits
        wait = have * st.pf[F_FLIT_CYCLES] - (t - kf * WINDOW)
        if wait <= 0:
            return 0.0
    else:
        wait = _spill(st, port, t, kf, flits)
    st.pstat[port, PS_WAITED] += wait
    if wait > st.pstat[port, PS_MAX_WAIT]:
        st.pstat[port, PS_MAX_WAIT] = wait
    return wait


@njit(inline=True)
def flits_of(st, data_bytes):
    """Interconnect.flits: flits of a packet carrying ``data_bytes``."""
    flit = st.pi[I_FLIT]
    n = -(-(st.pi[I_HEADER] + data_bytes) // flit)
    return n if n > 1 else 1


@njit
def uncached(st, addrs, sizes, lo, hi, t, sm, write, accepted):
    """uncached() of the transactions lo..hi-1 issued (translated) at t by SM sm over the
    modeled interconnect: (when the data are back, ``accepted`` raised where a
    partition's queue was full)."""
    m = hi - lo
    nparts = st.pi[I_PARTS]
    sm_ports = st.pi[I_SM_PORTS]
    part_of = scratch(st, R_PART_OF, m)
    banks = scratch(st, R_BANKS, m)
    rows = scratch(st, R_ROWS, m)
    sz = scratch(st, R_SIZES, m)
    order = scratch(st, R_ORDER, nparts)   # partitions in order of first transaction
    count = scratch(st, R_COUNT, nparts)
    count[:] = 0
    nord = 0
    for i in range(m):
        p, b, r = locate(st, addrs[lo + i])
        part_of[i], banks[i], rows[i], sz[i] = p, b, r, sizes[lo + i]
        if count[p] == 0:
            order[nord] = p
            nord += 1
        count[p] += 1
    header = flits_of(st, 0)
    s0 = sz[0]
    all_same = True
    for i in range(m):
        if sz[i] != s0:
            all_same = False
            break
    same = flits_of(st, s0) if all_same else -1
    if same >= 0:
        total = m * (same if write else header)
    elif write:
        total = 0
        for i in range(m):
            total += flits_of(st, sz[i])
    else:
        total = header * m
    out_flits = scratch(st, R_OUT, nparts)
    back_flits = scratch(st, R_BACK, nparts)
    for q in range(nord):
        p = order[q]
        n = count[p]
        if same >= 0:
            data = n * same
        else:
            data = 0
            for i in range(m):
                if part_of[i] == p:
                    data += flits_of(st, sz[i])
        if write:
            out_flits[p], back_flits[p] = data, header * n
        else:
            out_flits[p], back_flits[p] = header * n, data
    # Interconnect.requests
    if t > st.g[G_NET_CLOCK]:
        st.g[G_NET_CLOCK] = t
    per_port = st.pi[I_PER_PORT]
    left = t + book(st, sm // per_port, t, total)
    st.g[G_FLITS] += total
    queue = st.pf[F_QUEUE_CYCLES]
    waits = scratch_f(st, RF_WAITS, nparts)
    for q in range(nord):
        p = order[q]
        wait = left - t + book(st, sm_ports + p, left, out_flits[p])
        if wait > queue:
            st.g[G_HELD] += 1
            if t + wait - queue > accepted:
                accepted = t + wait - queue
        waits[p] = wait
    # the partitions, and the replies back
    half = st.pf[F_HALF_TRIP]
    back_total = 0
    last = t
    arrive = t + half
    idx = scratch(st, R_IDX, m)
    for q in range(nord):
        p = order[q]
        k = 0
        for i in range(m):
            if part_of[i] == p:
                idx[k] = i
                k += 1
        finish = serve_partition(st, p, banks, rows, sz, idx, k, arrive + waits[p], write)
        finish += book(st, sm_ports + nparts + p, finish, back_flits[p])   # part_out[p]
        if finish > last:
            last = finish
        back_total += back_flits[p]
    st.g[G_FLITS] += back_total
    done = last + half + book(st, sm_ports + 2 * nparts + sm // per_port, last, back_total)
    return (done if done > t else t), accepted
