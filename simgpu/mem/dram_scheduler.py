"""FR-FCFS across requests: a sub-channel's read scheduler over a bounded window.

:class:`FrFcfs` serves a set of reads whose arrival times are all known (a trace)
the way a first-ready, first-come-first-served controller does (Rixner et al.,
"Memory Access Scheduling", ISCA 2000), with a starvation bound (FR-FCFS+Cap,
Mutlu and Moscibroda, MICRO 2007):

* the controller sees at most ``window`` reads at a time (``[dram]
  read_queue_depth``); later arrivals wait, in arrival order, for a place;
* each bank picks its next read when its previous one has issued its column
  command: among the reads in the window that have arrived by then, the oldest
  that hits the bank's open row, else the oldest; but a read that younger reads of
  its bank have passed ``cap`` times (``[dram] frfcfs_cap``) is taken first, so no
  read is passed by more than ``cap`` younger ones;
* a miss is decided when its bank can precharge (a hit arriving before then still
  goes first); it then leaves the window, its precharge and activate are placed,
  and its column command waits for the bank's next turn;
* the banks' picks are made in the order of their times, and each pick's commands
  are placed by the sub-channel's own rules (:meth:`SubChannel._access
  <simgpu.mem.dram_timing.SubChannel._access>`: tRCD, tRP, tRAS, tRC, tRRD,
  tFAW, tCCD, refresh, the data bus), so the timing constraints are exactly those of
  :mod:`~simgpu.mem.dram_timing`.

A read's time depends on reads that arrive after it (a younger row hit may pass
it), so it is known only once the trace up to its pick is known: the timed
engines, which need a load's time when they issue it, book reads at their arrival
instead (:meth:`SubChannel.read`); docs/memory-model.md ("FR-FCFS across
requests") says what wiring this scheduler into them needs.
"""
from __future__ import annotations

from .dram_timing import SubChannel

__all__ = ["FrFcfs", "schedule_reads"]


class FrFcfs:
    """The read scheduler of one sub-channel (``sub``), FR-FCFS over ``window`` reads
    with no read passed by more than ``cap`` younger reads of its bank."""

    def __init__(self, sub: SubChannel, window: int, cap: int):
        if window < 1 or cap < 0:
            raise ValueError(f"FR-FCFS needs a window of at least 1 read and a cap >= 0, "
                             f"not window={window}, cap={cap}")
        self.sub, self.window, self.cap = sub, window, cap
        # (tests: set ``log`` to a list to get [(read, bank, row, hit, its activate or
        # None, column command, data start, data end)] in the order placed)
        self.log: list | None = None
        self.opened: dict[int, float] = {}   # (for the log) read -> its activate
        self.passed_max = 0              # the most younger reads that passed one read
        self.window_wait = 0.0           # cycles reads waited for a place in the window

    def run(self, reads: list[tuple[float, int, int, int]]) -> list[float]:
        """Serve ``reads`` [(arrival, bank, row, bursts)]; return when each one's data
        are out (in the order given)."""
        sub, cap, cl, window = self.sub, self.cap, self.sub.cl, self.window
        n = len(reads)
        order = sorted(range(n), key=lambda i: (reads[i][0], i))   # arrival order
        done = [0.0] * n
        entered = [0.0] * n              # when each read took its place in the window
        passed = [0] * n                 # younger reads of its bank picked before it
        queued: dict[int, list[int]] = {}   # bank -> its reads in the window, oldest first
        held: dict[int, int] = {}           # bank -> the miss it opens a row for
        bank_free: dict[int, float] = {}    # bank -> when it takes its next command
        size = 0                         # reads in the window
        pos = 0                          # the next read (in arrival order) to enter it
        now = 0.0                        # the time of the last event (entry or pick)
        while pos < n or size or held:
            # the next turn: the bank whose comes first (its next command, or its oldest
            # read's entry if later); ties to the bank with the older read
            bank, when, first = -1, 0.0, 0
            for b, mine in queued.items():
                if mine or b in held:
                    i = held.get(b, mine[0] if mine else -1)
                    t = bank_free.get(b, 0.0)
                    if entered[i] > t:
                        t = entered[i]
                    if bank < 0 or t < when or (t == when and i < first):
                        bank, when, first = b, t, i
            if pos < n and size < window and (bank < 0 or reads[order[pos]][0] <= when):
                # an arrival comes first (or with the turn): it enters the window, as soon
                # as it has arrived and a place is free, and may be chosen at that turn
                i = order[pos]
                pos += 1
                now = entered[i] = reads[i][0] if reads[i][0] > now else now
                self.window_wait += now - reads[i][0]
                queued.setdefault(reads[i][1], []).append(i)
                size += 1
                continue
            now = when
            if bank in held:             # its row is open: the miss's column command
                self._column(held.pop(bank), bank, now, reads, done, bank_free, True)
                continue
            mine = queued[bank]
            pick = self._choose(mine, sub.open_row[bank], reads, passed, cap)
            row = sub.open_row[bank]
            if reads[pick][2] != row and row != -1 and sub.pre_ok[bank] > now:
                # a miss: decided when the bank can precharge (a hit that arrives before
                # then is still served first), so that activates are placed in the order
                # the banks become ready for them, and the older request at a tie
                bank_free[bank] = sub.pre_ok[bank]
                continue
            k = mine.index(pick)
            for i in mine[:k]:           # the older reads of its bank that it passes
                passed[i] += 1
                if passed[i] > self.passed_max:
                    self.passed_max = passed[i]
            del mine[k]
            size -= 1
            row = reads[pick][2]
            if sub.open_row[bank] == row:
                self._column(pick, bank, now, reads, done, bank_free, False)
                continue
            # A miss (only ever its bank's oldest read) leaves the window for its bank:
            # its precharge and activate are placed now, its column command at the
            # bank's next turn (once the row is open), so that the data bus goes to the
            # other banks' older reads first in between.
            if now >= sub.next_refresh:
                sub._refresh(now)        # (as SubChannel._access does first)
            bank_free[bank] = sub._open(bank, row, now)
            held[bank] = pick
            if self.log is not None:
                self.opened[pick] = sub.act_at[bank]
        return done

    def _column(self, i: int, bank: int, now: float, reads, done: list[float],
                bank_free: dict, opened: bool) -> None:
        """Read ``i``'s column command and data, no sooner than ``now``; ``opened``: its
        row was opened for it (not a row hit, unless a refresh closed it again)."""
        sub = self.sub
        hits, acts = sub.row_hits, sub.activations
        start, end = sub._access(bank, reads[i][2], reads[i][3], now, False)
        if opened and sub.activations == acts:
            sub.row_hits = hits          # its own activate: counted there, not as a hit
        bank_free[bank] = start - sub.cl
        done[i] = end
        if self.log is not None:
            act = sub.act_at[bank] if sub.activations != acts else self.opened.pop(i, None)
            self.log.append((i, bank, reads[i][2], act is None, act, start - sub.cl,
                             start, end))

    @staticmethod
    def _choose(mine: list[int], open_row: int, reads, passed: list[int], cap: int) -> int:
        """FR-FCFS+Cap within one bank, ``mine`` its reads in the window, oldest first:
        the oldest if younger reads have passed it ``cap`` times (it has been passed
        at least as often as any other read of the bank: every read that passed one
        passed the older ones too), else the oldest hit on the open row, else the
        oldest."""
        oldest = mine[0]
        if passed[oldest] >= cap:
            return oldest
        for i in mine:
            if reads[i][2] == open_row:
                return i
        return oldest


def schedule_reads(dram, part: int, reads: list[tuple[float, int, int, int, int]]) -> list[float]:
    """Serve ``reads`` [(arrival, bank, row, size, address)] at partition ``part`` of
    ``dram`` (a :class:`~simgpu.mem.dram.Dram`), all arrivals known in advance, FR-FCFS
    across them over each sub-channel's window (``read_queue_depth`` reads, none passed
    by more than ``frfcfs_cap`` younger ones: :class:`FrFcfs`); return when each one's
    data are out (in the order given).  A read of several bursts spread over the
    sub-channels and bank groups is served burst by burst where the address map puts
    each (as ``Dram.serve`` does), and is done with its last burst."""
    p = dram.parts[part]
    subs, bps, burst = p.subs, dram.banks_per_sub, dram.burst
    spread = dram.amap.lanes > 1
    per_sub: list[list] = [[] for _ in subs]       # (arrival, bank, row, bursts)
    owner: list[list[int]] = [[] for _ in subs]    # the read each piece belongs to
    for j, (arrival, b, r, s, a) in enumerate(reads):
        p.transactions += 1
        p.bytes += s
        if s > burst and spread:
            for k in range(0, s, burst):
                _, bk, rk = dram.amap.where(a + k)
                per_sub[bk // bps].append((arrival, bk % bps, rk, 1))
                owner[bk // bps].append(j)
        else:
            per_sub[b // bps].append((arrival, b % bps, r, -(-s // burst)))
            owner[b // bps].append(j)
    done = [0.0] * len(reads)
    for sc, pieces, whose in zip(subs, per_sub, owner):
        if pieces:
            scheduler = FrFcfs(sc, dram.timing.read_depth, dram.frfcfs_cap)
            for j, end in zip(whose, scheduler.run(pieces)):
                if end > done[j]:
                    done[j] = end
            if scheduler.passed_max > dram.passed_max:
                dram.passed_max = scheduler.passed_max
    return done
