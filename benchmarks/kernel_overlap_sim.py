"""The model's counterpart of benchmarks/kernel_overlap.py (``--sim``): one thread of
one block of the calibration's grid chases k nodes, on sim:h100."""
from __future__ import annotations

import datetime

import numpy as np

import simgpu
from simgpu.lang import Array, blockIdx, i32, kernel, threadIdx

from kernel_overlap import BLOCK, GRID, NODES, STEPS, WHO, cycle


@kernel
def chase_in_block(nxt: Array[i32], out: Array[i32], steps: i32, who: i32):
    if blockIdx.x == who and threadIdx.x == 0:
        j = 0
        for k in range(steps):
            j = nxt[j]
        out[0] = j


def simulate() -> str:
    dev = simgpu.get_device("sim:h100")
    dev.default_engine = "timed-block"
    nxt, out = dev.to_device(cycle(NODES)), dev.zeros(1, np.int32)
    mhz = dev.config.gpu.core_clock_mhz
    lines = [f"sim:h100 (timed-block engine), {datetime.date.today()}: the same cases; kernel "
             "cycles at the SM clock (the fixed cost per kernel included); net: less k = 0.", "",
             "| state | who | " + " | ".join(f"k = {k} net us" for k in STEPS[1:]) +
             " | k = 0 us | slope ns per load (k 4 -> 16) |",
             "|---|---:|" + "---:|" * (len(STEPS) + 1)]
    for state in ("warm", "cold"):
        for who in WHO:
            us = {}
            for k in STEPS:
                args = (nxt, out, k, who)
                if state == "warm":
                    dev.launch(chase_in_block, GRID, BLOCK, *args)
                else:
                    dev.flush_caches()
                us[k] = dev.launch(chase_in_block, GRID, BLOCK, *args).cycles / mhz
            net = [f"{us[k] - us[0]:.2f}" for k in STEPS[1:]]
            slope = (us[16] - us[4]) / 12 * 1e3
            lines.append(f"| {state} | {who} | " + " | ".join(net) + f" | {us[0]:.2f} | {slope:.0f} |")
    return "\n".join(lines)
