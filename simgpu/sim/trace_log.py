"""The recorded trace of a wave as arrays, for the compiled ``trace-block`` replay.

:class:`~simgpu.sim.trace_record.Wave` appends each recorded event to the Python
queues of the blocks it is in (a tuple per block and event), which the Python replay
(:class:`~simgpu.sim.trace_replay.TraceSource`, the reference) pops.  Where the
compiled loop (:mod:`~simgpu.sim.trace_compiled`) times the launch, :class:`LoggedWave`
records instead into a :class:`WaveLog`: per block a queue of rows (numpy, filled by
the compiled functions below, no Python object per block and event), with the
transactions of the wave's memory instructions in one flat arena, the numbers of the
loads each wait needs in a per-block table, and :func:`take` copies a block's next
rows into the loop's batch arrays in the loop's own layout.  Profiled before (rank,
2^18 nodes, sim:gtx260, 2026-11-26): the per-block tuples and their conversion to the
loop's rows (``Wave._add``, ``Wave.wait``, ``_Feed.refill``) took about a fifth of the
replayed kernels' CPU time.

What the loop needs from the Python replay's entries, and where a row keeps it: the
block's warp instructions before the event (``R_K``); a memory instruction's flags,
its warps' transactions (``R_CUT``, ``R_NW``: warps of the arena) or its shared
replays, and the number under which the loop keeps when its data are back
(``R_NUM``: each memory item reserves one number per block of the wave, so that a
wait finds a dependence's number as its item's first plus the block, with no table
per item); a wait's numbers (``R_DEP``, ``R_NDEP`` in the block's table); a
candidate for the teaching view's sample (``R_ITEM``, ``R_POS``: the item, kept by the
wave, and the block's place among its blocks, as the Python replay passes them).
What is held stays what the fastest block has recorded ahead of the slowest: rows,
numbers and transactions that every block has taken are dropped (compacted) as the
arrays fill, before they grow.
"""
from __future__ import annotations

import numpy as np

from ..mem.coalescer import SECTOR_BYTES, FlatWarps
from ..mem.fast_jit import njit
from . import trace_loop as L
from .trace_record import MEMORY, Wave

(R_TAG, R_K, R_FLAGS, R_CUT, R_NW, R_NUM, R_DEP, R_NDEP, R_REPLAYS, R_ITEM,
 R_POS) = range(11)
N_R = 11
FL_CANDIDATE = 16                   # a row whose item carries a sample (the replay decides)
OK, NEED_ROWS, NEED_ARENA, NEED_DEPS, NEED_WIDE = range(5)
LS_NCUT, LS_NADDR = range(2)        # ls: the arena's used lengths


@njit
def _compact_rows(rows, head, tail, b):
    """Move block b's live rows to the front of its queue."""
    h = head[b]
    if h:
        n = tail[b] - h
        for i in range(n):
            rows[b, i, :] = rows[b, h + i, :]
        head[b], tail[b] = 0, n


@njit
def _rows_room(rows, head, tail, blocks, nb):
    """Whether each of the blocks has a free row (compacting those that are full)."""
    cap = rows.shape[1]
    for i in range(nb):
        b = blocks[i]
        if tail[b] >= cap:
            # (compacted only where that frees half the queue: moving the live rows then
            # costs no more than the appends that filled it; else the queue grows)
            if 2 * head[b] < cap:
                return False
            _compact_rows(rows, head, tail, b)
    return True


@njit
def _compact_arena(rows, head, tail, ls, taddr, tsize, tcut):
    """Drop the arena's transactions that no block has left to take."""
    ncut = ls[LS_NCUT]
    low = ncut
    for b in range(rows.shape[0]):
        for i in range(head[b], tail[b]):
            if rows[b, i, R_TAG] == L.T_MEMORY and rows[b, i, R_NW] > 0:
                if rows[b, i, R_CUT] < low:
                    low = rows[b, i, R_CUT]
                break                      # (a block's rows take the arena in order)
    a0 = tcut[low] if low < ncut else ls[LS_NADDR]
    if 2 * low < ncut or 2 * a0 < ls[LS_NADDR]:
        return              # (frees less than half: the arena grows instead, see _rows_room)
    na = ls[LS_NADDR] - a0
    for i in range(na):
        taddr[i] = taddr[a0 + i]
        tsize[i] = tsize[a0 + i]
    for i in range(ncut - low):
        tcut[i] = tcut[low + i] - a0
    ls[LS_NCUT], ls[LS_NADDR] = ncut - low, na
    for b in range(rows.shape[0]):
        for i in range(head[b], tail[b]):
            if rows[b, i, R_TAG] == L.T_MEMORY and rows[b, i, R_NW] > 0:
                rows[b, i, R_CUT] -= low


@njit
def _block_cuts(warp, wpb, first, bl, lo, hi):
    """The access's blocks (wave-local, ascending) and each one's warps lo:hi among the
    access's warps; returns (blocks, warps)."""
    nb = 0
    nw = 0
    prev_w = -1
    prev_b = -1
    for i in range(warp.shape[0]):
        w = warp[i]
        if w != prev_w:
            prev_w = w
            b = w // wpb - first
            if b != prev_b:
                if nb:
                    hi[nb - 1] = nw
                bl[nb] = b
                lo[nb] = nw
                nb += 1
                prev_b = b
            nw += 1
    if nb:
        hi[nb - 1] = nw
    return nb, nw


@njit
def log_memory(rows, head, tail, ls, taddr, tsize, tcut, issued, warp, wpb, first, flags,
               addrs, sizes, wcuts, replays, num_base, item, mask, bl, lo, hi, limit):
    """Append a memory instruction to the queues of its blocks (``mask`` set to them).
    Global: the warps' transactions ``addrs[wcuts[i]:wcuts[i+1]]`` (``sizes``, empty:
    all SECTOR_BYTES) join the arena; shared: ``replays`` per warp.  Returns OK or
    what must grow first (nothing appended then)."""
    nb, nw = _block_cuts(warp, wpb, first, bl, lo, hi)
    if not _rows_room(rows, head, tail, bl, nb):
        return NEED_ROWS
    shared = (flags & L.FL_SHARED) != 0
    c0 = 0
    m = 0
    if not shared:
        m = wcuts[nw] - wcuts[0]
        if ls[LS_NCUT] + nw + 1 > tcut.shape[0] or ls[LS_NADDR] + m > taddr.shape[0]:
            _compact_arena(rows, head, tail, ls, taddr, tsize, tcut)
            if ls[LS_NCUT] + nw + 1 > tcut.shape[0] or ls[LS_NADDR] + m > taddr.shape[0]:
                return NEED_ARENA
    top = num_base + bl[nb - 1] if nb else num_base
    top = max(top, item, ls[LS_NCUT] + nw + 1)
    for p in range(nb):
        top = max(top, issued[bl[p]])
    if shared:
        t = 0
        for i in range(replays.shape[0]):
            t += replays[i]
        top = max(top, t)
    if top > limit:
        return NEED_WIDE    # (a value the rows' integers cannot hold: nothing appended)
    if not shared:
        c0 = ls[LS_NCUT]
        a0 = ls[LS_NADDR]
        w0 = wcuts[0]
        for i in range(nw + 1):
            tcut[c0 + i] = a0 + wcuts[i] - w0
        for i in range(m):
            taddr[a0 + i] = addrs[w0 + i]
            tsize[a0 + i] = sizes[w0 + i] if sizes.shape[0] else SECTOR_BYTES
        # (a warp's cut is shared with the next: the last one ends the instruction)
        ls[LS_NCUT] = c0 + nw + 1
        ls[LS_NADDR] = a0 + m
    mask[:] = False
    for p in range(nb):
        b = bl[p]
        mask[b] = True
        r = tail[b]
        tail[b] = r + 1
        rows[b, r, R_TAG] = L.T_MEMORY
        rows[b, r, R_K] = issued[b]
        rows[b, r, R_FLAGS] = flags
        rows[b, r, R_NUM] = num_base + b
        rows[b, r, R_DEP] = 0
        rows[b, r, R_NDEP] = 0
        rows[b, r, R_ITEM] = item
        rows[b, r, R_POS] = p
        if shared:
            s = 0
            for i in range(lo[p], hi[p]):
                s += replays[i]
            rows[b, r, R_CUT], rows[b, r, R_NW], rows[b, r, R_REPLAYS] = 0, 0, s
        else:
            rows[b, r, R_CUT], rows[b, r, R_NW] = c0 + lo[p], hi[p] - lo[p]
            rows[b, r, R_REPLAYS] = 0
    return OK


@njit
def _deps_room(rows, head, tail, dlog, dtail, b, nd):
    """Whether block b's dependence table has nd free places (compacted if needed)."""
    if dtail[b] + nd <= dlog.shape[1]:
        return True
    low = dtail[b]
    for i in range(head[b], tail[b]):
        if rows[b, i, R_TAG] == L.T_WAIT:
            low = rows[b, i, R_DEP]
            break
    if 2 * low < dtail[b]:
        return False        # (frees less than half: grows instead, see _rows_room)
    n = dtail[b] - low
    for i in range(n):
        dlog[b, i] = dlog[b, low + i]
    dtail[b] = n
    for i in range(head[b], tail[b]):
        if rows[b, i, R_TAG] == L.T_WAIT:
            rows[b, i, R_DEP] -= low
    return dtail[b] + nd <= dlog.shape[1]


@njit
def log_wait(rows, head, tail, dlog, dtail, issued, masks, bases, present, need, bl, limit):
    """A wait of the blocks in ``present`` for the memory items ``bases`` (their first
    numbers) pending in ``masks`` (one row per item): appended to each block with one
    of them pending (``need``).  Returns OK or what must grow first."""
    nd = masks.shape[0]
    count = present.shape[0]
    nb = 0
    for b in range(count):
        x = False
        if present[b]:
            for d in range(nd):
                if masks[d, b]:
                    x = True
                    break
        need[b] = x
        if x:
            bl[nb] = b
            nb += 1
    if not _rows_room(rows, head, tail, bl, nb):
        return NEED_ROWS
    for p in range(nb):
        if not _deps_room(rows, head, tail, dlog, dtail, bl[p], nd):
            return NEED_DEPS
    for p in range(nb):
        if issued[bl[p]] > limit or dtail[bl[p]] + nd > limit:
            return NEED_WIDE
    for p in range(nb):
        b = bl[p]
        d0 = dtail[b]
        q = d0
        for d in range(nd):
            if masks[d, b]:
                dlog[b, q] = bases[d] + b
                q += 1
        dtail[b] = q
        r = tail[b]
        tail[b] = r + 1
        rows[b, r, :] = 0
        rows[b, r, R_TAG] = L.T_WAIT
        rows[b, r, R_K] = issued[b]
        rows[b, r, R_DEP] = d0
        rows[b, r, R_NDEP] = q - d0
        rows[b, r, R_ITEM] = -1
    return OK


@njit
def log_fence(rows, head, tail, issued, present, bl, limit):
    """A fence at syncthreads() of the blocks in ``present``."""
    nb = 0
    for b in range(present.shape[0]):
        if present[b]:
            bl[nb] = b
            nb += 1
    if not _rows_room(rows, head, tail, bl, nb):
        return NEED_ROWS
    for p in range(nb):
        if issued[bl[p]] > limit:
            return NEED_WIDE
    for p in range(nb):
        b = bl[p]
        r = tail[b]
        tail[b] = r + 1
        rows[b, r, :] = 0
        rows[b, r, R_TAG] = L.T_FENCE
        rows[b, r, R_K] = issued[b]
        rows[b, r, R_ITEM] = -1
    return OK


@njit
def take(rows, head, tail, dlog, taddr, tsize, tcut, b, s, ent, offs, txa, txs, deps,
         batch, done, final_k, cand):
    """Block b's next rows (at most ``batch``) into slot s's batch arrays, in the loop's
    layout (its transactions, their warps' offsets, its waits' numbers copied); its end
    after them where it has ended and there is room.  ``cand``: per sample candidate
    (entry, item, place).  Returns (entries, candidates), or (-1, -1) where the first
    row does not fit the slot's arrays (the caller grows them: ``cand[0]`` the
    transactions, ``cand[1]`` the offsets, ``cand[2]`` the numbers needed)."""
    tcap, ocap, dcap = txa.shape[1], offs.shape[1], deps.shape[1]
    n = nc = t = o = d = 0
    h = head[b]
    while h < tail[b] and n < batch:
        tag = rows[b, h, R_TAG]
        ent[s, n, :] = 0
        ent[s, n, L.E_TAG] = tag
        ent[s, n, L.E_K] = rows[b, h, R_K]
        if tag == L.T_MEMORY:
            flags = rows[b, h, R_FLAGS]
            nw = rows[b, h, R_NW]
            if nw:
                c = rows[b, h, R_CUT]
                a0, a1 = tcut[c], tcut[c + nw]
                m = a1 - a0
                if t + m > tcap or o + nw + 1 > ocap:
                    if n:
                        break
                    cand[0], cand[1], cand[2] = t + m, o + nw + 1, 0
                    return -1, -1
                for i in range(m):
                    txa[s, t + i] = taddr[a0 + i]
                    txs[s, t + i] = tsize[a0 + i]
                for i in range(nw + 1):
                    offs[s, o + i] = tcut[c + i] - a0 + t
                ent[s, n, L.E_OFF] = o
                ent[s, n, L.E_NW] = nw
                o += nw + 1
                t += m
            if flags & FL_CANDIDATE:
                flags &= ~FL_CANDIDATE
                cand[3 * nc], cand[3 * nc + 1], cand[3 * nc + 2] = \
                    n, rows[b, h, R_ITEM], rows[b, h, R_POS]
                nc += 1
            ent[s, n, L.E_FLAGS] = flags
            ent[s, n, L.E_READY] = rows[b, h, R_NUM]
            ent[s, n, L.E_REPLAYS] = rows[b, h, R_REPLAYS]
        elif tag == L.T_WAIT:
            nd = rows[b, h, R_NDEP]
            if d + nd > dcap:
                if n:
                    break
                cand[0], cand[1], cand[2] = 0, 0, d + nd
                return -1, -1
            d0 = rows[b, h, R_DEP]
            for i in range(nd):
                deps[s, d + i] = dlog[b, d0 + i]
            ent[s, n, L.E_DEP] = d
            ent[s, n, L.E_NDEP] = nd
            d += nd
        n += 1
        h += 1
    head[b] = h
    if h == tail[b] and done and n < batch:
        ent[s, n, :] = 0
        ent[s, n, L.E_TAG] = L.T_END
        ent[s, n, L.E_K] = final_k
        n += 1
    return n, nc


class WaveLog:
    """A wave's recorded rows, per block, and its transactions (see the module's
    docstring); grows where a compaction leaves too little room."""

    #: Initial capacities: rows and wait numbers per block, transactions and warp cuts
    #: of the wave (tests make them tiny, to compact and grow all the time).
    ROWS, DEPS, ADDRESSES, CUTS = 64, 256, 1 << 14, 1 << 12
    #: The rows are int32, the log's largest part at half the memory, until a value to
    #: be stored passes NARROW (an instruction count, an item number, an arena or table
    #: place); from then on int64 (tests lower NARROW to widen mid-launch).
    NARROW = int(np.iinfo(np.int32).max)

    def __init__(self, count: int):
        self.count = count
        self.rows = np.zeros((count, self.ROWS, N_R), np.int32)
        self.limit = self.NARROW
        self.head = np.zeros(count, np.int64)
        self.tail = np.zeros(count, np.int64)
        self.dlog = np.zeros((count, self.DEPS), np.int64)
        self.dtail = np.zeros(count, np.int64)
        self.ls = np.zeros(2, np.int64)
        self.taddr = np.zeros(self.ADDRESSES, np.int64)
        self.tsize = np.zeros(self.ADDRESSES, np.int32)      # (a transaction's bytes)
        self.tcut = np.zeros(self.CUTS, np.int64)
        self.bl = np.zeros(count, np.int64)         # scratch: an event's blocks, their
        self.lo = np.zeros(count, np.int64)         # warps lo:hi among the access's
        self.hi = np.zeros(count, np.int64)
        self.need = np.zeros(count, dtype=bool)

    def held(self, b: int) -> int:
        """Rows block b has yet to take."""
        return int(self.tail[b] - self.head[b])

    def grow(self, need: int, extra: int = 0) -> None:
        """Double what ``need`` (NEED_*) says is short (at least ``extra`` more), or
        widen the rows to int64 (NEED_WIDE)."""
        if need == NEED_WIDE:
            self.rows = self.rows.astype(np.int64)
            self.limit = int(np.iinfo(np.int64).max)
        elif need == NEED_ROWS:
            r = np.zeros((self.count, 2 * self.rows.shape[1], N_R), self.rows.dtype)
            r[:, :self.rows.shape[1]] = self.rows
            self.rows = r
        elif need == NEED_DEPS:
            d = np.zeros((self.count, 2 * self.dlog.shape[1] + extra), np.int64)
            d[:, :self.dlog.shape[1]] = self.dlog
            self.dlog = d
        else:
            for name in ("taddr", "tsize", "tcut"):
                a = getattr(self, name)
                b = np.zeros(2 * a.size + extra, a.dtype)
                b[:a.size] = a
                setattr(self, name, b)

    def memory(self, issued, acc, wpb, first, flags, tx, replays, num_base, mask):
        """Append a memory instruction (``tx``: its arrays (addresses, sizes, warp cuts)
        for a global one, ``replays`` per warp for a shared one)."""
        addrs, sizes, wcuts = tx
        while True:
            code = log_memory(self.rows, self.head, self.tail, self.ls, self.taddr,
                              self.tsize, self.tcut, issued, acc.warp, wpb, first, flags,
                              addrs, sizes, wcuts, replays, num_base, num_base, mask, self.bl,
                              self.lo, self.hi, self.limit)
            if code == OK:
                return
            self.grow(code, addrs.size + wcuts.size)

    def wait(self, issued, masks, bases, present):
        """Append a wait; returns the blocks that have one of the items pending (mask)."""
        while True:
            code = log_wait(self.rows, self.head, self.tail, self.dlog, self.dtail, issued,
                            masks, bases, present, self.need, self.bl, self.limit)
            if code == OK:
                return self.need.copy()
            self.grow(code, masks.shape[0])

    def fence(self, issued, present):
        while True:
            code = log_fence(self.rows, self.head, self.tail, issued, present, self.bl,
                             self.limit)
            if code == OK:
                return
            self.grow(code)


_EMPTY = np.zeros(0, np.int64)


def _flat(tx) -> tuple:
    """A global access's transactions as (addresses, sizes (empty: all SECTOR_BYTES),
    warp cuts), int64 arrays, from the coalescer's FlatWarps or per-warp lists."""
    if tx.__class__ is FlatWarps:
        return (np.asarray(tx.addresses, np.int64),
                _EMPTY if tx.sizes is None else np.asarray(tx.sizes, np.int64),
                np.asarray(tx.cuts, np.int64))
    addresses: list = []
    sizes: list = []
    cut = [0]
    for a, z in tx:
        addresses += a
        sizes += z
        cut.append(len(addresses))
    return (np.array(addresses, np.int64), np.array(sizes, np.int64),
            np.array(cut, np.int64))


class LoggedWave(Wave):
    """A :class:`~simgpu.sim.trace_record.Wave` that records into a :class:`WaveLog`
    instead of per-block queues (the same pass, counts and samples).  Its memory items
    are numbered from ``numbering[0]`` (shared by a launch's waves), ``count`` numbers
    each: the number is also the item's key in the pending values."""

    def __init__(self, *args, numbering: list):
        super().__init__(*args)
        self.queues = None
        self.log = WaveLog(self.count)
        self.numbering = numbering
        self.sample_items: dict = {}      # item number -> the Python replay's item

    def fence(self, present):
        self.log.fence(self.issued, present)

    def wait(self, deps, present):
        if not deps:
            return None
        return self.log.wait(self.issued, np.array(list(deps.values())),
                             np.fromiter(deps, np.int64, len(deps)), present)

    def _memory(self, acc, tx):
        kind, space = acc.kind, acc.space
        j = self.numbering[0]
        self.numbering[0] = j + self.count
        flags = L.FL_WRITE if kind == "store" else 0
        if space == "shared":
            flags |= L.FL_SHARED
            arrays, replays = (_EMPTY, _EMPTY, _EMPTY), np.asarray(tx, np.int64)
        else:
            if kind == "load":
                flags |= L.FL_LOAD
            key = (acc.node.loc.line, kind)
            covered = self._sampled.get(key)
            # (Wave._sample's test, without cutting the access where it cannot pass:
            # the sample taken, or every block of the wave given its sample's data)
            if key not in self.traffic.samples and (covered is None or not covered.all()):
                w = acc.warp
                starts, _, cuts, blocks = self._cuts(w)
                extra = self._sample(acc, w, starts, cuts, blocks)
                if extra:
                    flags |= FL_CANDIDATE
                    self.sample_items[j] = (MEMORY, kind, space, acc.node, None) + extra
            arrays, replays = _flat(tx), _EMPTY
        mask = np.empty(self.count, dtype=bool)
        self.log.memory(self.issued, acc, self.wpb, self.first, flags, arrays, replays, j,
                        mask)
        return {j: mask}
