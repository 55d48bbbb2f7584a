"""``read_scheduling = "fr-fcfs"`` through the L2 (simgpu/mem/deferred_l2.py): the L2's
misses decided by the FR-FCFS controller as a clock reaches them, and every time that
takes theirs (L1 and L2 hits on sectors on their way, a far hit's near copy, a store's
acknowledgement, an atomic at the slice, the miss entries) worked out from the decided
time.  Relations between the two settings, no figures from the code's own output."""
from __future__ import annotations

import dataclasses
from heapq import heappop, heappush

from simgpu.configs import load_config
from simgpu.mem.deferred_reads import DEFERRED
from simgpu.mem.memory_system import MemorySystem


def config(mode: str, wide_slices: bool = False):
    """sim:h100 with ``read_scheduling = mode`` (``wide_slices``: the L2 slices' budgets
    x100, so that the DRAM's order shows in the loads' times)."""
    cfg = load_config("h100")
    cfg = dataclasses.replace(cfg, dram=dataclasses.replace(cfg.dram, read_scheduling=mode))
    if wide_slices:
        c = cfg.cache
        cfg = dataclasses.replace(cfg, cache=dataclasses.replace(
            c, l2_bandwidth_gbps=100 * c.l2_bandwidth_gbps,
            l2_store_bandwidth_gbps=100 * c.l2_store_bandwidth_gbps,
            l2_combined_bandwidth_gbps=100 * c.l2_combined_bandwidth_gbps,
            l2_request_cycles=0.0))
    return cfg


class Clocked:
    """A MemorySystem of sim:h100 with a clock of its own in place of the engine's (a
    small event loop): accesses are served at their times, the deferred decisions as
    the clock reaches them."""

    def __init__(self, mode: str, wide_slices: bool = False):
        self.memory = MemorySystem(config(mode, wide_slices))
        self.events: list = []
        self.seq = 0
        self.nodes: list = []               # (access index, its Pending) of deferred ones
        self.done: list = []                # each access's time (a stand-in until decided)
        if mode == "fr-fcfs":
            self.reads = self.memory.defer_reads(self.schedule)
            self.reads.cross = lambda node, crossings: None
        else:
            self.reads = None

    def schedule(self, t, fn):
        self.seq += 1
        heappush(self.events, (t, self.seq, fn))

    def run_to(self, t: float) -> None:
        while self.events and self.events[0][0] <= t:
            heappop(self.events)[2]()

    def access(self, kind, addresses, t, sm=0, l1=True, sizes=None):
        self.run_to(t)
        sizes = sizes or [32] * len(addresses)
        lanes = {a: 1 for a in addresses} if kind == "atomic" else None
        done = self.memory.access(kind, addresses, sizes, t, sm, l1=l1, lanes=lanes)
        if self.reads is not None:
            for node in self.reads.take():
                self.nodes.append((len(self.done), node))
        self.done.append(done)
        return done

    def finish(self) -> list:
        """Every decision made: each access's real time."""
        self.run_to(float("inf"))
        out = list(self.done)
        for i, node in self.nodes:
            assert node.done is not None
            if out[i] >= DEFERRED:
                out[i] = max(n.done for j, n in self.nodes if j == i)
        assert self.reads is None or self.reads.open == 0
        return out


def one_bank_two_rows(memory, per_row: int = 4):
    """64-B blocks of partition 0's bank 0 in two of its rows: ``per_row`` of each."""
    where = memory.amap.where
    rows: dict = {}
    a = 0
    while len(rows) < 2 or any(len(v) < per_row for v in rows.values()):
        part, bank, row = where(a)
        if part == 0 and bank == 0 and (row in rows or len(rows) < 2):
            rows.setdefault(row, []).append(a)
        a += 64
    first, second = rows.values()
    return first[:per_row], second[:per_row]


def test_misses_to_one_bank_with_rows_interleaved_are_served_row_hits_first():
    """Loads to one bank, alternately in two rows, all at once: booked at arrival the
    bank switches rows at every read; FR-FCFS serves the first row's reads together,
    then the second's, with fewer activates."""
    got = {}
    for mode in ("at-arrival", "fr-fcfs"):
        c = Clocked(mode, wide_slices=True)
        first, second = one_bank_two_rows(c.memory)
        order = [a for pair in zip(first, second) for a in pair]
        for a in order:
            c.access("load", [a], 0.0, sm=0, l1=False)
        done = c.finish()
        by = dict(zip(order, done))
        got[mode] = ([by[a] for a in first], [by[a] for a in second],
                     sum(s.activations for p in c.memory.dram.parts for s in p.subs))
    a_first, a_second, a_acts = got["at-arrival"]
    f_first, f_second, f_acts = got["fr-fcfs"]
    assert max(a_first) > min(a_second)            # at arrival: the rows alternate
    assert max(f_first) < min(f_second)            # FR-FCFS: one row, then the other
    assert f_acts < a_acts
    assert max(f_first + f_second) < max(a_first + a_second)


def script(c: Clocked, a: int, b: int) -> None:
    """Accesses that find a sector on its way: an L1 hit, an L2 hit from an SM of the
    other half (a far hit, leaving a near copy) and one beside that copy, a store,
    an atomic at the slice, and a load of another partition; then hits after the data."""
    c.access("load", [a], 0.0, sm=0)               # the miss
    c.access("load", [a], 10.0, sm=0)              # the L1 hit on it, on its way
    c.access("load", [a], 20.0, sm=1)              # the L2: the other half's SM
    c.access("load", [a], 30.0, sm=2)              # its half's copy, on its way too
    c.access("store", [a], 40.0, sm=3)             # the store's acknowledgement
    c.access("atomic", [a + 4], 50.0, sm=4, l1=False)
    c.access("load", [b], 60.0, sm=0)              # another partition's miss
    c.access("load", [a, b], 5000.0, sm=5)         # hits, long after


def test_each_time_taken_from_a_pending_miss_equals_the_one_booked_at_arrival():
    """With one read at a time at each bank (nothing to reorder), the decided times are
    those booked at arrival, and so is every time worked out from them: the accesses'
    times, the L2's and L1's ready times and the miss entries' release."""
    runs = {}
    for mode in ("at-arrival", "fr-fcfs"):
        c = Clocked(mode)
        a, b = 1 << 20, (1 << 20) + 256 * 7        # (partitions 0 and 7)
        assert c.memory.amap.where(a)[0] != c.memory.amap.where(b)[0]
        script(c, a, b)
        if mode == "fr-fcfs":                      # all but the late hits were stand-ins
            assert all(d >= DEFERRED for d in c.done[:7]) and c.done[7] < DEFERRED
        done = c.finish()
        l2 = c.memory.l2
        entries = sorted(e[0] for h in l2.halves for ways in h.lines.values()
                         for e in ways.values())
        lines = sorted(x for l1 in c.memory.l1.caches for ways in l1.sets
                       for line in ways.values() for x in line if x is not None)
        held = sorted(tuple(e) for heap in c.memory.mshr.held for e in heap)
        runs[mode] = (done, entries, lines, held, c.memory.drained)
    assert runs["fr-fcfs"] == runs["at-arrival"]
    done = runs["fr-fcfs"][0]
    assert done[1] >= done[0] and done[2] > done[0]   # (they did wait for the miss)


def test_a_hit_on_a_pending_sector_waits_for_the_decided_time():
    """A miss delayed by FR-FCFS (a younger row hit passes it) delays the accesses that
    found its sector on their way by as much: each is the sector's decided time, not
    the time it would have been booked at."""
    c = Clocked("fr-fcfs", wide_slices=True)
    first, second = one_bank_two_rows(c.memory, 8)
    for a in first[:1] + [second[0]] + first[1:]:
        c.access("load", [a], 0.0, sm=0, l1=False)     # second[0] is passed by first[1:]
    hit = c.access("load", [second[0]], 1.0, sm=0, l1=False)   # an L2 hit on its way
    assert hit >= DEFERRED
    done = c.finish()
    assert done[1] > max(done[2:9])                # the miss went after the row hits
    assert done[9] >= done[1]                      # the hit: no sooner than its sector
    sector = min(e[0] for h in c.memory.l2.halves for ways in h.lines.values()
                 for t, e in ways.items() if t * 32 == second[0]) - c.memory.slices.clock
    assert done[9] >= sector



def test_a_long_chain_of_pending_accesses_is_decided_without_recursion():
    """Each access waits on the L1 line the one before is fetching and fetches the next
    (a stencil's warps do); the first one's read is decided last, so deciding it frees
    all 5,000 at once: each gets max(its own data, the line before's data, its hit's
    latency), in one pass however deep the chain (a recursion of waiter calls
    overflowed Python's stack on held-out stencil_1d)."""
    from simgpu.mem.deferred_l2 import _L1, Pending
    c = Clocked("fr-fcfs")
    d = c.reads.unit
    half = c.memory.net.half_trip
    n = 5000
    ends = [float((7 * i) % 1000) for i in range(n)]        # each one's own read, decided
    lines = [[DEFERRED + i] for i in range(n)]              # the L1 line each one fetches
    nodes = []
    for i in range(n):
        node = Pending(i, 0, "load", 0)
        c.reads.nodes[i] = node
        c.reads.open += 1
        node.ends[(0, 0)] = ends[i]
        node.misses = [(0, 0, [], lines[i], 0, False, 0.0)]
        if i:
            d._on(node, DEFERRED + i - 1)                   # (node.left: 2)
            node.after.append((_L1, lines[i - 1], 0, 40.0 + i))
            node.left -= 1                                  # its own read: decided
        nodes.append(node)
    c.reads.one_less(nodes[0])                              # the first read's decision
    assert c.reads.open == 0 and not c.reads.nodes
    for i, node in enumerate(nodes):
        expected = ends[i] + half
        if i:
            expected = max(expected, ends[i - 1] + half, 40.0 + i)
        assert node.done == expected and lines[i][0] == ends[i] + half


def test_a_long_chain_of_accesses_on_their_way_is_decided_without_recursion():
    """Each access hits the L1 line the one before is fetching and fetches the next
    (a stencil's warps do): 3,000 accesses each waiting on the one before are decided
    in one pass, as deep as the chain, with the times booked at arrival where nothing
    is reordered (the lines one after another, one read at a time at each bank)."""
    runs = {}
    for mode in ("at-arrival", "fr-fcfs"):
        c = Clocked(mode)
        c.memory.mshr = None                       # (no bound on the SM's misses)
        base = 1 << 22
        for i in range(3000):
            c.access("load", [base + 128 * i, base + 128 * (i + 1)], float(i), sm=0)
        runs[mode] = c.finish()
    assert runs["fr-fcfs"] == runs["at-arrival"]
