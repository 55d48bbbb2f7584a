"""The config schema's base and the sections of the GPU's core: ConfigError, the field
helpers (each key carries a description that error messages quote, its smallest value
and, for an optional key, its default), and ``[gpu]``, ``[limits]``, ``[issue]``.

simgpu/configs/sections.py adds the memory system's sections and the table of all
sections; every name here is importable from there too.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any


class ConfigError(ValueError):
    """A GPU config file is missing, malformed, or inconsistent."""


def _doc(cls: type, name: str) -> str:
    return next(f.metadata.get("doc", "") for f in dataclasses.fields(cls) if f.name == name)


# --------------------------------------------------------------------------- #
# Field helpers. Each field carries a short description that error messages
# quote, and the smallest value it accepts ("positive" or "nonnegative").
# --------------------------------------------------------------------------- #

_POSITIVE = "positive"
_NONNEGATIVE = "nonnegative"


def _f(doc: str, minimum: str | None = _POSITIVE, default: Any = dataclasses.MISSING):
    return field(default=default, metadata={"doc": doc, "min": minimum})


def _opt(doc: str, minimum: str | None = _POSITIVE, default: Any = None):
    """A key that may be omitted: it then reads as ``default``, which the loader fills in
    after validating what the file gave (None: the feature is off, e.g. no bound)."""
    return field(default=default, metadata={"doc": doc, "min": minimum, "optional": True})


# --------------------------------------------------------------------------- #
# The core's sections
# --------------------------------------------------------------------------- #

_ARCH_RE = re.compile(r"^sm_(\d+)([a-z]?)$")   # "sm_13", "sm_90", "sm_90a", "sm_100"
_CC_RE = re.compile(r"^(\d+)\.(\d+)$")


@dataclass(frozen=True)
class GpuInfo:
    """``[gpu]``: identity, SM count and the clock that issues instructions."""

    name: str = _f("display name", None)
    arch: str = _f('architecture, "sm_" + major + minor digits, e.g. "sm_13"', None)
    compute_capability: str = _f('compute capability "major.minor", e.g. "1.3"', None)
    sm_count: int = _f("number of streaming multiprocessors")
    cores_per_sm: int = _f("scalar cores (lanes) per SM")
    core_clock_mhz: float = _f("clock that issues instructions, in MHz")
    warp_size: int = _f("threads per warp")

    @property
    def arch_number(self) -> int:
        """13 for "sm_13", 90 for "sm_90" (and "sm_90a")."""
        return int(_ARCH_RE.match(self.arch).group(1))

    @property
    def cc_major(self) -> int:
        return int(self.compute_capability.split(".")[0])

    @property
    def cc_minor(self) -> int:
        return int(self.compute_capability.split(".")[1])

    @property
    def total_cores(self) -> int:
        return self.sm_count * self.cores_per_sm

    @property
    def core_clock_hz(self) -> float:
        return self.core_clock_mhz * 1e6

    @property
    def cycle_ns(self) -> float:
        """Length of one core cycle in nanoseconds."""
        return 1e3 / self.core_clock_mhz

    def _check(self, err) -> None:
        m = _ARCH_RE.match(self.arch)
        if not m:
            err("arch", f'expected "sm_XY" such as "sm_13" or "sm_90", got {self.arch!r}')
        c = _CC_RE.match(self.compute_capability)
        if not c:
            err("compute_capability", f'expected "major.minor" such as "1.3", got {self.compute_capability!r}')
        if m.group(1) != c.group(1) + c.group(2):
            err("compute_capability",
                f"{self.compute_capability!r} does not match arch {self.arch!r} "
                f'(compute capability "M.m" goes with arch "sm_Mm")')


@dataclass(frozen=True)
class Limits:
    """``[limits]``: launch and occupancy limits (the CUDA guide's per-CC table)."""

    max_threads_per_block: int = _f("threads per block")
    max_block_dim: tuple[int, int, int] = _f("block dimensions [x, y, z]")
    max_grid_dim: tuple[int, int, int] = _f("grid dimensions [x, y, z]")
    max_threads_per_sm: int = _f("resident threads per SM")
    max_blocks_per_sm: int = _f("resident blocks per SM")
    max_warps_per_sm: int = _f("resident warps per SM")
    registers_per_sm: int = _f("32-bit registers per SM")
    shared_memory_per_sm_bytes: int = _f("shared memory per SM in bytes")
    shared_memory_per_block_bytes: int = _f("shared memory per block in bytes")
    max_registers_per_thread: int = _f("registers per thread")

    def _check(self, err, gpu: GpuInfo) -> None:
        if self.max_threads_per_sm % gpu.warp_size or self.max_warps_per_sm != self.max_threads_per_sm // gpu.warp_size:
            err("max_warps_per_sm",
                f"expected max_threads_per_sm / gpu.warp_size = "
                f"{self.max_threads_per_sm} / {gpu.warp_size}, got {self.max_warps_per_sm}")
        if self.max_threads_per_block > self.max_threads_per_sm:
            err("max_threads_per_block",
                f"{self.max_threads_per_block} exceeds max_threads_per_sm = {self.max_threads_per_sm}")
        if any(d > self.max_threads_per_block for d in self.max_block_dim[:2]):
            err("max_block_dim", f"{list(self.max_block_dim)}: x and y cannot exceed max_threads_per_block")
        if self.shared_memory_per_block_bytes > self.shared_memory_per_sm_bytes:
            err("shared_memory_per_block_bytes",
                f"{self.shared_memory_per_block_bytes} exceeds shared_memory_per_sm_bytes = "
                f"{self.shared_memory_per_sm_bytes}")


#: ``[issue] block_groups``' values (simgpu/sim/timed.py: the timed-block engine's groups).
BLOCK_GROUPS = ("block", "scheduler")


@dataclass(frozen=True)
class IssueModel:
    """``[issue]``: how fast an SM issues and how long results take."""

    warp_issue_cycles: float = _f("cycles for one SM to issue one warp instruction (4 on CC 1.3, 0.25 on Hopper)")
    schedulers_per_sm: int = _f("warp schedulers per SM")
    alu_latency_cycles: int = _f("cycles until an arithmetic result can be read")
    shared_memory_latency_cycles: int = _f("cycles of a shared-memory load")
    kernel_launch_overhead_us: float = _f("time added per kernel launch, in microseconds", _NONNEGATIVE)
    kernel_fixed_us: float = _opt("the GPU's own fixed time per kernel (dispatch, drain), "
                                  "in microseconds", _NONNEGATIVE, 0.0)
    block_dispatch_ns: float = _opt("the GPU's time per thread block on top of it, in ns",
                                    _NONNEGATIVE, 0.0)
    warp_first_load_ns: float = _opt("how much later a warp's first global load is issued "
                                     "than its instruction is reached, in ns", _NONNEGATIVE, 0.0)
    max_outstanding_misses_per_sm: int | None = _opt(
        "MSHR-like bound: global transactions of loads and atomics one SM may have waiting "
        "for their data; the next one waits for a slot (default: no bound)")
    unroll_loops: int | None = _opt(
        "the compiler unrolls a step-1 loop whose trip count is known only at run time this "
        "many times (a power of two), a remainder loop first (simgpu/sim/compiler_passes.py; "
        "default: loops run as written)")
    unroll_straight_copies: int | None = _opt(
        "with unroll_loops: a loop whose body is assignments only (no store, branch or "
        "atomic) runs this many copies at a time, then half as many, down to unroll_loops, "
        "for what is left (a power of two; default: unroll_loops copies)")
    unroll_full_max_trips: int | None = _opt(
        "the compiler turns a loop of a constant trip count up to this into copies of its "
        "body (default: none)")
    schedule_loads: bool = _opt("the compiler issues each load as early as its operands and "
                                "the memory order allow (default: false, where the source has it)",
                                None, False)
    block_groups: str = _opt('timed-block: how a block\'s warps run, "block" (all of them in '
                             'lockstep, one group) or "scheduler" (a lockstep group per warp '
                             'scheduler: warp w with the warps w mod schedulers_per_sm, on that '
                             'scheduler; default: "block")', None, "block")

    def _check(self, err) -> None:
        if self.block_groups is not None and self.block_groups not in BLOCK_GROUPS:
            err("block_groups", f"expected one of {', '.join(map(repr, BLOCK_GROUPS))}, "
                                f"got {self.block_groups!r}")
        u = self.unroll_loops
        if u is not None and u & (u - 1):
            err("unroll_loops", f"{u} is not a power of two (the remainder loop runs the "
                                "trip count's low bits: 2, 4, 8, ...)")
        w = self.unroll_straight_copies
        if w is not None and (u is None or w & (w - 1) or w < u):
            err("unroll_straight_copies", f"{w}: give a power of two at least unroll_loops "
                                          f"({u}), with unroll_loops set")

    @property
    def warp_instructions_per_cycle(self) -> float:
        """Warp instructions one SM issues per cycle (0.25 on CC 1.3, 4 on Hopper)."""
        return 1.0 / self.warp_issue_cycles

    @property
    def scheduler_issue_interval_cycles(self) -> float:
        """Cycles between two issues of one scheduler (4 on CC 1.3, 1 on Hopper)."""
        return self.warp_issue_cycles * self.schedulers_per_sm
