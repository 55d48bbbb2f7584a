"""The race detector of ``launch(..., check="races")``: happens-before on a shadow
of every array word, vectorized over the lanes of each memory instruction.

Two accesses to one word conflict when they come from different threads and
at least one writes.  They race unless something orders them:

* the end of the kernel (each launch starts a fresh shadow);
* ``syncthreads()``, for threads of one block: each thread counts the barriers
  it passed (its *epoch*); accesses of one block in different epochs are ordered;
* for lanes of one warp on configs before sm_70 (warps in lockstep): the order
  of their instructions, so two lanes race only within one instruction;
* on sm_70 and later (independent thread scheduling): only a ``syncwarp()``
  that both lanes passed between the two accesses (or a ``syncthreads()``);
* atomics never race with atomics.

Decisions (documented in docs/race-detector.md):

* one store instruction whose lanes write one word is a write-write race on
  every config: CUDA says one unspecified lane's write wins;
* a write-write race where both wrote the same value is reported as *benign*
  ("same value"), as is a plain read of a word that atomics update (the read
  sees the value before or after the atomic); benign races are in
  ``report.races`` but do not raise;
* a plain write concurrent with an atomic is a race;
* a race whose two source lines both carry a ``# benign race: why`` comment
  (one line if both accesses are on it) is reported as benign ("annotated"),
  as is any race on an array named in ``Checks(allow={name: why})``.

The shadow keeps, per word and per source site (a load, store or atomic of
the kernel), that site's last two accesses by different threads: thread,
epoch, time (one tick per memory instruction or ``syncwarp()`` of the launch),
and a write's value.  So every pair of source lines that races on some word is
found, except where a site's older accesses to that word were displaced by two
newer ones of the same site that are both ordered with the other access.  Each report names one example
pair of threads per pair of source lines and kind, and how many conflicting
pairs of lanes it saw.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from ..lang.errors import KernelRuntimeError, caret_lines
from .lanes import WARP_SIZE

_NONE = -1
_ANNOTATION = re.compile(r"#.*?\bbenign race:\s*(.*)$")


def _annotation(node) -> str | None:
    """The reason in a ``# benign race: why`` comment on the node's source line."""
    m = _ANNOTATION.search(node.loc.source.rstrip())
    return m.group(1).strip() or "(no reason given)" if m else None


def thread_ids(g, idx) -> np.ndarray:
    """Launch-wide thread numbers (block * threads_per_block + thread) of lanes ``idx``."""
    return g.block_lin[idx] * g.geom.threads_per_block + g.tid[idx]


def describe_thread(geom, thread: int) -> str:
    tpb = geom.threads_per_block
    b = tuple(int(v) for v in geom.block_index(thread // tpb))
    t = tuple(int(v) for v in geom.thread_index(thread % tpb))
    return f"block {b}, thread {t}"


class RaceError(KernelRuntimeError):
    """Conflicting accesses that nothing orders; ``.races`` lists them."""

    def __init__(self, races):
        self.races = races
        shown = "\n\n".join(r.format() for r in races[:8])
        more = f"\n\n... and {len(races) - 8} more" if len(races) > 8 else ""
        super().__init__(f"{len(races)} data race{'s' if len(races) > 1 else ''} found by "
                         f"check='races'\n\n{shown}{more}", None,
                         "order the accesses (syncthreads() within a block, syncwarp() within a "
                         "warp on sm_70+, a second kernel across blocks) or use atomics; a race "
                         "you intend can be allowed: check=Checks(races=True, allow={'array': "
                         "'why'})")


@dataclass
class Access:
    """One side of a race: what (read/write/atomic), where in the source, by whom."""
    op: str
    node: object
    thread: str

    def format(self) -> str:
        loc = self.node.loc
        return (f"  {self.op} by {self.thread} at {os.path.basename(loc.file)}:{loc.line}\n"
                + caret_lines(loc))


@dataclass
class Race:
    kind: str                 # "write-read", "read-write", "write-write", "atomic-write", ...
    space: str                # "global" or "shared"
    array: str
    index: int
    address: int
    first: Access
    second: Access
    why: str                  # what would have ordered them
    count: int = 1            # conflicting pairs of lanes seen for these two lines
    benign: str | None = None  # "same value", "read of an atomically updated word", "allowed: ..."

    def format(self) -> str:
        where = "shared array" if self.space == "shared" else "array"
        head = (f"data race ({self.kind}) on {where} '{self.array}' index {self.index} "
                f"(address {self.address:#x})" + (f" [benign: {self.benign}]" if self.benign else ""))
        return "\n".join([head, self.first.format(), self.second.format(), f"  {self.why}",
                          f"  {self.count} conflicting pair{'s' if self.count > 1 else ''} of "
                          "lanes on these two lines"])


class Slot:
    """Per word of one array, one access recorded for one source site: thread
    (-1: none), its epoch, the time of the access, and (writes) the value."""

    def __init__(self, n: int, dtype=None):
        self.thr = np.full(n, _NONE, np.int64)
        self.ep = np.zeros(n, np.int32)
        self.time = np.zeros(n, np.int64)
        self.value = None if dtype is None else np.zeros(n, dtype=dtype)

    def put(self, f, thr, ep, time, value=None):
        self.thr[f], self.ep[f], self.time[f] = thr, ep, time
        if value is not None:
            self.value[f] = value


class Shadow:
    """Per word of one array and per source site: the last two accesses of that site
    by different threads (writes with their values)."""

    def __init__(self, n: int, dtype):
        self.n, self.dtype = n, dtype
        self.writes: dict = {}              # site -> (Slot, Slot), with values
        self.reads: dict = {}               # site -> (Slot, Slot)

    def slots(self, site, write: bool) -> tuple:
        table = self.writes if write else self.reads
        slots = table.get(site)
        if slots is None:
            dtype = self.dtype if write else None
            slots = table[site] = (Slot(self.n, dtype), Slot(self.n, dtype))
        return slots


class RaceDetector:
    def __init__(self, geom, its: bool, allow: dict):
        self.geom = geom
        self.tpb = geom.threads_per_block
        self.its = its                      # independent thread scheduling (sm_70+)
        self.allow = allow
        self.epoch = np.zeros(geom.threads, np.int32)
        self.time = 0
        self.pair_sync: dict = {}           # warp -> 32x32: time lanes i, j last passed one syncwarp()
        self.shadows: dict = {}
        self.sites: list = []               # (node, op)
        self.site_of: dict = {}
        self.races: dict = {}

    # --- barriers ----------------------------------------------------------------

    def syncthreads(self, g, idx):
        self.epoch[thread_ids(g, idx)] += 1

    def syncwarp(self, g, idx):
        self.time += 1
        w, lanes = g.warp[idx], g.lane[idx]
        for warp in np.unique(w):
            ln = lanes[w == warp]
            m = self.pair_sync.get(int(warp))
            if m is None:
                m = self.pair_sync[int(warp)] = np.full((WARP_SIZE, WARP_SIZE), -1, np.int64)
            m[np.ix_(ln, ln)] = self.time

    # --- accesses ------------------------------------------------------------------

    def site(self, node, op) -> int:
        key = (id(node), op)
        s = self.site_of.get(key)
        if s is None:
            s = self.site_of[key] = len(self.sites)
            self.sites.append((node, op))
        return s

    def shadow(self, b) -> Shadow:
        key = (b.space, b.name if b.space == "shared" else b.base)
        sh = self.shadows.get(key)
        if sh is None:
            n = b.size * (self.geom.blocks if b.space == "shared" else 1)
            sh = self.shadows[key] = Shadow(n, b.data.dtype)
        return sh

    def access(self, op, node, b, g, idx, flat, value=None):
        if not idx.size:
            return
        self.time += 1
        thr = thread_ids(g, idx)
        ep = self.epoch[thr]
        sh = self.shadow(b)
        site = self.site(node, op)
        cur = (thr, ep, site)
        for psite, pair in sh.writes.items():
            prev_op = self.sites[psite][1]
            if not (op == "atomic" and prev_op == "atomic"):     # atomics never race
                for slot in pair:
                    self.against(slot, psite, prev_op, b, flat, cur, op, value)
        if op == "read":
            self.remember(sh.slots(site, False), flat, thr, ep)
            return
        for psite, pair in sh.reads.items():
            for slot in pair:
                self.against(slot, psite, "read", b, flat, cur, op, value)
        if op == "write":
            self.same_instruction(b, flat, cur, value)
        self.remember(sh.slots(site, True), flat, thr, ep, value)

    def remember(self, slots, flat, thr, ep, value=None):
        """Record this instruction in a site's two slots: the newest access in the
        first, the newest one by another thread in the second."""
        s1, s2 = slots
        old = s1.thr[flat]
        move = (old != thr) & (old != _NONE)
        if move.any():
            f = flat[move]
            s2.put(f, s1.thr[f], s1.ep[f], s1.time[f], None if s1.value is None else s1.value[f])
        s1.put(flat, thr, ep, self.time, value)
        other = s1.thr[flat] != thr         # another thread of this instruction took it too
        if other.any():
            s2.put(flat[other], thr[other], ep[other], self.time,
                   None if value is None else value[other])

    def against(self, slot, psite, prev_op, b, flat, cur, op, value):
        """Races of the current instruction (``cur``: threads, epochs, site) with the
        access of site ``psite`` that ``slot`` recorded for the words ``flat``."""
        thr, ep, site = cur
        prev = slot.thr[flat]
        cand = (prev != _NONE) & (prev != thr)
        if not cand.any():
            return
        k = np.flatnonzero(cand)
        f, p, c = flat[k], prev[k], thr[k]
        same_block = p // self.tpb == c // self.tpb
        conc = ~same_block | (slot.ep[f] == ep[k])
        same_warp = conc & same_block & ((p % self.tpb) // WARP_SIZE == (c % self.tpb) // WARP_SIZE)
        if same_warp.any():
            j = np.flatnonzero(same_warp)
            conc[j[self.ordered_in_warp(p[j], c[j], slot.time[f[j]])]] = False
        if not conc.any():
            return
        k, f, p = k[conc], f[conc], p[conc]
        same = np.zeros(len(f), dtype=bool)
        if op == "write" and prev_op == "write":
            same = slot.value[f] == value[k]
        for flag in (False, True):
            sel = np.flatnonzero(same == flag)
            if not sel.size:
                continue
            i = sel[0]
            benign = None
            if flag:
                benign = "same value"
            elif "read" in (prev_op, op) and "atomic" in (prev_op, op):
                benign = "a plain read of a word that atomics update"
            self.record(b, psite, site, prev_op, op, int(p[i]), int(thr[k[i]]), int(f[i]),
                        int(sel.size), benign)

    def ordered_in_warp(self, p, c, ptime):
        """For pairs of lanes of one warp: is the earlier access (at ``ptime``) ordered
        before the current one?"""
        if not self.its:                    # lockstep: an earlier instruction is ordered
            return ptime < self.time
        out = np.zeros(len(p), dtype=bool)
        warp = (p // self.tpb) * self.geom.warps_per_block + (p % self.tpb) // WARP_SIZE
        pl, cl = (p % self.tpb) % WARP_SIZE, (c % self.tpb) % WARP_SIZE
        for w in np.unique(warp):
            m = self.pair_sync.get(int(w))
            if m is not None:
                sel = warp == w
                out[sel] = m[pl[sel], cl[sel]] > ptime[sel]
        return out

    def same_instruction(self, b, flat, cur, value):
        """Lanes of one store instruction writing one word (one unspecified lane wins)."""
        thr, _, site = cur
        order = np.argsort(flat, kind="stable")
        fs = flat[order]
        dup = np.flatnonzero(fs[1:] == fs[:-1])
        if not dup.size:
            return
        a, z = order[dup], order[dup + 1]
        same = value[a] == value[z]
        for flag in (False, True):
            sel = np.flatnonzero(same == flag)
            if sel.size:
                i = sel[0]
                self.record(b, site, site, "write", "write", int(thr[a[i]]), int(thr[z[i]]),
                            int(flat[a[i]]), int(sel.size), "same value" if flag else None,
                            same_instruction=True)

    # --- reports ---------------------------------------------------------------------

    def record(self, b, psite, site, prev_op, op, pthread, thread, flat, count, benign,
               same_instruction=False):
        if benign is None and b.name in self.allow:
            benign = f"allowed: {self.allow[b.name]}"
        if benign is None:
            notes = [_annotation(self.sites[s][0]) for s in (psite, site)]
            if all(notes):
                benign = f"annotated: {notes[1]}"
        key = (b.space, b.name, psite, site, prev_op, op, benign)
        r = self.races.get(key)
        if r is not None:
            r.count += count
            return
        index = flat % b.size if b.space == "shared" else flat
        word = b.data.dtype.itemsize
        address = index * word + (b.base if b.space == "global" else 0)
        self.races[key] = Race(
            f"{prev_op}-{op}", b.space, b.name, int(index), int(address),
            Access(prev_op, self.sites[psite][0], describe_thread(self.geom, pthread)),
            Access(op, self.sites[site][0], describe_thread(self.geom, thread)),
            self.why(pthread, thread, same_instruction), count, benign)

    def why(self, p, c, same_instruction) -> str:
        if same_instruction:
            return "in one store instruction: which lane's write lands is unspecified"
        if p // self.tpb != c // self.tpb:
            return "different blocks: only the end of the kernel orders them"
        if (p % self.tpb) // WARP_SIZE != (c % self.tpb) // WARP_SIZE:
            return "same block, different warps: no syncthreads() between them"
        return ("same warp: no syncwarp() between them (sm_70+ schedules the lanes of a warp "
                "independently)")

    def finish(self, report, raise_on_race: bool):
        races = list(self.races.values())
        report.races = races
        bad = [r for r in races if r.benign is None]
        if bad and raise_on_race:
            raise RaceError(bad)
