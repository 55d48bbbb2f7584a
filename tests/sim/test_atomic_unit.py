"""Atomics serialized at the unit that does them (simgpu.mem.atomic_unit): GT200's
memory partitions, the H100's L2 slices.  Relations between simulated times;
counts never depend on the serialization."""
import numpy as np
import pytest

import simgpu
from simgpu.lang import Array, atomic_add, i32, kernel, shared_array, syncthreads, threadIdx
from simgpu.mem.memory_system import MemorySystem
from simgpu_apps.mechanism_kernels import count_many, lanes_add


def rate(dev, spread, blocks, threads=256, reps=(2, 4)):
    """Atomics per cycle from the whole GPU: the atomics that ``reps[1] - reps[0]`` more
    per thread add, over the cycles they add (launch and dispatch costs drop out)."""
    runs = {}
    n = blocks * threads
    for r in reps:
        c = dev.zeros(n * r, np.int32)
        runs[r] = dev.launch(count_many, blocks, threads, c, spread, r, engine="timed")
        got = c.to_host()
        if spread:
            assert (got == 1).all()
        else:
            assert got[0] == n * r and not got[1:].any()
    extra = runs[reps[1]].cycles - runs[reps[0]].cycles
    return n * (reps[1] - reps[0]) / extra, runs[reps[1]]


@pytest.mark.parametrize("device, blocks", [("sim:gtx260", 27), ("sim:h100", 132)])
def test_same_address_atomics_run_at_a_tenth_of_distinct_ones_at_most(device, blocks):
    """Issue 18's property, from the whole GPU."""
    dev = simgpu.get_device(device)
    same, r_same = rate(dev, 0, blocks)
    distinct, r_distinct = rate(dev, 1, blocks)
    print(device, "same", same, "distinct", distinct, "ratio", distinct / same)
    assert same <= distinct / 10, (same, distinct)
    assert r_same.atomics.instructions == r_distinct.atomics.instructions


def test_lanes_on_one_address_are_serialized_at_the_partition():
    """GT200: 32 lanes on one word are 32 operations one after another at its partition
    (the coalescer made them one transaction; the unit does each lane's)."""
    dev = simgpu.get_device("sim:gtx260")
    same = dev.config.atomics.same_address_serialization_cycles
    c, out = dev.zeros(1, np.int32), dev.zeros(32, np.int32)
    cycles = {}
    for n in (1, 32):
        r = dev.launch(lanes_add, 1, 32, c, out, n, engine="timed")
        cycles[n] = r.cycles
        assert r.atomics.requests == (1 if n == 1 else 2)   # the half-warps' requests
        assert r.extra["atomic_operations"] == n            # one per lane, not per request
    assert cycles[32] - cycles[1] == pytest.approx(31 * same, rel=0.1)
    assert sorted(out.to_host().tolist()) == list(range(1, 33))     # 1 lane before


def test_lanes_on_one_sector_are_one_operation_on_the_h100():
    """The H100 (calibrate.py): a warp request to one counter takes the L2 as long
    whatever its lanes.  (Without the L1 pipeline, where the kernel's store of 32 lanes'
    results takes 3 cycles more than one lane's.)"""
    from simgpu.device import SimDevice
    from tests.sim.test_memory_timing import without_l1_pipe
    dev = SimDevice(without_l1_pipe(simgpu.get_device("sim:h100").config), "sim:h100")
    dev.cache_control = "all"                               # both start with a cold L2
    c, out = dev.zeros(1, np.int32), dev.zeros(32, np.int32)
    dev.launch(lanes_add, 1, 32, c, out, 1, engine="timed")  # the TLBs (kept across launches) warm
    cycles = {n: dev.launch(lanes_add, 1, 32, c, out, n, engine="timed").cycles for n in (1, 32)}
    assert abs(cycles[32] - cycles[1]) <= 4


def test_same_address_from_other_warps_waits_at_the_unit():
    """Unit level: two requests to one word from two SMs queue one after the other; to
    two words of the same partition they go in parallel up to the unit's throughput."""
    cfg = simgpu.get_device("sim:gtx260").config
    a = cfg.atomics
    same = {}
    for second in (0, 4):                                   # the same word, or the next
        ms = MemorySystem(cfg)
        first_done = ms.access("atomic", [0], [32], 0.0, 0, lanes={0: 1})
        same[second] = ms.access("atomic", [0], [32], 0.0, 3, lanes={second: 1}) - first_done
    assert same[0] >= a.same_address_serialization_cycles
    # the next word: its own DRAM read's bus slot, and a slot of the unit, no more
    assert same[4] < a.same_address_serialization_cycles / 4


def test_atomic_times_are_deterministic():
    dev = simgpu.get_device("sim:gtx260")
    times = [rate(dev, 0, 9, reps=(1, 2))[1].cycles for _ in range(2)]
    assert times[0] == times[1]


# --- shared-memory atomics --------------------------------------------------------

@kernel
def shared_adds(out: Array[i32], spread: i32):
    s = shared_array(i32, 32)
    t = threadIdx.x
    s[t] = 0
    syncthreads()
    atomic_add(s, t * spread, 1)
    syncthreads()
    out[t] = s[t]


@pytest.mark.parametrize("device", ["sim:gtx260", "sim:h100"])
def test_shared_atomics_on_one_word_are_serialized_by_the_banks(device):
    """32 lanes on one shared word: one operation per pass (per bank), counted; each on
    its own bank: conflict free."""
    dev = simgpu.get_device(device)
    out = dev.zeros(32, np.int32)
    same = dev.launch(shared_adds, 1, 32, out, 0, engine="timed")
    assert out.to_host()[0] == 32
    spread = dev.launch(shared_adds, 1, 32, out, 1, engine="timed")
    assert (out.to_host() == 1).all()
    assert same.extra["shared_bank_conflicts"] - spread.extra["shared_bank_conflicts"] >= 30
    assert same.cycles > spread.cycles
