"""The whole GPU description: :class:`GPUConfig`, its sections, unit conversions
and ``describe()`` (moved out of simgpu/configs/__init__.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .sections import (AtomicsModel, CacheModel, DramTiming, GpuInfo, IssueModel, Limits,
                       MemoryModel, PcieModel, TlbModel)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} B"


def _dims(d: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(x) for x in d) + ")"


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
