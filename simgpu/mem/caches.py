"""The caches of modern GPUs: a per-SM L1 of 128-byte lines and a shared L2 of sectors.

Both keep *timing* state only: the simulator's data always lives in the
device arrays, so a cache decides how long an access takes, never what it
returns.  Each cache entry remembers when its data is (or will be) back at
an SM, so an access that hits a sector still in flight waits for it, as a
GPU's miss-status registers make it do, instead of being served early.

* :class:`SectorCache` (the L2): set-associative over 32-byte sectors, LRU,
  write-back with write-allocate; a store marks its sector dirty without
  fetching it (NVIDIA's L2 keeps byte masks), and a dirty sector evicted
  later is written back to DRAM (:attr:`SectorCache.evicted` lists them
  until the memory system has queued them at their partitions).  Each entry
  also keeps the mask of its bytes that hold data: all of them for a sector
  read from DRAM, the written ones for a sector a store allocated.  A sector
  written back while only partly written is listed in
  :attr:`SectorCache.merge_reads` too: the DRAM must read it before it writes
  it (``[cache] l2_write_masks``; calibration/partial_stores.py).
* :class:`L2` (the device's): one SectorCache, or two halves on the GPUs
  whose L2 is split (Ampere, Hopper): each half caches what the SMs beside it
  read, so a sector that SMs of both halves read is held twice.
* :class:`L1Cache` (one per SM): lines of ``line_bytes`` with a valid bit
  (a ready time) per sector; a miss allocates the line (LRU within its set)
  and fills only the missing sector.  Write-through without allocation:
  stores leave it alone (see docs/memory-model.md).

Sets are Python dicts in LRU order (oldest first): a hit moves its key to
the end, an eviction takes the first key.
"""
from __future__ import annotations

from collections import deque


def write_mask_sector(cache) -> int:
    """The sector size of an L2 that keeps write masks (``[cache] l2_write_masks``), to
    which the engines hand each store's bytes per sector; 0 where there is none."""
    return cache.sector_bytes if cache.present and cache.l2_write_masks else 0


class SectorCache:
    """A set-associative cache of sectors with LRU replacement and write-back."""

    WAYS = 16

    def __init__(self, size_bytes: int, sector_bytes: int, dirty_bytes: int | None = None):
        self.sector = sector_bytes
        self.sets = max(1, size_bytes // (sector_bytes * self.WAYS))
        self.lines: dict = {}                  # set -> {tag: [ready, dirty, mask]}, LRU first
        self.full = (1 << sector_bytes) - 1    # the mask of a sector whose bytes all hold data
        self.hits = 0
        self.misses = 0
        self.writebacks = 0                    # dirty sectors written back, over the cache's life
        self.evicted: list = []                # their addresses, until queued at DRAM
        self.merge_reads: list = []            # those of them written only in part
        # At most this many dirty sectors: beyond it the oldest dirty one is written
        # back (and stays, clean). A GPU's L2 keeps far less dirty data than it holds.
        self.dirty_limit = dirty_bytes // sector_bytes if dirty_bytes else None
        self.dirty_count = 0
        self._dirty_order: deque = deque()     # tags in the order they became dirty

    def find(self, address: int):
        """The entry ``[ready, dirty, mask]`` of the sector holding ``address`` (a hit, made most
        recently used), or None (a miss).  Counts the hit or miss."""
        tag = address // self.sector
        ways = self.lines.get(tag % self.sets)
        if ways is not None:
            entry = ways.pop(tag, None)
            if entry is not None:
                ways[tag] = entry
                self.hits += 1
                return entry
        self.misses += 1
        return None

    def fill(self, address: int, ready: float, dirty: bool = False, mask: int | None = None) -> list:
        """Allocate the (missing) sector of ``address`` with the bytes of ``mask`` holding
        data (None: all of them); evict the set's LRU sector, remembering it for a
        write-back if it is dirty.  Returns the new entry.  A sector that is there already
        (written only in part, and now read from DRAM) is merged instead: it keeps its
        place and its dirty bit, and all its bytes hold data from ``ready`` on."""
        tag = address // self.sector
        ways = self.lines.get(tag % self.sets)
        if ways is None:
            ways = self.lines[tag % self.sets] = {}
        else:
            entry = ways.pop(tag, None)
            if entry is not None:
                ways[tag] = entry
                entry[0], entry[2] = ready, self.full
                return entry
            if len(ways) >= self.WAYS:
                victim = next(iter(ways))
                old = ways.pop(victim)
                if old[1]:
                    self.writebacks += 1
                    self.dirty_count -= 1
                    self.evicted.append(victim * self.sector)
                    if old[2] != self.full:
                        self.merge_reads.append(victim * self.sector)
        entry = ways[tag] = [ready, False, self.full if mask is None else mask]
        if dirty:
            self.make_dirty(address, entry)
        return entry

    def make_dirty(self, address: int, entry: list) -> None:
        """Mark ``entry`` (the sector of ``address``) written; past the dirty limit,
        write the oldest dirty sector back."""
        if entry[1]:
            return
        entry[1] = True
        self.dirty_count += 1
        if self.dirty_limit is None:
            return
        order = self._dirty_order
        order.append(address // self.sector)
        if len(order) > 2 * self.dirty_limit + 1024:    # drop tags evicted since (bounded)
            lines, sets = self.lines, self.sets
            self._dirty_order = order = deque(
                t for t in order if (e := lines.get(t % sets, {}).get(t)) is not None and e[1])
        while self.dirty_count > self.dirty_limit and order:
            tag = order.popleft()
            old = self.lines.get(tag % self.sets, {}).get(tag)
            if old is not None and old[1]:     # still here and still dirty
                old[1] = False
                self.dirty_count -= 1
                self.writebacks += 1
                self.evicted.append(tag * self.sector)
                if old[2] != self.full:        # merged with DRAM's bytes on the way out
                    self.merge_reads.append(tag * self.sector)
                    old[2] = self.full

    def lookup(self, address: int, write: bool = False) -> bool:
        """True on a hit; on a miss the sector is filled (evicting the LRU one).
        ``write`` marks the sector dirty."""
        entry = self.find(address)
        if entry is None:
            self.fill(address, 0.0, write)
            return False
        if write:
            self.make_dirty(address, entry)
        return True

    def dirty_sectors(self) -> int:
        return sum(e[1] for ways in self.lines.values() for e in ways.values())


class L2:
    """The device's L2: ``halves`` SectorCaches of ``l2_bytes / halves`` each.

    With two halves (``[cache] l2_halves = 2``), every sector has a home half (its
    memory partition's) that holds its written data and is the one to go to DRAM;
    the other half may hold a clean copy of it, made when one of its own SMs read
    it.  Which half a lookup goes to is the memory system's business
    (:class:`~simgpu.mem.l2_slices.L2Slices`); this class holds the halves, the
    clock their ready times are kept on, and the counts over both.
    """

    def __init__(self, halves: list):
        self.halves = halves
        self.evicted: list = []                # dirty sectors of either half, until queued
        self.merge_reads: list = []            # of them, those written only in part
        for h in halves:
            h.evicted, h.merge_reads = self.evicted, self.merge_reads
        # Ready times are kept on one clock over the L2's life: a launch's cycle t is
        # clock + t, and each launch moves the clock past its end, so data left by an
        # earlier launch is never "still on its way".
        self.clock = 0.0

    @classmethod
    def for_config(cls, cache) -> "L2":
        n = cache.l2_halves
        dirty = cache.l2_dirty_bytes // n if cache.l2_dirty_bytes else None
        return cls([SectorCache(cache.l2_bytes // n, cache.sector_bytes, dirty) for _ in range(n)])

    @property
    def sector(self) -> int:
        return self.halves[0].sector

    def home(self, partition: int) -> int:
        """The half that memory partition ``partition`` belongs to (alternate partitions
        on alternate halves, so that the copy of a sector in the other half can sit in
        the neighbouring partition's slice, ``partition ^ 1``)."""
        return partition % len(self.halves)

    @property
    def hits(self) -> int:
        return sum(h.hits for h in self.halves)

    @property
    def misses(self) -> int:
        return sum(h.misses for h in self.halves)

    @property
    def writebacks(self) -> int:
        return sum(h.writebacks for h in self.halves)

    def find(self, address: int, half: int = 0):
        """SectorCache.find in one half."""
        return self.halves[half].find(address)

    def lookup(self, address: int, write: bool = False, half: int = 0) -> bool:
        """SectorCache.lookup in one half."""
        return self.halves[half].lookup(address, write)

    def dirty_sectors(self) -> int:
        return sum(h.dirty_sectors() for h in self.halves)


class L1Cache:
    """One SM's L1 data cache: sets of lines, a ready time (or None) per sector."""

    def __init__(self, size_bytes: int, line_bytes: int, sector_bytes: int, sets: int):
        self.line = line_bytes
        self.sector = sector_bytes
        self.per_line = line_bytes // sector_bytes
        self.set_count = max(1, sets)
        self.ways = max(1, size_bytes // (line_bytes * self.set_count))
        self.sets = [{} for _ in range(self.set_count)]   # line tag -> [ready per sector]
        self.hits = 0
        self.misses = 0

    def missing(self, addresses: list, start: int = 0) -> list:
        """The indices (from ``start``) of the sector addresses this cache neither holds
        nor has on their way: a sector is held, or coming, where its line's entry has a
        ready time for it.  Only looked at: the LRU order and the counts stay as they
        are.  (Inlined: it runs for every request through the L1 pipeline.)"""
        line, sector, per_line, sets, n_sets = (self.line, self.sector, self.per_line,
                                                self.sets, self.set_count)
        out = []
        for i in range(start, len(addresses)):
            a = addresses[i]
            tag = a // line
            entry = sets[tag % n_sets].get(tag)
            if entry is None or entry[(a // sector) % per_line] is None:
                out.append(i)
        return out

    def find(self, address: int):
        """(line entry, sector index): the entry is made most recently used, or
        allocated (evicting the set's LRU line) when absent.  ``entry[k]`` is None
        when sector k is not valid.  Does not count hits or misses."""
        tag = address // self.line
        ways = self.sets[tag % self.set_count]
        entry = ways.pop(tag, None)
        if entry is None:
            if len(ways) >= self.ways:
                del ways[next(iter(ways))]
            entry = [None] * self.per_line
        ways[tag] = entry
        return entry, (address // self.sector) % self.per_line
