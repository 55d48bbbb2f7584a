"""FR-FCFS across requests on GPUs with an L2: the L2's misses decided as the clock gets there.

With ``[dram] read_scheduling = "fr-fcfs"`` a load's L2 misses do not book their DRAM
reads when the load is issued (:meth:`Dram.serve <simgpu.mem.dram.Dram.serve>`, first
come first served at arrival): they join their sub-channels' FR-FCFS queues
(:class:`~simgpu.mem.deferred_reads.DeferredReads`, which decides them as the
simulation's clock reaches them, as it does for the GT200's uncached loads).  Until they
are decided, a miss's time is a stand-in (``DEFERRED`` + a number, later than any
cycle), and so is everything that takes its time downstream:

* the sector's ready time in its L2 entries (its home half's and, through the far half,
  the near copy's) and in the SM's L1 line;
* an access that finds a sector on its way with a stand-in (an L1 hit, an L2 hit, a
  far hit's near copy, a store's acknowledgement, an atomic at the slice) takes a
  stand-in of its own: it is :class:`Pending` on the earlier one, and its time is
  worked out, by the same rule as at arrival, when that one's is;
* the SM's miss entries it holds (freed at its real time, as
  :mod:`~simgpu.mem.deferred_reads` frees a GT200 load's), and a far miss's data on
  the link between the L2's halves (booked by the engine once decided).

When the last of a pending access's reads and earlier accesses is decided, its real
times are written where its stand-ins were (entries, lines), and whoever waits on it
is told.  Its times are the rules of :meth:`L2Slices.access
<simgpu.mem.l2_slices.L2Slices.access>` and :meth:`AtomicUnit.at_l2
<simgpu.mem.atomic_unit.AtomicUnit.at_l2>`, applied to the decided DRAM ends in place
of those booked at arrival.  Stores' write-backs, atomics' misses and page walks are
still booked at arrival.
"""
from __future__ import annotations

from .deferred_reads import DEFERRED, Deferred

__all__ = ["DeferredL2", "Pending"]

# what a pending access waits for besides its own reads: [kind, ...] records
_L1, _L2, _ATOMIC = 0, 1, 2


class Pending(Deferred):
    """An access of the L2 path whose time waits on DRAM reads not yet decided: its
    own misses' (transaction keys (partition, position)) and those of earlier accesses
    whose sectors it found on their way."""

    __slots__ = ("near", "real", "misses", "fills", "after")

    def __init__(self, number: int, sm: int, kind: str, near: int):
        super().__init__(number, sm, kind)
        self.near = near                  # the L2 half beside its SM
        self.real = 0.0                   # the latest of its times known at its access
        self.fills: list | None = None    # its blocks for the L2's fill ports, if any
        self.misses: list = []            # L2Slices.access's misses (see decide)
        self.after: list = []             # what it found on its way (see decide)


class DeferredL2:
    """The L2 side of deferred reads for one launch: the hooks :class:`L2Slices
    <simgpu.mem.l2_slices.L2Slices>` and :class:`AtomicUnit
    <simgpu.mem.atomic_unit.AtomicUnit>` call where a time is not known yet, and the
    rule that works out a decided access's times (:meth:`decide`, called by the driver,
    :class:`~simgpu.mem.deferred_reads.DeferredReads`)."""

    def __init__(self, reads, slices):
        self.reads = reads                # DeferredReads: the queues, the numbers
        self.slices = slices
        self.req = None                   # the request being served, and its Pending
        self.node: Pending | None = None

    # --- while an access is served (the slices' hooks) -------------------------------

    def _node(self, req) -> Pending:
        """The current request's Pending (made at its first use)."""
        if self.req is req:
            return self.node
        reads = self.reads
        s = self.slices
        near = s.sm_half[req.sm] if s.split else 0
        node = reads.new(Pending(reads.count, req.sm, req.kind, near))
        self.req, self.node = req, node
        return node

    def _on(self, node: Pending, stand_in: float) -> None:
        """``node`` waits for the access whose stand-in is ``stand_in``."""
        owner = self.reads.nodes[int(stand_in - DEFERRED)]
        node.left += 1
        owner.waiters.append(node)            # (told by the driver's _settle, not by a call)

    def l1_hit(self, req, stand_in: float, line: list, k: int, floor: float) -> None:
        """An L1 hit on a sector on its way (``line[k]``, a stand-in): its data no
        sooner than ``floor`` (the hit's latency) nor than the sector's."""
        node = self._node(req)
        self._on(node, stand_in)
        node.after.append((_L1, line, k, floor))

    def l2_hit(self, req, entry: list, extra: float, floor: float, line, k: int) -> float:
        """An L2 hit on a sector on its way (``entry``, a stand-in): ready no sooner than
        ``floor`` (the slice's time) nor than the sector's time plus ``extra`` (the far
        half's latency); the L1's ``line[k]`` (if any) gets that time.  Returns the
        access's stand-in (for the line and a near copy until it is known)."""
        node = self._node(req)
        self._on(node, entry[0])
        node.after.append([_L2, entry, extra, floor, line, k, None])
        return DEFERRED + node.number

    def copy(self, entry: list, stand_in: float) -> None:
        """The near copy a pending far hit (the last :meth:`l2_hit`) just filled."""
        entry[0] = stand_in
        self.node.after[-1][6] = entry

    def atomic_hit(self, req, entry: list, offset: float, t: float) -> None:
        """An atomic at the slice on a sector on its way: done no sooner than the
        sector's time plus ``offset``, where that is after ``t`` (AtomicUnit.at_l2)."""
        node = self._node(req)
        self._on(node, entry[0])
        node.after.append((_ATOMIC, entry, offset, t))

    def misses(self, req, by_part: dict, misses: list, t: float, fills=None) -> None:
        """A load's misses (L2Slices.access's ``by_part`` and ``misses``, issued at
        ``t``): queue its transactions at their partitions and stamp its stand-in on
        the L2 entries and L1 lines they fill."""
        node = self._node(req)
        reads = self.reads
        arrive = self.slices.net.to_partition(t)
        pieces = node.pieces
        for part, txns in by_part.items():
            for i, txn in enumerate(txns):
                key = (part, i)
                pieces[key] = reads.queue(node, key, part, txn, arrive)
                node.left += 1
        stand_in = DEFERRED + node.number
        for _, _, entries, line, k, _, _ in misses:
            for e in entries:
                e[0] = stand_in
            if line is not None:
                line[k] = stand_in
        node.misses = misses
        node.fills = fills                   # blocks for the fill ports, booked when decided

    def finish(self, req, done: float) -> float:
        """The access's time: ``done`` if nothing of it is pending, else its stand-in
        (``done``, the latest of its known times, is kept for the decision)."""
        if self.req is not req:
            return done
        node = self.node
        self.req = self.node = None
        node.real = done
        self.reads.one_less(node)
        return DEFERRED + node.number

    # --- the decision ---------------------------------------------------------------

    def decide(self, node: Pending) -> float:
        """Everything ``node`` waited for is known: its times, by L2Slices.access's
        rules (and AtomicUnit.at_l2's), written where its stand-ins were; a far miss's
        data are booked on the link between the halves.  Returns its time."""
        s = self.slices
        clock = s.clock
        crossings: list = []
        ends = node.ends
        done = s.settle(node.misses, node.fills, lambda p, i: ends[(p, i)], node.near, crossings,
                        node.real)
        for rec in node.after:
            kind = rec[0]
            if kind == _L1:
                _, line, k, ready = rec
                if line[k] > ready:
                    ready = line[k]
            elif kind == _L2:
                _, entry, extra, ready, line, k, copy = rec
                if entry[0] - clock + extra > ready:   # the sector came later
                    ready = entry[0] - clock + extra
                if copy is not None:
                    copy[0] = clock + ready
                if line is not None:
                    line[k] = ready
            else:
                _, entry, offset, t = rec
                if entry[0] - clock <= t:
                    continue
                ready = entry[0] - clock + offset
            if ready > done:
                done = ready
        node.done = done
        if crossings:
            self.reads.cross(node, crossings)
        return done
