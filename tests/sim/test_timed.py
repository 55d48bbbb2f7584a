"""The timed engine: same results and counts as lockstep, and times that follow the traffic."""
import numpy as np
import pytest

import simgpu
from simgpu.lang import Array, blockDim, blockIdx, gridDim, i32, kernel, threadIdx

from . import kernels as K


@kernel
def gather_stride(src: Array[i32], dst: Array[i32], stride: i32, n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        dst[i] = src[(i * stride) % n]


def test_timed_matches_lockstep_results_and_counts(dev, rng):
    n = 700
    a = rng.integers(-1000, 1000, n, dtype=np.int32)
    blocks = (n + K.BLOCK - 1) // K.BLOCK
    out = {}
    for engine in ("lockstep", "timed"):
        sums = dev.zeros(blocks, np.int64)
        rep = dev.launch(K.block_sums, blocks, K.BLOCK, dev.to_device(a), sums, n, engine=engine)
        out[engine] = (sums.to_host(), rep)
    (r1, lock), (r2, timed) = out["lockstep"], out["timed"]
    assert np.array_equal(r1, r2)
    assert lock.loads == timed.loads and lock.stores == timed.stores
    assert lock.warp_instructions == timed.warp_instructions
    assert lock.time_ms is None and timed.time_ms > 0 and timed.cycles > 0


@pytest.mark.parametrize("device", ["sim:gtx260"])
def test_strided_reads_cost_what_their_bytes_predict(device):
    """A bandwidth-bound copy: simulated time scales with DRAM bytes moved.

    Model tolerance: the time ratio is within 35% of the bytes ratio (the
    coalesced run reaches a lower bus utilization while the pipeline fills).
    """
    import simgpu
    dev = simgpu.get_device(device)
    n = 1 << 16
    src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
    sms = dev.config.gpu.sm_count
    reps = {s: dev.launch(gather_stride, sms * 2, 256, src, dst, s, n, engine="timed")
            for s in (1, 32)}
    overhead = dev.config.issue.kernel_launch_overhead_us / 1e3
    t = {s: r.time_ms - overhead for s, r in reps.items()}
    moved = {s: r.loads.bytes + r.stores.bytes for s, r in reps.items()}
    assert reps[32].loads.transactions >= 8 * reps[1].loads.transactions
    ratio_time, ratio_bytes = t[32] / t[1], moved[32] / moved[1]
    assert ratio_time > 1.5
    assert abs(ratio_time / ratio_bytes - 1) < 0.35, (ratio_time, ratio_bytes)
    # (No caches on the GTX 260: every transaction reaches DRAM, so bytes decide.)
    assert np.array_equal(dst.to_host(), (np.arange(n) * 32) % n)


def test_l2_keeps_data_between_launches(h100):
    n = 1 << 15
    src, dst = h100.to_device(np.arange(n, dtype=np.int32)), h100.zeros(n, np.int32)
    cold = h100.launch(gather_stride, 264, 128, src, dst, 1, n, engine="timed-block")
    warm = h100.launch(gather_stride, 264, 128, src, dst, 1, n, engine="timed-block")
    assert cold.extra["l2_hit_rate"] == 0.0 and warm.extra["l2_hit_rate"] == 1.0
    assert warm.extra["dram_bytes"] == 0 < cold.extra["dram_bytes"]
    assert warm.cycles < cold.cycles
    assert warm.loads == cold.loads            # caches change time, never the counts


def test_coalesced_copy_bandwidth_is_realistic():
    """GT200 cards sustained 70-90% of their 111.9 GB/s peak on a coalesced copy."""
    import simgpu
    dev = simgpu.get_device("sim:gtx260")
    n = 1 << 17
    src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
    rep = dev.launch(gather_stride, 27 * 4, 256, src, dst, 1, n, engine="timed")
    assert 0.6 * 111.9 < rep.extra["achieved_gbps"] < 0.95 * 111.9
    assert rep.extra["occupancy"] == 1.0 and rep.extra["blocks_per_sm"] == 4
    # (and the page walks' reads of page-table entries: simgpu.mem.tlb)
    assert (sum(rep.extra["partition_transactions"]) == rep.loads.transactions
            + rep.stores.transactions + rep.extra["tlb_walk_reads"])


def test_timed_is_deterministic(dev):
    n = 5000
    reports = []
    for d in (dev, simgpu.get_device(dev.name)):  # two devices with the same history (their
        src, dst = d.to_device(np.arange(n, dtype=np.int32)), d.zeros(n, np.int32)  # TLBs
        reports.append(d.launch(gather_stride, 8, 128, src, dst, 7, n, engine="timed"))
    a, b = reports                            # and L2 keep state from launch to launch)
    assert a.to_dict() == b.to_dict()


def test_more_blocks_than_slots_run_in_waves(dev):
    # 27 SMs x 4 blocks of 256 threads are resident; 216 blocks need two waves.
    n = 216 * 256
    src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
    one = dev.launch(gather_stride, 108, 256, src, dst, 1, n // 2, engine="timed")
    two = dev.launch(gather_stride, 216, 256, src, dst, 1, n, engine="timed")
    assert np.array_equal(dst.to_host(), np.arange(n))
    assert two.cycles > 1.5 * one.cycles


def test_far_loads_of_a_waiting_warp_stay_its_own():
    """A warp waiting for miss entries keeps its far loads' link bookings: another warp
    must not take them (before 01bf2d0 that one then polled, at one simulated cycle
    forever, for a booking later than its data). In a child process, so that a hang
    fails the test instead of stopping the suite."""
    import pathlib
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parents[2]
    try:
        done = subprocess.run([sys.executable, "-m", "tests.sim.far_loads_child"], cwd=root,
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the timed engine did not finish a 4,096-element triad in 120 s: it spins")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("cycles ")


def test_a_crossing_not_booked_yet_waits_for_a_later_wait():
    """timed.crossed: a warp waiting until 15 for far loads' data takes the first load's
    crossing (back at 10, through the link at 30); the second's data are back at 20,
    within the grown wait, but its crossing is not booked yet (None): it stays for the
    warp's next wait (it had compared None with a float: held-out spmv_csr, 2026-11-27)."""
    from simgpu.sim.timed import crossed
    late = [[10.0, 30.0, None], [20.0, None, None], [40.0, 50.0, None]]
    assert crossed(late, 15.0) == 30.0
    assert late == [[20.0, None, None], [40.0, 50.0, None]]
    late[0][1] = 35.0                                 # booked since
    assert crossed(late, 30.0) == 35.0 and late == [[40.0, 50.0, None]]
