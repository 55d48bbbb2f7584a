"""Address translation: the L1 TLBs, the shared L2 TLB and the page walkers.

A warp's transactions are translated before they reach the L1 / L2 / DRAM
(:meth:`Translator.translate`, called by :class:`~simgpu.mem.memory_system.MemorySystem`):
each distinct page (``tlb.page_bytes``) the request touches is looked up

1. in the **L1 TLB** of its SM's group (``tlb.sms_per_l1`` SMs share one: a TPC on
   GT200): a hit costs nothing beyond the load latency it was measured inside;
2. on a miss, in the shared **L2 TLB**: ``tlb.l2_hit_cycles`` more;
3. on a miss there too, a **page walk**: one of ``tlb.walkers`` walkers (the first
   free one) takes ``tlb.walk_cycles`` and reads the page-directory entry (unless its
   PDE cache, ``tlb.pde_cache_entries``, holds it) and then the page-table entry, each
   a real read through the memory system at the page tables' physical addresses
   (:class:`~simgpu.mem.address_space.PageTables`): walks cost latency and DRAM (or L2)
   bandwidth, and wait for a walker when all are busy.

Both TLB levels are set-associative with LRU replacement.  An entry is filled when
its miss is found, with the time its translation will be ready, so a later miss to
the same page waits for that walk instead of starting another (concurrent misses
share a walk).  The request goes on when its last page is translated
(``Request.translated``); translation changes when data move, never which data or
how many transactions (the coalescer's counts are unchanged).

The TLBs' contents belong to the device and outlive a launch (:class:`TlbState`, kept
by the simulated device as it keeps the L2): a new launch finds the entries of the
last one, ready.  An allocation leaves its pages in the L2 TLB (:meth:`TlbState.mapped`:
the driver maps them and the copy writes them; ASSUMED, see docs/memory-model.md), so a
kernel over arrays within the L2 TLB's reach pays an L1 TLB miss per page and SM group,
and walks start where its footprint exceeds that reach.  The walkers' timing belongs
to one launch.
"""
from __future__ import annotations

__all__ = ["TlbLevel", "TlbState", "Translator"]


class TlbLevel:
    """A set-associative TLB with LRU replacement: virtual page -> when it is translated."""

    __slots__ = ("ways", "sets", "lines", "hits", "misses", "last", "last_ready")

    def __init__(self, entries: int, ways: int):
        self.ways = min(ways, entries) if entries else 0
        self.sets = max(1, entries // self.ways) if self.ways else 1
        self.lines: list = [{} for _ in range(self.sets)]   # per set: {vpn: ready}, LRU first
        self.hits = 0
        self.misses = 0
        self.last = -1                 # the page of the last lookup or fill (its set's MRU)
        self.last_ready = 0.0

    def find(self, vpn: int):
        """When page ``vpn``'s translation is (or will be) ready, or None on a miss.
        A hit makes the entry most recently used.  Counts the hit or miss."""
        if vpn == self.last:
            self.hits += 1
            return self.last_ready
        if self.ways:
            ways = self.lines[vpn % self.sets]
            ready = ways.pop(vpn, None)
            if ready is not None:
                ways[vpn] = ready
                self.hits += 1
                self.last, self.last_ready = vpn, ready
                return ready
        self.misses += 1
        return None

    def fill(self, vpn: int, ready: float) -> None:
        """Enter page ``vpn`` (ready at ``ready``), evicting its set's LRU entry if full."""
        if not self.ways:
            return
        ways = self.lines[vpn % self.sets]
        if ways.pop(vpn, None) is None and len(ways) >= self.ways:
            victim = next(iter(ways))
            del ways[victim]
            if victim == self.last:
                self.last = -1
        ways[vpn] = ready
        self.last, self.last_ready = vpn, ready

    def __contains__(self, vpn: int) -> bool:
        return vpn in self.lines[vpn % self.sets]

    def __len__(self) -> int:
        return sum(len(w) for w in self.lines)

    def settle(self) -> None:
        """Every entry ready now (a new launch's clock starts at 0)."""
        for ways in self.lines:
            for vpn in ways:
                ways[vpn] = 0.0
        self.last_ready = 0.0


class TlbState:
    """The TLB contents of one device: an L1 TLB per group of SMs, the L2 TLB and the
    walker's PDE cache.  They outlive a launch; :meth:`new_launch` makes them ready."""

    def __init__(self, config):
        t = config.tlb
        groups = -(-config.gpu.sm_count // t.sms_per_l1)
        self.l1 = [TlbLevel(t.l1_entries, t.l1_ways) for _ in range(groups)]
        self.l2 = TlbLevel(t.l2_entries, t.l2_ways)
        self.pde = TlbLevel(t.pde_cache_entries, t.pde_cache_entries)
        self.shift = t.page_bytes.bit_length() - 1
        self.pde_shift = t.pde_span_bytes.bit_length() - 1

    def levels(self) -> list:
        return [*self.l1, self.l2, self.pde]

    def mapped(self, base: int, nbytes: int) -> None:
        """The driver has just mapped (and written) ``nbytes`` at ``base``: its pages'
        translations are in the shared L2 TLB (and its last PDE in the walker's cache),
        the most recent last, as many as fit.  The SMs' L1 TLBs learn them at first use."""
        if nbytes <= 0:
            return
        first, last = base >> self.shift, (base + nbytes - 1) >> self.shift
        first = max(first, last - len(self.l2.lines) * self.l2.ways + 1)
        for vpn in range(first, last + 1):
            self.l2.fill(vpn, 0.0)
        self.pde.fill((base + nbytes - 1) >> self.pde_shift, 0.0)

    def new_launch(self) -> None:
        for level in self.levels():
            level.settle()


class Translator:
    """One launch's address translation for the memory pipeline.

    ``read(address, nbytes, t)`` is the memory system's read of page-table data at a
    physical address, issued at ``t`` by the walker: it returns when the data are back.
    """

    def __init__(self, config, state: TlbState, tables, read):
        t = config.tlb
        self.state = state
        self.tables = tables
        self.read = read
        self.shift = t.page_bytes.bit_length() - 1
        self.pde_shift = t.pde_span_bytes.bit_length() - 1
        self.l2_hit = t.l2_hit_cycles
        self.walk_cycles = t.walk_cycles
        self.pte_bytes = t.pte_bytes
        self.walker_free = [0.0] * t.walkers
        self.l1_of_sm = [state.l1[sm // t.sms_per_l1] for sm in range(config.gpu.sm_count)]
        state.new_launch()
        self.start = {id(level): (level.hits, level.misses) for level in state.levels()}
        self.walks = 0
        self.walk_reads = 0
        self.walk_wait = 0.0            # cycles walks waited for a free walker

    def translate(self, req) -> float:
        """Translate ``req``'s pages; set and return ``req.translated``."""
        t = req.issued
        addresses, shift = req.addresses, self.shift
        l1 = self.l1_of_sm[req.sm]
        vpn = addresses[0] >> shift
        if len(addresses) == 1 or (min(addresses) >> shift == vpn == max(addresses) >> shift):
            if vpn == l1.last:                  # the hot path: the SM group's last page
                l1.hits += 1
                ready = l1.last_ready
            else:
                ready = l1.find(vpn)
                if ready is None:
                    ready = self._miss(vpn, t)
                    l1.fill(vpn, ready)
            done = ready if ready > t else t
        else:
            done = t
            for vpn in {a >> shift for a in addresses}:
                ready = l1.find(vpn)
                if ready is None:
                    ready = self._miss(vpn, t)
                    l1.fill(vpn, ready)
                if ready > done:
                    done = ready
        req.translated = done
        return done

    def _miss(self, vpn: int, t: float) -> float:
        """An L1 TLB miss at ``t``: when the L2 TLB or a walk has the translation."""
        l2 = self.state.l2
        at = t + self.l2_hit
        ready = l2.find(vpn)
        if ready is not None:
            return ready if ready > at else at
        ready = self._walk(vpn, at)
        l2.fill(vpn, ready)
        return ready

    def _walk(self, vpn: int, t: float) -> float:
        """A page walk for page ``vpn`` asked for at ``t``: a free walker reads the PDE
        (unless cached) and then the PTE through the memory system."""
        free = self.walker_free
        w = min(range(len(free)), key=free.__getitem__)
        start = free[w] if free[w] > t else t
        self.walk_wait += start - t
        at = start + self.walk_cycles
        address = vpn << self.shift
        pde = self.state.pde
        directory = address >> self.pde_shift
        ready = pde.find(directory)
        if ready is None:
            at = self.read(self.tables.pde_address(address), 8, at)
            self.walk_reads += 1
            pde.fill(directory, at)
        elif ready > at:
            at = ready
        at = self.read(self.tables.pte_address(address), self.pte_bytes, at)
        self.walk_reads += 1
        self.walks += 1
        free[w] = at
        return at

    def summary(self) -> dict:
        """This launch's TLB hits and misses, walks and the reads they made."""
        s = self.state

        def delta(levels):
            hits = sum(lv.hits - self.start[id(lv)][0] for lv in levels)
            misses = sum(lv.misses - self.start[id(lv)][1] for lv in levels)
            return hits, misses

        l1_hits, l1_misses = delta(s.l1)
        l2_hits, l2_misses = delta([s.l2])
        return {"tlb_l1_hits": l1_hits, "tlb_l1_misses": l1_misses,
                "tlb_l2_hits": l2_hits, "tlb_l2_misses": l2_misses,
                "tlb_walks": self.walks, "tlb_walk_reads": self.walk_reads,
                "tlb_walker_wait_cycles": round(self.walk_wait, 1)}
