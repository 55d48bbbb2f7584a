"""A device's global memory as the driver lays it out: one address space, page tables
in it, and a capacity that allocations cannot exceed.

* :class:`PageTables` -- where the page directory and the page tables live in device
  memory (at its top, reserved by the driver), and the physical address of the
  page-directory entry (PDE) and page-table entry (PTE) a walk reads for a virtual
  address.  The TLB unit (:mod:`simgpu.mem.tlb`) reads them through the memory system.
* :class:`AddressSpace` -- the allocator of one device: an array of at least one page
  starts on a page boundary and takes whole pages (as the driver maps large
  allocations); a smaller one is packed 256-byte aligned between others (as the
  driver's sub-allocator packs small ones).  First fit from the bottom in the space
  no array has used yet, so a device whose arrays are never freed lays them out one
  after another; the blocks of freed arrays are taken (first fit) only when that space
  has no room.  An allocation that does not fit raises :class:`DeviceMemoryError` and
  changes nothing.

  Why freed blocks come last (CuPy's pool would hand a freed block out again at
  once): an array is freed when Python drops its last reference, and when that
  happens is not the program's alone to say.  A sampling profiler holding a frame (a
  Dask worker's, every 10 ms), a traceback, a debugger or a reference cycle waiting
  for the collector keeps an array alive a while longer.  Had the next allocation
  gone into the freed block, it would then have landed elsewhere, and the same seed
  given other times (issue 19: list ranking's 40-byte input-scan counters, freed as
  ``device_input.prepare`` returns, kept by a Dask worker's profiler, moved RS2's
  ``given`` array and RS2's time from 0.008826 to 0.008858 ms).  Taken from unused
  space, an address depends only on the sizes allocated before it, as long as the
  device's allocations fit in its memory.

Virtual and physical addresses are the same here: the page tables map every page to
itself (identity), so translation costs time (TLB misses, walks) but never moves data
to another partition, bank or row than the address says.
"""
from __future__ import annotations

import bisect

__all__ = ["DeviceMemoryError", "PageTables", "AddressSpace", "ALIGNMENT", "PDE_BYTES"]

ALIGNMENT = 256           # cudaMalloc returns 256-byte aligned pointers
PDE_BYTES = 8             # one page-directory entry (envytools, G80 VM; Hopper's PDEs too)


class DeviceMemoryError(MemoryError):
    """An allocation did not fit in the device's memory; nothing was allocated.

    ``requested`` (bytes), ``in_use`` (bytes of live arrays and the driver's page
    tables), ``capacity`` (the device's memory) and ``what`` (the array asked for)
    say why."""

    def __init__(self, message: str, requested: int, in_use: int, capacity: int, what: str = ""):
        super().__init__(message)
        self.requested = requested
        self.in_use = in_use
        self.capacity = capacity
        self.what = what


def _round_up(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def _first_fit(starts: list, ends: list, align: int, size: int) -> int | None:
    """The lowest base, aligned to ``align``, of ``size`` bytes inside one of the
    blocks [starts[i], ends[i]), or None."""
    for lo, hi in zip(starts, ends):
        base = _round_up(lo, align)
        if base + size <= hi:
            return base
    return None


def _gib(n: int) -> str:
    return f"{n:,} bytes ({n / 2**30:.3f} GiB)" if n >= 2**30 else f"{n:,} bytes ({n / 2**20:.1f} MiB)"


class PageTables:
    """The page directory and the page tables of one device, at the top of its memory.

    One PDE (8 bytes) per ``pde_span`` of the address space, then for each PDE its page
    table: ``pte_bytes`` per page of ``page_bytes``, the tables one after another, so the
    PTE of a virtual page ``v`` is at ``pt_base + v * pte_bytes``.  The region is
    rounded up to whole pages and counted as in use (the driver reserves it)."""

    def __init__(self, capacity: int, page_bytes: int, pde_span: int, pte_bytes: int):
        self.page_bytes = page_bytes
        self.page_shift = page_bytes.bit_length() - 1
        self.pde_shift = pde_span.bit_length() - 1
        pdes = -(-capacity // pde_span)
        directory = _round_up(pdes * PDE_BYTES, 4096)
        tables = pdes * (pde_span // page_bytes) * pte_bytes
        self.bytes = _round_up(directory + tables, page_bytes)
        self.base = (capacity // page_bytes) * page_bytes - self.bytes
        self.pd_base = self.base
        self.pt_base = self.base + directory
        self.pte_bytes = pte_bytes

    @classmethod
    def for_config(cls, config) -> "PageTables | None":
        t = getattr(config, "tlb", None)
        if t is None:
            return None
        return cls(config.memory.global_memory_bytes, t.page_bytes, t.pde_span_bytes, t.pte_bytes)

    def pde_address(self, address: int) -> int:
        return self.pd_base + (address >> self.pde_shift) * PDE_BYTES

    def pte_address(self, address: int) -> int:
        return self.pt_base + (address >> self.page_shift) * self.pte_bytes


class AddressSpace:
    """The allocator of one device's global memory (capacity from ``memory.global_memory_bytes``)."""

    def __init__(self, config, device_name: str = "the device"):
        self.capacity = int(config.memory.global_memory_bytes)
        self.device_name = device_name
        self.tables = PageTables.for_config(config)
        self.page_bytes = self.tables.page_bytes if self.tables is not None else None
        top = self.tables.base if self.tables is not None else self.capacity
        self.reserved = self.capacity - top        # the page tables (and what is above them)
        # Free blocks [start, end), sorted, never touching; address 0 stays unused (NULL).
        self._starts = [ALIGNMENT]
        self._ends = [top]
        self.in_use = self.reserved                # bytes taken: arrays (rounded) + tables
        self.arrays = 0
        # The free space no array has used yet, [start, end) sorted (a part of the free
        # blocks above): allocations look here first (see the module's docstring)
        self._unused_starts = [ALIGNMENT]
        self._unused_ends = [top]

    def span(self, nbytes: int) -> tuple[int, int]:
        """(alignment, bytes taken) of an allocation of ``nbytes``."""
        nbytes = max(int(nbytes), 1)
        page = self.page_bytes
        if page is not None and nbytes >= page:
            return page, _round_up(nbytes, page)
        return ALIGNMENT, _round_up(nbytes, ALIGNMENT)

    def allocate(self, nbytes: int, what: str = "") -> int:
        """The base address of a new block for ``nbytes``; raises DeviceMemoryError (and
        changes nothing) if no free block holds it."""
        align, size = self.span(nbytes)
        base = _first_fit(self._unused_starts, self._unused_ends, align, size)
        if base is None:                           # freed blocks only when that is full
            base = _first_fit(self._starts, self._ends, align, size)
        if base is not None:
            i = bisect.bisect_right(self._starts, base) - 1      # the free block holding it
            self._take(i, base, base + size)
            self._now_used(base, base + size)
            self.in_use += size
            self.arrays += 1
            return base
        free = self.capacity - self.in_use
        largest = max((hi - _round_up(lo, align) for lo, hi in zip(self._starts, self._ends)),
                      default=0)
        tables = (f" and the driver's page tables, {self.reserved:,} bytes"
                  if self.reserved else "")
        raise DeviceMemoryError(
            f"out of device memory on {self.device_name}: {what or 'an array'} needs "
            f"{_gib(int(nbytes))}" + (f" ({size:,} as allocated)" if size != int(nbytes) else "")
            + f", but {_gib(self.in_use)} of the {_gib(self.capacity)} capacity are in use "
            f"({self.arrays} array{'s' if self.arrays != 1 else ''}{tables}); {_gib(free)} free"
            + (f", but no free block that large (the largest: {_gib(max(largest, 0))})"
               if free >= size else "")
            + ". Nothing was allocated. Free arrays you no longer need (del them) or "
            "use smaller ones.", int(nbytes), self.in_use, self.capacity, what)

    def release(self, base: int, nbytes: int) -> None:
        """Return the block of an array allocated with ``nbytes`` at ``base``."""
        size = self.span(nbytes)[1]
        end = base + size
        i = bisect.bisect_left(self._starts, base)
        starts, ends = self._starts, self._ends
        if i > 0 and ends[i - 1] == base:               # joins the block below
            i -= 1
            ends[i] = end
        else:
            starts.insert(i, base)
            ends.insert(i, end)
        if i + 1 < len(starts) and starts[i + 1] == ends[i]:   # and the one above
            ends[i] = ends.pop(i + 1)
            starts.pop(i + 1)
        self.in_use -= size
        self.arrays -= 1

    def _take(self, i: int, base: int, end: int) -> None:
        lo, hi = self._starts[i], self._ends[i]
        del self._starts[i], self._ends[i]
        if end < hi:
            self._starts.insert(i, end)
            self._ends.insert(i, hi)
        if lo < base:
            self._starts.insert(i, lo)
            self._ends.insert(i, base)

    def _now_used(self, lo: int, hi: int) -> None:
        """Take [lo, hi) out of the unused space (it may span several of its pieces
        where a freed block joined them)."""
        starts, ends = self._unused_starts, self._unused_ends
        i = bisect.bisect_right(ends, lo)                  # the first piece ending above lo
        j = i
        while j < len(starts) and starts[j] < hi:
            j += 1
        if i == j:
            return
        keep_s, keep_e = [], []
        if starts[i] < lo:
            keep_s.append(starts[i])
            keep_e.append(lo)
        if ends[j - 1] > hi:
            keep_s.append(hi)
            keep_e.append(ends[j - 1])
        starts[i:j], ends[i:j] = keep_s, keep_e

    @property
    def free_bytes(self) -> int:
        return self.capacity - self.in_use
