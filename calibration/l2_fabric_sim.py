"""The model's counterpart of calibration/l2_fabric.py (``--sim``): its cases on sim:h100,
as a kernel of the kernel language that is told each block's L2 half."""
from __future__ import annotations

import datetime

import numpy as np

import simgpu
from calibration.l2_fabric_cases import CASES, MIB, SLOTS, launches
from simgpu.lang import Array, blockIdx, i32, kernel, threadIdx


@kernel
def halves(mem: Array[i32], out: Array[i32], mode: Array[i32], src: Array[i32],
           dst: Array[i32], role: Array[i32], worker: Array[i32], workers: Array[i32],
           chunks: i32):
    # Block b does its half's part (mode: 0 nothing, 1 read, 2 write, 3 copy; src and
    # dst: where that half's buffers start in mem) on chunks worker[b], + workers[h], ...
    h = role[blockIdx.x]
    m = mode[h]
    if m > 0:
        acc = 0
        s = src[h] + threadIdx.x
        d = dst[h] + threadIdx.x
        for c in range(worker[blockIdx.x], chunks, workers[h]):
            for j in range(0, 1024, 256):          # a 4 KiB chunk: 4 x 256 ints
                k = c * 1024 + j
                if m == 1:
                    acc = acc ^ mem[s + k]
                elif m == 2:
                    mem[d + k] = c
                else:
                    mem[d + k] = mem[s + k]
        if acc == 2147483647:
            out[0] = acc


def simulate(mib: int = MIB, device: str = "sim:h100") -> str:
    """The model's counterpart (sim:h100, timed-block engine): the same cases, as a
    kernel of the kernel language that is told each block's half (the model puts block
    b of the one wave on SM b mod 132, and SM i beside half popcount(i) mod 2)."""
    dev = simgpu.get_device(device)
    dev.default_engine = "timed-block"
    cfg = dev.config
    sms = cfg.gpu.sm_count
    grid = sms * SLOTS
    half = [bin(b % sms).count("1") & 1 for b in range(grid)]
    rank, count = [], [0, 0]
    for h in half:
        rank.append(count[h])
        count[h] += 1
    ints = (mib << 20) // 4
    base = {"X": 0, "Y": ints, "Z": 2 * ints}
    mem = dev.zeros(3 * ints, np.int32)
    out = dev.zeros(1, np.int32)
    role, worker, workers = (dev.to_device(np.array(v, np.int32)) for v in (half, rank, count))
    fixed = cfg.issue.kernel_fixed_us

    def launch(modes):
        """modes: [(mode, src buffer, dst buffer)] for half 0 and 1 -> body us."""
        arrays = [dev.to_device(np.array(v, np.int32)) for v in
                  ([m for m, _, _ in modes], [base[s] for _, s, _ in modes], [base[d] for _, _, d in modes])]
        rep = dev.launch(halves, grid, 256, mem, out, *arrays, role, worker, workers,
                         (mib << 20) // 4096)
        return rep.cycles / cfg.gpu.core_clock_mhz - fixed

    lines = [f"{device} (timed-block engine), {datetime.date.today()}: buffers of {mib} MiB; the "
             "kernel's time after the fixed cost (its blocks' dispatch included), us.", "",
             "| case | g | kernel us |", "|---|---:|---:|"]
    for name, mine, other, prep in CASES:
        for g in (0, 1):
            preps, measured = launches(mine, other, prep, g)
            dev.flush_caches()
            for modes in preps:
                launch(modes)
            us = launch(measured)
            lines.append(f"| {name} | {g} | {us:.2f} |")
            print(lines[-1], flush=True)
    return "\n".join(lines)


