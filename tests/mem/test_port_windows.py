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
