"""validation.heldout_units: the table's figures from a case's saved run (no simulation
here: a saved run of one case is written by hand and read back)."""
from __future__ import annotations

import json

import pytest

from validation import heldout_units

CASE = "copy_f32 n=4194304"


def saved_run(tmp_path, sim_ms, extra, counts=None):
    gpu = json.loads(heldout_units.DEFAULT_GPU.read_text())
    (g,) = [c for c in gpu["cases"] if c["case"] == CASE]
    (launch,) = g["launches"]
    run = {"case": CASE, "dram_overrides": {}, "launches": [{
        "kernel": launch["kernel"], "cycles": 1, "sim_ms": sim_ms,
        "counts": counts or dict(launch["counts"]), "extra": extra}],
        "budgets_gbps": {"read_queue_depth": 32, "l2": 5900.0, "fill": 9370.0, "fabric": 2100.0}}
    (tmp_path / "copy.json").write_text(json.dumps(run))
    return launch["gpu_time_ms"]


def test_busy_fractions_ratio_and_busiest(tmp_path):
    gpu_ms = saved_run(tmp_path, 0.02, {
        "bus_utilization": 0.3, "queue_mean": 24.0, "sm_issue_utilization": 0.1,
        "l2_slice_bytes": 59_000_000, "l2_fill_port_bytes": 0, "l2_fabric_bytes": 21_000_000})
    (row,) = heldout_units.rows(tmp_path)
    assert row["ratio"] == pytest.approx(0.02 / gpu_ms)
    b = row["busy"]
    # 59 MB over 5,900 GB/s for 20 us = 0.5; 21 MB over 2,100 GB/s for 20 us = 0.5
    assert b["l2"] == pytest.approx(0.5) and b["fabric"] == pytest.approx(0.5)
    assert b["dram-q"] == pytest.approx(0.75) and b["dram"] == 0.3 and b["fill"] == 0
    assert row["dominant"] == "dram-q"
    assert all(s == g for s, g in row["counts"].values())
    text = heldout_units.table([row]) + heldout_units.summary([row])
    assert CASE in text and "dram-q" in text and "every count equal 1/1" in text


def test_nothing_busy_is_latency_and_a_count_that_differs_shows_both(tmp_path):
    gpu = json.loads(heldout_units.DEFAULT_GPU.read_text())
    (g,) = [c for c in gpu["cases"] if c["case"] == CASE]
    counts = dict(g["launches"][0]["counts"], **{"loads.requests": 7})
    saved_run(tmp_path, 0.01, {"bus_utilization": 0.1}, counts)
    (row,) = heldout_units.rows(tmp_path)
    assert row["dominant"] == "latency"
    assert "7 / 131,072" in heldout_units.table([row])


def test_a_dram_override_must_be_key_value():
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        heldout_units.main(["run", CASE, "/dev/null", "--dram", "ranks"])
    with pytest.raises(SystemExit, match="no held-out case"):
        heldout_units.run_case("no such case", {})


def test_run_overrides_reach_the_devices_config():
    """--dram and --cache KEY=VALUE: values parsed (true/false, ints, floats) and set on
    the device's [dram] and [cache] sections, the rest of h100.toml unchanged."""
    assert [heldout_units._value(v) for v in ("true", "false", "64", "1.5", "fr-fcfs")] == \
        [True, False, 64, 1.5, "fr-fcfs"]
    dev = heldout_units.sim_device({"write_queue_depth": 64, "write_drain_high": 56,
                                    "write_drain_low": 32}, {"l2_write_masks": False})
    c = dev.config
    assert (c.dram.write_queue_depth, c.dram.write_drain_high, c.dram.write_drain_low) == (64, 56, 32)
    assert c.cache.l2_write_masks is False and c.cache.l2_bytes == 52428800
    assert heldout_units.sim_device({}).config.cache.l2_write_masks is True


def test_an_unknown_override_key_is_refused_by_name():
    with pytest.raises(SystemExit, match=r"--cache: no key l2_write_mask in h100.toml's \[cache\]; "
                                         r"its keys: .*l2_write_masks"):
        heldout_units.sim_device({}, {"l2_write_mask": False})
