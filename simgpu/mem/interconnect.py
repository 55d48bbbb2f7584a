"""The interconnect between the SMs and the memory partitions (a crossbar on GT200).

Today a fixed latency each way: ``memory.interconnect_latency_cycles`` is the
SM -> partition -> SM round trip outside DRAM, half of it each way.
"""
from __future__ import annotations

__all__ = ["Interconnect"]


class Interconnect:
    def __init__(self, config):
        self.half_trip = config.memory.interconnect_latency_cycles / 2

    def to_partition(self, t: float) -> float:
        """When a request sent at ``t`` reaches its partition."""
        return t + self.half_trip

    def to_sm(self, t: float) -> float:
        """When data leaving a partition at ``t`` reach their SM."""
        return t + self.half_trip
