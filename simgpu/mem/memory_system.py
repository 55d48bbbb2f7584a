"""The memory pipeline of one GPU for one launch: its units, wired in order.

A warp's global-memory instruction reaches :meth:`MemorySystem.access` as the
coalescer's transactions (:mod:`simgpu.mem.coalesce`; the traffic counter
records the same transactions, so counts and times come from one coalescing).
It becomes one :class:`~simgpu.mem.request.Request` that flows through

0. the **TLBs** (:mod:`~simgpu.mem.tlb`; where the config has a ``[tlb]``): its pages
   are translated, a miss in both levels walking the page tables through this
   memory system (:meth:`MemorySystem.walk_read`),
1. the **L1** of its SM: its pipeline (:mod:`~simgpu.mem.l1_pipe`; loads and stores,
   where the config gives its rates), then its cache (:mod:`~simgpu.mem.l1`; global
   loads, where the config has one),
2. the **interconnect** to the partitions (:mod:`~simgpu.mem.interconnect`),
3. the **L2 slices** (:mod:`~simgpu.mem.l2_slices`; where the config has an L2),
4. the **DRAM partitions** (:mod:`~simgpu.mem.dram`; address map, banks, rows, bus),
5. the **atomic unit** (:mod:`~simgpu.mem.atomic_unit`) for atomics,

and back over the interconnect.  Each unit keeps its own state and counts;
this class only wires them and collects the report.

All times are in SM-clock cycles (the config's ``core_clock_mhz``).
"""
from __future__ import annotations

import numpy as np

from .atomic_unit import AtomicUnit
from .caches import L2, L1Cache, SectorCache, write_mask_sector
from .dram import AddressMap, Dram, Partition
from .interconnect import Interconnect
from .l1 import L1_SETS, L1Unit
from .l1_pipe import L1Pipe
from .l2_slices import L2Slices
from .mshr import Mshr
from .request import Request
from .uncached import uncached
from .deferred_reads import DEFERRED, DeferredReads, uncached_load
from .deferred_l2 import DeferredL2
from .address_space import PageTables
from .tlb import TlbState, Translator  # noqa: F401  (TlbState: the type of ``tlbs``)

__all__ = ["MemorySystem", "Partition", "L2", "SectorCache", "L1Cache", "L1_SETS", "Request"]


class MemorySystem:
    """The memory pipeline (and caches) of one GPU for one launch, shared by every SM.

    Interface for the timed engines: :meth:`access` returns when a warp
    instruction's data are back (a store: when it is acknowledged) and sets
    :attr:`accepted` to the cycle the pipeline took it; :attr:`drained` is when
    the last transaction so far is done (stores and write-backs too);
    :meth:`finish` ends the launch and :meth:`summary` gives the report's fields.
    """

    def __init__(self, config, l2: L2 | None = None, tlbs: TlbState | None = None):
        self.config = config
        self.amap = AddressMap(config.memory, config.dram)
        self.dram = Dram(config, self.amap)
        self.net = Interconnect(config)
        c = config.cache
        self.l2 = l2 if l2 is not None or not c.present else L2.for_config(c)
        self.l1 = L1Unit(config) if self.l2 is not None and c.l1_bytes_per_sm else None
        self.slices = (L2Slices(config, self.l2, self.amap, self.dram, self.net, self.l1)
                       if self.l2 is not None else None)
        self.l1_pipe = L1Pipe(config) if L1Pipe.configured(config) else None
        self.atomics = AtomicUnit(config, self.amap, self.dram, self.net, self.slices)
        # an L2 that keeps write masks wants each store's bytes per sector (the engine's
        # simgpu.sim.sm.store_masks): its sector size, else 0
        self.write_masks = write_mask_sector(c)
        # Address translation, with the device's TLBs (``tlbs``: their contents outlive
        # the launch). Without them (unit tests of the other units) addresses go
        # untranslated.
        self.translator = None
        if tlbs is not None and getattr(config, "tlb", None) is not None:
            self.translator = Translator(config, tlbs, PageTables.for_config(config),
                                         self.walk_read)
        limit = config.issue.max_outstanding_misses_per_sm
        self.mshr = Mshr(limit, config.gpu.sm_count) if limit else None
        self.accepted = 0.0       # when the pipeline took the last request (>= its issue)
        self._drained = 0.0
        self.deferred: DeferredReads | None = None   # (defer_reads)
        self.fast = None          # the compiled core, while it books (use_fast)

    def use_fast(self) -> bool:
        """Book loads and stores with the compiled memory core where it covers this
        config (:mod:`~simgpu.mem.fast_memory`; numba, GT200); whether it does."""
        from .fast_memory import attach
        self.fast = attach(self)
        return self.fast is not None

    def fast_off(self) -> None:
        """The compiled core's state back into the units, which go on from there."""
        if self.fast is not None:
            self.fast.give_back()
            self.fast = None

    # --- the pipeline's state, as the engines and tests read it ----------------------

    @property
    def parts(self) -> list:
        return self.dram.parts

    @property
    def n(self) -> int:
        return self.dram.n

    @property
    def drained(self) -> float:
        """When the last transaction so far is done (stores and write-backs too: reading
        it sends the writes still queued at the partitions to DRAM)."""
        self.fast_off()
        done = self._drained
        if self.slices is not None and self.slices.drained > done:
            done = self.slices.drained
        if self.deferred is not None and self.deferred.drained > done:
            done = self.deferred.drained
        written = self.dram.drain()
        return written if written > done else done

    @drained.setter
    def drained(self, value: float) -> None:
        self._drained = value

    @property
    def crossings(self) -> list:
        """Far loads' data still to cross between the L2's halves (see :meth:`cross`)."""
        return self.slices.crossings if self.slices is not None else []

    @crossings.setter
    def crossings(self, value: list) -> None:
        if self.slices is not None:
            self.slices.crossings = value

    def defer_reads(self, schedule) -> DeferredReads:
        """Queue loads' DRAM reads for FR-FCFS decisions made as the simulation goes on
        (``[dram] read_scheduling = "fr-fcfs"``, :mod:`~simgpu.mem.deferred_reads`):
        :meth:`access` then returns a load's stand-in time (>= ``DEFERRED``).
        ``schedule(t, fn)``: the engine calls ``fn()`` once its clock is at ``t``.
        With an L2 its misses' reads are deferred (:mod:`~simgpu.mem.deferred_l2`), and
        so is every time that takes theirs (hits on their sectors, stores, atomics)."""
        self.fast_off()
        self.deferred = DeferredReads(self.dram, self.net, self.mshr)
        self.deferred.schedule = schedule
        if self.slices is not None:
            self.deferred.unit = self.slices.defer = DeferredL2(self.deferred, self.slices)
        return self.deferred

    def _hold(self, sm: int, n: int, done: float) -> None:
        """``n`` miss entries of ``sm`` held until ``done`` (a deferred load's: until its
        time is decided)."""
        entry = self.mshr.hold(sm, n, done)
        if done >= DEFERRED:
            self.deferred.hold(entry, done)

    def locate(self, address):
        """(partition, bank, row) of byte addresses (an int or a numpy array)."""
        return self.amap.locate(address)

    # --- the pipeline ------------------------------------------------------------------

    def access(self, kind: str, addresses, sizes, t: float, sm: int = 0, *,
               l1: bool = True, lanes: dict | None = None) -> float:
        """Serve one warp instruction's transactions issued at cycle ``t`` by SM ``sm``;
        return when its data is back (a store: when it is acknowledged) and set
        :attr:`accepted`.  ``l1=False``: a load that passes the L1 by (a fresh load,
        simgpu.ir.fresh: relaxed at device scope, read at the L2).

        ``addresses`` and ``sizes`` are lists of ints (or int arrays): a warp
        instruction has at most 32 transactions, so plain Python beats numpy's
        per-call overhead here.  ``lanes`` (atomics): {word address: lanes on it},
        for the atomic unit's serialization.

        A load's or an atomic's transactions that miss the SM's L1 first take its miss
        entries (where the config bounds them, :mod:`~simgpu.mem.mshr`; see
        :meth:`entry_positions`): those that find none free go on later, as entries
        free, and the pipeline accepts the instruction then.
        """
        if self.fast is not None:
            if kind != "atomic" and len(addresses):
                return self.fast.access(kind, addresses, sizes, t, sm)
            self.fast_off()               # (atomics: the Python units from here on)
        if not isinstance(addresses, list):
            addresses, sizes = np.asarray(addresses).tolist(), np.asarray(sizes).tolist()
        mshr = self.mshr
        if mshr is None or kind == "store" or not addresses:
            return self._request(kind, addresses, sizes, t, sm, l1, lanes)
        free = mshr.free_at(sm, t)
        if free >= len(addresses):        # the usual case (the engine waited for entries):
            cache = (self.l1.caches[sm] if kind == "load" and l1 and self.l1 is not None
                     else None)           # the L1's own count of this request's misses
            before = cache.misses if cache is not None else 0
            done = self._request(kind, addresses, sizes, t, sm, l1, lanes)
            n = cache.misses - before if cache is not None else len(addresses)
            if n:
                self._hold(sm, n, done)
            return done
        need = self.entry_positions(kind, addresses, sm, l1)
        n, first, done, accepted = len(need), 0, t, t
        if free >= n:                     # (none for L1 hits)
            done = self._request(kind, addresses, sizes, t, sm, l1, lanes)
            if n:
                self._hold(sm, n, done)
            return done
        taken = 0
        while taken < n:
            take, at = mshr.admit(sm, n - taken, t)
            taken += take
            end = need[taken] if taken < n else len(addresses)   # up to the next miss
            back = self._request(kind, addresses[first:end], sizes[first:end], at, sm, l1, lanes)
            self._hold(sm, take, back)
            if back > done:
                done = back
            if self.accepted > accepted:
                accepted = self.accepted
            first, t = end, at
        self.accepted = accepted
        return done

    def entry_positions(self, kind: str, addresses: list, sm: int, l1: bool = True,
                        start: int = 0) -> list:
        """Which of an instruction's transactions (their indices, from ``start``) take a
        miss entry: those of a load that miss the SM's L1, every one of a load that
        passes the L1 by and of an atomic.  A sector the L1 holds, or whose data are
        already on their way there, takes none: its request merges with the entry that
        fetches it (GPGPU-Sim's and Accel-Sim's MSHRs merge the same way).  The L1 is
        only looked at, not changed (the access looks it up again)."""
        cache = (self.l1.caches[sm] if kind == "load" and l1 and self.l1 is not None
                 else None)
        if cache is None:
            return list(range(start, len(addresses)))
        return cache.missing(addresses, start)

    def _request(self, kind, addresses, sizes, t, sm, l1, lanes) -> float:
        """One request through the units (its miss entries taken)."""
        accepted, allowance = t, 0.0
        pipe = self.l1_pipe
        if pipe is not None and kind != "atomic":
            # the SM's L1 pipeline takes it when it is free and holds it for its cycles;
            # the SM hands over its next instruction once this one is within the queue's
            # cycles of the pipeline's end
            cache = (self.l1.caches[sm] if kind == "load" and l1 and self.l1 is not None
                     else None)
            _, t = pipe.enter(sm, t, pipe.cycles(kind, addresses, cache, lanes))
            allowance = pipe.queue
            if t - allowance > accepted:
                accepted = t - allowance
        req = Request(kind, sm, t, addresses, sizes, l1)
        req.accepted = accepted
        if self.translator is not None:
            self.translator.translate(req)
        req.lanes = lanes
        self.dram.wait = 0.0
        if self.slices is not None:
            done = self.atomics.at_l2(req) if kind == "atomic" else self.slices.access(req)
        elif kind == "atomic":
            done = self.atomics.at_partition(req)
        else:
            done = self._uncached(req)
        req.done = done
        if self.dram.wait:
            # Back-pressure: a transaction waited for a place in a full DRAM queue, so
            # the SM's memory pipeline could not hand the request over any sooner.
            # (behind the L1 pipeline: the queue's allowance before it still holds)
            accepted = req.issued + self.dram.wait - allowance
            if accepted > req.accepted:
                req.accepted = accepted
        self.accepted = req.accepted
        if done > self._drained and done < DEFERRED:
            self._drained = done
        return done

    def _uncached(self, req: Request) -> float:
        """Loads and stores of a GPU without caches: straight to the partitions
        (:func:`~simgpu.mem.uncached.uncached`)."""
        if self.deferred is not None and req.kind == "load":
            return uncached_load(self.amap, self.deferred, self.net, req)
        return uncached(self.amap, self.dram, self.net, req)

    def walk_read(self, address: int, nbytes: int, t: float) -> float:
        """A page walker's read of ``nbytes`` of page-table data at physical ``address``,
        issued at ``t``: when the data are back at the walker.  The walker sits on the
        memory side, so its read does not cross the SM interconnect: with an L2 it is an
        L2 access (a miss goes on to DRAM), without one a transaction of
        ``min_access_bytes`` at the entry's partition.  Either way it takes DRAM (or L2)
        time and bandwidth as any read does and shows in the partitions' counts."""
        if self.slices is not None:
            sector = self.config.cache.sector_bytes
            req = Request("load", 0, t, [address - address % sector], [sector], False)
            # booked at arrival, as read_scheduling "at-arrival" books it: the walker
            # needs its time now (page-table sectors are read by walks only, so a walk
            # never finds one whose time is not decided yet)
            defer, self.slices.defer = self.slices.defer, None
            try:
                done = self.slices.access(req)
            finally:
                self.slices.defer = defer
            if done >= DEFERRED:              # (a wiring bug)
                raise RuntimeError(f"a page walk's read of {address:#x} found a sector "
                                   "whose time is not decided yet")
            return done
        size = self.config.memory.min_access_bytes
        address -= address % size
        part, bank, row = self.amap.where(address)
        return self.dram.serve(part, [(bank, row, size, address)], t)

    def cross(self, crossings: list) -> float:
        """Book far loads' data on the link between the L2's halves (L2Slices.cross)."""
        return self.slices.cross(crossings)

    # --- the end of a launch ---------------------------------------------------------

    def finish(self, cycles: float) -> None:
        """The launch ended at ``cycles``: move the L2's clock past it."""
        if self.deferred is not None and self.deferred.open:   # (an engine's wiring bug)
            raise RuntimeError(f"the launch ended with {self.deferred.open} loads whose "
                               "DRAM reads were never decided")
        if self.l2 is not None:
            self.l2.clock = self.slices.clock + cycles

    def summary(self, cycles: float) -> dict:
        """Per-partition counts, queue depths and utilization for the report."""
        self.fast_off()
        seconds = cycles / (self.config.gpu.core_clock_mhz * 1e6) if cycles else 0
        caches = {}
        if self.l1 is not None:
            caches["l1_hit_rate"] = self.l1.hit_rate()
        if self.slices is not None:
            caches.update(self.slices.summary())
        dram = self.dram.summary(cycles)
        extra = self.net.summary()
        if self.translator is not None:
            extra.update(self.translator.summary())
        if self.atomics.operations:
            extra["atomic_operations"] = self.atomics.operations
        if self.atomics.held:
            extra["atomic_queue_held"] = self.atomics.held
        if self.deferred is not None:
            extra["deferred_decisions"] = self.deferred.decisions
        if self.mshr is not None and self.mshr.waits:
            extra["mshr_waits"] = self.mshr.waits
        if self.l1_pipe is not None:
            # cycles the SMs' L1 pipelines were busy, and requests waited for them (summed
            # over the SMs)
            extra["l1_pipe_cycles"] = self.l1_pipe.busy
            extra["l1_pipe_wait_cycles"] = self.l1_pipe.waited
        return {**caches, **dram, **extra,
                "achieved_gbps": dram["dram_bytes"] / seconds / 1e9 if seconds else 0.0}
