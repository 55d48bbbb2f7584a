"""validation/builtin_sim_side.py: it reads the committed validation page's GPU times launch
by launch and pairs a simulator run's launches with them by kernel and occurrence."""
from __future__ import annotations

import pathlib

import pytest

from validation import builtin_sim_side as side

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "validation.md"


def test_the_committed_page_reads_as_its_times_table():
    rows = side.page_rows(PAGE.read_text())
    # every (case, seed) of the page, its launches in order, each with a GPU time and the
    # page's ratio; the page's own count of timed launches
    section = PAGE.read_text().split("\n## Times", 1)[1].split("\n## ", 1)[0]
    timed = [line for line in section.splitlines()
             if line.startswith("| ") and line.split("|")[3].strip().isdigit()
             and line.split("|")[8].strip() != "-"]
    assert sum(len(v) for v in rows.values()) == len(timed) > 100
    assert ("copy_striding", 0) in rows
    kernel, gpu, ratio = rows["copy_striding", 0][0]
    assert kernel == "copy_striding" and gpu > 0 and 0.5 < ratio < 2


def test_launches_pair_by_kernel_and_occurrence():
    page = {("c", 0): [("a", 1.0, 1.0), ("b", 2.0, 1.0), ("a", 3.0, 1.0)]}
    # the run has one more b round and lacks the page's second a: pairs a#0, b#0 only
    sims = {("c", 0): [("a", 1.5), ("b", 1.0), ("b", 9.0)]}
    rows = side.compare(page, sims)
    assert rows == [("c", 0, "a", 1.0, 1.0, 1.5), ("c", 0, "b", 2.0, 1.0, 1.0)]


def test_a_key_to_leave_out_must_be_there():
    # (simgpu_apps/config_variants.h100_without, tests/calibration/test_cold_dram_cases.py)
    with pytest.raises(SystemExit, match="no_such_key"):
        side.main(["--without", "no_such_key", "--only", "no case has this name"])


def test_a_missing_page_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="not a file"):
        side.main(["--page", str(tmp_path / "none.md")])


def test_the_engine_reaches_the_device(monkeypatch):
    seen = []

    def fake_run_cases(dev, cases, seeds):
        seen.append((dev.default_engine, dev.cache_control, cases[0].name))
        return {(cases[0].name, seeds[0]): (None, [])}
    monkeypatch.setattr(side, "run_cases", fake_run_cases)
    assert side.run_one("sim:h100", "copy_striding", 0, "timed") == []
    assert side.run_one("sim:h100", "copy_striding", 0) == []
    assert seen == [("timed", "all", "copy_striding"), ("timed-block", "all", "copy_striding")]
