"""The per-SM L1 unit: global loads look here first (where the config has an L1).

A hit costs ``cache.l1_latency_cycles`` (or waits for its sector if that is
still in flight); a miss goes on to the L2 and, when the data come back, the
sector is filled (the caller writes the ready time into the returned line).
Stores write through without allocating and atomics bypass it; the L1 starts
empty at every launch (the driver invalidates it between kernels).  The
cache's structure is :class:`~simgpu.mem.caches.L1Cache`.
"""
from __future__ import annotations

from .caches import L1Cache

__all__ = ["L1Unit", "L1_SETS"]

#: Sets of an L1 when the config does not say: Accel-Sim's l1_assoc
#: microbenchmark finds 4 sets (of many ways) on every NVIDIA GPU since Kepler.
L1_SETS = 4


class L1Unit:
    """Every SM's L1 of one launch."""

    def __init__(self, config):
        c = config.cache
        sets = c.l1_sets
        self.caches = [L1Cache(c.l1_bytes_per_sm, c.l1_line_bytes, c.sector_bytes, sets)
                       for _ in range(config.gpu.sm_count)]
        self.latency = c.l1_latency_cycles

    def __getitem__(self, sm: int) -> L1Cache:
        return self.caches[sm]

    def __len__(self) -> int:
        return len(self.caches)

    @staticmethod
    def lookup(l1: L1Cache, a: int):
        """(ready, line, k) for the sector holding ``a`` in SM cache ``l1``: ``ready``
        its ready time on a hit (None on a miss, which allocates the line, LRU within
        its set), ``line`` the line's list of sector ready times, ``k`` the sector's
        place in it.  Counts the hit or miss."""
        line, k = l1.find(a)
        ready = line[k]
        if ready is not None:
            l1.hits += 1
        else:
            l1.misses += 1
        return ready, line, k

    def hit_rate(self) -> float:
        hits, misses = sum(c.hits for c in self.caches), sum(c.misses for c in self.caches)
        return hits / (hits + misses) if hits + misses else 0.0
