"""Issue 18's mechanisms at work on the simulated GPUs: miss entries, atomics at their
unit, and the SM <-> partition interconnect.  Simulated times only (no GPU).

Three tables:

1. **Memory-level parallelism**: cycles per loop iteration of one thread with 1-4
   independent loads (engine ``timed``, empty caches), and the 4 : 1 ratio
   (issue 18: at most 1.5).
2. **Atomics from the whole GPU**: atomics per cycle when every thread adds to one
   word and when each adds to its own (the cycles that two more atomics per thread
   add, so launch and dispatch drop out), and what 32 lanes of one warp on one word
   cost more than one lane (issue 18: same address at most a tenth of the rate).
3. **Partition camping** on sim:gtx260: warps reading 256-B chunks spread over the
   seven partitions or all on one, with and without the interconnect's ports.

Run: ``python benchmarks/memory_units.py``
"""
from __future__ import annotations

import dataclasses
import datetime

import numpy as np

import simgpu
from simgpu.sim.device import SimDevice
from simgpu_apps.mechanism_kernels import (count_many, lanes_add, mlp_loads_1 as loads_1,
    mlp_loads_2 as loads_2, mlp_loads_3 as loads_3, mlp_loads_4 as loads_4, read_chunks)


def mlp(device: str, iters: int = 32) -> list:
    dev = simgpu.get_device(device)
    dev.cache_control = "all"
    arrays = [dev.to_device(np.arange(4096 * 2 * iters, dtype=np.int32) % 97) for _ in range(4)]
    out = dev.zeros(4, np.int32)
    per = {}
    for n, k in ((1, loads_1), (2, loads_2), (3, loads_3), (4, loads_4)):
        base = dev.launch(k, 1, 1, *arrays, out, iters, engine="timed").cycles
        per[n] = (dev.launch(k, 1, 1, *arrays, out, 2 * iters, engine="timed").cycles
                  - base) / iters
    return [per[n] for n in (1, 2, 3, 4)]


def atomic_rate(dev, spread: int, blocks: int, threads: int = 256) -> float:
    n = blocks * threads
    cycles = []
    for reps in (2, 4):
        c = dev.zeros(n * reps, np.int32)
        cycles.append(dev.launch(count_many, blocks, threads, c, spread, reps,
                                 engine="timed").cycles)
    return 2 * n / (cycles[1] - cycles[0])


def lanes_cost(dev) -> float:
    dev.cache_control = "all"
    c, out = dev.zeros(1, np.int32), dev.zeros(32, np.int32)
    one = dev.launch(lanes_add, 1, 32, c, out, 1, engine="timed").cycles
    return dev.launch(lanes_add, 1, 32, c, out, 32, engine="timed").cycles - one


def camping(dev, chunks: int = 2048) -> tuple[int, int]:
    src = dev.to_device(np.arange(chunks * 7 * 64, dtype=np.int32))
    out = dev.zeros(54 * 128, np.int32)
    spread = dev.launch(read_chunks, 54, 128, src, out, chunks, 1, engine="timed-block").cycles
    camped = dev.launch(read_chunks, 54, 128, src, out, chunks, 7, engine="timed-block").cycles
    return spread, camped


def main():
    print(f"# memory units — simulated, {datetime.date.today()}")
    print()
    print("One thread, independent loads per iteration, engine timed: cycles per iteration")
    print()
    print("| device | 1 load | 2 | 3 | 4 | 4 : 1 |")
    print("|---|---:|---:|---:|---:|---:|")
    for device in ("sim:gtx260", "sim:h100", "sim:h200"):
        c = mlp(device)
        print(f"| {device} | {c[0]:.1f} | {c[1]:.1f} | {c[2]:.1f} | {c[3]:.1f} | "
              f"{c[3] / c[0]:.2f} |")
    print()
    print("Atomics from the whole GPU (256-thread blocks, engine timed): atomics per cycle")
    print()
    print("| device | blocks | one word | own words | ratio | 32 lanes on one word, "
          "cycles more than 1 |")
    print("|---|---:|---:|---:|---:|---:|")
    for device, blocks in (("sim:gtx260", 27), ("sim:h100", 132)):
        dev = simgpu.get_device(device)
        same, distinct = atomic_rate(dev, 0, blocks), atomic_rate(dev, 1, blocks)
        print(f"| {device} | {blocks} | {same:.3f} | {distinct:.2f} | 1/{distinct / same:.1f} | "
              f"{lanes_cost(dev):.0f} |")
    print()
    print("Partition camping, sim:gtx260, 54 blocks x 128 threads reading 2048 chunks of "
          "256 B, engine timed-block: cycles")
    print()
    print("| interconnect | spread | one partition | slowdown |")
    print("|---|---:|---:|---:|")
    cfg = simgpu.get_device("sim:gtx260").config
    bare = dataclasses.replace(cfg, memory=dataclasses.replace(
        cfg.memory, interconnect_flit_bytes=None, interconnect_clock_mhz=None))
    for name, dev in (("ports (gtx260.toml)", simgpu.get_device("sim:gtx260")),
                      ("fixed latency only", SimDevice(bare, "sim:gtx260-bare"))):
        spread, camped = camping(dev)
        print(f"| {name} | {spread:,} | {camped:,} | {camped / spread:.2f} |")


if __name__ == "__main__":
    main()
