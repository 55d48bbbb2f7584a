"""Miss status holding registers: how many global transactions one SM may have in flight.

An SM tracks each transaction of a load or an atomic whose data it waits for in
an entry until the data are back (GPGPU-Sim and Accel-Sim call them MSHRs; on
GT200, without an L1, every transaction is such a miss).  With
``issue.max_outstanding_misses_per_sm`` entries, a transaction that finds them
all taken waits for the earliest one to free: the SM feels it, because the
memory pipeline takes its next instruction only then (the engine reads
``accepted``).

A reservation table, as the other units: each booked request holds its entries
until its data are back (the pipeline knows that time when it books it), so
the entries free in the order of those times, which a heap gives.
"""
from __future__ import annotations

import heapq

__all__ = ["Mshr"]


class Mshr:
    """The miss entries of every SM of one launch."""

    def __init__(self, limit: int, sm_count: int):
        self.limit = limit
        self.held = [[] for _ in range(sm_count)]   # per SM: heap of [free at, entries]
        self.in_use = [0] * sm_count
        self.waits = 0                              # transactions that waited for entries
                                                    # (the report's mshr_waits)
        self.wait_cycles = 0.0

    def free_at(self, sm: int, t: float) -> int:
        """Entries of ``sm`` free at ``t`` (releasing those whose data are back by then)."""
        heap = self.held[sm]
        while heap and heap[0][0] <= t:
            self.in_use[sm] -= heapq.heappop(heap)[1]
        return self.limit - self.in_use[sm]

    def next_free(self, sm: int) -> float:
        """When the next entry of ``sm`` frees (its earliest booked data)."""
        return self.held[sm][0][0]

    def when_free(self, sm: int, n: int) -> float:
        """When ``n`` (at most the limit) entries of ``sm`` are free, as booked so far."""
        return self.when_free_each(sm, (n,))[0]

    def when_free_each(self, sm: int, needs) -> list[float]:
        """:meth:`when_free` of each of ``needs``: the held entries taken earliest first
        from a copy of the heap (a warp waits for a few of an SM's hundreds)."""
        heap = self.held[sm][:]
        free = self.limit - self.in_use[sm]
        taken: list = []                            # [until, cumulative count], in order
        out = []
        for n in needs:
            short = n - free
            for until, total in taken:
                if total >= short:
                    out.append(until)
                    break
            else:
                total = taken[-1][1] if taken else 0
                while heap:
                    until, count = heapq.heappop(heap)
                    total += count
                    taken.append((until, total))
                    if total >= short:
                        out.append(until)
                        break
                else:
                    raise ValueError(f"{n} entries asked of {self.limit}")
        return out

    def admit(self, sm: int, n: int, t: float) -> tuple[int, float]:
        """The first of ``n`` transactions of one instruction reach the entries at ``t``:
        (how many of them go, when) -- as many as there are free entries, once at least
        one is.  The caller books them, calls :meth:`hold` with their data's time, and
        admits the rest after them."""
        free = self.free_at(sm, t)
        if free <= 0:
            later = self.next_free(sm)
            self.waits += n
            self.wait_cycles += (later - t) * n
            t = later
            free = self.free_at(sm, t)
        take = min(free, n)
        return take, t

    def hold(self, sm: int, n: int, until: float) -> list:
        """``n`` entries of ``sm`` are taken until ``until`` (their data are back); the
        entry (a deferred load's gets its time later: simgpu.mem.deferred_reads)."""
        self.in_use[sm] += n
        entry = [until, n]
        heapq.heappush(self.held[sm], entry)
        return entry
