"""The SM <-> partition interconnect (simgpu.mem.interconnect): ports that move a flit
per interconnect cycle, waits that grow with what queues at a port, and partition
camping on sim:gtx260."""
import dataclasses

import numpy as np
import pytest

import simgpu
from simgpu.mem.interconnect import WINDOW, Interconnect, Port
from simgpu.sim.device import SimDevice
from simgpu_apps.mechanism_kernels import read_chunks

from ..sim import kernels as K


def test_an_idle_port_adds_no_wait():
    p = Port(2.0)
    assert p.book(10.0, 3) == 0.0
    assert p.book(1000.0, 3) == 0.0


def test_packets_at_one_port_queue_one_after_another():
    """n packets of f flits arriving together: the k-th waits k x f flit times."""
    p = Port(2.0)
    waits = [p.book(0.0, 2) for _ in range(5)]
    assert waits == [0.0, 4.0, 8.0, 12.0, 16.0]


def test_a_full_window_spills_into_the_next():
    p = Port(2.0)
    per_window = int(WINDOW / 2.0)
    assert p.book(0.0, per_window) == 0.0
    wait = p.book(0.0, 4)
    assert wait == pytest.approx(WINDOW)              # the whole first window ahead of it


def test_an_earlier_booking_made_later_fills_its_own_gap():
    """Replies are booked when their DRAM time is computed: one for cycle 1000 booked
    first must not hold up one for cycle 100 booked after it."""
    p = Port(2.0)
    p.book(1000.0, 10)
    assert p.book(100.0, 2) == 0.0


def test_many_sms_to_one_partition_wait_at_its_port_not_when_spread():
    cfg = simgpu.get_device("sim:gtx260").config
    net = Interconnect(cfg)
    assert net.modeled
    camped = [net.send(0.0, sm, 0, 1)[1] for sm in range(0, 27, 3)]      # 9 TPCs, one partition
    net = Interconnect(cfg)
    spread = [net.send(0.0, sm, sm // 3 % 7, 1)[1] for sm in range(0, 27, 3)]
    flit = cfg.gpu.core_clock_mhz / cfg.memory.interconnect_clock_mhz
    assert max(camped) - min(camped) == pytest.approx(8 * flit)
    assert max(spread) - min(spread) <= 1 * flit + 1e-9      # two TPCs share a partition


def test_a_full_destination_queue_holds_the_sender():
    cfg = simgpu.get_device("sim:gtx260").config
    net = Interconnect(cfg)
    accepted = [net.send(0.0, sm, 0, 2)[0] for sm in range(0, 27, 3)] * 1
    for _ in range(4):
        accepted += [net.send(0.0, sm, 0, 2)[0] for sm in range(0, 27, 3)]
    assert accepted[0] == 0.0
    assert max(accepted) > 0.0 and net.held > 0            # past the queue: held back


def test_packets_carry_a_header_and_their_data():
    net = Interconnect(simgpu.get_device("sim:gtx260").config)    # 32-B flits, 8-B header
    assert net.packets(False, [32, 64]) == (2, 2 + 3)       # load: requests 1 flit each
    assert net.packets(True, [32]) == (2, 1)                # store: data out, ack back


def test_without_a_flit_size_it_is_a_fixed_latency():
    net = Interconnect(simgpu.get_device("sim:h100").config)
    assert not net.modeled
    assert net.send(5.0, 0, 0, 100) == (5.0, 5.0 + net.half_trip)
    assert net.reply(5.0, 0, 0, 100) == 5.0 + net.half_trip


# --- partition camping on sim:gtx260 ------------------------------------------------


def test_camping_on_one_partition_is_slower_than_spreading():
    dev = simgpu.get_device("sim:gtx260")
    chunks = 2048
    src = dev.to_device(np.arange(chunks * 7 * 64, dtype=np.int32))
    out = dev.zeros(54 * 128, np.int32)
    spread = dev.launch(read_chunks, 54, 128, src, out, chunks, 1, engine="timed-block")
    camped = dev.launch(read_chunks, 54, 128, src, out, chunks, 7, engine="timed-block")
    assert camped.loads == spread.loads                      # the same traffic counts
    parts = camped.extra["partition_transactions"]
    assert max(parts) > 0.9 * sum(parts)                     # nearly all on one partition
    slowdown = camped.cycles / spread.cycles
    print("camping slowdown", slowdown)
    assert slowdown > 3.0


# --- counts never depend on the timing units ------------------------------------------

def _without_units(device):
    cfg = simgpu.get_device(device).config
    return SimDevice(dataclasses.replace(
        cfg,
        memory=dataclasses.replace(cfg.memory, interconnect_flit_bytes=None,
                                   interconnect_clock_mhz=None),
        issue=dataclasses.replace(cfg.issue, max_outstanding_misses_per_sm=None),
        # (the schema's default; same_address_lanes_merged stays: its rounds of lanes on
        # one word are how the H100 makes an atomic's sectors, a rule of the counts too)
        atomics=dataclasses.replace(cfg.atomics, unit_cycles_per_operation=0.0)),
        f"{device}-bare")


@pytest.mark.parametrize("device", ["sim:gtx260", "sim:h100"])
@pytest.mark.parametrize("engine", ["timed", "timed-block"])
def test_counts_and_results_do_not_depend_on_the_units(device, engine):
    """MSHRs, ports and the atomic unit move times only: a histogram (loads, atomics
    on few addresses, stores) and a strided copy give the same values and counts."""
    rng = np.random.default_rng(3)
    n = 4096
    keys = rng.integers(0, 8, n).astype(np.int32)
    reports, values = [], []
    for dev in (simgpu.get_device(device), _without_units(device)):
        k, counts, old = dev.to_device(keys), dev.zeros(8, np.int32), dev.zeros(n, np.int32)
        src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
        h = dev.launch(K.histogram, n // 256, 256, k, counts, old, n, engine=engine)
        c = dev.launch(K.copy_strided, n // 256, 256, src, dst, 32, n, engine=engine)
        reports.append((h, c))
        values.append((counts.to_host(), np.sort(old.to_host()), dst.to_host()))
    (h1, c1), (h2, c2) = reports
    for a, b in ((h1, h2), (c1, c2)):
        assert (a.loads, a.stores, a.atomics, a.warp_instructions) == \
            (b.loads, b.stores, b.atomics, b.warp_instructions)
    assert (values[0][0] == np.bincount(keys, minlength=8)).all()
    for x, y in zip(*values):
        assert (x == y).all()


def test_same_launch_same_times():
    """Deterministic: the same launches on two fresh devices take the same times (on one
    device a second launch differs: its TLBs and DRAM rows are left by the first)."""
    times = []
    for _ in range(2):
        dev = simgpu.get_device("sim:gtx260")
        src = dev.to_device(np.arange(512 * 7 * 64, dtype=np.int32))
        out = dev.zeros(27 * 128, np.int32)
        times.append([dev.launch(read_chunks, 27, 128, src, out, 512, 7, engine="timed").cycles
                      for _ in range(2)])
    assert times[0] == times[1]
