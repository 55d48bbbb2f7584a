"""The compiled core's ports (simgpu.mem.fast_net, a ring of windows) take over the
Python ports' windows (fast_state.take) relative to the interconnect's clock: windows
far behind the clock are forgotten there, so a reply far ahead of it may share their
ring slot (take used to refuse that state), and the core books near the clock and far
ahead exactly as the Python port does."""
import pytest

pytest.importorskip("numba")

from simgpu.configs import load_config  # noqa: E402
from simgpu.mem import fast_net  # noqa: E402
from simgpu.mem.fast_layout import new_state  # noqa: E402
from simgpu.mem.fast_state import RING, give_back, take  # noqa: E402
from simgpu.mem.interconnect import KEPT_WINDOWS, WINDOW  # noqa: E402
from simgpu.mem.memory_system import MemorySystem  # noqa: E402
from simgpu.mem.tlb import TlbState  # noqa: E402

CFG = load_config("gtx260")


def test_the_core_takes_a_reply_far_ahead_and_forgets_windows_behind_the_clock():
    ms = MemorySystem(CFG, None, TlbState(CFG))
    net = ms.net
    q = len(net.sm_out) + len(net.part_in)          # part_out[0] in the core's port order
    port = net.part_out[0]
    behind = 1000.0
    port.book(behind, 2)                            # a window the port has not dropped yet
    clock = net.clock[0] = behind + (KEPT_WINDOWS + 100) * WINDOW   # ... far behind now
    far = behind + RING * WINDOW                    # a reply far ahead: the same ring slot
    port.book(far, 2)
    arrays = take(ms)                               # (refused before: the slot twice)
    st = new_state(arrays)
    for t in (clock, clock + 10.0, far, far + 5.0, clock + 3 * WINDOW, far - 700.0):
        assert fast_net.book(st, q, t, 3) == port.book(t, 3)
    with pytest.raises(RuntimeError, match="forgotten"):
        fast_net.book(st, q, behind, 3)             # never a wrong time
    give_back(arrays, ms)
    assert behind // WINDOW <= port.floor < clock // WINDOW - KEPT_WINDOWS + 1
    assert far // WINDOW in port.used and behind // WINDOW not in port.used


def test_the_core_keeps_the_interconnect_clock():
    """The core's requests move the clock as Interconnect.requests does, and give_back
    writes it back (the Python ports go on forgetting relative to it)."""
    ms = MemorySystem(CFG, None, TlbState(CFG))
    assert ms.use_fast()
    ms.access("load", [4096], [64], 12345.0, 3)
    ms.fast_off()
    py = MemorySystem(CFG, None, TlbState(CFG))
    py.access("load", [4096], [64], 12345.0, 3)
    assert ms.net.clock == py.net.clock           # (translated: after its page walk)
    assert ms.net.clock[0] > 12345.0
