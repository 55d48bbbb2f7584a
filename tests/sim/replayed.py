"""The devices the trace-engine tests compare engines on.

trace-block replays launches whose DRAM reads are booked at arrival; under
``[dram] read_scheduling = "fr-fcfs"`` (h100.toml's since 2026-11-27) it runs them on
timed-block, where a comparison of the two engines would compare timed-block with
itself.  So these tests take sim:h100 with its reads at arrival: an L2 kept across
launches, the part of the H100 the replay must get right."""
import dataclasses

import simgpu


def device(name: str):
    """A fresh ``simgpu.get_device(name)``, its reads booked at arrival."""
    dev = simgpu.get_device(name)
    dram = dev.config.dram
    if dram.read_scheduling != "at-arrival":
        dev.config = dataclasses.replace(
            dev.config, dram=dataclasses.replace(dram, read_scheduling="at-arrival"))
    return dev
