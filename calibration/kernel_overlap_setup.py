"""The experiment of the kernel overlap probe (calibration/kernel_overlap.py): its grid,
chain and table, which the GPU's side (kernel_overlap.py) and the model's
(kernel_overlap_sim.py) share; a module of its own, so neither side imports the other."""
from __future__ import annotations

import numpy as np


GRID, BLOCK = 1056, 256
NODES = 1 << 24                  # 64 MiB of int32: more than the L2
STEPS = (0, 1, 2, 4, 8, 16)
WHO = (0, 528, 1055)
REPEATS = 3


def cycle(n: int) -> np.ndarray:
    order = np.random.default_rng(0).permutation(n).astype(np.int32)
    nxt = np.empty(n, np.int32)
    nxt[order] = np.roll(order, -1)
    return nxt


def table(us: dict) -> list:
    """The table's lines from each (state, who)'s kernel time in us by k (the GPU's
    and the model's alike): net of k = 0, and the slope from k = 4 to 16."""
    lines = ["| state | who | " + " | ".join(f"k = {k} net us" for k in STEPS[1:]) +
             " | k = 0 us | slope ns per load (k 4 -> 16) |",
             "|---|---:|" + "---:|" * (len(STEPS) + 1)]
    for (state, who), t in us.items():
        net = [f"{t[k] - t[0]:.2f}" for k in STEPS[1:]]
        slope = (t[16] - t[4]) / 12 * 1e3
        lines.append(f"| {state} | {who} | " + " | ".join(net) + f" | {t[0]:.2f} | {slope:.0f} |")
    return lines
