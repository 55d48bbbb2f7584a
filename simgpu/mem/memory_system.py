"""The memory pipeline of one GPU for one launch: its units, wired in order.

A warp's global-memory instruction reaches :meth:`MemorySystem.access` as the
coalescer's transactions (:mod:`simgpu.mem.coalesce`; the traffic counter
records the same transactions, so counts and times come from one coalescing).
It becomes one :class:`~simgpu.mem.request.Request` that flows through

1. the **L1** of its SM (:mod:`~simgpu.mem.l1`; global loads, where the config has one),
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
from .caches import L2, L1Cache, SectorCache
from .dram import AddressMap, Dram, Partition
from .interconnect import Interconnect
from .l1 import L1_SETS, L1Unit
from .l2_slices import L2Slices
from .request import Request

__all__ = ["MemorySystem", "Partition", "L2", "SectorCache", "L1Cache", "L1_SETS", "Request"]


class MemorySystem:
    """The memory pipeline (and caches) of one GPU for one launch, shared by every SM.

    Interface for the timed engines: :meth:`access` returns when a warp
    instruction's data are back (a store: when it is acknowledged) and sets
    :attr:`accepted` to the cycle the pipeline took it; :attr:`drained` is when
    the last transaction so far is done (stores and write-backs too);
    :meth:`finish` ends the launch and :meth:`summary` gives the report's fields.
    """

    def __init__(self, config, l2: L2 | None = None):
        self.config = config
        self.amap = AddressMap(config.memory, config.dram)
        self.dram = Dram(config, self.amap)
        self.net = Interconnect(config)
        c = config.cache
        self.l2 = l2 if l2 is not None or not c.present else L2.for_config(c)
        self.l1 = L1Unit(config) if self.l2 is not None and c.l1_bytes_per_sm else None
        self.slices = (L2Slices(config, self.l2, self.amap, self.dram, self.net, self.l1)
                       if self.l2 is not None else None)
        self.atomics = AtomicUnit(config, self.amap, self.dram, self.net, self.slices)
        self.accepted = 0.0       # when the pipeline took the last request (>= its issue)
        self._drained = 0.0

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
        done = self._drained
        if self.slices is not None and self.slices.drained > done:
            done = self.slices.drained
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

    def locate(self, address):
        """(partition, bank, row) of byte addresses (an int or a numpy array)."""
        return self.amap.locate(address)

    # --- the pipeline ------------------------------------------------------------------

    def access(self, kind: str, addresses, sizes, t: float, sm: int = 0, *,
               l1: bool = True) -> float:
        """Serve one warp instruction's transactions issued at cycle ``t`` by SM ``sm``;
        return when its data is back (a store: when it is acknowledged) and set
        :attr:`accepted`.  ``l1=False``: a load that passes the L1 by (a fresh load,
        simgpu.ir.fresh: relaxed at device scope, read at the L2).

        ``addresses`` and ``sizes`` are lists of ints (or int arrays): a warp
        instruction has at most 32 transactions, so plain Python beats numpy's
        per-call overhead here.
        """
        if not isinstance(addresses, list):
            addresses, sizes = np.asarray(addresses).tolist(), np.asarray(sizes).tolist()
        req = Request(kind, sm, t, addresses, sizes, l1)
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
            accepted = req.issued + self.dram.wait
            if accepted > req.accepted:
                req.accepted = accepted
        self.accepted = req.accepted
        if done > self._drained:
            self._drained = done
        return done

    def _uncached(self, req: Request) -> float:
        """Loads and stores of a GPU without caches: straight to the partitions."""
        t = req.translated
        arrive = self.net.to_partition(t)
        by_part: dict = {}
        where, cache, granule = self.amap.where, self.amap.cache, self.amap.granule
        for a, s in zip(req.addresses, req.sizes):
            w = cache.get(a // granule) or where(a)
            txns = by_part.get(w[0])
            if txns is None:
                by_part[w[0]] = [(w[1], w[2], s, a)]
            else:
                txns.append((w[1], w[2], s, a))
        done = t
        write, serve, to_sm = req.kind == "store", self.dram.serve, self.net.to_sm
        for part, txns in by_part.items():
            finish = to_sm(serve(part, txns, arrive, write=write))
            if finish > done:
                done = finish
        return done

    def cross(self, crossings: list) -> float:
        """Book far loads' data on the link between the L2's halves (L2Slices.cross)."""
        return self.slices.cross(crossings)

    # --- the end of a launch ---------------------------------------------------------

    def finish(self, cycles: float) -> None:
        """The launch ended at ``cycles``: move the L2's clock past it."""
        if self.l2 is not None:
            self.l2.clock = self.slices.clock + cycles

    def summary(self, cycles: float) -> dict:
        """Per-partition counts, queue depths and utilization for the report."""
        seconds = cycles / (self.config.gpu.core_clock_mhz * 1e6) if cycles else 0
        caches = {}
        if self.l1 is not None:
            caches["l1_hit_rate"] = self.l1.hit_rate()
        if self.slices is not None:
            caches.update(self.slices.summary())
        dram = self.dram.summary(cycles)
        return {**caches, **dram,
                "achieved_gbps": dram["dram_bytes"] / seconds / 1e9 if seconds else 0.0}
