"""The compiled memory core's state made from the Python units, and written back.

:func:`take` reads a :class:`~simgpu.mem.memory_system.MemorySystem`'s units (DRAM
sub-channels and partitions, interconnect ports, TLBs and walkers, miss entries) into
a :class:`~simgpu.mem.fast_layout.FastState`; :func:`give_back` writes a state back
into them, so that the Python units go on from where the core stopped (their
reports, an atomic, the end of a launch) exactly as if they had run all along.
"""
from __future__ import annotations

import math

import numpy as np

from . import fast_layout as L
from .address_space import PDE_BYTES
from . import interconnect
from .interconnect import KEPT_WINDOWS
from .fast_path import PDE_BYTES as CORE_PDE_BYTES

__all__ = ["take", "give_back", "RING"]

#: Reservation windows kept per interconnect port: 2^15 windows of 64 cycles, 2M SM
#: cycles; four times what a Python port keeps behind the interconnect's clock, so
#: bookings up to 1.5M cycles ahead of the clock fit beside them (simgpu.mem.fast_net).
RING = 4 * KEPT_WINDOWS

assert PDE_BYTES == CORE_PDE_BYTES


def _ports(net) -> list:
    return [*net.sm_out, *net.part_in, *net.part_out, *net.sm_in]


def take(ms, ring: int = RING) -> L.FastArrays:
    """The state of ``ms``'s units as arrays (they are not changed)."""
    config, amap, dram, net = ms.config, ms.amap, ms.dram, ms.net
    tm = dram.timing
    subs = [s for p in dram.parts for s in p.subs]
    sc0 = subs[0]
    tr, mshr = ms.translator, ms.mshr
    pf = np.zeros(L.N_PF)
    pf[[L.F_CL, L.F_WL, L.F_RCD, L.F_RP, L.F_RAS, L.F_RC, L.F_RRD, L.F_WR, L.F_RTP,
        L.F_RTW, L.F_BURST, L.F_BURST_SLOT, L.F_WRITE_TO_READ, L.F_REFI, L.F_RFC,
        L.F_HORIZON]] = [tm.cl, tm.wl, tm.rcd, tm.rp, tm.ras, tm.rc, tm.rrd, tm.wr, tm.rtp,
                         tm.rtw, tm.burst, tm.burst_slot, tm.write_to_read, tm.refi,
                         tm.rfc, tm.horizon]
    pf[L.F_HALF_TRIP] = net.half_trip
    pf[L.F_FLIT_CYCLES] = net.sm_out[0].flit_cycles
    pf[L.F_CAPACITY] = net.sm_out[0].capacity
    pf[L.F_QUEUE_CYCLES] = net.queue_cycles
    pi = np.zeros(L.N_PI, np.int64)
    pi[L.I_PARTS], pi[L.I_INTERLEAVE], pi[L.I_BANKS] = amap.n, amap.interleave, amap.banks
    pi[L.I_ROW_BYTES], pi[L.I_BURST_BYTES], pi[L.I_SKIP] = amap.row_bytes, dram.burst, amap.skip
    pi[L.I_READ_DEPTH], pi[L.I_WRITE_DEPTH] = tm.read_depth, tm.write_depth
    pi[L.I_HIGH], pi[L.I_LOW], pi[L.I_PER_GROUP] = tm.high, tm.low, sc0.per_group
    pi[L.I_FLIT], pi[L.I_HEADER], pi[L.I_PER_PORT] = net.flit, net.header, net.per_port
    pi[L.I_SM_PORTS] = len(net.sm_out)
    pi[L.I_MSHR_LIMIT] = mshr.limit if mshr is not None else 0
    pi[L.I_MIN_ACCESS] = config.memory.min_access_bytes
    pi[L.I_RING] = ring
    n_sub, banks = len(subs), sc0.banks
    g = np.zeros(L.N_G)
    g[L.G_DRAM_WAIT], g[L.G_ACCEPTED], g[L.G_DRAINED] = dram.wait, ms.accepted, ms._drained
    g[L.G_HELD], g[L.G_FLITS] = net.held, net.flits_sent
    g[L.G_NET_CLOCK] = net.clock[0]
    # the sub-channels
    sf = np.zeros((n_sub, L.N_SF))
    sn = np.zeros((n_sub, L.N_SN), np.int64)
    orow = np.zeros((n_sub, banks), np.int64)
    bt = np.zeros((n_sub, 3, banks))
    bus = np.zeros((n_sub, 3, L.BUS_CAP))
    acts = np.zeros((n_sub, L.ACT_CAP))
    actg = np.zeros((n_sub, L.ACT_CAP), np.int64)
    pcap = 2 * max(tm.write_depth, tm.high) + 64
    rq = np.zeros((n_sub, tm.read_depth + 64))
    wq = np.zeros((n_sub, pcap))
    pq_enter = np.zeros((n_sub, pcap))
    pq = np.zeros((n_sub, 3, pcap), np.int64)
    for s, sc in enumerate(subs):
        sf[s, [L.S_TAIL, L.S_BUSY, L.S_ROW_HITS, L.S_ACTIVATIONS, L.S_CONFLICTS, L.S_STALL,
               L.S_REFRESHES, L.S_SAMPLES, L.S_QTOTAL, L.S_QMAX, L.S_REFRESHED,
               L.S_NEXT_REFRESH, L.S_DRAIN_DUE]] = [
            sc.tail, sc.busy, sc.row_hits, sc.activations, sc.row_conflicts, sc.stall,
            sc.refreshes, sc.samples, sc.queued_total, sc.queued_max, sc.refreshed,
            sc.next_refresh, sc.drain_due]
        orow[s] = sc.open_row
        bt[s, L.B_ACT_AT], bt[s, L.B_COL_OK], bt[s, L.B_PRE_OK] = sc.act_at, sc.col_ok, sc.pre_ok
        nb = len(sc.bus_start)
        bus[s, 0, :nb], bus[s, 1, :nb], bus[s, 2, :nb] = sc.bus_start, sc.bus_end, sc.bus_write
        na = len(sc.acts)
        acts[s, :na], actg[s, :na] = sc.acts, sc.act_groups
        rq[s, :len(sc.reads)] = sc.reads
        wq[s, :len(sc.writes)] = sc.writes
        for j, (enter, bank, row, bursts) in enumerate(sc.pending):
            pq_enter[s, j] = enter
            pq[s, :, j] = bank, row, bursts
        sn[s] = nb, na, len(sc.reads), len(sc.writes), len(sc.pending)
    part = np.array([[p.transactions, p.bytes, p.writebacks] for p in dram.parts], np.int64)
    # the interconnect's ports
    ports = _ports(net)
    pused = np.zeros((len(ports), ring))
    ptag = np.full((len(ports), ring), -1, np.int64)
    pstat = np.zeros((len(ports), 3))
    # the windows a port has not dropped yet but would (more than KEPT_WINDOWS behind
    # the clock) are forgotten here: those behind and replies far ahead of the clock
    # need not fit the ring together
    behind = net.clock[0] // interconnect.WINDOW - KEPT_WINDOWS
    for q, port in enumerate(ports):
        floor = max(port.floor, behind)
        for k, v in port.used.items():
            if k <= floor:
                continue
            j = int(k) % ring
            if ptag[q, j] >= 0:
                raise ValueError(
                    f"interconnect bookings spread over more than the compiled core's ring "
                    f"of {ring} windows: cycles {ptag[q, j] * interconnect.WINDOW:.0f} and "
                    f"{k * interconnect.WINDOW:.0f} (the clock at {net.clock[0]:.0f})")
            ptag[q, j], pused[q, j] = int(k), v
        pstat[q] = port.waited, port.max_wait, floor
    # the TLBs and walkers
    levels = tr.state.levels() if tr is not None else []
    sets = max([lv.sets for lv in levels], default=1)
    ways = max([lv.ways for lv in levels] + [1])
    nl = max(len(levels), 1)
    tv = np.full((nl, sets, ways), -1, np.int64)
    trd = np.zeros((nl, sets, ways))
    ts = np.zeros((nl, sets, ways), np.int64)
    tshape = np.zeros((nl, 2), np.int64)
    tcount = np.zeros((nl, 3), np.int64)
    tlast = np.zeros(nl)
    clock = 0
    for lv_i, lv in enumerate(levels):
        tshape[lv_i] = lv.sets, lv.ways
        tcount[lv_i] = lv.hits, lv.misses, lv.last
        tlast[lv_i] = lv.last_ready
        for s_i, line in enumerate(lv.lines):
            for w, (vpn, ready) in enumerate(line.items()):     # LRU first
                clock += 1
                tv[lv_i, s_i, w], trd[lv_i, s_i, w], ts[lv_i, s_i, w] = vpn, ready, clock
    g[L.G_LRU_CLOCK] = clock
    if tr is not None:
        pi[L.I_TLB] = 1
        pi[L.I_PAGE_SHIFT], pi[L.I_PDE_SHIFT] = tr.shift, tr.pde_shift
        pi[L.I_PTE_BYTES] = tr.pte_bytes
        pi[L.I_PD_BASE], pi[L.I_PT_BASE] = tr.tables.pd_base, tr.tables.pt_base
        pi[L.I_SMS_PER_L1] = config.tlb.sms_per_l1
        pi[L.I_N_L1TLB] = len(tr.state.l1)
        pf[L.F_L2_HIT], pf[L.F_WALK_CYCLES] = tr.l2_hit, tr.walk_cycles
        walkers = np.array(tr.walker_free, dtype=float)
        g[L.G_WALKS], g[L.G_WALK_READS], g[L.G_WALK_WAIT] = tr.walks, tr.walk_reads, tr.walk_wait
    else:
        walkers = np.zeros(1)
    # the miss entries
    sms = config.gpu.sm_count
    cap = (mshr.limit if mshr is not None else 0) + 64
    mh = np.zeros((sms, cap, 2))
    mn = np.zeros((sms, 2), np.int64)
    if mshr is not None:
        for sm in range(sms):
            for j, (until, n) in enumerate(mshr.held[sm]):
                mh[sm, j] = until, n
            mn[sm] = len(mshr.held[sm]), mshr.in_use[sm]
        g[L.G_MSHR_WAITS], g[L.G_MSHR_WAIT_CYCLES] = mshr.waits, mshr.wait_cycles
    width = max(L.SCR_WIDTH, pcap)
    return L.FastArrays(pf, pi, g, sf, sn, orow, bt, bus, acts, actg, rq, wq, pq_enter, pq,
                        part, pused, ptag, pstat, tv, trd, ts, tshape, tcount, tlast,
                        walkers, mh, mn, np.zeros((L.N_SCR, width), np.int64),
                        np.zeros((L.N_SCF, width)))


def give_back(st: L.FastArrays, ms) -> None:
    """Write ``st`` back into ``ms``'s units (the inverse of :func:`take`)."""
    dram, net, tr, mshr = ms.dram, ms.net, ms.translator, ms.mshr
    g = st.g
    dram.wait, ms.accepted, ms._drained = float(g[L.G_DRAM_WAIT]), float(g[L.G_ACCEPTED]), \
        float(g[L.G_DRAINED])
    net.held, net.flits_sent = int(g[L.G_HELD]), int(g[L.G_FLITS])
    net.clock[0] = float(g[L.G_NET_CLOCK])
    subs = [s for p in dram.parts for s in p.subs]
    for s, sc in enumerate(subs):
        f = st.sf[s].tolist()
        sc.tail, sc.busy, sc.stall = f[L.S_TAIL], f[L.S_BUSY], f[L.S_STALL]
        sc.row_hits, sc.activations = int(f[L.S_ROW_HITS]), int(f[L.S_ACTIVATIONS])
        sc.row_conflicts, sc.refreshes = int(f[L.S_CONFLICTS]), int(f[L.S_REFRESHES])
        sc.samples, sc.queued_total = int(f[L.S_SAMPLES]), int(f[L.S_QTOTAL])
        sc.queued_max = int(f[L.S_QMAX])
        sc.refreshed, sc.drain_due = f[L.S_REFRESHED], f[L.S_DRAIN_DUE]
        sc.next_refresh = f[L.S_NEXT_REFRESH] if math.isfinite(f[L.S_NEXT_REFRESH]) else math.inf
        sc.open_row = st.orow[s].tolist()
        sc.act_at = st.bt[s, L.B_ACT_AT].tolist()
        sc.col_ok = st.bt[s, L.B_COL_OK].tolist()
        sc.pre_ok = st.bt[s, L.B_PRE_OK].tolist()
        nb, na, nr, nw, npend = st.sn[s].tolist()
        sc.bus_start[:] = st.bus[s, 0, :nb].tolist()
        sc.bus_end[:] = st.bus[s, 1, :nb].tolist()
        sc.bus_write[:] = [bool(x) for x in st.bus[s, 2, :nb]]
        sc.acts[:] = st.acts[s, :na].tolist()
        sc.act_groups[:] = st.actg[s, :na].tolist()
        sc.reads[:] = sorted(st.rq[s, :nr].tolist())       # (a sorted list is a heap)
        sc.writes[:] = sorted(st.wq[s, :nw].tolist())
        sc.pending = [(float(st.pq_enter[s, j]), int(st.pq[s, 0, j]), int(st.pq[s, 1, j]),
                       int(st.pq[s, 2, j])) for j in range(npend)]
    for p, row in zip(dram.parts, st.part.tolist()):
        p.transactions, p.bytes, p.writebacks = row
    for q, port in enumerate(_ports(net)):
        tags, used = st.ptag[q], st.pused[q]
        keep = (tags >= 0) & (used != 0.0)
        port.used = dict(zip(tags[keep].astype(float).tolist(), used[keep].tolist()))
        port.waited, port.max_wait = float(st.pstat[q, 0]), float(st.pstat[q, 1])
        port.floor = max(port.floor, float(st.pstat[q, 2]))
    if tr is not None:
        for lv_i, lv in enumerate(tr.state.levels()):
            lv.hits, lv.misses, lv.last = (int(x) for x in st.tcount[lv_i])
            lv.last_ready = float(st.tlast[lv_i])
            for s_i in range(len(lv.lines)):
                vpns, readies, stamps = st.tv[lv_i, s_i], st.tr[lv_i, s_i], st.ts[lv_i, s_i]
                slots = [w for w in range(lv.ways) if vpns[w] != -1]
                slots.sort(key=lambda w: stamps[w])
                lv.lines[s_i] = {int(vpns[w]): float(readies[w]) for w in slots}
        tr.walker_free[:] = st.walkers.tolist()
        tr.walks, tr.walk_reads = int(g[L.G_WALKS]), int(g[L.G_WALK_READS])
        tr.walk_wait = float(g[L.G_WALK_WAIT])
    if mshr is not None:
        for sm in range(len(mshr.held)):
            k, in_use = st.mn[sm].tolist()
            mshr.held[sm] = sorted([[float(u), int(n)] for u, n in st.mh[sm, :k].tolist()])
            mshr.in_use[sm] = in_use
        mshr.waits, mshr.wait_cycles = int(g[L.G_MSHR_WAITS]), float(g[L.G_MSHR_WAIT_CYCLES])
