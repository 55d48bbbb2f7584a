"""The SM's L1 pipeline: how long one warp instruction holds it.

The L1 (Volta and later: the L1TEX unit) takes a warp's global load or store one
piece at a time: its tag stage looks up a few 128-B lines a cycle, the lines that
miss leave for the L2 one a cycle, and the data path moves two 32-B sectors a cycle
to the L2 (64 B); a store takes a line a cycle and one more cycle for each sector it
writes only in part (a byte-masked write), and its data 32 B a cycle.  So an SM's
scattered loads and stores take it many cycles each, however idle the L2, where a
coalesced one takes one or two.  ``calibration/l1_throughput.py`` measured these
rates on the H100 (8 SMs busy, the L2 nearly idle: docs/calibration/l1-throughput-h100.md);
the config carries them (``[cache] l1_tag_lines_per_cycle`` and the other ``l1_*`` keys of
the pipeline), none of them set meaning no pipeline (every request takes it no time).

A request enters its SM's pipeline when the SM hands it over or when the pipeline has
finished the one before, whichever is later, holds it for its cycles, and goes on to
the TLB, the L1's lookups and the L2 when it leaves.  The SM hands its next memory
instruction over once the pipeline has no more than ``l1_pipe_queue_cycles`` of work
ahead (the LSU's instruction queue, ASSUMED: its depth is not published), so that a
block's warps issue on while the pipeline works through their requests.  Not modelled:
the L1's data banks (a warp's L1 hits on one bank in several lines take a cycle each on the card;
the request keeps no lanes' words, so hits cost the tag stage's time only), and
atomics (the atomic unit times them).
"""
from __future__ import annotations

__all__ = ["L1Pipe"]


class L1Pipe:
    """Every SM's L1 pipeline of one launch: when each is free, and what it has done."""

    def __init__(self, config):
        c = config.cache
        self.tag_lines = c.l1_tag_lines_per_cycle or 0.0
        self.miss_line = c.l1_miss_line_cycles or 0.0
        self.miss_sector = c.l1_miss_sector_cycles or 0.0
        self.store_line = c.l1_store_line_cycles or 0.0
        self.store_partial = c.l1_store_partial_sector_cycles or 0.0
        self.store_bytes = c.l1_store_bytes_per_cycle or 0.0
        self.queue = c.l1_pipe_queue_cycles
        self.line = c.l1_line_bytes
        self.sector = c.sector_bytes
        self.full_mask = (1 << c.sector_bytes) - 1
        self.free = [0.0] * config.gpu.sm_count
        self.busy = 0.0                    # cycles booked over all SMs (the report's share)
        self.waited = 0.0                  # cycles requests waited for their SM's pipeline

    @staticmethod
    def configured(config) -> bool:
        """Whether the config gives the pipeline any cost."""
        c = config.cache
        return bool(c.present and (c.l1_tag_lines_per_cycle or c.l1_miss_line_cycles
                                   or c.l1_miss_sector_cycles or c.l1_store_line_cycles
                                   or c.l1_store_partial_sector_cycles
                                   or c.l1_store_bytes_per_cycle))

    def cycles(self, kind: str, addresses: list, l1=None, masks: dict | None = None) -> float:
        """The cycles one request (its sector addresses) holds the pipeline.  ``l1``: the
        SM's L1Cache for a load through it (its hits are looked at, not touched; a sector
        whose data are on their way counts as a hit: it takes no trip to the L2);
        ``masks``: a store's {sector address: bytes written}, where the engine keeps them
        (``[cache] l2_write_masks``; without them a store's sectors count as whole)."""
        line = self.line
        if kind == "store":
            full = self.full_mask
            partial = 0
            if masks:
                written = 0
                for a in addresses:
                    m = masks.get(a, full)
                    if m != full:
                        partial += 1
                    written += m.bit_count()
            else:
                written = len(addresses) * self.sector
            lines = len({a // line for a in addresses})
            cost = lines * self.store_line + partial * self.store_partial
            if self.store_bytes and written / self.store_bytes > cost:
                cost = written / self.store_bytes
            return cost
        if kind != "load":
            return 0.0
        lines = {a // line for a in addresses}
        if l1 is None:                     # past the L1: every sector goes to the L2
            missed_lines, missed = len(lines), len(addresses)
        else:
            gone = l1.missing(addresses)
            missed, missed_lines = len(gone), len({addresses[i] // line for i in gone})
        cost = len(lines) / self.tag_lines if self.tag_lines else 0.0
        if missed_lines * self.miss_line > cost:
            cost = missed_lines * self.miss_line
        if missed * self.miss_sector > cost:
            cost = missed * self.miss_sector
        return cost

    def enter(self, sm: int, t: float, cost: float) -> tuple[float, float]:
        """(start, leave) of a request of ``cost`` cycles handed over at ``t``."""
        free = self.free[sm]
        start = t if t > free else free
        leave = start + cost
        self.free[sm] = leave
        self.busy += cost
        self.waited += start - t
        return start, leave
