"""GPU descriptions: one TOML data file per GPU, loaded into typed, frozen dataclasses.

The simulator knows nothing about particular GPUs; everything it needs -- SM
count, clocks, occupancy limits, issue rate, memory partitions and DRAM
timing, caches, PCIe, atomics -- comes from a config file. Bundled files live
beside this module (``gtx260``, ``h100``, ``h200``)::

    from simgpu.configs import load_config, available_configs
    cfg = load_config("gtx260")              # a bundled name
    cfg = load_config("~/gpus/mygpu.toml")   # or a path to your own file
    print(cfg.describe())

Adding a GPU means writing one file: copy ``gtx260.toml`` (it is the
commented template), change the figures and give each a comment naming its
source (datasheet, the CUDA programming guide's "Technical Specifications per
Compute Capability" table, a whitepaper, a measurement, or "model assumption:
<why>"). Every key of every section must be present and no other key may
appear, so a typo is an error instead of a silently ignored line. Values are
checked for type and for consistency (``peak_bandwidth_gbps`` must match bus
width x memory clock x data rate within 2 %, ``max_warps_per_sm`` must be
``max_threads_per_sm / warp_size``, and so on); any problem raises
``ConfigError`` naming the file, the ``section.key`` and what was expected.
Put the file beside this module and its stem becomes a bundled name.

Units are in the key names (``_bytes``, ``_mhz``, ``_ns``, ``_us``, ``_gbps``
= 10^9 bytes/s); "cycles" are always cycles of ``gpu.core_clock_mhz``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import tomllib
import types
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

__all__ = [
    "ConfigError",
    "GPUConfig",
    "GpuInfo",
    "Limits",
    "IssueModel",
    "MemoryModel",
    "DramTiming",
    "CacheModel",
    "PcieModel",
    "AtomicsModel",
    "TlbModel",
    "load_config",
    "available_configs",
    "parse_config",
    "BANDWIDTH_TOLERANCE",
]

#: How far ``memory.peak_bandwidth_gbps`` may stray from bus width x clock x data rate.
BANDWIDTH_TOLERANCE = 0.02


class ConfigError(ValueError):
    """A GPU config file is missing, malformed, or inconsistent."""


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
# Sections
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

    @property
    def warp_instructions_per_cycle(self) -> float:
        """Warp instructions one SM issues per cycle (0.25 on CC 1.3, 4 on Hopper)."""
        return 1.0 / self.warp_issue_cycles

    @property
    def scheduler_issue_interval_cycles(self) -> float:
        """Cycles between two issues of one scheduler (4 on CC 1.3, 1 on Hopper)."""
        return self.warp_issue_cycles * self.schedulers_per_sm


_COALESCING = ("half-warp", "sector")


@dataclass(frozen=True)
class MemoryModel:
    """``[memory]``: global memory, its partitions (channels) and DRAM timing."""

    technology: str = _f('memory technology, e.g. "GDDR3", "HBM3"', None)
    global_memory_bytes: int = _f("global memory size in bytes")
    bus_width_bits: int = _f("total memory bus width in bits")
    memory_clock_mhz: float = _f("memory clock in MHz")
    data_rate: int = _f("transfers per memory clock (2 for DDR)")
    peak_bandwidth_gbps: float = _f("peak bandwidth in GB/s (10^9 bytes/s)")
    partitions: int = _f("independent memory partitions (channels)")
    partition_interleave_bytes: int = _f("bytes mapped to one partition before moving to the next")
    dram_banks_per_partition: int = _f("DRAM banks per partition")
    row_buffer_bytes: int = _f("bytes of one open DRAM row")
    min_access_bytes: int = _f("smallest memory transaction in bytes")
    interconnect_latency_cycles: int = _f("SM <-> partition round trip outside DRAM, in core cycles", _NONNEGATIVE)
    coalescing: str = _f('"half-warp" (CC 1.2/1.3 segments) or "sector" (CC 2.x+ 32-byte sectors)', None)
    interconnect_flit_bytes: int | None = _opt(
        "bytes one port of the SM <-> partition interconnect moves per interconnect cycle "
        "(default: no interconnect bandwidth model, only interconnect_latency_cycles)")
    interconnect_clock_mhz: float | None = _opt("clock of the interconnect, in MHz "
                                                "(required with interconnect_flit_bytes)")
    interconnect_header_bytes: int = _opt(
        "bytes of a packet's header (address, ids) besides its data", _NONNEGATIVE, 0)
    interconnect_queue_packets: int | None = _opt(
        "packets the queue at each port of the interconnect holds; a sender whose packet "
        "finds it full waits (default: no bound)")
    interconnect_sms_per_port: int = _opt(
        "SMs that share one port of the interconnect (a TPC on GT200)", _POSITIVE, 1)

    @property
    def computed_bandwidth_gbps(self) -> float:
        """bus width / 8 x memory clock x data rate, in GB/s."""
        return self.bus_width_bits / 8 * self.memory_clock_mhz * 1e6 * self.data_rate / 1e9

    @property
    def partition_width_bits(self) -> int:
        return self.bus_width_bits // self.partitions

    @property
    def partition_bandwidth_gbps(self) -> float:
        """Peak bandwidth of one partition, in GB/s."""
        return self.peak_bandwidth_gbps / self.partitions

    def _check(self, err) -> None:
        computed = self.computed_bandwidth_gbps
        if abs(self.peak_bandwidth_gbps - computed) > BANDWIDTH_TOLERANCE * computed:
            err("peak_bandwidth_gbps",
                f"{self.peak_bandwidth_gbps} GB/s is not within {BANDWIDTH_TOLERANCE:.0%} of "
                f"bus_width_bits / 8 x memory_clock_mhz x data_rate = "
                f"{self.bus_width_bits}/8 x {self.memory_clock_mhz:g} MHz x {self.data_rate} = {computed:.1f} GB/s")
        if self.bus_width_bits % self.partitions:
            err("partitions",
                f"bus_width_bits = {self.bus_width_bits} does not split evenly over {self.partitions} partitions")
        if self.partition_interleave_bytes % self.min_access_bytes:
            err("partition_interleave_bytes",
                f"{self.partition_interleave_bytes} is not a multiple of min_access_bytes = {self.min_access_bytes}")
        if (self.interconnect_flit_bytes is None) != (self.interconnect_clock_mhz is None):
            err("interconnect_clock_mhz", "interconnect_flit_bytes and interconnect_clock_mhz go "
                                          "together: give both or neither")
        if self.coalescing not in _COALESCING:
            err("coalescing", f"expected one of {', '.join(map(repr, _COALESCING))}, got {self.coalescing!r}")


@dataclass(frozen=True)
class DramTiming:
    """``[dram]``: the DRAM devices behind each partition and their controller.

    Timings are in cycles of ``memory.memory_clock_mhz`` (the memory clock, not
    the SM clock; the model converts them).  A partition's bus is split into
    ``subchannels`` (HBM pseudo-channels; 1 where the partition's chips work in
    lockstep, as GDDR3's), each with its own data bus, banks and queues.
    """

    subchannels: int = _f("independent sub-channels per partition (HBM pseudo-channels), "
                          "each with its own data bus and banks")
    bank_groups: int = _f("bank groups per sub-channel (1: none)")
    burst_length: int = _f("transfers per burst (BL); a burst moves sub-channel width x BL bits")
    tcl: int = _f("read command to first data (CAS latency), memory cycles")
    twl: int = _f("write command to first data (write latency), memory cycles", _NONNEGATIVE)
    trcd: int = _f("activate to read/write command, memory cycles")
    trp: int = _f("precharge to activate, memory cycles")
    tras: int = _f("activate to precharge, memory cycles")
    trc: int = _f("activate to activate in one bank, memory cycles")
    trrd: int = _f("activate to activate in different banks (different bank groups), memory cycles",
                   _NONNEGATIVE)
    trrd_l: int = _f("activate to activate in one bank group, memory cycles", _NONNEGATIVE)
    tfaw: int = _f("window in which at most four activates may issue (0: no such limit), "
                   "memory cycles", _NONNEGATIVE)
    tccd: int = _f("column command to column command (different bank groups), memory cycles")
    tccd_l: int = _f("column command to column command in one bank group, memory cycles")
    twtr: int = _f("end of write data to a read command, memory cycles", _NONNEGATIVE)
    trtp: int = _f("read command to precharge, memory cycles", _NONNEGATIVE)
    twr: int = _f("end of write data to precharge (write recovery), memory cycles", _NONNEGATIVE)
    trtw: int = _f("idle data-bus cycles between read data and write data (bus turnaround), "
                   "memory cycles", _NONNEGATIVE)
    trefi: int = _f("interval between all-bank refreshes (0: refresh not modeled), memory cycles",
                    _NONNEGATIVE)
    trfc: int = _f("duration of an all-bank refresh, memory cycles", _NONNEGATIVE)
    read_queue_depth: int = _f("reads a sub-channel's scheduler holds (its FR-FCFS window)")
    write_queue_depth: int = _f("writes a sub-channel's write queue holds")
    write_drain_high: int = _f("queued writes at which the sub-channel starts draining them")
    write_drain_low: int = _f("queued writes left when a drain stops", _NONNEGATIVE)

    def _check(self, err, memory: MemoryModel) -> None:
        if memory.bus_width_bits // memory.partitions % self.subchannels:
            err("subchannels", f"a {memory.partition_width_bits}-bit partition does not split into "
                               f"{self.subchannels} sub-channels")
        banks = memory.dram_banks_per_partition
        if banks % self.subchannels or banks // self.subchannels % self.bank_groups:
            err("bank_groups", f"memory.dram_banks_per_partition = {banks} does not split into "
                               f"{self.subchannels} sub-channel(s) x {self.bank_groups} bank group(s)")
        burst = memory.partition_width_bits // self.subchannels // 8 * self.burst_length
        if memory.min_access_bytes % burst or memory.partition_interleave_bytes % (
                burst * self.subchannels * self.bank_groups):
            err("burst_length", f"a burst of {burst} B must divide memory.min_access_bytes = "
                                f"{memory.min_access_bytes}, and the partition interleave "
                                f"({memory.partition_interleave_bytes} B) must hold a burst in each "
                                f"sub-channel and bank group")
        if memory.row_buffer_bytes % burst:
            err("burst_length", f"memory.row_buffer_bytes = {memory.row_buffer_bytes} is not a "
                                f"whole number of {burst} B bursts")
        if self.trc < self.tras:
            err("trc", f"{self.trc} is below tras = {self.tras} (a row cycle contains the active time)")
        if self.trrd_l < self.trrd or self.tccd_l < self.tccd:
            err("trrd_l", "the same-bank-group limits (trrd_l, tccd_l) cannot be below trrd, tccd")
        if not self.write_drain_low < self.write_drain_high <= self.write_queue_depth:
            err("write_drain_high", f"expected write_drain_low < write_drain_high <= "
                                    f"write_queue_depth, got {self.write_drain_low}, "
                                    f"{self.write_drain_high}, {self.write_queue_depth}")

    def memory_cycles_to_core(self, config) -> float:
        """SM cycles per memory cycle."""
        return config.gpu.core_clock_mhz / config.memory.memory_clock_mhz


@dataclass(frozen=True)
class CacheModel:
    """``[cache]``: caches on the global-memory path (absent on CC 1.x).

    With ``present = false`` only ``present`` may be given; with
    ``present = true`` every key except ``l2_bandwidth_gbps`` is required.
    """

    present: bool = _f("whether global loads go through L1/L2 caches", None)
    l1_bytes_per_sm: int | None = _opt("L1 data cache per SM in bytes")
    l1_line_bytes: int | None = _opt("L1 line size in bytes")
    sector_bytes: int | None = _opt("sector size in bytes")
    l1_latency_cycles: int | None = _opt("cycles of an L1 hit")
    l1_sets: int | None = _opt("sets of the L1 (its ways follow from its size)", _POSITIVE, 4)
    l2_bytes: int | None = _opt("L2 size in bytes")
    l2_latency_cycles: int | None = _opt("cycles of an L2 hit")
    l2_bandwidth_gbps: float | None = _opt("L2 bandwidth in GB/s (loads)")
    l2_store_bandwidth_gbps: float | None = _opt("L2 bandwidth of stores in GB/s (default: "
                                                 "l2_bandwidth_gbps)")
    l2_combined_bandwidth_gbps: float | None = _opt("L2 bandwidth of loads and stores together "
                                                    "in GB/s (default: l2_bandwidth_gbps)")
    l2_dirty_bytes: int | None = _opt("most written (dirty) data the L2 keeps; beyond it the "
                                      "oldest is written back (default: no limit)")
    l2_fill_bytes: int | None = _opt("bytes fetched from DRAM per L2 load miss, a multiple of "
                                     "sector_bytes (default: one sector)")

    l2_halves: int | None = _opt("1 or 2: an L2 split in two halves that each cache "
                                 "what their own SMs read (Ampere, Hopper)", _POSITIVE, 1)
    l2_far_latency_cycles: int | None = _opt("with two halves: cycles more for data from the "
                                             "other half", _POSITIVE, 0)

    l2_fabric_bandwidth_gbps: float | None = _opt("with two halves: GB/s of the link each way "
                                                  "between them, shared by the store data and "
                                                  "the far loads' data that go that way "
                                                  "(default: no limit)")

    l2_request_cycles: float | None = _opt("cycles an L2 slice takes per request (an "
                                           "instruction's sectors of one 128-B line), besides "
                                           "its bytes", _POSITIVE, 0.0)

    _OPTIONAL_WHEN_PRESENT = ("l2_request_cycles", "l2_bandwidth_gbps", "l2_store_bandwidth_gbps",
                              "l2_combined_bandwidth_gbps", "l1_sets", "l2_dirty_bytes",
                              "l2_fill_bytes", "l2_halves", "l2_far_latency_cycles",
                              "l2_fabric_bandwidth_gbps")

    def _check(self, err) -> None:
        others = [f.name for f in dataclasses.fields(self) if f.name != "present"]
        if self.present:
            for name in others:
                if getattr(self, name) is None and name not in self._OPTIONAL_WHEN_PRESENT:
                    err(name, f"missing; required when present = true ({_doc(type(self), name)})")
            if self.l1_line_bytes % self.sector_bytes:
                err("l1_line_bytes", f"{self.l1_line_bytes} is not a multiple of sector_bytes = {self.sector_bytes}")
            if self.l2_fill_bytes is not None and (self.l2_fill_bytes % self.sector_bytes
                                                   or self.l2_fill_bytes > self.l1_line_bytes):
                err("l2_fill_bytes", f"{self.l2_fill_bytes} is not a multiple of sector_bytes = "
                                     f"{self.sector_bytes} up to a line ({self.l1_line_bytes})")
            if self.l2_halves not in (None, 1, 2):
                err("l2_halves", f"{self.l2_halves}: the model knows an L2 of 1 or 2 halves")
            elif (self.l2_halves or 1) == 1:
                for name in ("l2_far_latency_cycles", "l2_fabric_bandwidth_gbps"):
                    if getattr(self, name) is not None:
                        err(name, "given for an L2 of one half; set l2_halves = 2 or remove it")
            if self.l1_sets is not None and self.l1_bytes_per_sm < self.l1_sets * self.l1_line_bytes:
                err("l1_sets", f"{self.l1_sets} sets of {self.l1_line_bytes} B lines do not fit in "
                               f"l1_bytes_per_sm = {self.l1_bytes_per_sm}")
        else:
            for name in others:
                if getattr(self, name) is not None:
                    err(name, "given although present = false; remove it (it would have no effect)")


@dataclass(frozen=True)
class PcieModel:
    """``[pcie]``: the host link."""

    generation: int = _f("PCI Express generation")
    bandwidth_gbps: float = _f("effective host<->device bandwidth in GB/s")
    latency_us: float = _f("fixed cost of one host<->device copy in microseconds", _NONNEGATIVE)


@dataclass(frozen=True)
class AtomicsModel:
    """``[atomics]``: global-memory atomic operations."""

    global_atomic_latency_cycles: int = _f("cycles of one uncontended global atomic")
    same_address_serialization_cycles: float = _f(
        "cycles between two atomics to the same address (with an L2: the time one sector "
        "of a warp's atomic request holds its L2 slice)", _NONNEGATIVE)
    unit_cycles_per_operation: float = _opt(
        "cycles the atomic unit (at a partition, or an L2 slice) takes per operation: its "
        "throughput for distinct addresses (0: no limit besides the serialization)",
        _NONNEGATIVE, 0.0)
    same_address_lanes_merged: bool = _opt(
        "whether the unit does a warp's lanes on one transaction (an L2 sector) as one "
        "operation (false: one operation per lane, serialized per address)", None, False)


@dataclass(frozen=True)
class TlbModel:
    """``[tlb]``: address translation (optional section: without it, addresses are not
    translated and arrays are not page-aligned; capacity is enforced either way)."""

    page_bytes: int = _f("bytes one TLB entry translates (a power of two)")
    l1_entries: int = _f("entries of one L1 TLB")
    l1_ways: int = _f("ways of the L1 TLB (= l1_entries: fully associative)")
    sms_per_l1: int = _f("SMs that share one L1 TLB (1: per SM; 3 on GT200: per TPC)")
    l2_entries: int = _f("entries of the shared L2 TLB")
    l2_ways: int = _f("ways of the L2 TLB (= l2_entries: fully associative)")
    l2_hit_cycles: int = _f("cycles an L1 TLB miss adds when the L2 TLB holds the entry",
                            _NONNEGATIVE)
    walk_cycles: int = _f("cycles of the page walker's own per walk, besides its reads "
                          "of page-table entries through the memory system", _NONNEGATIVE)
    walkers: int = _f("page walks in flight at once")
    pde_span_bytes: int = _f("virtual bytes one page-directory entry covers (a power of two)")
    pte_bytes: int = _f("bytes of one page-table entry")
    pde_cache_entries: int = _f("page-directory entries the walker keeps (0: every walk "
                                "reads its PDE)", _NONNEGATIVE)

    @property
    def l1_reach_bytes(self) -> int:
        return self.l1_entries * self.page_bytes

    @property
    def l2_reach_bytes(self) -> int:
        return self.l2_entries * self.page_bytes

    def _check(self, err) -> None:
        for name in ("page_bytes", "pde_span_bytes"):
            v = getattr(self, name)
            if v & (v - 1):
                err(name, f"{v} is not a power of two")
        if self.pde_span_bytes % self.page_bytes:
            err("pde_span_bytes", f"{self.pde_span_bytes} is not a multiple of page_bytes = "
                                  f"{self.page_bytes}")
        for level in ("l1", "l2"):
            entries, ways = getattr(self, level + "_entries"), getattr(self, level + "_ways")
            if ways > entries or entries % ways:
                err(level + "_ways", f"{ways} ways do not divide {entries} entries evenly")


_SECTIONS: dict[str, type] = {
    "gpu": GpuInfo,
    "limits": Limits,
    "issue": IssueModel,
    "memory": MemoryModel,
    "dram": DramTiming,
    "cache": CacheModel,
    "pcie": PcieModel,
    "atomics": AtomicsModel,
    "tlb": TlbModel,
}
_OPTIONAL_SECTIONS = ("tlb",)


@dataclass(frozen=True)
class GPUConfig:
    """One GPU: a frozen bundle of its sections, plus where it came from."""

    gpu: GpuInfo
    limits: Limits
    issue: IssueModel
    memory: MemoryModel
    dram: DramTiming
    cache: CacheModel
    pcie: PcieModel
    atomics: AtomicsModel
    tlb: TlbModel | None = None                      # None: addresses are not translated
    key: str = field(default="", compare=False)      # bundled name or file stem
    source: str = field(default="", compare=False)   # file it was read from

    @property
    def name(self) -> str:
        return self.gpu.name

    def ns_to_cycles(self, ns: float) -> float:
        """Convert nanoseconds to core cycles."""
        return ns * self.gpu.core_clock_mhz / 1e3

    def cycles_to_ns(self, cycles: float) -> float:
        """Convert core cycles to nanoseconds."""
        return cycles * 1e3 / self.gpu.core_clock_mhz

    def describe(self) -> str:
        """A readable multi-line summary (for ``simgpu devices``)."""
        g, lim, iss, mem, c, p = self.gpu, self.limits, self.issue, self.memory, self.cache, self.pcie
        key = f"  [{self.key}]" if self.key else ""
        per_cycle = iss.warp_instructions_per_cycle
        lines = [
            f"{g.name}{key}",
            f"  architecture  {g.arch} (compute capability {g.compute_capability}), warp size {g.warp_size}",
            f"  SMs           {g.sm_count} x {g.cores_per_sm} cores = {g.total_cores} cores "
            f"at {g.core_clock_mhz:g} MHz",
            f"  issue         {iss.schedulers_per_sm} scheduler(s)/SM, {per_cycle:g} warp instruction(s) "
            f"per cycle per SM; ALU latency {iss.alu_latency_cycles} cycles, "
            f"shared memory {iss.shared_memory_latency_cycles} cycles",
            f"  memory        {_size(mem.global_memory_bytes)} {mem.technology}, {mem.bus_width_bits}-bit at "
            f"{mem.memory_clock_mhz:g} MHz x {mem.data_rate} = {mem.peak_bandwidth_gbps:g} GB/s peak",
            f"  partitions    {mem.partitions} x {mem.partition_width_bits}-bit, "
            f"{mem.partition_interleave_bytes} B interleave, {mem.dram_banks_per_partition} banks, "
            f"{mem.row_buffer_bytes} B rows",
            f"  coalescing    {mem.coalescing}, {mem.min_access_bytes} B minimum access, "
            f"interconnect {mem.interconnect_latency_cycles} cycles",
        ]
        d = self.dram
        lines.append(
            f"  DRAM          {d.subchannels} sub-channel(s) x {d.bank_groups} bank group(s), BL{d.burst_length}; "
            f"CL {d.tcl}, WL {d.twl}, tRCD {d.trcd}, tRP {d.trp}, tRAS {d.tras}, tRC {d.trc}, "
            f"tRRD {d.trrd}/{d.trrd_l}, tFAW {d.tfaw}, tCCD {d.tccd}/{d.tccd_l}, tWTR {d.twtr} "
            f"memory cycles; FR-FCFS over {d.read_queue_depth} reads, writes drained "
            f"{d.write_drain_high}->{d.write_drain_low} of {d.write_queue_depth}")
        if c.present:
            l2bw = f", {c.l2_bandwidth_gbps:g} GB/s" if c.l2_bandwidth_gbps is not None else ""
            if c.l2_store_bandwidth_gbps or c.l2_combined_bandwidth_gbps:
                l2bw += (f" loads, {c.l2_store_bandwidth_gbps or c.l2_bandwidth_gbps:g} stores, "
                         f"{c.l2_combined_bandwidth_gbps or c.l2_bandwidth_gbps:g} both")
            lines.append(
                f"  caches        L1 {_size(c.l1_bytes_per_sm)}/SM ({c.l1_line_bytes} B lines, "
                f"{c.sector_bytes} B sectors, {c.l1_latency_cycles} cycles); "
                f"L2 {_size(c.l2_bytes)} ({c.l2_latency_cycles} cycles{l2bw})")
            extra = [f"{_size(c.l2_dirty_bytes)} dirty at most" if c.l2_dirty_bytes else "",
                     f"{c.l2_fill_bytes} B per miss" if c.l2_fill_bytes else "",
                     f"2 halves (the far one +{c.l2_far_latency_cycles} cycles"
                     + (f", {c.l2_fabric_bandwidth_gbps:g} GB/s each way between them"
                        if c.l2_fabric_bandwidth_gbps else "") + ")"
                     if c.l2_halves == 2 else "",
                     f"{c.l2_request_cycles:g} cycles per request and slice"
                     if c.l2_request_cycles else ""]
            if any(extra):
                lines.append("                L2: " + ", ".join(x for x in extra if x))
        else:
            lines.append("  caches        none on the global-memory path")
        lines += [
            f"  limits        {lim.max_threads_per_block} threads/block, block {_dims(lim.max_block_dim)}, "
            f"grid {_dims(lim.max_grid_dim)}",
            f"                per SM: {lim.max_threads_per_sm} threads, {lim.max_warps_per_sm} warps, "
            f"{lim.max_blocks_per_sm} blocks, {lim.registers_per_sm} registers, "
            f"{_size(lim.shared_memory_per_sm_bytes)} shared",
            f"                per block: {_size(lim.shared_memory_per_block_bytes)} shared; "
            f"{lim.max_registers_per_thread} registers/thread",
            f"  host link     PCIe gen {p.generation}, {p.bandwidth_gbps:g} GB/s, {p.latency_us:g} us per copy; "
            f"launch {iss.kernel_launch_overhead_us:g} us"
            + (f"; GPU {iss.kernel_fixed_us:g} us + {iss.block_dispatch_ns:g} ns/block "
               "per kernel" if iss.kernel_fixed_us or iss.block_dispatch_ns else ""),
            f"  atomics       {self.atomics.global_atomic_latency_cycles} cycles, same address every "
            f"{self.atomics.same_address_serialization_cycles:g} cycles",
        ]
        if self.tlb is not None:
            t = self.tlb
            lines.append(
                f"  TLBs          {_size(t.page_bytes)} pages; L1 {t.l1_entries} entries "
                f"({_size(t.l1_reach_bytes)}) per {t.sms_per_l1} SM(s); L2 {t.l2_entries} entries "
                f"({_size(t.l2_reach_bytes)}, +{t.l2_hit_cycles} cycles); {t.walkers} walkers "
                f"(+{t.walk_cycles} cycles and their reads)")
        if self.source:
            lines.append(f"  from          {self.source}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- #
# Parsing and validation
# --------------------------------------------------------------------------- #

def _doc(cls: type, name: str) -> str:
    return next(f.metadata.get("doc", "") for f in dataclasses.fields(cls) if f.name == name)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} B"


def _dims(d: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(x) for x in d) + ")"


def _type_text(tp: Any) -> str:
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if tp is bool:
        return "true or false"
    if typing.get_origin(tp) is tuple:
        return f"a list of {len(typing.get_args(tp))} positive integers"
    return str(tp)


def _coerce(value: Any, tp: Any, minimum: str | None) -> tuple[bool, Any]:
    """Return (ok, converted value) for a TOML value against a field type."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):  # X | None: check as X
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    if tp is bool:
        return isinstance(value, bool), value
    if tp is str:
        return isinstance(value, str) and value.strip() != "", value
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        value = float(value) if ok else value
    elif typing.get_origin(tp) is tuple:
        n = len(typing.get_args(tp))
        ok = (isinstance(value, list) and len(value) == n
              and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value))
        return ok, tuple(value) if ok else value
    else:  # pragma: no cover - only the types above are used
        raise TypeError(tp)
    if ok and minimum == _POSITIVE and value <= 0:
        ok = False
    if ok and minimum == _NONNEGATIVE and value < 0:
        ok = False
    return ok, value


def _parse_section(cls: type, table: Any, section: str, source: str):
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [{section}]: expected a table (a [{section}] section), got {table!r}")
    flds = dataclasses.fields(cls)
    known = [f.name for f in flds]
    unknown = [k for k in table if k not in known]
    if unknown:
        raise ConfigError(
            f"{source}: {section}.{unknown[0]}: unknown key (a typo?); "
            f"[{section}] takes: {', '.join(known)}")
    hints = typing.get_type_hints(cls)
    values = {}
    for f in flds:
        doc, minimum = f.metadata.get("doc", ""), f.metadata.get("min")
        union = typing.get_args(hints[f.name]) if f.metadata.get("optional") else ()
        expected = _type_text(union[0] if union else hints[f.name])
        if minimum == _POSITIVE and expected in ("an integer", "a number"):
            expected = "a positive " + expected.split(" ", 1)[1]
        elif minimum == _NONNEGATIVE:
            expected = "a non-negative " + expected.split(" ", 1)[1]
        if f.name not in table:
            if f.metadata.get("optional"):
                values[f.name] = None
                continue
            raise ConfigError(f"{source}: {section}.{f.name}: missing; expected {expected} ({doc})")
        ok, value = _coerce(table[f.name], hints[f.name], minimum)
        if not ok:
            raise ConfigError(
                f"{source}: {section}.{f.name}: expected {expected} ({doc}), got {table[f.name]!r}")
        values[f.name] = value
    return cls(**values)


def parse_config(data: Mapping[str, Any], source: str = "<config>", key: str = "") -> GPUConfig:
    """Build and validate a GPUConfig from already-parsed TOML data."""
    unknown = [s for s in data if s not in _SECTIONS]
    if unknown:
        raise ConfigError(
            f"{source}: [{unknown[0]}]: unknown section (a typo?); "
            f"a config has: {', '.join('[' + s + ']' for s in _SECTIONS)}")
    parts = {}
    for section, cls in _SECTIONS.items():
        if section not in data and section in _OPTIONAL_SECTIONS:
            continue
        if section not in data:
            raise ConfigError(f"{source}: [{section}]: missing section; expected keys: "
                              f"{', '.join(f.name for f in dataclasses.fields(cls))}")
        parts[section] = _parse_section(cls, data[section], section, source)

    def checker(section: str):
        def err(name: str, problem: str):
            raise ConfigError(f"{source}: {section}.{name}: {problem}")
        return err

    parts["gpu"]._check(checker("gpu"))
    parts["limits"]._check(checker("limits"), parts["gpu"])
    parts["memory"]._check(checker("memory"))
    parts["cache"]._check(checker("cache"))
    if "tlb" in parts:
        parts["tlb"]._check(checker("tlb"))
    if parts["cache"].l2_halves == 2 and parts["memory"].partitions % 2:
        checker("cache")("l2_halves", f"2 halves need an even number of memory partitions "
                                      f"(memory.partitions = {parts['memory'].partitions})")
    parts["dram"]._check(checker("dram"), parts["memory"])
    # The coalescing rule follows from the architecture; the key states it for
    # readers, so it must agree rather than silently not matter.
    rule = "sector" if parts["gpu"].arch_number >= 20 else "half-warp"
    if parts["memory"].coalescing != rule:
        checker("memory")("coalescing", f"{parts['gpu'].arch} coalesces by {rule!r}, "
                          f"not {parts['memory'].coalescing!r} (the rule follows from gpu.arch)")
    parts = {section: _with_defaults(part) for section, part in parts.items()}
    return GPUConfig(**parts, key=key, source=source)


def _with_defaults(part):
    """``part`` with each omitted optional key set to its schema default.  The checks
    run before, on what the file gave (None where omitted); an absent cache
    (``present = false``) keeps every key None."""
    if isinstance(part, CacheModel) and not part.present:
        return part
    fill = {f.name: f.default for f in dataclasses.fields(part)
            if f.metadata.get("optional") and f.default is not None and getattr(part, f.name) is None}
    return dataclasses.replace(part, **fill) if fill else part


def _parse_text(text: str, source: str, key: str) -> GPUConfig:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: not valid TOML: {e}") from None
    return parse_config(data, source=source, key=key)


def available_configs() -> list[str]:
    """Names of the bundled configs, e.g. ['gtx260', 'h100', 'h200']."""
    return sorted(p.name[: -len(".toml")] for p in resources.files(__name__).iterdir()
                  if p.name.endswith(".toml"))


@functools.lru_cache(maxsize=None)
def _load_bundled(name: str) -> GPUConfig:
    res = resources.files(__name__).joinpath(name + ".toml")
    return _parse_text(res.read_text(encoding="utf-8"), source=str(res), key=name)


def load_config(name_or_path: str | os.PathLike) -> GPUConfig:
    """Load a bundled config by name ("gtx260"; a "sim:" prefix is accepted)
    or a user's config file by path (anything ending in .toml or naming a file)."""
    if isinstance(name_or_path, os.PathLike):
        return _load_path(Path(name_or_path))
    if not isinstance(name_or_path, str):
        raise ConfigError(f"load_config expects a config name or a path, got {name_or_path!r}")
    text = name_or_path.strip()
    looks_like_path = text.endswith(".toml") or "/" in text or os.sep in text
    if looks_like_path:
        return _load_path(Path(text))
    name = text.lower().removeprefix("sim:")
    if name in available_configs():
        return _load_bundled(name)
    raise ConfigError(
        f"unknown GPU config {name_or_path!r}; available: {', '.join(available_configs())} "
        f"(or give the path of a .toml file; see gtx260.toml for the format)")


def _load_path(path: Path) -> GPUConfig:
    path = path.expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read config file: {e}") from None
    return _parse_text(text, source=str(path), key=path.stem)
