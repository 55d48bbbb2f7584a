"""The trace-driven engine's functional pass: a wave of blocks in lockstep, recorded
per block as the ``timed-block`` engine's block process would consume it.

The ``timed-block`` engine runs each block as one lane group and asks its interpreter
generator, at each simulated moment, for the next event: a memory access (its
per-warp transactions), a :class:`~simgpu.sim.scoreboard.Stall` where a value is used
before its data are back, a fence at ``syncthreads()``, the end; between two events
it charges the warp instructions the block issued.  Here one lane group holds a
whole wave of blocks (one numpy operation per statement for all of them, as
:func:`~simgpu.sim.engines.run_lockstep` runs), and the recorder writes down, per
block, what its own generator would have produced:

* the block's warp instructions so far, at every event (a statement's warps per
  block, from the lanes that run it);
* each memory instruction, with the transactions of the block's warps, cut out of
  the coalescer's answer for the wave (the counters count the wave once); where the
  coalescer has them as arrays (:class:`~simgpu.mem.coalescer.FlatWarps`: scattered
  lanes, contiguous runs) they stay so, and become the per-warp lists that the
  memory pipeline takes only when a block replays them;
* each wait point of the scoreboard, as the *loads* whose data it needs, not as a
  time: whether it stalls depends on when the data are back, which only the timing
  pass knows.  A pending value is a set of loads with, for each, the blocks it is
  pending in (``{item: mask}``): a block that skips a statement keeps its old pending
  value, a block that does not reach a wait does not wait.

The interpreter's scoreboard also forgets values that are back by the time it stalls
(``Executor.stall``); the recorder keeps them.  That never changes a stall: a
forgotten value was back at or before a time the warp has already waited for.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from ..ir import nodes as ir
from .engines import shared_bindings
from .interpreter import Executor
from .lanes import LaneGroup
from .scoreboard import FENCE
from .sm import store_masks

MEMORY, WAIT, FENCE_ITEM = 0, 1, 2


class MaskedStores:
    """A store's transactions and, per warp, its bytes per sector (for an L2 that keeps
    write masks, ``[cache] l2_write_masks``): what the replay hands the timed engine."""

    __slots__ = ("tx", "masks")

    def __init__(self, tx, masks: list):
        self.tx, self.masks = tx, masks


def union(a, b):
    """Two pending values (``{item: blocks mask}`` or 0.0 for none) as one."""
    if not a:
        return b
    if not b:
        return a
    out = dict(a)
    for j, m in b.items():
        old = out.get(j)
        out[j] = m if old is None else old | m
    return out


def restrict(deps, keep):
    """``deps`` for the blocks in mask ``keep`` only (0.0 if none is left)."""
    out = {}
    for j, m in deps.items():
        m = m & keep
        if m.any():
            out[j] = m
    return out or 0.0


class RecordingExecutor(Executor):
    """The interpreter over a wave of blocks, its scoreboard kept per block as sets of
    loads (see the module's docstring); waits go to ``wave`` instead of yielding."""

    def __init__(self, group: LaneGroup, schedule, counters, wave: "Wave"):
        super().__init__(group, schedule, counters, lockstep=True)
        self.wave = wave
        self.single = False     # (a one-warp wave's branch() would count past issue())
        self.check = wave.ownership         # sees every load and store (trace_replay.Ownership)
        self.clock = True                   # syncthreads() yields FENCE, as a timed block's
        self.sync_idx = None
        self._rows_of = (None, None)
        self._all = None                    # _per_block of every lane of the wave

    def _per_block(self, idx):
        """(how many warps of each block of the wave have lanes in ``idx``, their sum);
        one-entry cache (a statement's parts share ``idx``), and the whole wave's once."""
        if self._rows_of[0] is idx:
            return self._rows_of[1]
        g = self.group
        if idx.size == g.n and self._all is not None:
            found = self._all
        else:
            w = g.warp[idx]
            first = np.empty(w.size, dtype=bool)
            if w.size:
                first[0] = True
                np.not_equal(w[1:], w[:-1], out=first[1:])
            counts = np.bincount(g.block_row[idx[first]], minlength=g.shared_rows)
            found = (counts, int(counts.sum()))
            if idx.size == g.n:
                self._all = found
        self._rows_of = (idx, found)
        return found

    def warps_per_block(self, idx) -> np.ndarray:
        return self._per_block(idx)[0]

    def warps(self, idx) -> int:
        return self._per_block(idx)[1]

    def issue(self, idx, node):
        if idx.size:
            counts, total = self._per_block(idx)
            c = self.counters
            c.warp_instructions += total
            c.thread_instructions += idx.size
            self.wave.issued += counts

    def present(self, idx) -> np.ndarray:
        return self.warps_per_block(idx) > 0

    # --- the scoreboard, per block ---------------------------------------------------

    later = staticmethod(union)

    def forget(self, name, idx):
        old = self.pending.get(name)
        if old:
            left = restrict(old, ~self.present(idx))
            if left:
                self.pending[name] = left
            else:
                del self.pending[name]

    def make_pending(self, name, ready, idx):
        self.pending[name] = union(self.pending.get(name, 0.0), ready)

    def wait_all(self, idx):
        deps = 0.0
        for d in self.pending.values():
            deps = union(deps, d)
        self.wave.wait(deps, self.present(idx))
        return
        yield  # pragma: no cover - a generator like the interpreter's

    def wait_for(self, names, idx):
        deps = 0.0
        for name, d in self.pending.items():
            if name in names:
                deps = union(deps, d)
        if deps:
            waited = self.wave.wait(deps, self.present(idx))
            if self.temp_ready and waited is not None:   # (Executor.stall: the blocks
                self.temp_ready = restrict(self.temp_ready, ~waited)   # that stall)
        return
        yield  # pragma: no cover

    def wait_value(self, idx):
        present = self.present(idx)
        self.wave.wait(self.temp_ready, present)
        self.temp_ready = restrict(self.temp_ready, ~present)
        return
        yield  # pragma: no cover

    def exec_SyncThreads(self, s, idx):
        self.sync_idx = idx
        return (yield from super().exec_SyncThreads(s, idx))


class Wave:
    """What the blocks ``first .. first + count - 1`` do, recorded per block as the
    lockstep pass gets there: :meth:`advance` runs the pass to its next memory
    instruction or fence and appends it to the queues of the blocks it is in, where
    the replay takes it (and drops it: an item lives while a block has yet to replay
    it, so the trace held is what the fastest block has recorded ahead of the slowest,
    not the wave's whole run)."""

    write_masks = 0     # the sector size where the L2 keeps write masks (TraceSource sets it)

    def __init__(self, fn, geom, scalars, arrays, schedule, counters, traffic, banks,
                 ownership, first: int, count: int):
        self.first, self.count = first, count
        self.wpb = geom.warps_per_block
        self.traffic, self.banks, self.ownership = traffic, banks, ownership
        self.issued = np.zeros(count, dtype=np.int64)   # warp instructions per block so far
        self.queues = [deque() for _ in range(count)]     # per block: its entries to replay
        self.items = 0                    # ids of the wave's items so far
        self.lanes = 0                    # lanes of its memory instructions so far
        self.done = False                 # the pass has ended (then ``final`` is set)
        self.final: list = []             # each block's instructions at its end
        self.left = count                 # blocks not yet finished (then freed)
        self._sampled: dict = {}          # (line, kind) -> blocks given its sample's data
        self.ex = RecordingExecutor(LaneGroup.blocks(geom, first, count), schedule, counters,
                                    self)
        self._run = self.ex.run(fn, scalars, {**arrays, **shared_bindings(fn, count)})

    def advance(self):
        """Run the pass to its next event (a memory instruction, a fence, the end)."""
        try:
            event = next(self._run)
        except StopIteration:
            self.done, self.final = True, self.issued.tolist()
            self.ex = self._run = None
            return
        if event is FENCE:
            self.fence(self.ex.present(self.ex.sync_idx))
        else:
            event.__dict__["ready"] = self.memory(event)

    def fence(self, present):
        """A fence at syncthreads() of the blocks in mask ``present``."""
        self._add((FENCE_ITEM,), np.flatnonzero(present))

    def _add(self, item, blocks, lo=None, hi=None):
        """Append ``item`` to the queues of ``blocks``: (item, its id, the block's warp
        instructions before it, its warps lo:hi in the item, its place among the item's
        blocks)."""
        j = self.items
        self.items += 1
        queues = self.queues
        ks = self.issued[blocks].tolist()
        if lo is None:
            for pos, b in enumerate(blocks.tolist()):
                queues[b].append((item, j, ks[pos], 0, 0, pos))
        else:
            for pos, (b, l, h) in enumerate(zip(blocks.tolist(), lo.tolist(), hi.tolist())):
                queues[b].append((item, j, ks[pos], l, h, pos))
        return j

    def wait(self, deps, present):
        """A wait point of the blocks in ``present`` for ``deps``: the blocks with a value
        pending there (mask), or None."""
        if not deps:
            return None
        need = np.zeros(self.count, dtype=bool)
        for m in deps.values():
            need |= m
        need &= present
        blocks = np.flatnonzero(need)
        if blocks.size:
            # (each mask as a list: the replay reads one entry per block and dependence)
            self._add((WAIT, [(j, m.tolist()) for j, m in deps.items()]), blocks)
        return need

    def memory(self, acc):
        """Count the wave's access once and cut it per block; returns its pending value."""
        self.lanes += acc.warp.size
        if acc.space == "shared":
            self.traffic.add(acc)
            return self._memory(acc, self.banks.replays_per_warp(acc))   # (bank conflicts)
        tx = self.traffic.add_traced(acc)
        if self.write_masks and acc.kind == "store":
            tx = MaskedStores(tx, store_masks(acc, 0, self.write_masks))
        return self._memory(acc, tx)

    def _cuts(self, w):
        """(the first lane of each warp of an access, each warp's block in the wave, the
        first warp of each block among them, the blocks)."""
        starts = np.flatnonzero(np.concatenate(([True], w[1:] != w[:-1])))
        rows = w[starts] // self.wpb - self.first            # each warp's block in the wave
        cuts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
        return starts, rows, cuts, rows[cuts]

    def _sample(self, acc, w, starts, cuts, blocks):
        """The teaching view's sample is the first warp to issue the instruction in
        simulated time: each block's first warp, for the replay to pick, in the first
        item of the instruction of each block (the replay has taken the sample by a
        block's later ones); the item's extra fields, or () where it has none."""
        key = (acc.node.loc.line, acc.kind)
        if key in self.traffic.samples:
            return ()
        covered = self._sampled.get(key)
        if covered is None:
            covered = self._sampled[key] = np.zeros(self.count, dtype=bool)
        if covered[blocks].all():
            return ()
        covered[blocks] = True
        return (self._first_warps(acc, w[starts][cuts]), acc.array, acc.word_size)

    def _memory(self, acc, tx):
        """Append the access (``tx``: its transactions, or replays per warp for shared
        memory) to the queues of its blocks."""
        w = acc.warp
        starts, rows, cuts, blocks = self._cuts(w)
        lo, hi = cuts, np.append(cuts[1:], rows.size)
        item = (MEMORY, acc.kind, acc.space, acc.node, tx)
        if acc.space != "shared":
            item += self._sample(acc, w, starts, cuts, blocks)
        j = self._add(item, blocks, lo, hi)
        mask = np.zeros(self.count, dtype=bool)
        mask[blocks] = True
        return {j: mask}

    def _first_warps(self, acc, first_warp):
        """(each block's first warp, the offsets of its lanes, the lanes' lane numbers
        and addresses), block by block in the order of the access's blocks."""
        row = acc.warp // self.wpb
        blocks = first_warp // self.wpb
        keep = acc.warp == first_warp[np.searchsorted(blocks, row)]
        offsets = np.searchsorted(row[keep], blocks).tolist() + [int(keep.sum())]
        return first_warp.tolist(), offsets, acc.lane[keep], acc.address[keep]


def kernel_traits(fn: ir.Function) -> tuple[bool, set]:
    """(whether ``fn`` or a function it calls has an atomic, the names of ``fn``'s array
    parameters it stores to, directly or through the functions it calls)."""
    memo: dict = {}

    def visit(f):
        if f.name in memo:
            return memo[f.name]
        atomic, stored = False, set()
        for node in ir.walk(f):
            t = type(node)
            if t is ir.Atomic:
                atomic = True
            elif t is ir.Store:
                stored.add(node.array.name)
            elif t is ir.Call:
                a, s = visit(node.function)
                atomic |= a
                for p, arg in zip(node.function.params, node.args):
                    if isinstance(arg, ir.ArrayRef) and p.name in s:
                        stored.add(arg.name)
        memo[f.name] = (atomic, stored)
        return memo[f.name]

    return visit(fn)
