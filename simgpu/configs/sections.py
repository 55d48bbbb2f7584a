"""The config schema: one frozen dataclass per TOML section, each field with its
description, smallest value and (for an optional key) default, and each section's
consistency checks (moved out of simgpu/configs/__init__.py).  The field helpers and
the core's sections ([gpu], [limits], [issue]) are in core_sections.py; the memory
system's ([memory], [dram], [cache], [pcie], [atomics], [tlb]) and the table of all
sections are here.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .core_sections import (_NONNEGATIVE, _POSITIVE, ConfigError, GpuInfo,  # noqa: F401
                            IssueModel, Limits, _doc, _f, _opt)

#: How far ``memory.peak_bandwidth_gbps`` may stray from bus width x clock x data rate.
BANDWIDTH_TOLERANCE = 0.02


#: ``[dram] read_scheduling``'s values (simgpu/mem/deferred_reads.py: "fr-fcfs").
READ_SCHEDULING = ("at-arrival", "fr-fcfs")


# --------------------------------------------------------------------------- #
# The memory system's sections
# --------------------------------------------------------------------------- #

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
    partition_skip_bit: int | None = _opt(
        "an address bit that takes no part in choosing the partition (it goes to the place "
        "within it): two interleave pieces that differ only there share a partition "
        "(default: none, plain round robin)")
    partition_hash_unit_bytes: int | None = _opt(
        "hash addresses over the partitions: each aligned unit of this many bytes spreads "
        "its interleave pieces over as many partitions, a hash of the unit number chooses "
        "which and in what order (simgpu/mem/slice_hash.py; default: no hash, round robin)")
    partition_half_mask: int | None = _opt(
        "with the hash: the address bits (a mask) whose parity chooses the L2 half, that "
        "is the partition's parity (default: the hash chooses it with the rest)")
    partition_hash_page_bytes: int | None = _opt(
        "with partition_half_mask: a hash of the number of this page flips the half "
        "(default: never)")

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
        skip = self.partition_skip_bit
        if skip is not None and (1 << skip) < self.partition_interleave_bytes:
            err("partition_skip_bit", f"bit {skip} lies within one interleave piece of "
                                      f"{self.partition_interleave_bytes} B; give a bit at or "
                                      f"above {self.partition_interleave_bytes.bit_length() - 1}")
        self._check_hash(err)
        if (self.interconnect_flit_bytes is None) != (self.interconnect_clock_mhz is None):
            err("interconnect_clock_mhz", "interconnect_flit_bytes and interconnect_clock_mhz go "
                                          "together: give both or neither")
        if self.coalescing not in _COALESCING:
            err("coalescing", f"expected one of {', '.join(map(repr, _COALESCING))}, got {self.coalescing!r}")

    def _check_hash(self, err) -> None:
        unit = self.partition_hash_unit_bytes
        if unit is None:
            for name in ("partition_half_mask", "partition_hash_page_bytes"):
                if getattr(self, name) is not None:
                    err(name, "goes with the address hash: set partition_hash_unit_bytes "
                              "too, or remove it")
            return
        piece = self.partition_interleave_bytes * (1 if self.partition_skip_bit is None else 2)
        if unit & (unit - 1) or unit < piece or unit % piece:
            err("partition_hash_unit_bytes",
                f"{unit} is not a power of two that holds whole interleave pieces of "
                f"{piece} B (partition_interleave_bytes"
                f"{' x 2, for partition_skip_bit' if piece != self.partition_interleave_bytes else ''})")
        if self.partition_skip_bit is not None and (1 << self.partition_skip_bit) >= unit:
            err("partition_skip_bit", f"bit {self.partition_skip_bit} lies above the hash's "
                                      f"unit of {unit} B; give one inside it")
        mask, page = self.partition_half_mask, self.partition_hash_page_bytes
        halves = 2 if mask else 1
        if mask is not None and (mask <= 0 or mask % unit or not mask & unit):
            err("partition_half_mask", f"{mask:#x} must set the bit of the hash's unit of "
                                       f"{unit} B (bit {unit.bit_length() - 1}), so that "
                                       "neighbouring units are one in each half, and no lower "
                                       "ones, so that a unit lies in one half")
        if page is not None and (mask is None or page & (page - 1) or page < 2 * unit):
            err("partition_hash_page_bytes", f"{page}: give a power of two at least two units "
                                             f"({unit} B), with partition_half_mask")
        if self.partitions % (halves * (unit // piece)):
            err("partition_hash_unit_bytes",
                f"a unit's {unit // piece} pieces{' in each of 2 halves' * (halves == 2)} do "
                f"not divide the {self.partitions} partitions into whole groups")


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
    frfcfs_cap: int = _f("FR-FCFS starvation bound: the most younger reads (row hits) of its "
                         "bank that may pass a read", _NONNEGATIVE)
    write_queue_depth: int = _f("writes a sub-channel's write queue holds")
    write_drain_high: int = _f("queued writes at which the sub-channel starts draining them")
    write_drain_low: int = _f("queued writes left when a drain stops", _NONNEGATIVE)
    read_scheduling: str = _opt('"at-arrival" (each read booked when it arrives: first come, '
                                'first served across requests) or "fr-fcfs" (reads decided by '
                                'the FR-FCFS scheduler when the simulation reaches them, an '
                                "L2's misses among them)", None,
                                default="at-arrival")
    trefi_pb: int = _opt("interval between per-bank refreshes (REFpb) of one sub-channel, each "
                         "bank once per tREFI (tREFI / banks per sub-channel); 0: none, "
                         "memory cycles", _NONNEGATIVE, default=0)
    trfc_pb: int = _opt("time a per-bank refresh holds its bank (no activate), memory cycles",
                        _NONNEGATIVE, default=0)
    ranks: int = _opt("ranks (HBM3 stack IDs) per sub-channel: each has its own "
                      "memory.dram_banks_per_partition / subchannels banks and keeps tRRD, "
                      "tRRD_L and tFAW among its own activates; they share the data bus",
                      _POSITIVE, default=1)
    lane_bytes: int = _opt("bytes the address map keeps in one bank's row of one sub-channel "
                           "and bank group before it moves to the next (0: one burst); a "
                           "DRAM access of that many bytes opens one row, not one per burst",
                           _NONNEGATIVE, default=0)
    lane_swizzle: bool = _opt("rotate each turn of the runs over the lanes by the digit sum "
                              "of the turn's number (as controllers hash bank bits), so that "
                              "power-of-two strides spread over the sub-channels and bank "
                              "groups; false: the plain rotation", None, default=False)

    def _check(self, err, memory: MemoryModel) -> None:
        if self.read_scheduling is not None and self.read_scheduling not in READ_SCHEDULING:
            err("read_scheduling", f"expected one of {', '.join(map(repr, READ_SCHEDULING))}, "
                                   f"got {self.read_scheduling!r}")
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
        if self.lane_bytes and (self.lane_bytes % burst
                                or memory.row_buffer_bytes % self.lane_bytes):
            err("lane_bytes", f"{self.lane_bytes} must be a whole number of {burst} B bursts "
                              f"and divide memory.row_buffer_bytes = {memory.row_buffer_bytes}")
        if memory.row_buffer_bytes % burst:
            err("burst_length", f"memory.row_buffer_bytes = {memory.row_buffer_bytes} is not a "
                                f"whole number of {burst} B bursts")
        if self.trefi_pb and self.trefi:
            err("trefi_pb", "give all-bank refresh (trefi, trfc) or per-bank refresh (trefi_pb, "
                            "trfc_pb), not both: set the other pair to 0")
        if bool(self.trefi_pb) != bool(self.trfc_pb):
            err("trefi_pb", "trefi_pb and trfc_pb go together: give both or neither")
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
    l2_fill_bandwidth_gbps: float | None = _opt("GB/s at which the L2's slices write what DRAM "
                                                "returns for load misses, through a fill port "
                                                "apart from their load, store and combined "
                                                "budgets (default: fills take the combined "
                                                "budget)")

    l2_write_masks: bool = _opt(
        "whether the L2 keeps which bytes of a sector were written: a sector a store "
        "allocated and wrote only in part holds no data for its other bytes, so a load of it "
        "misses (reads it from DRAM and merges), and its write-back reads it from DRAM first "
        "(a read-modify-write) (false: a store's sector is whole, as if it wrote all of it)",
        None, False)

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

    l2_write_request_cycles: float | None = _opt("cycles an L2 slice takes per store request "
                                                 "(default: l2_request_cycles)", _POSITIVE, 0.0)

    # The SM's L1 pipeline (simgpu.mem.l1_pipe): what one warp instruction holds it for.
    l1_tag_lines_per_cycle: float | None = _opt("128-B lines the L1's tag stage looks up per "
                                                "cycle (default: no cost)", _POSITIVE)
    l1_miss_line_cycles: float | None = _opt("cycles the L1 takes per line of a load that goes "
                                             "on to the L2 (default: none)", _POSITIVE, 0.0)
    l1_miss_sector_cycles: float | None = _opt("cycles the L1 takes per sector of a load that "
                                               "goes on to the L2 (default: none)",
                                               _POSITIVE, 0.0)
    l1_store_line_cycles: float | None = _opt("cycles the L1 takes per line a store writes "
                                              "(default: none)", _POSITIVE, 0.0)
    l1_store_partial_sector_cycles: float | None = _opt("cycles more per sector a store "
                                                        "writes only in part (default: none)",
                                                        _POSITIVE, 0.0)

    l1_store_bytes_per_cycle: float | None = _opt("bytes of a store's data the L1 takes per "
                                                  "cycle (default: no limit)", _POSITIVE)

    l1_pipe_queue_cycles: float | None = _opt("cycles of work the L1 pipeline may have ahead "
                                              "before the SM waits to hand it more",
                                              _NONNEGATIVE, 64.0)

    _OPTIONAL_WHEN_PRESENT = ("l1_pipe_queue_cycles", "l1_tag_lines_per_cycle", "l1_miss_line_cycles",
                              "l1_miss_sector_cycles", "l1_store_line_cycles",
                              "l1_store_partial_sector_cycles", "l1_store_bytes_per_cycle",
                              "l2_request_cycles", "l2_write_request_cycles", "l2_bandwidth_gbps",
                              "l2_store_bandwidth_gbps", "l2_combined_bandwidth_gbps", "l1_sets", "l2_dirty_bytes",
                              "l2_fill_bytes", "l2_halves", "l2_far_latency_cycles",
                              "l2_fabric_bandwidth_gbps", "l2_fill_bandwidth_gbps",
                              "l2_write_masks")

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
        "operation, lanes on one word one per round: a sector takes as many operations "
        "(and is counted as many transactions) as the most lanes on one of its words "
        "(false: one operation per lane, serialized per address)", None, False)
    compiler_aggregates_uniform: bool = _opt(
        "whether the compiler does a warp-uniform integer add/sub atomic from one lane for "
        "the whole warp (nvcc since CUDA 9; simgpu.ir.uniform): one lane per warp reaches "
        "memory", None, False)
    unit_queue_operations: int | None = _opt(
        "operations the queue of each atomic unit (at a partition, or an L2 slice) holds "
        "waiting for the unit; a request that finds it full waits outside, and its SM's "
        "memory pipeline takes nothing more until it is in (default: no bound)")


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
