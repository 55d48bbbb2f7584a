"""The interconnect between the SMs and the memory partitions (a crossbar on GT200).

Two networks, one each way: requests go from the SMs' ports to the partitions'
ports, replies (load data, store acknowledgements) come back.  A packet is a
header (``memory.interconnect_header_bytes``) plus its data: a load request is
a header alone, a store request carries its data, a load reply carries the
data, a store acknowledgement is a header.  It travels in flits of
``memory.interconnect_flit_bytes``, and every port moves one flit per cycle
of ``memory.interconnect_clock_mhz`` -- into the network at its source, out
of it at its destination.  Several SMs may share a port
(``memory.interconnect_sms_per_port``: a TPC of three SMs on GT200).

So many SMs sending to one partition wait for its port (the requests of
partition camping queue there), one partition returning data to many SMs
sends them one after another, and a TPC's SMs share their port.  The wait at
a port is the model's queueing: a request that finds more than
``memory.interconnect_queue_packets`` packets' worth of flits (two-flit packets)
ahead of it at its SM's port and its partition's port together cannot be sent
yet: the pipeline accepts it later (``accepted``), and the SM's next requests wait
for that.

Without ``interconnect_flit_bytes`` the interconnect is a fixed latency
(``memory.interconnect_latency_cycles``, the SM -> partition -> SM round trip
outside DRAM, half of it each way), as before.  With it, that latency stays
the unloaded trip (its own flits' transfer included: the figure was fitted to
a measured latency) and only the waits at the ports come on top.

Each port is a reservation table in windows of ``WINDOW`` SM cycles holding the
flits booked in them: a booking fills the window of its time and spills into the
next ones, so bookings that arrive out of time order (replies are booked when
their DRAM access is computed, not when it ends) fill earlier gaps instead of
queueing behind later ones, at a few dictionary operations per booking.

The interconnect's ports forget the windows far behind the simulation's clock
(:data:`KEPT_WINDOWS`): the clock is the newest request sent, since the timed engines
send requests from their clock on and every reply is booked at or after its request.
Not the port's newest booking: a reply may be booked far ahead of the clock (an atomic
behind a long backlog at its partition's unit), and ordinary replies near the clock
must still find their windows.
"""
from __future__ import annotations

import math

__all__ = ["Interconnect", "Port"]

#: SM cycles per reservation window of a port.
WINDOW = 64.0

#: Windows a port keeps behind its clock: the interconnect's (the newest request
#: sent, shared by its ports), or for a port on its own (the L2's fill ports) its newest
#: booking.  The timed engines book from the simulation's clock on (a little ahead of
#: it), never this far back, so older windows are forgotten: a long run's ports stay
#: small (without it a port kept every window of the run, gigabytes at the paper's
#: sizes).  Windows ahead of the clock are all kept, however far ahead (replies behind
#: a long atomic backlog).  A booking that would need a forgotten window stops the run
#: (never a wrong time).  A quarter of the compiled core's ring
#: (``simgpu.mem.fast_state.RING``).
KEPT_WINDOWS = 1 << 13


class Port:
    """One port of the interconnect: one flit per ``flit_cycles`` SM cycles.

    ``clock``: a one-element list [cycle] shared with the other ports, the simulation's
    clock (:class:`Interconnect` keeps its newest request there): the port forgets the
    windows more than :data:`KEPT_WINDOWS` behind it.  None: behind the port's own
    newest booking."""

    __slots__ = ("capacity", "flit_cycles", "used", "waited", "max_wait", "floor", "prune_at",
                 "clock")

    def __init__(self, flit_cycles: float, clock: list | None = None):
        self.flit_cycles = flit_cycles
        self.capacity = WINDOW / flit_cycles       # flits per window
        self.used: dict[float, float] = {}         # window -> flits booked in it
        self.waited = 0.0                          # cycles packets waited here, in all
        self.max_wait = 0.0
        self.floor = -1.0                          # windows up to this one are forgotten
        self.prune_at = float(2 * KEPT_WINDOWS)    # look at forgetting once one this late is booked
        self.clock = clock

    def book(self, t: float, flits: int) -> float:
        """Book ``flits`` arriving at ``t``; return how long they wait beyond their own
        transfer time (0 on an idle port)."""
        k = t // WINDOW                            # the window (a float key)
        if k >= self.prune_at or k <= self.floor:
            self._forget(k)
        used, fc = self.used, self.flit_cycles
        have = used.get(k, 0.0)
        if have + flits <= self.capacity:          # the usual case: room in its window
            used[k] = have + flits
            # after what the window holds (a fluid approximation within a window)
            wait = have * fc - (t - k * WINDOW)
            if wait <= 0:
                return 0.0
        else:
            wait = self._spill(t, k, flits)
        self.waited += wait
        if wait > self.max_wait:
            self.max_wait = wait
        return wait

    def _forget(self, k: float) -> None:
        """Drop the windows more than :data:`KEPT_WINDOWS` behind the clock (window ``k``,
        the booking's, where the port has none), once the clock has moved that far since
        they were last dropped: each window is looked at about once behind the clock,
        however many bookings are far ahead of it."""
        clock = self.clock
        if k <= self.floor:
            behind = ("the port's newest booking" if clock is None else
                      f"the simulation's clock (the newest request, cycle {clock[0]:.0f})")
            raise RuntimeError(
                f"interconnect: a booking at cycle {k * WINDOW:.0f}, more than {KEPT_WINDOWS} "
                f"windows of {WINDOW:.0f} cycles behind {behind} (those windows are "
                "forgotten); this is a bug in the timed engine, please report it")
        now = k if clock is None else clock[0] // WINDOW
        floor = now - KEPT_WINDOWS
        if floor < self.floor + KEPT_WINDOWS:      # (a booking far ahead of the clock)
            return
        used = self.used
        for w in [w for w in used if w <= floor]:
            del used[w]
        self.floor = floor
        self.prune_at = now + KEPT_WINDOWS

    def _spill(self, t: float, k: float, flits: int) -> float:
        """:meth:`book` when the window of ``t`` has no room for all of it."""
        used, capacity, fc = self.used, self.capacity, self.flit_cycles
        offset = t - k * WINDOW
        left = float(flits)                        # (the same values as the int: exact)
        while True:
            have = used.get(k, 0.0)
            room = capacity - have
            if room >= left:
                used[k] = have + left
                start = offset if offset > have * fc else have * fc
                end = k * WINDOW + start + left * fc
                break
            if room > 0:
                used[k] = capacity
                left -= room
            k += 1.0
            offset = 0.0
        wait = end - t - flits * fc
        return wait if wait > 0 else 0.0


class Interconnect:
    # (declared types: a build of simgpu.native keeps these as machine numbers)
    half_trip: float
    modeled: bool
    flit: int
    header: int
    per_port: int
    queue_cycles: float
    held: int
    flits_sent: int
    clock: list

    def __init__(self, config):
        m = config.memory
        self.half_trip = m.interconnect_latency_cycles / 2
        self.modeled = bool(m.interconnect_flit_bytes)
        if not self.modeled:
            return
        self.flit = m.interconnect_flit_bytes
        self.header = m.interconnect_header_bytes
        flit_cycles = config.gpu.core_clock_mhz / m.interconnect_clock_mhz
        self.per_port = m.interconnect_sms_per_port
        sm_ports = -(-config.gpu.sm_count // self.per_port)
        # the simulation's clock as the ports see it: the newest request sent (the
        # engines send from their clock on; replies come later, some far later)
        clock = self.clock = [0.0]
        # requests: into the network at the SM's port, out at the partition's;
        # replies: into it at the partition's port, out at the SM's
        self.sm_out = [Port(flit_cycles, clock) for _ in range(sm_ports)]
        self.part_in = [Port(flit_cycles, clock) for _ in range(m.partitions)]
        self.part_out = [Port(flit_cycles, clock) for _ in range(m.partitions)]
        self.sm_in = [Port(flit_cycles, clock) for _ in range(sm_ports)]
        # a destination queue's bound, in cycles of waiting: what that many packets
        # of two flits (a 32-B load's reply with its header on GT200) take to leave
        q = m.interconnect_queue_packets
        self.queue_cycles = q * 2 * flit_cycles if q else math.inf
        self.held = 0                              # packets that found a queue full
        self.flits_sent = 0                        # flits over the network, both ways
        self._flits: dict[int, int] = {}

    def flits(self, data_bytes: int) -> int:
        """Flits of a packet carrying ``data_bytes`` of data (0: a header alone)."""
        n = self._flits.get(data_bytes)
        if n is None:
            n = self._flits[data_bytes] = max(1, -(-(self.header + data_bytes) // self.flit))
        return n

    def packets(self, write: bool, sizes) -> tuple[int, int]:
        """(request flits, reply flits) of transactions of ``sizes`` bytes."""
        flits = self.flits
        if write:
            return sum(flits(s) for s in sizes), len(sizes) * flits(0)
        return len(sizes) * flits(0), sum(flits(s) for s in sizes)

    def send(self, t: float, sm: int, part: int, flits: int) -> tuple[float, float]:
        """Requests of ``flits`` from SM ``sm`` to partition ``part`` sent at ``t``:
        (when the network took them -- later than ``t`` when the partition's queue
        was full --, when they reach the partition)."""
        if not self.modeled:
            return t, t + self.half_trip
        return self.to_port(t, self.leave_sm(t, sm, flits), part, flits)

    def reply(self, t: float, part: int, sm: int, flits: int) -> float:
        """When replies of ``flits`` leaving partition ``part`` at ``t`` reach SM ``sm``."""
        if not self.modeled:
            return t + self.half_trip
        return self.reach_sm(self.leave_partition(t, part, flits), sm, flits)

    # the four steps, for a request whose packets go to several partitions (the memory
    # pipeline books the SM's ports once for all of them)

    def leave_sm(self, t: float, sm: int, flits: int) -> float:
        """When requests of ``flits`` sent at ``t`` are out of SM ``sm``'s port."""
        self.flits_sent += flits
        if t > self.clock[0]:
            self.clock[0] = t
        return t + self.sm_out[sm // self.per_port].book(t, flits)

    def to_port(self, t: float, left: float, part: int, flits: int) -> tuple[float, float]:
        """Requests sent at ``t``, out of their SM's port at ``left``: (when the network
        took them, when they reach partition ``part``)."""
        wait = left - t + self.part_in[part].book(left, flits)
        accepted = t
        if wait > self.queue_cycles:               # the queue ahead is full: held back
            accepted = t + wait - self.queue_cycles
            self.held += 1
        return accepted, t + self.half_trip + wait

    def requests(self, req, t: float, total: int, flits: dict) -> dict:
        """A request's packets sent at ``t``: ``total`` flits out of its SM's port as one
        batch, ``flits[part]`` into each partition's port as one; return each
        partition's wait beyond the unloaded half trip ({partition: cycles}).  A
        partition whose queue ahead is full holds the request back: ``req.accepted``
        is set that much later.  (The request leg of :func:`~simgpu.mem.uncached.
        uncached` and :func:`~simgpu.mem.deferred_reads.uncached_load` alike.)"""
        if t > self.clock[0]:
            self.clock[0] = t
        left = t + self.sm_out[req.sm // self.per_port].book(t, total)
        self.flits_sent += total
        part_in, queue = self.part_in, self.queue_cycles
        waits: dict = {}
        for part, n in flits.items():
            wait = left - t + part_in[part].book(left, n)
            if wait > queue:                       # the partition's queue is full: held back
                self.held += 1
                if t + wait - queue > req.accepted:
                    req.accepted = t + wait - queue
            waits[part] = wait
        return waits

    def leave_partition(self, t: float, part: int, flits: int) -> float:
        """When replies of ``flits`` ready at ``t`` are out of partition ``part``'s port."""
        self.flits_sent += flits
        return t + self.part_out[part].book(t, flits)

    def reach_sm(self, t: float, sm: int, flits: int) -> float:
        """When replies of ``flits`` out of their partitions' ports by ``t`` reach SM ``sm``."""
        return t + self.half_trip + self.sm_in[sm // self.per_port].book(t, flits)

    def to_partition(self, t: float) -> float:
        """When a request sent at ``t`` reaches its partition (no port booked)."""
        return t + self.half_trip

    def to_sm(self, t: float) -> float:
        """When data leaving a partition at ``t`` reach their SM (no port booked)."""
        return t + self.half_trip

    def summary(self) -> dict:
        if not self.modeled:
            return {}
        ports = self.part_in + self.part_out
        return {"interconnect_flits": self.flits_sent,
                "interconnect_max_wait": max(p.max_wait for p in
                                             ports + self.sm_out + self.sm_in),
                "interconnect_held": self.held}
