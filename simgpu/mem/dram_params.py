"""A config's ``[dram]`` timings converted to SM cycles, with the sub-channel's shape and
queue limits: what :class:`~simgpu.mem.dram_timing.SubChannel` obeys (each figure's
source is tagged in the config's TOML)."""
from __future__ import annotations

__all__ = ["Timing"]


class Timing:
    """A config's ``[dram]`` timings in SM cycles, and the sub-channel's shape."""

    # (declared types: a build of simgpu.native keeps these as machine numbers)
    per_memory_cycle: float
    cl: float
    wl: float
    rcd: float
    rp: float
    ras: float
    rc: float
    rrd: float
    rrd_l: float
    faw: float
    ccd: float
    ccd_l: float
    wtr: float
    rtp: float
    wr: float
    rtw: float
    burst: float
    group_spacing: bool
    burst_slot: float
    groups: int
    ranks: int
    refi: float
    rfc: float
    refi_pb: float
    rfc_pb: float
    read_depth: int
    write_depth: int
    high: int
    low: int
    write_to_read: float
    horizon: float

    def __init__(self, config):
        d, m = config.dram, config.memory
        k = config.gpu.core_clock_mhz / m.memory_clock_mhz      # SM cycles per memory cycle
        self.per_memory_cycle = k
        self.cl, self.wl, self.rcd, self.rp = d.tcl * k, d.twl * k, d.trcd * k, d.trp * k
        self.ras, self.rc, self.rrd, self.rrd_l = d.tras * k, d.trc * k, d.trrd * k, d.trrd_l * k
        self.faw, self.ccd, self.ccd_l = d.tfaw * k, d.tccd * k, d.tccd_l * k
        self.wtr, self.rtp, self.wr, self.rtw = d.twtr * k, d.trtp * k, d.twr * k, d.trtw * k
        self.burst = d.burst_length / m.data_rate * k                # a burst on the bus
        self.group_spacing = d.tccd_l * k > max(self.burst, d.tccd * k)
        if self.ccd > self.burst:                                    # bursts tCCD apart
            self.burst_slot = self.ccd
        else:
            self.burst_slot = self.burst
        self.groups = d.bank_groups
        self.ranks = d.ranks                                        # stack IDs (1: one)
        self.refi, self.rfc = d.trefi * k, d.trfc * k               # (0: not modeled)
        self.refi_pb, self.rfc_pb = d.trefi_pb * k, d.trfc_pb * k   # per-bank (0: none)
        self.read_depth = d.read_queue_depth
        self.write_depth = d.write_queue_depth
        self.high, self.low = d.write_drain_high, d.write_drain_low
        self.write_to_read = self.wtr + self.cl        # bus idle from write data to read data
        # how far back a reservation can still constrain a new one
        self.horizon = 4 * (self.faw + self.rrd_l + self.write_to_read + self.rc)
