"""calibration/cold_dram_cases.py: its cases read DRAM; its "without" config
(simgpu_apps/config_variants.h100_without, which validation/builtin_sim_side.py uses too)
drops exactly the keys it names."""
from __future__ import annotations

import dataclasses

import pytest

import simgpu
from calibration.cold_dram_cases import CASES
from simgpu_apps.config_variants import h100_without


def test_without_drops_the_key_and_nothing_else(tmp_path):
    base = simgpu.get_device("sim:h100").config
    cfg = simgpu.get_device("sim:" + h100_without(["l2_fill_bandwidth_gbps"], tmp_path)).config
    assert cfg.cache.l2_fill_bandwidth_gbps is None and base.cache.l2_fill_bandwidth_gbps
    assert dataclasses.replace(cfg.cache, l2_fill_bandwidth_gbps=base.cache.l2_fill_bandwidth_gbps) \
        == base.cache and cfg.dram == base.dram and cfg.memory == base.memory
    with pytest.raises(SystemExit, match="has 0 lines for 'no_such_key', expected one: name a key"):
        h100_without(["no_such_key"], tmp_path)
    with pytest.raises(SystemExit, match="no_such_key"):
        h100_without(["l2_fill_bandwidth_gbps", "no_such_key"], tmp_path)


def test_the_cases_read_dram():
    assert {c.bench for c in CASES} == {"copy", "read", "gather"}
