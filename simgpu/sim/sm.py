"""One SM of the timed engines: its warp schedulers (the issue of instructions), and
the lanes of a warp's atomic that its memory requests carry to the atomic unit."""
from __future__ import annotations

import numpy as np

__all__ = ["SM", "atomic_lanes", "store_masks"]


class SM:
    """One SM's issue: ``issue.schedulers_per_sm`` warp schedulers, each issuing one warp
    instruction per ``warp_issue_cycles x schedulers_per_sm`` cycles (GT200: one
    scheduler, one instruction per 4 cycles on 8 SPs; H100: four sub-partition
    schedulers, one instruction per cycle each).  A warp belongs to one scheduler
    (warp number modulo the schedulers, as the SM's sub-partitions take them); a
    group of warps run together (the timed-block engine) spreads over as many as it
    has warps.  A warp stalled on a pending operand issues nothing: the engine waits
    for its data without booking a scheduler, so other warps take the slots."""

    def __init__(self, index: int, config):
        self.index = index
        self.issue_cycles = config.issue.warp_issue_cycles
        self.schedulers = config.issue.schedulers_per_sm
        self.interval = self.issue_cycles * self.schedulers   # one scheduler's issue interval
        self.alu_latency = config.issue.alu_latency_cycles
        self.free = [0.0] * self.schedulers    # when each scheduler may issue again
        self.busy = 0.0
        self.memory_free = 0.0       # the memory pipeline takes no instruction before

    @property
    def issue_free(self) -> float:
        """When every scheduler is free (what a whole-SM event waits for)."""
        return max(self.free)

    @issue_free.setter
    def issue_free(self, value: float) -> None:
        self.free = [value] * self.schedulers

    def issue(self, now: float, k: int, warps: int = 1, warp: int = 0,
              pinned: bool = False) -> tuple[float, float]:
        """Reserve the schedulers for k warp instructions of ``warps`` warps running
        together (warp number ``warp``, the first of them): (issued at, ready again at).
        ``pinned``: the warps all belong to scheduler ``warp`` (timed-block's groups per
        scheduler, ``[issue] block_groups = "scheduler"``) and share its issue slots."""
        if k == 0:
            return now, now
        free = self.free
        if self.schedulers == 1:                 # GT200: one scheduler for every warp
            start = free[0] if free[0] > now else now
            end = free[0] = start + k * self.interval
            self.busy += k * self.issue_cycles
            return end, max(end, now + k / warps * self.alu_latency)
        if warps == 1 or pinned:
            s = warp % self.schedulers
            start = free[s] if free[s] > now else now
            # one warp issues at its scheduler's rate; a group on one scheduler shares it
            end = free[s] = start + k * self.interval
        else:
            # a group of warps: over min(warps, schedulers) schedulers at once
            used = min(warps, self.schedulers)
            start = max(now, *free[:used]) if used < self.schedulers else max(now, *free)
            end = start + k * self.interval / used
            for s in range(used):
                free[s] = end
        self.busy += k * self.issue_cycles
        return end, max(end, now + k / warps * self.alu_latency)


def _warp_cuts(w) -> list:
    """Where each warp's lanes start in an access's lane arrays (and the end)."""
    if w[0] == w[-1]:
        return [0, w.size]
    return [0, *(np.flatnonzero(w[1:] != w[:-1]) + 1).tolist(), w.size]


def atomic_lanes(event, warps: int) -> list:
    """{word address: lanes on it} of each warp of an atomic access, in warp order (as
    the coalescer gives the warps' transactions)."""
    w, address = event.warp, event.address
    if w.size == 0:
        return [{}] * warps
    cuts = _warp_cuts(w)
    out = []
    for lo, hi in zip(cuts, cuts[1:]):
        counts: dict = {}
        for a in address[lo:hi].tolist():
            counts[a] = counts.get(a, 0) + 1
        out.append(counts)
    return out


def store_masks(event, warps: int, sector: int) -> list:
    """{sector address: mask of the bytes written} of each warp of a store, in warp order
    (for an L2 that keeps write masks, ``[cache] l2_write_masks``)."""
    w, address = event.warp, event.address
    if w.size == 0:
        return [{}] * warps
    word = (1 << event.word_size) - 1
    cuts = _warp_cuts(w)
    out = []
    for lo, hi in zip(cuts, cuts[1:]):
        masks: dict = {}
        for a in address[lo:hi].tolist():
            s = a - a % sector
            masks[s] = masks.get(s, 0) | (word << (a - s))
        out.append(masks)
    return out
