"""Shared memory's bank conflicts as the timed engines charge them: each warp's
replays of one shared access, its pattern remembered relative to a 128-byte base
(the banks and words repeat every 128 bytes), and a launch's totals for the report."""
from __future__ import annotations

import numpy as np

from ..mem.banks import bank_layout, bank_passes


class SharedBanks:
    """Bank conflicts of the shared-memory accesses of one launch (``simgpu.mem.banks``),
    per warp, with each warp's pattern remembered relative to a 128-byte base."""

    def __init__(self, arch: str):
        self.arch = arch
        self.pass_cycles = bank_layout(arch)[2]
        self.cache: dict = {}
        self.accesses = 0                    # warp-level shared accesses
        self.conflicts = 0                   # passes beyond the conflict-free ones
        self.degree = 1                      # the worst passes / ideal of one access

    def replays(self, acc) -> int:
        return sum(self.replays_per_warp(acc))

    def replays_per_warp(self, acc) -> list:
        """Each warp's replays (in warp order), counted into the launch's totals."""
        w = acc.warp
        if not w.size:
            return []
        if w[0] == w[-1]:
            cuts = [0, w.size]
        else:
            cuts = [0, *(np.flatnonzero(w[1:] != w[:-1]) + 1).tolist(), w.size]
        out = []
        for lo, hi in zip(cuts, cuts[1:]):
            address, lane = acc.address[lo:hi], acc.lane[lo:hi]
            base = int(address[0]) & ~127    # bank and word identity repeat every 128 B
            atomic = acc.kind == "atomic"
            key = (acc.word_size, atomic, (address - base).tobytes(), lane.tobytes())
            hit = self.cache.get(key)
            if hit is None:
                if len(self.cache) > 50_000:
                    self.cache.clear()
                passes, ideal = bank_passes(address, acc.word_size, self.arch, lane)
                if atomic:
                    # an atomic's lanes on one word are serialized (each its own
                    # read-modify-write), not broadcast as a load's are
                    passes = max(passes, self.atomic_passes(address.tolist(), lane.tolist()))
                hit = self.cache[key] = (passes - ideal, -(-passes // ideal))
            out.append(hit[0])
            if hit[1] > self.degree:
                self.degree = hit[1]
        self.accesses += len(cuts) - 1
        self.conflicts += sum(out)
        return out

    def atomic_passes(self, addresses: list, lanes: list) -> int:
        """Passes of a shared atomic: per request (a half-warp on 1.x, the warp later),
        each bank serves one lane's operation per pass, whatever its word."""
        banks, per_request, _ = bank_layout(self.arch)
        passes = 0
        for first in range(0, 32, per_request):
            per_bank: dict = {}
            for a, lane in zip(addresses, lanes):
                if first <= lane < first + per_request:
                    b = (a // 4) % banks
                    per_bank[b] = per_bank.get(b, 0) + 1
            if per_bank:
                passes += max(per_bank.values())
        return passes

    def summary(self) -> dict:
        if not self.accesses:
            return {}
        return {"shared_bank_conflicts": self.conflicts, "shared_conflict_degree_max": self.degree}
