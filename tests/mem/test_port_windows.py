"""An interconnect port forgets the reservation windows far behind its newest booking:
the same waits as a port that keeps them all, a bounded dict over a long run, and a
clear error (never a wrong time) for a booking in a forgotten window."""
import pytest
from hypothesis import given, settings, strategies as st

from simgpu.mem.interconnect import KEPT_WINDOWS, WINDOW, Port


def keeping_all(flit_cycles):
    port = Port(flit_cycles)
    port.prune_at = float("inf")              # never forgets
    return port


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 3 * KEPT_WINDOWS * WINDOW, allow_nan=False),
                          st.integers(1, 40)), min_size=1, max_size=200),
       st.sampled_from([1.0, 2.0, 4.5]))
def test_the_same_waits_as_a_port_that_keeps_every_window(bookings, fc):
    """Bookings in rising time (with jitter of up to half the kept span back): every
    wait equals the unpruned port's."""
    pruned, full = Port(fc), keeping_all(fc)
    newest = 0.0
    for t, flits in sorted(bookings):
        back = max(newest - t, 0.0)
        t = t if back < KEPT_WINDOWS * WINDOW / 2 else newest
        newest = max(newest, t)
        assert pruned.book(t, flits) == full.book(t, flits)
    assert pruned.waited == full.waited and pruned.max_wait == full.max_wait


def test_a_long_run_keeps_a_bounded_number_of_windows():
    port = Port(2.0)
    for i in range(10 * KEPT_WINDOWS):
        port.book(i * WINDOW, 3)
    assert len(port.used) <= 2 * KEPT_WINDOWS + 1
    assert len(keeping_all(2.0).used) == 0


def test_a_booking_in_a_forgotten_window_is_refused():
    port = Port(2.0)
    port.book(0.0, 3)
    port.book(3 * KEPT_WINDOWS * WINDOW, 3)       # forgets the windows before 2 x KEPT
    before = dict(port.used)
    with pytest.raises(RuntimeError, match="forgotten"):
        port.book(10.0, 3)
    assert port.used == before                    # nothing booked


# --- a port of the interconnect: windows forgotten behind the simulation's clock ---------

def clocked(flit_cycles, clock):
    return Port(flit_cycles, clock)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 4 * KEPT_WINDOWS * WINDOW, allow_nan=False),
                          st.booleans(), st.floats(0, 3 * KEPT_WINDOWS * WINDOW),
                          st.integers(1, 40)), min_size=1, max_size=200),
       st.sampled_from([1.0, 2.0, 4.5]))
def test_replies_far_ahead_of_the_clock_change_no_wait(bookings, fc):
    """The clock (the newest request) rises; each booking is near it (up to half the kept
    span behind, as requests from several SMs) or far ahead of it (a reply behind an
    atomic backlog, up to 3 x the kept span): every wait equals the unpruned port's, and
    none is refused (the port's own newest booking would have refused many)."""
    clock = [0.0]
    pruned, full = clocked(fc, clock), keeping_all(fc)
    for now, ahead, far, flits in sorted(bookings):
        clock[0] = max(clock[0], now)
        t = clock[0] + far if ahead else max(now - KEPT_WINDOWS * WINDOW / 2, 0.0)
        assert pruned.book(t, flits) == full.book(t, flits)
    assert pruned.waited == full.waited and pruned.max_wait == full.max_wait


def test_the_crash_of_issue_an_atomic_backlog_is_gone():
    """The GTX 260 crash (cc_edges_count): a reply booked 1.2M cycles ahead, then
    ordinary replies near the clock on the same port; the same waits as a port that
    keeps every window."""
    clock = [0.0]
    port, full = clocked(2.16, clock), keeping_all(2.16)
    far = 1.2e6
    for t in (100.0, far, far + 50.0, 200.0, 4352.0, 4400.0):
        clock[0] = min(t, 5000.0)                  # the clock stays near 5,000
        assert port.book(t, 2) == full.book(t, 2)
    assert port.used.keys() == full.used.keys()    # nothing forgotten: all near the clock


def test_windows_far_behind_the_clock_are_forgotten_and_refused():
    clock = [0.0]
    port = clocked(2.0, clock)
    port.book(0.0, 3)
    port.book(1e9, 3)                              # far ahead: nothing is forgotten
    assert 0.0 in port.used
    clock[0] = 3 * KEPT_WINDOWS * WINDOW
    port.book(clock[0], 3)                         # the clock moved: window 0 goes
    assert 0.0 not in port.used and 1e9 // WINDOW in port.used
    before = dict(port.used)
    with pytest.raises(RuntimeError, match="behind the simulation's clock"):
        port.book(10.0, 3)
    assert port.used == before                     # nothing booked
    port.book(clock[0] - KEPT_WINDOWS * WINDOW / 2, 3)   # within the kept span: booked


def test_a_long_run_with_far_replies_keeps_a_bounded_number_of_windows():
    """The clock advances 10 x the kept span; every booking near it has a reply 1M cycles
    ahead: the port holds the windows of the kept span behind the clock and those ahead
    of it, never the whole run's."""
    clock = [0.0]
    port = clocked(2.0, clock)
    ahead = 1e6
    for i in range(10 * KEPT_WINDOWS):
        clock[0] = i * WINDOW
        port.book(clock[0], 3)
        port.book(clock[0] + ahead, 3)
    assert len(port.used) <= 3 * KEPT_WINDOWS + ahead / WINDOW + 2
