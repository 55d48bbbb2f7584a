"""What a launch reports: counts of instructions and memory traffic, and time.

The same :class:`LaunchReport` comes back from every device, so a script
can hold the simulator's numbers against the GPU's field by field.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class AccessCounts:
    """One kind of global-memory instruction (loads, stores or atomics)."""

    instructions: int = 0        # warp-level memory instructions executed
    lanes: int = 0               # lane-level accesses: active lanes summed over instructions
    requests: int = 0            # requests issued (per warp; per half-warp on CC 1.x)
    transactions: int = 0        # memory transactions / 32-byte sectors they became
    bytes_requested: int = 0     # bytes the active lanes asked for
    bytes: int = 0               # bytes moved: the transactions' sizes summed

    def add(self, other: "AccessCounts") -> None:
        for k in self.__dataclass_fields__:
            setattr(self, k, getattr(self, k) + getattr(other, k))

    @property
    def efficiency(self) -> float:
        """Bytes requested per byte moved (1.0: perfectly coalesced)."""
        return self.bytes_requested / self.bytes if self.bytes else 1.0


@dataclass
class CopyReport:
    """One host<->device copy on a simulated device, timed over the config's PCIe link:
    ``pcie.latency_us`` plus bytes / ``pcie.bandwidth_gbps`` (a pinned-memory copy)."""

    direction: str                # "host_to_device" or "device_to_host"
    bytes: int
    time_ms: float
    array: str = ""               # the device array, e.g. "DeviceArray(1000 x int32, ...)"

    @property
    def gbps(self) -> float:
        """Achieved bandwidth of the copy, latency included (GB/s)."""
        return self.bytes / (self.time_ms * 1e6) if self.time_ms else 0.0


@dataclass
class LaunchReport:
    kernel: str
    device: str
    grid: tuple
    block: tuple
    engine: str = ""
    schedule: str = "fixed"
    seed: int = 0
    time_ms: float | None = None          # simulated or measured; None where not modeled
    counted: bool = True                  # False on a real GPU: counts come from Nsight Compute
    launch_overhead_ms: float | None = None   # real GPU: the host's wall time of the launch call
    cycles: int | None = None
    warp_instructions: int = 0
    thread_instructions: int = 0          # active lanes summed over warp instructions
    branches: int = 0
    divergent_branches: int = 0
    loads: AccessCounts = field(default_factory=AccessCounts)
    stores: AccessCounts = field(default_factory=AccessCounts)
    atomics: AccessCounts = field(default_factory=AccessCounts)
    shared_loads: int = 0                 # warp-level shared-memory instructions
    shared_stores: int = 0
    shared_atomics: int = 0               # warp-level shared-memory atomic instructions
    by_line: dict = field(default_factory=dict)   # "file.py:line" -> {"loads": AccessCounts, ...}
    extra: dict = field(default_factory=dict)     # engine-specific figures (queues, ...)
    samples: dict = field(default_factory=dict, repr=False, compare=False)
    races: list = field(default_factory=list, repr=False, compare=False)
    # check="races": every conflicting pair found (simgpu.sim.racecheck.Race)
    # (line, kind) -> the first warp's addresses of that instruction (teaching view)

    def counts(self, kind: str) -> AccessCounts:
        return {"load": self.loads, "store": self.stores, "atomic": self.atomics}[kind]

    def to_dict(self) -> dict:
        races, self.races = self.races, []     # their IR nodes are no data to copy
        try:
            d = asdict(self)
        finally:
            self.races = races
        d["races"] = [r.format() for r in races]
        d.pop("samples")
        d["grid"], d["block"] = list(self.grid), list(self.block)
        d["by_line"] = {str(k): v for k, v in d["by_line"].items()}
        return d

    def _launch_overhead_line(self) -> str:
        how = self.extra.get("kernel_timing", "events")
        in_time = ("not in the time above (a gate kernel held the stream: the time is the "
                   "kernel's own)" if how == "gated" else f"time above: {how} CUDA events, "
                   "which may include it")
        return (f"launch overhead {self.launch_overhead_ms:.6f} ms (the host's wall time of the "
                f"launch call; {in_time})")

    def table(self) -> str:
        """A readable multi-line summary for terminals and docs."""
        g = "x".join(map(str, self.grid))
        b = "x".join(map(str, self.block))
        lines = [f"kernel {self.kernel} on {self.device}  grid {g}  block {b}  "
                 f"engine {self.engine}  schedule {self.schedule}"
                 + (f" (seed {self.seed})" if self.schedule != "fixed" else "")]
        if self.time_ms is not None:
            lines.append(f"time {self.time_ms:.6f} ms" + (f"  ({self.cycles} cycles)" if self.cycles else ""))
        elif self.engine in ("lockstep", "warps"):
            lines.append(f"time: none (engine {self.engine} is untimed; launch with "
                         "engine='timed-block' or 'timed' for a simulated time)")
        if self.launch_overhead_ms is not None:
            lines.append(self._launch_overhead_line())
        if not self.counted:
            lines.append("counts: not measured on the GPU itself "
                         "(python -m simgpu_apps.gpu_tools.validate reads them with Nsight Compute)")
            return "\n".join(lines)
        lines.append(f"warp instructions {self.warp_instructions:,}   branches {self.branches:,}   "
                     f"divergent {self.divergent_branches:,}")
        lines.append(f"{'':8}{'instr':>12}{'requests':>12}{'transact.':>12}{'bytes req.':>14}"
                     f"{'bytes moved':>14}{'effic.':>8}")
        for name, c in (("loads", self.loads), ("stores", self.stores), ("atomics", self.atomics)):
            lines.append(f"{name:8}{c.instructions:>12,}{c.requests:>12,}{c.transactions:>12,}"
                         f"{c.bytes_requested:>14,}{c.bytes:>14,}{c.efficiency:>8.2f}")
        if self.shared_loads or self.shared_stores or self.shared_atomics:
            lines.append(f"shared memory: {self.shared_loads:,} loads, {self.shared_stores:,} stores"
                         + (f", {self.shared_atomics:,} atomics" if self.shared_atomics else ""))
        for key, value in self.extra.items():
            if isinstance(value, list):       # per-partition figures: summarize
                value = f"min {min(value):,}  max {max(value):,}  total {sum(value):,}"
            lines.append(f"{key}: {value}")
        return "\n".join(lines)
