"""The model's counterpart of calibration/kernel_overlap.py (``--sim``): one thread of
one block of the calibration's grid chases k nodes, on sim:h100."""
from __future__ import annotations

import datetime

import numpy as np

import simgpu
from calibration.kernel_overlap_setup import BLOCK, GRID, NODES, STEPS, WHO, cycle, table
from simgpu.lang import Array, blockIdx, i32, kernel, threadIdx


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
             "cycles at the SM clock (the fixed cost per kernel included); net: less k = 0.", ""]
    us = {}
    for state in ("warm", "cold"):
        for who in WHO:
            t = us[state, who] = {}
            for k in STEPS:
                args = (nxt, out, k, who)
                if state == "warm":
                    dev.launch(chase_in_block, GRID, BLOCK, *args)
                else:
                    dev.flush_caches()
                t[k] = dev.launch(chase_in_block, GRID, BLOCK, *args).cycles / mhz
    return "\n".join(lines + table(us))
