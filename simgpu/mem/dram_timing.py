"""One DRAM sub-channel: its banks, its data bus, its controller's queues.

The controller places each transaction's commands when the transaction arrives
(a reservation table), obeying the DRAM's timing rules:

* a bank with another row open is precharged (no sooner than ``tRAS`` after its
  activate, ``tRTP`` after its last read, ``tWR`` after its last write data) and
  activated ``tRP`` later; a bank activates at most every ``tRC``, two banks
  ``tRRD`` apart (``tRRD_L`` in one bank group), and at most four activates fall
  in any ``tFAW``;
* a read or write command comes ``tRCD`` after the activate; its data take the
  bus ``CL`` (``WL``) later, for ``burst_length / 2`` memory cycles a burst;
  column commands to one bank group are ``tCCD_L`` apart;
* the data bus turns around: a read's data start ``tWTR + CL`` after the last
  write data, a write's ``tRTW`` after the last read data;
* with several ranks (HBM3 stack IDs: ``[dram] ranks``), each rank has its own
  banks and bank groups and keeps tRRD, tRRD_L and tFAW among its own activates
  only; the ranks share the data bus (and its turnaround);
* every ``tREFI`` the sub-channel refreshes (all banks) for ``tRFC``: the rows
  are closed and nothing is activated meanwhile (where the config gives tREFI);
  or, where it gives ``tREFIpb``, one bank at a time (:mod:`~simgpu.mem.dram_refresh`).

First-ready, first-come-first-served (FR-FCFS): a transaction takes the earliest
bus slot its bank allows, ahead of older ones still waiting for theirs (the
slots between reservations are free to later transactions); an activate goes
into the earliest slot the activate rules leave.  A transaction's time is fixed
when it arrives (the engines need it then), so a later row hit never delays an
older transaction already placed; within a batch arriving together the order is
FR-FCFS proper (``Dram.serve``).

Queues are bounded: a read holds a place in the read queue from its arrival to
its column command; when ``read_queue_depth`` are held, a new read waits for the
first to leave.  Writes are acknowledged when the write queue takes them, and
wait there until ``write_drain_high`` are queued (then the oldest are drained down
to ``write_drain_low``, together, so that the bus turns around once) or until the
bus has nothing else to do.

State is in flat lists and plain attributes: this runs once per transaction.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from heapq import heappop, heappush

from .dram_params import Timing
from .dram_refresh import PerBankRefresh

__all__ = ["Timing", "SubChannel"]

_NEVER = -1e18


def _bank_row(write: tuple) -> tuple:
    return write[1], write[2]


class SubChannel:
    """One data bus and its banks, with the controller's read and write queues."""

    def __init__(self, timing: Timing, banks: int):
        self.t = timing
        self.read_depth, self.cl = timing.read_depth, timing.cl   # (read's, per read)
        # the timings the per-transaction path reads, as attributes of its own (one
        # look-up each, not two)
        self.wl, self.rp, self.rc, self.rcd = timing.wl, timing.rp, timing.rc, timing.rcd
        self.ras, self.wr, self.rtp, self.rtw = timing.ras, timing.wr, timing.rtp, timing.rtw
        self.ccd_l, self.burst, self.burst_slot = timing.ccd_l, timing.burst, timing.burst_slot
        self.group_spacing, self.write_to_read = timing.group_spacing, timing.write_to_read
        self.banks = banks
        self.per_group = banks // timing.groups
        # Ranks (stack IDs): bank j of a bank group's numbers lies in rank j % ranks, and
        # (rank, group) is a bank group of its own (tCCD_L, tRRD_L); with one rank these
        # are bank // per_group, as before.
        ranks = self.ranks = timing.ranks
        self.rank_of = [b % self.per_group % ranks for b in range(banks)]
        self.group_of = [b // self.per_group * ranks + b % self.per_group % ranks
                         for b in range(banks)]
        # Rows stay open between launches (open-page policy) but this model's state is a
        # launch's: a bank starts with a row of some earlier launch open (-2), so its first
        # access precharges and activates; -1 is a closed bank (after a refresh).
        self.open_row = [-2] * banks
        self.act_at = [_NEVER] * banks      # each bank's last activate
        self.col_ok = [0.0] * banks         # earliest column command (activate + tRCD)
        self.pre_ok = [0.0] * banks         # earliest precharge (tRAS, tRTP, tWR)
        # (typed lists: where simgpu.native compiles this module, their items are plain
        # machine numbers; the source runs the same either way)
        # each rank's recent activates (sorted) and their bank groups; ``acts`` and
        # ``act_groups`` are rank 0's (the only one where the config has one rank)
        self.rank_acts: list[list[float]] = [[] for _ in range(ranks)]
        self.rank_act_groups: list[list[int]] = [[] for _ in range(ranks)]
        self.acts: list[float] = self.rank_acts[0]
        self.act_groups: list[int] = self.rank_act_groups[0]
        groups = timing.groups * ranks
        self.last_data_g = [_NEVER] * groups   # last burst's start per group (tCCD_L)
        # each group's recent burst starts, sorted (where tCCD_L exceeds a burst)
        self.group_marks: list[list[float]] = [[] for _ in range(groups)]
        self.bus_start: list[float] = []    # data-bus reservations, sorted
        self.bus_end: list[float] = []
        self.bus_write: list[bool] = []
        self.tail = 0.0                     # end of the last reservation
        self.reads: list[float] = []        # heap: when each queued read leaves the queue
        self.writes: list[float] = []       # heap: when each drained write leaves the queue
        self.pending: list[tuple[float, int, int, int]] = []   # writes queued, not yet drained: (arrival, bank, row, n)
        # reads queued for an FR-FCFS scheduler that decides them later
        # (simgpu.mem.dram_scheduler.FrFcfsQueue): while there are any, the bus is not
        # idle for the write queue, whatever its reservations show yet
        self.reads_waiting = 0
        # while there are: when the write queue reached its drain mark (-1: not), for
        # the scheduler to drain it when it gets there, between its reads in time order
        self.drain_due = -1.0
        self.busy = 0.0
        self.row_hits = 0
        self.activations = 0
        self.row_conflicts = 0
        self.stall = 0.0                    # cycles transactions waited for a full queue
        self.refreshes = 0
        self.samples = 0                    # reads arrived, and the reads they found queued
        self.queued_total = 0
        self.queued_max = 0
        self.refreshed = _NEVER             # when the last refresh ended
        self.next_refresh = timing.refi if timing.refi else float("inf")
        # per-bank refresh (simgpu.mem.dram_refresh), where the config gives tREFIpb
        self.pb: PerBankRefresh | None = None
        if timing.refi_pb and timing.rfc_pb:
            self.pb = PerBankRefresh(banks, timing.refi_pb, timing.rfc_pb, timing.rp, timing.rc)
            self.next_refresh = self.pb.next_due

    # --- the queues ----------------------------------------------------------------

    def read(self, bank: int, row: int, bursts: int, arrive: float) -> tuple[float, float]:
        """A read of ``bursts`` bursts arriving at ``arrive``: (its data are out, how
        long it waited for a place in the queue)."""
        reads = self.reads
        while reads and reads[0] <= arrive:
            heappop(reads)
        queued = len(reads)                            # what an arriving read finds
        self.samples += 1
        self.queued_total += queued
        if queued > self.queued_max:
            self.queued_max = queued
        if queued >= self.read_depth:                  # full: wait for the first to leave
            enter = heappop(reads)
            self.stall += enter - arrive
        else:
            enter = arrive
        if self.pending and self.tail <= enter:
            self._drain(len(self.pending), self._reads_issued())   # an idle bus: the
                                                       # queued writes went first
        start, end = self._access(bank, row, bursts, enter, False)
        heappush(reads, start - self.cl)               # leaves at its (first) column command
        return end, enter - arrive

    def write(self, bank: int, row: int, bursts: int, arrive: float) -> tuple[float, float]:
        """A write arriving at ``arrive``: (the write queue has taken it, how long it
        waited for a place)."""
        writes, pending = self.writes, self.pending
        while writes and writes[0] <= arrive:
            heappop(writes)
        enter = arrive
        if len(writes) + len(pending) >= self.t.write_depth and writes:
            enter = heappop(writes)
            self.stall += enter - arrive
        pending.append((enter, bank, row, bursts))
        if not self.reads_waiting:
            self.drain_due = -1.0
            if self.tail <= enter:
                self._drain(len(pending), self._reads_issued())   # nothing else to do
            elif len(pending) >= self.t.high:
                self._drain(len(pending) - self.t.low, enter)
        elif len(pending) >= self.t.high and self.drain_due < 0:
            # reads wait for a scheduler that decides them later (FrFcfsQueue): it drains
            # the queue when it gets to ``enter``, after the reads due before then
            self.drain_due = enter

        return enter, enter - arrive

    def flush(self) -> float:
        """Drain every queued write; return when the bus's last reservation ends."""
        self.drain_due = -1.0
        if self.pending:
            self._drain(len(self.pending), self._reads_issued())
        return self.tail

    def _reads_issued(self) -> float:
        """When the reads queued so far have all issued their commands (from then on
        the controller drains the write queue)."""
        return max(self.reads) if self.reads else 0.0

    def _drain(self, k: int, now: float) -> None:
        """Send ``k`` queued writes to the banks from ``now`` on (a write no sooner
        than it arrived), chosen FR-FCFS from the whole write queue."""
        pending = self.pending
        if k == 1:                                     # (the common case: one write)
            enter, bank, row, bursts = pending.pop(0)
            start, _ = self._access(bank, row, bursts, enter if enter > now else now, True)
            heappush(self.writes, start - self.t.wl)
            return
        # FR-FCFS over the whole write queue: the writes to open rows first, then the
        # oldest write and every queued write to its row, and so on, until k are sent.
        # (One pass each: the open-row writes; then the others grouped by (bank, row) in
        # order of each group's oldest write -- the order "the oldest remaining write and
        # every write to its row" takes them in -- a group cut short where k are reached.)
        open_row = self.open_row
        hit = [open_row[w[1]] == w[2] for w in pending]
        batch = [w for w, h in zip(pending, hit) if h][:k]
        if len(batch) < k:
            groups: dict = {}
            for i, w in enumerate(pending):
                if not hit[i]:
                    key = (w[1], w[2])
                    members = groups.get(key)
                    if members is None:
                        groups[key] = [i]
                    else:
                        members.append(i)
            taken = set()
            for members in groups.values():
                need = k - len(batch)
                if need <= 0:
                    break
                members = members[:need]
                batch += [pending[i] for i in members]
                taken.update(members)
            self.pending = [w for i, w in enumerate(pending) if not hit[i] and i not in taken]
        else:
            kept = len(batch)                      # the first k open-row writes go
            rest = []
            for w, h in zip(pending, hit):
                if h and kept:
                    kept -= 1
                else:
                    rest.append(w)
            self.pending = rest
        wl, writes, access = self.t.wl, self.writes, self._access
        for enter, bank, row, bursts in batch:
            start, _ = access(bank, row, bursts, enter if enter > now else now, True)
            heappush(writes, start - wl)

    # --- the banks and the bus -----------------------------------------------------

    def _access(self, bank: int, row: int, bursts: int, t: float,
                write: bool) -> tuple[float, float]:
        """Place one access's commands no sooner than ``t``: (data start, data end)."""
        # (Runs once per transaction: the timings are read from ``self`` (copied from
        # Timing) and the arithmetic is kept exactly as written, operand by operand, so
        # that every time comes out bit for bit the same.)
        if t >= self.next_refresh:
            self._refresh(t)
        if self.open_row[bank] == row:
            self.row_hits += 1
            cmd = self.col_ok[bank]
            if cmd < t:
                cmd = t
        else:
            cmd = self._open(bank, row, t)
        burst = self.burst
        if write:
            first = cmd + self.wl
        else:
            first = cmd + self.cl
        if self.group_spacing:                       # one bank group: bursts tCCD_L apart
            group = self.group_of[bank]
            ccd_l = self.ccd_l
            span = burst + (bursts - 1) * ccd_l
            last = self.last_data_g[group]
            if last - ccd_l < first < last + ccd_l:
                first = last + ccd_l
        elif bursts == 1:
            span = burst                             # (burst + 0 * burst_slot)
        else:
            span = burst + (bursts - 1) * self.burst_slot
        starts = self.bus_start
        if starts and first < starts[-1]:
            if self.group_spacing:                # a gap also tCCD_L from the group's bursts
                start = self._place_in_group(first, span, write, group)
            else:
                start = self._place(first, span, write)   # maybe into a gap: search
            end = start + span
        else:                                     # after every reservation: append
            start = first
            end = start + span
            if starts:
                ends, kinds = self.bus_end, self.bus_write
                prev = kinds[-1]
                e = ends[-1]
                if prev != write:
                    e = e + (self.write_to_read if prev else self.rtw)
                if e > start:
                    start = e
                    end = start + span
                    # (after every burst on the bus now: the group's latest is the
                    # only one that can be nearer than tCCD_L)
                    if self.group_spacing and start < self.last_data_g[group] + self.ccd_l:
                        start = self.last_data_g[group] + self.ccd_l
                        end = start + span
                if prev == write and start == ends[-1]:
                    ends[-1] = end                # one reservation with the last
                else:
                    starts.append(start)
                    ends.append(end)
                    kinds.append(write)
                    if len(starts) > 64:
                        self._prune(t)    # (from the request's time: what lies between
                                          # it and this reservation can still matter)
            else:
                starts.append(start)
                self.bus_end.append(end)
                self.bus_write.append(write)
            if end > self.tail:
                self.tail = end
        if self.group_spacing:
            if end - burst > self.last_data_g[group]:
                self.last_data_g[group] = end - burst
            self._mark_group(group, start, bursts, t)
        if write:
            ok = end + self.wr
        else:
            ok = end - burst - self.cl + self.rtp    # the last read command + tRTP
        if ok > self.pre_ok[bank]:
            self.pre_ok[bank] = ok
        self.busy += bursts * burst
        return start, end

    def _open(self, bank: int, row: int, t: float) -> float:
        """Open ``row`` in ``bank`` no sooner than ``t`` (precharging the row open
        there): the earliest column command to it."""
        self.activations += 1
        open_row = self.open_row
        if open_row[bank] != -1:                 # close the open row first
            self.row_conflicts += 1
            act = self.pre_ok[bank]
            act = (act if act > t else t) + self.rp
        else:
            act = t
        ready = self.act_at[bank] + self.rc
        if ready > act:
            act = ready
        if self.refreshed > act:
            act = self.refreshed
        if self.pb is not None and self.pb.until[bank] > act:
            act = self.pb.until[bank]            # its per-bank refresh is not over
        act = self._activate_slot(act, self.group_of[bank], t, self.rank_of[bank])
        open_row[bank] = row
        self.act_at[bank] = act
        cmd = self.col_ok[bank] = act + self.rcd
        self.pre_ok[bank] = act + self.ras
        return cmd

    def _activate_slot(self, c: float, group: int, t: float, rank: int = 0) -> float:
        """The earliest activate time >= ``c`` that keeps tRRD (tRRD_L in one group) to
        every other activate of ``rank`` and at most four of them in any tFAW; recorded.
        ``t``: the request's time; activates more than the horizon before it are
        forgotten (not those before ``c``, which may lie far ahead of the requests still
        to come)."""
        tm = self.t
        acts, groups = self.rank_acts[rank], self.rank_act_groups[rank]
        rrd, rrd_l, faw = tm.rrd, tm.rrd_l, tm.faw
        if not faw and rrd == rrd_l:                  # (GDDR3: tRRD only, one rule)
            k = len(acts)
            if k and c < acts[-1] + rrd:
                while True:
                    k = bisect_right(acts, c)
                    if k and c < acts[k - 1] + rrd:
                        c = acts[k - 1] + rrd
                    elif k < len(acts) and acts[k] < c + rrd:
                        c = acts[k] + rrd
                    else:
                        break
            acts.insert(k, c)
            groups.insert(k, group)
            if len(acts) > 64 and acts[0] < t - tm.horizon:
                drop = bisect_right(acts, t - tm.horizon)
                del acts[:drop], groups[:drop]
            return c
        if acts and acts[0] < t - tm.horizon:        # forget what can no longer matter
            drop = bisect_right(acts, t - tm.horizon)
            del acts[:drop], groups[:drop]
        while True:
            bump = None
            lo, hi = bisect_left(acts, c - rrd_l), bisect_right(acts, c + rrd_l)
            for j in range(lo, hi):
                gap = rrd_l if groups[j] == group else rrd
                if acts[j] - gap < c < acts[j] + gap:
                    bump = acts[j] + gap
                    break
            if bump is None and faw and len(acts) >= 4:
                k = bisect_right(acts, c)
                seq = acts[max(0, k - 4):k] + [c] + acts[k:k + 4]
                for j in range(len(seq) - 4):
                    # five activates within tFAW?  (Tested as the bump is computed,
                    # seq[j] + faw: tested as a difference, rounding could find the
                    # window short by the last bit while the bump moved c nowhere,
                    # and the search never ended.)
                    if seq[j] + faw > seq[j + 4]:
                        bump = seq[j] + faw if seq[j + 4] == c else seq[j + 4]
                        break
            if bump is None:
                break
            c = bump
        k = bisect_right(acts, c)
        acts.insert(k, c)
        groups.insert(k, group)
        return c

    def _mark_group(self, group: int, start: float, bursts: int, t: float) -> None:
        """Record an access's bursts (``start``, then tCCD_L apart) in its bank group's
        sorted list of burst starts (for placements into gaps)."""
        marks = self.group_marks[group]
        ccd_l = self.ccd_l
        for j in range(bursts):
            b = start + j * ccd_l
            if not marks or b >= marks[-1]:
                marks.append(b)
            else:
                insort(marks, b)
        if len(marks) > 64:
            del marks[:bisect_right(marks, t - self.t.horizon)]

    def _place_in_group(self, first: float, span: float, write: bool, group: int) -> float:
        """:meth:`_place` for an access of one bank group (a burst, or bursts tCCD_L
        apart over ``span``): the earliest bus slot from ``first`` on whose bursts are
        also tCCD_L from every burst of the group already placed; recorded."""
        marks, ccd_l = self.group_marks[group], self.ccd_l
        while True:
            c = self._place(first, span, write, False)
            # a group burst within tCCD_L of this access's first to last burst
            k = bisect_left(marks, c + span - self.burst + ccd_l)
            if k and marks[k - 1] > c - ccd_l and marks[k - 1] + ccd_l > first:
                first = marks[k - 1] + ccd_l      # past it (and try again from there)
            else:                                 # (the second test: rounding only)
                return self._place(c, span, write)

    def _prune(self, t: float) -> None:
        """Forget bus reservations too old to constrain one placed from ``t`` on."""
        ends = self.bus_end
        if ends and ends[0] < t - self.t.horizon:
            drop = bisect_right(ends, t - self.t.horizon)
            del self.bus_start[:drop], ends[:drop], self.bus_write[:drop]

    def _refresh(self, t: float) -> None:
        """The refreshes due by ``t``: each closes every row and holds the sub-channel
        for tRFC, as soon as the bus is free after it is due."""
        tm = self.t
        pb = self.pb
        if pb is not None:                        # per-bank refreshes instead (the config
            pb.due(t, self.open_row, self.pre_ok, self.act_at)   # allows one kind only)
            self.refreshes = pb.count
            self.next_refresh = pb.next_due
            return
        while self.next_refresh <= t:
            at = self._place(self.next_refresh, tm.rfc, False)
            self.refreshed = at + tm.rfc          # no activate before the refresh is over
            self.open_row = [-1] * self.banks
            self.refreshes += 1
            self.next_refresh += tm.refi

    def _place(self, first: float, span: float, write: bool, record: bool = True) -> float:
        """The earliest data-bus slot of ``span`` cycles from ``first`` on, with the
        turnaround between reads and writes kept to both neighbours; recorded (unless
        ``record`` is false)."""
        tm = self.t
        starts, ends, kinds = self.bus_start, self.bus_end, self.bus_write
        if len(starts) > 32:
            self._prune(first)
        wr, rw = tm.write_to_read, tm.rtw
        c = first
        i = bisect_right(starts, c)
        if i:                                         # the reservation before
            e = ends[i - 1] + ((rw if write else 0.0) if not kinds[i - 1]
                               else (0.0 if write else wr))
            if e > c:
                c = e
        n = len(starts)
        while i < n:                                  # a gap before the next one?
            pad = (rw if not write else 0.0) if kinds[i] else (wr if write else 0.0)
            if c + span + pad <= starts[i]:
                break
            pad = ((rw if write else 0.0) if not kinds[i] else (0.0 if write else wr))
            if ends[i] + pad > c:
                c = ends[i] + pad
            i += 1
        if not record:
            return c
        end = c + span
        # Reservations that touch and go the same way are kept as one (a busy bus is
        # then one long reservation, and the search above stays short).
        if i and ends[i - 1] == c and kinds[i - 1] == write:
            ends[i - 1] = end
            if i < n and starts[i] == end and kinds[i] == write:
                ends[i - 1] = ends[i]
                del starts[i], ends[i], kinds[i]
        elif i < n and starts[i] == end and kinds[i] == write:
            starts[i] = c
        else:
            starts.insert(i, c)
            ends.insert(i, end)
            kinds.insert(i, write)
        if c + span > self.tail:
            self.tail = c + span
        return c
