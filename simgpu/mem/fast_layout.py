"""The compiled memory core's state: a struct of flat numpy arrays (``FastState``).

Each field is one array; the index constants below name the columns of the arrays
that hold several scalars.  The layout is the contract between the Python side
(:mod:`~simgpu.mem.fast_state`: made from, and written back into, the Python units)
and the compiled functions (:mod:`~simgpu.mem.fast_dram`, :mod:`~simgpu.mem.fast_path`),
and the one a compiled SM loop would take as it is: state as arrays in, arrays out.

Sub-channels are numbered ``partition * subchannels + s`` (GT200: one per partition);
the interconnect's ports ``sm_out[0..S)``, ``part_in[S..S+P)``, ``part_out[..)``,
``sm_in[..)`` with ``S`` SM ports and ``P`` partitions; TLB levels are the L1 TLBs,
then the L2 TLB, then the walker's PDE cache.
"""
from __future__ import annotations

from collections import namedtuple

from .fast_jit import ENABLED

# --- float parameters (FastState.pf) ---------------------------------------------------
(F_CL, F_WL, F_RCD, F_RP, F_RAS, F_RC, F_RRD, F_WR, F_RTP, F_RTW, F_BURST, F_BURST_SLOT,
 F_WRITE_TO_READ, F_REFI, F_RFC, F_HORIZON, F_HALF_TRIP, F_FLIT_CYCLES, F_CAPACITY,
 F_QUEUE_CYCLES, F_L2_HIT, F_WALK_CYCLES) = range(22)
N_PF = 22

# --- integer parameters (FastState.pi) ---------------------------------------------------
(I_PARTS, I_INTERLEAVE, I_BANKS, I_ROW_BYTES, I_BURST_BYTES, I_SKIP, I_READ_DEPTH,
 I_WRITE_DEPTH, I_HIGH, I_LOW, I_PER_GROUP, I_FLIT, I_HEADER, I_PER_PORT, I_SM_PORTS,
 I_MSHR_LIMIT, I_TLB, I_PAGE_SHIFT, I_PDE_SHIFT, I_PTE_BYTES, I_PD_BASE, I_PT_BASE,
 I_SMS_PER_L1, I_N_L1TLB, I_MIN_ACCESS, I_RING) = range(26)
N_PI = 26

# --- launch-wide scalars (FastState.g) ---------------------------------------------------
(G_DRAM_WAIT, G_ACCEPTED, G_DRAINED, G_HELD, G_FLITS, G_WALKS, G_WALK_READS, G_WALK_WAIT,
 G_MSHR_WAITS, G_MSHR_WAIT_CYCLES, G_LRU_CLOCK, G_NET_CLOCK) = range(12)
N_G = 12

# --- a sub-channel's scalars (FastState.sf[sub, :]) ---------------------------------------
(S_TAIL, S_BUSY, S_ROW_HITS, S_ACTIVATIONS, S_CONFLICTS, S_STALL, S_REFRESHES, S_SAMPLES,
 S_QTOTAL, S_QMAX, S_REFRESHED, S_NEXT_REFRESH, S_DRAIN_DUE) = range(13)
N_SF = 13

# --- a sub-channel's list lengths (FastState.sn[sub, :]) ----------------------------------
N_BUS, N_ACT, N_READS, N_WRITES, N_PEND = range(5)
N_SN = 5

# --- per bank times (FastState.bt[sub, :, bank]) -------------------------------------------
B_ACT_AT, B_COL_OK, B_PRE_OK = range(3)

# --- a partition's counts (FastState.part[p, :]) -------------------------------------------
P_TRANSACTIONS, P_BYTES, P_WRITEBACKS = range(3)

# --- a port's figures (FastState.pstat[port, :]) -------------------------------------------
PS_WAITED, PS_MAX_WAIT, PS_FLOOR = range(3)

# --- a TLB level's counts (FastState.tcount[level, :]) -------------------------------------
T_HITS, T_MISSES, T_LAST = range(3)

# --- rows of the scratch arrays (FastState.scr, ints; .scf, floats): the per-request
# working arrays, so that a request allocates nothing (a row holds SCR_WIDTH items;
# longer needs get a fresh array) --------------------------------------------------------
(R_PART_OF, R_BANKS, R_ROWS, R_SIZES, R_IDX, R_ORDER, R_COUNT, R_OUT, R_BACK,   # uncached
 R_SP_ORDER, R_SP_HIT,                                      # a partition's batch
 R_WALK_BANK, R_WALK_ROW, R_WALK_SIZE, R_WALK_IDX,          # a page walk's read
 R_DR_HIT, R_DR_BATCH, R_DR_TAKEN, R_DR_BANK, R_DR_ROW, R_DR_BURSTS,   # a write drain
 R_KEYS) = range(22)
N_SCR = 22
RF_WAITS, RF_DR_ENTER = range(2)
N_SCF = 2
SCR_WIDTH = 512

#: Capacities of the lists the Python units grow without bound but prune to a window
#: of recent entries (bus reservations, activates): far above what pruning leaves;
#: an overflow stops the run with an error rather than lose an entry.
BUS_CAP = 4096
ACT_CAP = 4096

FIELDS = (
    "pf", "pi", "g",                       # parameters, launch-wide scalars
    "sf", "sn", "orow", "bt",              # sub-channels: scalars, lengths, open rows, bank times
    "bus", "acts", "actg",                 # bus reservations [sub, start/end/write, i]; activates
    "rq", "wq", "pq_enter", "pq",          # read / drained-write heaps (as sets); pending writes
    "part",                                # partitions' counts
    "pused", "ptag", "pstat",              # interconnect ports: window rings, their figures
    "tv", "tr", "ts", "tshape", "tcount", "tlast",   # TLB levels
    "walkers",                             # when each page walker is free
    "mh", "mn",                            # miss entries per SM: [(until, n)], (count, in use)
    "scr", "scf",                          # scratch rows (no state: a request's working arrays)
)

#: The same arrays as a namedtuple, for the Python side (they share their memory).
FastArrays = namedtuple("FastArrays", FIELDS)

#: Each field's dtype and dimensions (what fast_state.take makes; C-contiguous).
KINDS = dict(pf=("f", 1), pi=("i", 1), g=("f", 1), sf=("f", 2), sn=("i", 2), orow=("i", 2),
             bt=("f", 3), bus=("f", 3), acts=("f", 2), actg=("i", 2), rq=("f", 2),
             wq=("f", 2), pq_enter=("f", 2), pq=("i", 3), part=("i", 2), pused=("f", 2),
             ptag=("i", 2), pstat=("f", 2), tv=("i", 3), tr=("f", 3), ts=("i", 3),
             tshape=("i", 2), tcount=("i", 2), tlast=("f", 1), walkers=("f", 1),
             mh=("f", 3), mn=("i", 2), scr=("i", 2), scf=("f", 2))

if ENABLED:
    # A numba StructRef: compiled functions take it as one pointer (a namedtuple of
    # arrays would be copied, and its arrays' counts touched, at every call).
    from numba.core import types as _types
    from numba.experimental import structref as _structref

    from .fast_jit import njit, unowned

    @_structref.register
    class FastStateType(_types.StructRef):
        def preprocess_fields(self, fields):
            return tuple((name, _types.unliteral(typ)) for name, typ in fields)

    class FastState(_structref.StructRefProxy):
        """The core's state (its fields: :data:`FIELDS`, read as attributes)."""

    _structref.define_proxy(FastState, FastStateType, list(FIELDS))

    STATE_TYPE = FastStateType([
        (name, _types.Array(_types.float64 if k == "f" else _types.int64, nd, "C"))
        for name, (k, nd) in KINDS.items()])

    @njit
    def _new_state(pf, pi, g, sf, sn, orow, bt, bus, acts, actg, rq, wq, pq_enter, pq, part,
                   pused, ptag, pstat, tv, tr, ts, tshape, tcount, tlast, walkers, mh, mn,
                   scr, scf):
        # the fields own nothing (fast_jit.unowned: no atomic reference counts in the
        # core's inner loops); the proxy keeps the arrays alive (new_state)
        u = unowned
        st = _structref.new(STATE_TYPE)
        st.pf, st.pi, st.g, st.sf, st.sn, st.orow, st.bt = u(pf), u(pi), u(g), u(sf), u(sn), \
            u(orow), u(bt)
        st.bus, st.acts, st.actg, st.rq, st.wq, st.pq_enter, st.pq = u(bus), u(acts), \
            u(actg), u(rq), u(wq), u(pq_enter), u(pq)
        st.part, st.pused, st.ptag, st.pstat = u(part), u(pused), u(ptag), u(pstat)
        st.tv, st.tr, st.ts, st.tshape, st.tcount, st.tlast = u(tv), u(tr), u(ts), \
            u(tshape), u(tcount), u(tlast)
        st.walkers, st.mh, st.mn, st.scr, st.scf = u(walkers), u(mh), u(mn), u(scr), u(scf)
        return st

    def new_state(arrays: "FastArrays") -> FastState:
        """The StructRef over ``arrays`` (the same memory; a compiled, cached constructor:
        the proxy's own is compiled anew in every process)."""
        for name, a in zip(FIELDS, arrays):
            k, nd = KINDS[name]
            if a.dtype != (float if k == "f" else "int64") or a.ndim != nd \
                    or not a.flags.c_contiguous:
                raise TypeError(f"FastState.{name}: {a.dtype} {a.ndim}-d array, "
                                f"not the layout's {k} {nd}-d")
        state = _new_state(*arrays)
        state.arrays = arrays      # the fields' owner: alive as long as the state is
        return state
else:
    FastState = FastArrays

    def new_state(arrays):
        return arrays
