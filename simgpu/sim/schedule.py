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


# How many times one loop may run, per entry, on one lane group, before the launch
# stops with KernelTimeoutError (a loop that never ends, a spin-wait that cannot be
# satisfied). High enough for any legitimate loop of the project (the longest are
# walks of a few hundred thousand nodes); launch(..., max_loop_iterations=N) changes it.
MAX_LOOP_ITERATIONS = 1 << 20


class Schedule:
    """Also carries the launch's run limit (``max_loop_iterations``), which every
    engine's interpreter reads from the schedule it is given."""

    def __init__(self, kind: str = "fixed", seed: int = 0,
                 max_loop_iterations: int = MAX_LOOP_ITERATIONS):
        if kind not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, not {kind!r}")
        self.kind = kind
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.max_loop_iterations = max_loop_iterations
        self.interrupted = False      # Ctrl-C: every loop of the launch stops at its next turn
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
