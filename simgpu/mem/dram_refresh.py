"""Per-bank refresh (HBM3 REFpb) of one DRAM sub-channel.

HBM3 refreshes a pseudo-channel one bank at a time: every ``tREFIpb`` (tREFI over
the banks: each bank once per tREFI) the controller sends a REFpb to a bank of its
choice among those not yet refreshed in the current round; that bank is closed
(precharged, ``tRP``) and cannot be activated for ``tRFCpb``, while the other banks
go on serving (JESD238A; Ramulator 2's hbm3.py: tREFI 3.9 us, tRFCpb 200 ns,
REFpb -> ACT of that bank nRFCpb, ACT -> REFpb nRC, PRE -> REFpb nRP).

The controller's choice is what makes the mechanism cost nothing when idle and
something under load: it refreshes the bank that is free soonest (whose last
booked access ends first).  At light load that bank has nothing waiting and the
refresh is hidden; when every bank has reads booked far ahead, the refresh lands
where reads still arrive, and they wait up to tRFCpb behind it.

:class:`PerBankRefresh` holds the schedule; the sub-channel
(:class:`simgpu.mem.dram_timing.SubChannel`) calls :meth:`PerBankRefresh.due` when
a transaction arrives at or after the next refresh's due time, and reads
:attr:`PerBankRefresh.until` (per bank: no activate before it) when it opens a row.
All times are in SM cycles.
"""
from __future__ import annotations

__all__ = ["PerBankRefresh"]


class PerBankRefresh:
    """The REFpb schedule of one sub-channel of ``banks`` banks: one refresh every
    ``interval`` cycles, each holding its bank for ``duration`` cycles."""

    def __init__(self, banks: int, interval: float, duration: float, rp: float, rc: float):
        if banks <= 0 or interval <= 0 or duration <= 0:
            raise ValueError(f"per-bank refresh needs banks, interval and duration > 0, got "
                             f"{banks}, {interval}, {duration}")
        self.banks = banks
        self.interval, self.duration, self.rp, self.rc = interval, duration, rp, rc
        self.next_due = interval
        self.left = list(range(banks))      # banks not yet refreshed in this round
        self.until = [0.0] * banks          # per bank: no activate before this
        self.count = 0
        self.log: list[tuple[float, int]] | None = None   # (start, bank), for tests

    def due(self, t: float, open_row: list[int], pre_ok: list[float],
            act_at: list[float]) -> None:
        """Send every refresh due by ``t``.  Each goes to the bank, of those left in
        this round, whose booked work ends first (``pre_ok``: its earliest precharge);
        it starts when that bank may be precharged (``tRP`` more if a row is open; at
        least ``tRC`` after its last activate) and no sooner than it is due; the bank is
        left closed (``open_row`` -1) and :attr:`until` holds its end."""
        while self.next_due <= t:
            left = self.left
            k = 0
            best = pre_ok[left[0]]
            for j in range(1, len(left)):
                if pre_ok[left[j]] < best:
                    best, k = pre_ok[left[j]], j
            bank = left.pop(k)
            if not left:
                self.left = list(range(self.banks))
            start = self.next_due
            if open_row[bank] != -1:             # precharge the open row first
                start = max(start, pre_ok[bank]) + self.rp
            start = max(start, act_at[bank] + self.rc)
            self.until[bank] = start + self.duration
            open_row[bank] = -1
            self.count += 1
            if self.log is not None:
                self.log.append((start, bank))
            self.next_due += self.interval
