"""Schedules: who goes first where the hardware does not say.

The CUDA model leaves open the order of warps and the winner among lanes
that store to one address at once.  A :class:`Schedule` fixes those choices:
``"fixed"`` (deterministic: lane order, round-robin warps) or ``"random"``
with a seed (a different legal execution per seed).  Property tests run an
algorithm under many random schedules to show it is right under any of them.
"""
from __future__ import annotations

import numpy as np

SCHEDULES = ("fixed", "random")


class Schedule:
    def __init__(self, kind: str = "fixed", seed: int = 0):
        if kind not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, not {kind!r}")
        self.kind = kind
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.check = None        # the launch's LaunchChecker (simgpu.sim.checks), if any

    @property
    def is_random(self) -> bool:
        return self.kind == "random"

    def order(self, k: int):
        """The serial order of k colliding lanes (None: lane order)."""
        return self.rng.permutation(k) if self.is_random else None

    def pick(self, k: int) -> int:
        """Which of k ready warps runs next (random schedules only)."""
        return int(self.rng.integers(k))

    def __repr__(self):
        return f"Schedule({self.kind!r}, seed={self.seed})"
