"""calibration/stream_limits.py: its variants (and loaded_latency_sweep's) set exactly
the keys they name, to the values they name (a variant may equal h100.toml as it moves
on: each names every key it was run with), and its latency recorder leaves the memory
system as it found it (the results notes' tables rest on both)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import simgpu
from calibration.loaded_latency_sweep import VARIANTS as SWEEP_VARIANTS
from calibration.stream_limits import VARIANTS, load_latencies, read_sum, variant_config
from simgpu.mem.memory_system import MemorySystem


def _fields(cfg) -> dict:
    return {(section.name, f.name): getattr(getattr(cfg, section.name), f.name)
            for section in dataclasses.fields(cfg)
            if dataclasses.is_dataclass(getattr(cfg, section.name))
            for f in dataclasses.fields(getattr(cfg, section.name))}


@pytest.mark.parametrize("variants", [VARIANTS, SWEEP_VARIANTS], ids=["stream_limits",
                                                                      "loaded_latency_sweep"])
def test_each_variant_changes_its_keys_and_no_other(tmp_path, variants):
    base = _fields(simgpu.get_device("sim:h100").config)
    for name, changes in variants.items():
        name_or_path = "sim:" + variant_config(changes, tmp_path) if changes else "sim:h100"
        cfg = simgpu.get_device(name_or_path).config
        fields = _fields(cfg)
        # (a string's value is written with its TOML quotes; a boolean as TOML's word)
        assert {key[1]: v for key, v in fields.items() if key[1] in changes} == {
            k: {"true": True, "false": False}.get(v, v.strip('"')) if isinstance(v, str)
            else v for k, v in changes.items()}, name
        assert all(base[key] == v for key, v in fields.items() if key[1] not in changes), name


def test_the_latency_recorder_restores_the_memory_system():
    original = MemorySystem.access
    dev = simgpu.get_device("sim:h100")
    src, out = dev.to_device(np.arange(4096, dtype=np.int32)), dev.zeros(256, np.int32)
    with load_latencies([]) as lat:
        dev.launch(read_sum, 1, 256, src, out, 4096, engine="timed-block")
    assert MemorySystem.access is original
    # 8 warps x 16 loads; under FR-FCFS (h100.toml) a load's reads are decided later: its
    # record holds them, each with its time once the launch is over
    done = [d if not isinstance(d, list) else max(n.done for n in d) for _, d in lat]
    assert len(lat) == 8 * 16 and all(d > issued for (issued, _), d in zip(lat, done))
    assert (out.to_host() == np.arange(4096).reshape(16, 256).sum(axis=0)).all()
