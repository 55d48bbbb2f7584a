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

from heapq import heappop, heappush

from .dram_timing import SubChannel

__all__ = ["FrFcfs", "FrFcfsQueue", "schedule_reads"]

_INF = float("inf")


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
        done = [0.0] * len(reads)

        def out(i, end):
            done[i] = end
        queue = FrFcfsQueue(self, out)
        for i, (arrival, bank, row, bursts) in enumerate(reads):
            queue.add(arrival, bank, row, bursts, i)
        queue.advance(float("inf"))
        return done

    def _column(self, e: list, now: float, bank_free: dict, opened: bool) -> float:
        """Read ``e``'s column command and data, no sooner than ``now``; ``opened``: its
        row was opened for it (not a row hit, unless a refresh closed it again); return
        when its data are out."""
        sub = self.sub
        bank, row, i = e[_BANK], e[_ROW], e[_KEY]
        hits, acts = sub.row_hits, sub.activations
        start, end = sub._access(bank, row, e[_BURSTS], now, False)
        if opened and sub.activations == acts:
            sub.row_hits = hits          # its own activate: counted there, not as a hit
        bank_free[bank] = start - sub.cl
        if self.log is not None:
            act = sub.act_at[bank] if sub.activations != acts else self.opened.pop(i, None)
            self.log.append((i, bank, row, act is None, act, start - sub.cl, start, end))
        return end

    @staticmethod
    def _choose(mine: list, open_row: int, cap: int) -> list:
        """FR-FCFS+Cap within one bank, ``mine`` its reads in the window, oldest first:
        the oldest if younger reads have passed it ``cap`` times (it has been passed
        at least as often as any other read of the bank: every read that passed one
        passed the older ones too), else the oldest hit on the open row, else the
        oldest."""
        oldest = mine[0]
        if oldest[_PASSED] >= cap:
            return oldest
        for e in mine:
            if e[_ROW] == open_row:
                return e
        return oldest


# A read in a FrFcfsQueue: [arrival, age, bank, row, bursts, entered, passed, key]
_ARRIVAL, _AGE, _BANK, _ROW, _BURSTS, _ENTERED, _PASSED, _KEY = range(8)


class FrFcfsQueue:
    """:class:`FrFcfs` deciding as time goes on: reads are added as they are booked
    (``add``, their arrivals in any order) and the scheduler's decisions are made up
    to a time (``advance``), each one once every read that arrives by its time is
    known (the caller's promise: reads added later arrive after the ``limit`` of
    every ``advance`` before).  ``out(key, end)`` is told each read's end as it is
    placed.  Given all reads first and ``advance(inf)``, it is :meth:`FrFcfs.run`."""

    def __init__(self, scheduler: FrFcfs, out):
        self.s = scheduler
        self.out = out
        self.arrivals: list = []                 # heap: reads not yet in the window
        self.queued: dict[int, list] = {}        # bank -> its reads in the window, oldest first
        self.held: dict[int, list] = {}          # bank -> the miss it opens a row for
        self.bank_free: dict[int, float] = {}    # bank -> when it takes its next command
        self.size = 0                            # reads in the window
        self.now = 0.0                           # the time of the last event
        self.waiting = 0                         # reads added, not yet placed
        self.added = 0                           # reads added

    def add(self, arrival: float, bank: int, row: int, bursts: int, key, age=None) -> None:
        """A read arriving at ``arrival``; ``age`` (default: the order of the calls)
        breaks ties between reads that arrive together, the older first."""
        if age is None:
            age = self.added
        self.added += 1
        heappush(self.arrivals, (arrival, age, [arrival, age, bank, row, bursts, 0.0, 0, key]))
        self.waiting += 1
        self.s.sub.reads_waiting += 1

    def _turn(self):
        """The next bank turn: (bank, when, its read) or (-1, inf, None); ties to the
        bank with the older read."""
        bank, when, first = -1, _INF, None
        bank_free, held = self.bank_free, self.held
        for b, mine in self.queued.items():
            if mine or b in held:
                e = held.get(b) or mine[0]
                t = bank_free.get(b, 0.0)
                if e[_ENTERED] > t:
                    t = e[_ENTERED]
                if t < when or (t == when and bank >= 0 and e[_AGE] < first[_AGE]):
                    bank, when, first = b, t, e
        return bank, when, first

    def next_time(self) -> float:
        """When the next decision is due (inf: nothing to decide)."""
        _, when, _ = self._turn()
        if self.arrivals and self.size < self.s.window:
            a = self.arrivals[0][0]
            if a < self.now:
                a = self.now
            if a < when:
                return a
        return when

    def advance(self, limit: float) -> float:
        """Make every decision due at or before ``limit``; return when the next one is
        due (inf: none)."""
        s = self.s
        sub, cap, window = s.sub, s.cap, s.window
        arrivals, queued, held, bank_free = self.arrivals, self.queued, self.held, self.bank_free
        turn = None                      # (the turn, kept over arrivals that do not change it)
        while True:
            if turn is None:
                turn = self._turn()
            bank, when, first = turn
            entering = arrivals and self.size < window and (bank < 0 or arrivals[0][0] <= when)
            due = sub.drain_due
            if 0 <= due <= limit and due <= (when if not entering else
                                            max(arrivals[0][0], self.now)):
                # the write queue reached its drain mark at ``due``, before the next read
                # event: its oldest writes go now (SubChannel.write left it to us)
                sub.drain_due = -1.0
                if len(sub.pending) > sub.t.low:
                    sub._drain(len(sub.pending) - sub.t.low, due)
                turn = None
                continue
            if entering:
                # an arrival comes first (or with the turn): it enters the window, as soon
                # as it has arrived and a place is free, and may be chosen at that turn
                e = arrivals[0][2]
                t = e[_ARRIVAL] if e[_ARRIVAL] > self.now else self.now
                if t > limit:
                    return t
                heappop(arrivals)
                self.now = e[_ENTERED] = t
                s.window_wait += t - e[_ARRIVAL]
                sub.stall += t - e[_ARRIVAL]     # (the sub-channel's queue counts, as read's)
                sub.samples += 1
                sub.queued_total += self.size
                if self.size > sub.queued_max:
                    sub.queued_max = self.size
                if sub.pending and sub.tail <= t and sub.pending[0][0] <= t:
                    # an idle bus, and writes have arrived: the queued writes go first
                    sub._drain(len(sub.pending), sub._reads_issued())   # (as in read)
                b = e[_BANK]
                mine = queued.get(b)
                if mine is None:
                    mine = queued[b] = []
                if not mine and b not in held:
                    # its bank had no turn: it may come first now (as _turn would find)
                    at = bank_free.get(b, 0.0)
                    if t > at:
                        at = t
                    if bank < 0 or at < when or (at == when and e[_AGE] < first[_AGE]):
                        turn = (b, at, e)
                mine.append(e)
                self.size += 1
                continue
            if bank < 0 or when > limit:
                return when
            turn = None
            now = self.now = when
            if bank in held:             # its row is open: the miss's column command
                e = held.pop(bank)
                self._placed(e, s._column(e, now, bank_free, True))
                continue
            mine = queued[bank]
            row = sub.open_row[bank]
            pick = s._choose(mine, row, cap)
            if pick[_ROW] != row and row != -1 and sub.pre_ok[bank] > now:
                # a miss: decided when the bank can precharge (a hit that arrives before
                # then is still served first), so that activates are placed in the order
                # the banks become ready for them, and the older request at a tie
                bank_free[bank] = sub.pre_ok[bank]
                continue
            k = mine.index(pick)
            for e in mine[:k]:           # the older reads of its bank that it passes
                e[_PASSED] += 1
                if e[_PASSED] > s.passed_max:
                    s.passed_max = e[_PASSED]
            del mine[k]
            self.size -= 1
            if sub.open_row[bank] == pick[_ROW]:
                self._placed(pick, s._column(pick, now, bank_free, False))
                continue
            # A miss (only ever its bank's oldest read) leaves the window for its bank:
            # its precharge and activate are placed now, its column command at the
            # bank's next turn (once the row is open), so that the data bus goes to the
            # other banks' older reads first in between.
            if now >= sub.next_refresh:
                sub._refresh(now)        # (as SubChannel._access does first)
            bank_free[bank] = sub._open(bank, pick[_ROW], now)
            held[bank] = pick
            if s.log is not None:
                s.opened[pick[_KEY]] = sub.act_at[bank]

    def _placed(self, e: list, end: float) -> None:
        self.waiting -= 1
        self.s.sub.reads_waiting -= 1
        self.out(e[_KEY], end)


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
            for bk, rk, n in dram.amap.pieces(a, s):
                per_sub[bk // bps].append((arrival, bk % bps, rk, n))
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
