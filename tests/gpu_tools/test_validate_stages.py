"""The validation in stages (GPU side saved, simulator side cached), the pairing of
ncu's rows past helper launches, and validate_diff: without a GPU."""
import pathlib

import numpy as np
import pytest

from simgpu_apps.gpu_tools import validate as V
from simgpu_apps.gpu_tools import validate_diff as D
from simgpu_apps.gpu_tools import validate_stages as S

L = V.LaunchCounts


def _launch(kernel, n=1):
    lc = L(kernel)
    lc.counts = {("loads", "requests"): n, ("atom", "requests"): 0, ("atom", "transactions"): 0}
    lc.kernel_ms = 0.01
    return lc


def test_digest_tells_arrays_apart_and_passes_a_digest_through():
    a = np.arange(10, dtype=np.int32)
    assert S.digest(a) == S.digest(a.copy()) == S.digest(S.digest(a))
    assert S.digest(a) != S.digest(a.astype(np.int64))           # dtype counts
    assert S.digest(a) != S.digest(a.reshape(2, 5))                # shape counts
    b = a.copy()
    b[3] = -1
    assert S.digest(a) != S.digest(b)


def test_gpu_side_round_trips_and_missing_files_are_named(tmp_path):
    results = {("c", 0): ({"x": np.arange(4)}, [_launch("k")]), "device": "GPU (cuda:0)"}
    S.save_gpu(tmp_path, results)
    (tmp_path / "ncu.csv").write_text("csv")
    with pytest.raises(SystemExit, match="manifest.json not found"):
        S.load_gpu(tmp_path)
    (tmp_path / "manifest.json").write_text('[["c", 0, ["k"]]]')
    gpu, text, manifest = S.load_gpu(tmp_path)
    assert gpu["device"] == "GPU (cuda:0)" and text == "csv" and manifest == [["c", 0, ["k"]]]
    outputs, launches = gpu[("c", 0)]
    assert outputs["x"] == S.digest(np.arange(4)) and launches[0].kernel == "k"


def test_the_simulator_cache_is_per_commit(tmp_path):
    result = ({"x": np.arange(3)}, [_launch("k")])
    assert S.cached(tmp_path, "case one/2", 1, "abc") is None
    S.store(tmp_path, "case one/2", 1, "abc", result)
    got = S.cached(tmp_path, "case one/2", 1, "abc")
    assert got[0]["x"] == S.digest(np.arange(3)) and got[1][0].kernel == "k"
    assert S.cached(tmp_path, "case one/2", 1, "other commit") is None   # stale: rerun
    assert S.cached(tmp_path, "case one/2", 2, "abc") is None
    assert not list(tmp_path.glob("*.tmp"))


def test_run_sim_reads_a_cached_run_instead_of_running_it(tmp_path, monkeypatch):
    selected = [c for c in V.cases(quick=True) if c.name == "copy_striding"]
    monkeypatch.setenv("SIMGPU_COMMIT", "test-commit")
    first = V.run_sim(selected, [0], quick=True, cache=tmp_path)
    monkeypatch.setattr(V, "_run_on_sim", lambda *a: pytest.fail("ran again, not cached"))
    again = V.run_sim(selected, [0], quick=True, cache=tmp_path)
    (out1, l1), (out2, l2) = first[("copy_striding", 0)], again[("copy_striding", 0)]
    assert {k: S.digest(v) for k, v in out1.items()} == out2
    assert [(x.kernel, x.counts, x.kernel_ms) for x in l1] == [(x.kernel, x.counts, x.kernel_ms) for x in l2]


class _Case:
    def __init__(self, name):
        self.name, self.schedule_dependent_counts, self.why = name, False, ""


def test_ncu_rows_of_helper_launches_are_skipped_and_listed():
    sim = {("c", 0): ({"x": np.arange(2)}, [_launch("a"), _launch("b"), _launch("rs4_jump_in_place")])}
    gpu = {("c", 0): ({"x": S.digest(np.arange(2))}, [_launch("a"), _launch("b"), _launch("rs4_jump_in_place")])}
    rows = [_launch("lr_scan"), _launch("a"), _launch("lr_scan"), _launch("b"),
            _launch("rs4_jump_in_place", 2), _launch("lr_check")]
    manifest = [("c", 0, ["a", "b", "rs4_jump_in_place"])]
    table = V.compare([_Case("c")], sim, gpu, rows, manifest)
    assert table["outputs"] == [("c", 0, True)]
    assert table["helpers"] == {"lr_scan": 2, "lr_check": 1}
    verdicts = {r[3]: r[7] for r in table["counts"]}
    assert verdicts["a"] == verdicts["b"] == "equal"
    assert verdicts["rs4_jump_in_place"] == "differs: schedule-dependent"
    with pytest.raises(RuntimeError, match="end before c seed 0's b"):
        V.compare([_Case("c")], sim, gpu, [_launch("a")], [("c", 0, ["a", "b"])])


def _page(rows):
    lines = ["# Validation", "", "## Times", "", "| case | seed | launch | kernel | GPU event ms | GPU kernel ms | sim ms "
             "| sim / GPU kernel |", "|---|---:|---:|---|---:|---:|---:|---:|"]
    lines += [f"| {c} | {s} | {k} | {kern} | 0.1 | 0.1 | 0.1 | {r} |" for c, s, k, kern, r in rows]
    return "\n".join(lines + ["", "## Calibration", "| x | 1 | 2 | y | 1 | 1 | 1 | 9.9 |"])


def test_validate_diff_compares_the_launches_both_pages_have(tmp_path, capsys):
    old = _page([("a", 0, 0, "k", "0.80"), ("a", 0, 1, "k", "1.00"), ("gone", 0, 0, "g", "1.0")])
    new = _page([("a", 0, 0, "k", "0.90"), ("a", 0, 1, "k", "1.50"), ("added", 0, 0, "n", "1.0")])
    rows = D.time_rows(old)
    assert rows == {("a", "0", "k"): [0.8, 1.0], ("gone", "0", "g"): [1.0]}   # not the calibration table
    (tmp_path / "old.md").write_text(old)
    (tmp_path / "new.md").write_text(new)
    D.main([str(tmp_path / "old.md"), str(tmp_path / "new.md")])
    out = capsys.readouterr().out.splitlines()
    assert "(1 case/seed/kernel groups)" in out[0]
    assert "2 launches, 1 within 15% (50%), median 0.90" in out[1]     # 0.80 out, 1.00 in
    assert "2 launches, 1 within 15% (50%), median 1.20" in out[2]     # 0.90 in, 1.50 out
    assert "3 launches, 2 within 15%" in out[4]


def test_validate_diff_refuses_a_file_that_is_no_validation_page(tmp_path):
    (tmp_path / "notes.md").write_text("# some notes\n")
    (tmp_path / "new.md").write_text(_page([("a", 0, 0, "k", "1.0")]))
    with pytest.raises(SystemExit, match="notes.md.*no '## Times' section"):
        D.main([str(tmp_path / "notes.md"), str(tmp_path / "new.md")])
    with pytest.raises(SystemExit, match="missing.md is not a file"):
        D.main([str(tmp_path / "missing.md"), str(tmp_path / "new.md")])
