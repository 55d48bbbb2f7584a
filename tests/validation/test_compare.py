"""The comparison's table and summary logic on synthetic data with known answers, and
the committed GPU measurements' shape."""
import json
import math

import pytest

from validation import h100_compare as C


def _gpu(case, launches, sha="a"):
    return {"case": case, "outputs": {"y": {"sha256": sha}},
            "launches": [{"kernel": k, "gpu_time_ms": t, "counts": dict(c)} for k, t, c in launches]}


def _sim(launches, sha="a"):
    return {"outputs": {"y": {"sha256": sha}},
            "launches": [{"kernel": k, "sim_ms": t, "counts": dict(c)} for k, t, c in launches]}


COUNTS = {"loads.requests": 4, "loads.transactions": 16, "stores.requests": 4,
          "stores.transactions": 16, "atom.requests": 0, "atom.transactions": 0}


def test_rows_and_summary_known_answer():
    rows = []
    # ratios 1.10 (within), 2.0 (not), 0.5 (not), and a setup launch at 10x (not scored)
    rows += C.compare_case(_gpu("a", [("k1", 1.0, COUNTS)]), _sim([("k1", 1.1, COUNTS)]), "k1")
    rows += C.compare_case(_gpu("b", [("k2", 1.0, COUNTS)]), _sim([("k2", 2.0, COUNTS)]), "k2")
    other = {**COUNTS, "loads.transactions": 17}
    rows += C.compare_case(_gpu("c", [("setup", 1.0, COUNTS), ("k3", 2.0, COUNTS)]),
                           _sim([("setup", 10.0, COUNTS), ("k3", 1.0, other)], sha="b"), "k3")
    assert [r["scored"] for r in rows] == [True, True, False, True]
    assert [r["within"] for r in rows] == [True, False, False, False]
    assert rows[3]["diffs"] == {"loads.transactions": (17, 16)}
    assert rows[3]["outputs_equal"] is False and rows[0]["outputs_equal"] is True
    s = C.summary(rows)
    assert s["scored"] == 3 and s["within"] == 1
    assert s["fraction_within"] == pytest.approx(1 / 3)
    # exp(mean(|ln 1.1|, |ln 2|, |ln 0.5|))
    assert s["geomean_error"] == pytest.approx(math.exp((math.log(1.1) + 2 * math.log(2)) / 3))
    assert s["outputs_equal"] == 2 and s["counts_equal"] == 2
    text = C.table(rows)
    assert "setup (setup, not scored)" in text and "NO: loads.transactions sim 17 GPU 16" in text
    assert "1 of 3 kernels within 15%" in C.summary_text(s)


def test_the_15_percent_edge():
    r = C.compare_case(_gpu("a", [("k", 1.0, COUNTS)]), _sim([("k", 1.15, COUNTS)]), "k")
    assert r[0]["within"]
    r = C.compare_case(_gpu("a", [("k", 1.0, COUNTS)]), _sim([("k", 1.16, COUNTS)]), "k")
    assert not r[0]["within"]


def test_a_skipped_case_is_shown_and_not_scored():
    rows = C.compare_case(_gpu("big", [("k", 1.0, COUNTS)]), {"case": "big", "skipped": "host memory"}, "k")
    assert rows[0]["skipped"] == "host memory" and not rows[0]["scored"]
    assert C.summary(rows) == {"scored": 0}
    assert "not simulated: host memory" in C.table(rows)


def test_launch_count_mismatch_is_an_error():
    with pytest.raises(ValueError, match="launches"):
        C.compare_case(_gpu("a", [("k", 1.0, COUNTS)]), _sim([]), "k")


def test_committed_gpu_measurements_cover_the_set():
    from validation import heldout
    data = json.loads(C.DEFAULT_GPU.read_text())
    assert "H100" in data["nvidia_smi"] and data["commit"] and data["date_utc"].startswith("2026-11-25")
    names = {c["case"] for c in data["cases"]}
    assert names == {c.name for c in heldout.cases("full")}
    for c in data["cases"]:
        assert all(o["equals_numpy"] for o in c["outputs"].values()), c["case"]
        for lc in c["launches"]:
            assert lc["gpu_time_ms"] > 0 and set(C.COUNT_KEYS) <= set(lc["counts"])


def test_unrolled_request_counts_known_answer():
    import numpy as np

    from validation.unroll_counts import spmv_requests
    # one warp, every lane 5 iterations: IR 5, unrolled 1 (remainder) + 4 (one block)
    assert spmv_requests(np.full(32, 5)) == (2 + 3 * 5, 2 + 3 * 1 + 12 * 1)
    # lanes of 1 and 4 iterations: IR 4; unrolled: remainder 1, then one block of four
    lengths = np.array([1, 4] * 16)
    assert spmv_requests(lengths) == (2 + 3 * 4, 2 + 3 * 1 + 12 * 1)


def test_the_sass_structure_s_request_counts_known_answer():
    import numpy as np

    from validation.unroll_counts import spmv_requests_sass
    # 5 iterations: remainder 1, one group of four: the pass of four copies only
    assert spmv_requests_sass(np.full(32, 5)) == 2 + 3 * 1 + 12
    # lanes of 16 and 8: four groups (a pass of 16) and two (the pass of 8)
    assert spmv_requests_sass(np.array([16, 8] * 16)) == 2 + 48 + 24
    # 28 iterations: seven groups, a pass of 16, then 8 and 4
    assert spmv_requests_sass(np.full(32, 28)) == 2 + 48 + 24 + 12


def test_the_sass_structure_s_sector_counts_known_answer():
    """One warp: even lanes 16 entries, odd lanes 8, every row starting on a sector
    (starts 24m and 24m + 16), all col[k] = 0. An executed copy with a active lanes
    loads 2a sectors of col and val (each lane its own sector) and 1 of x."""
    import numpy as np

    from validation.unroll_counts import spmv_sectors, spmv_sectors_sass
    lengths = np.array([16, 8] * 16)
    row_ptr = np.concatenate([[0], np.cumsum(lengths)])
    col = np.zeros(int(row_ptr[-1]), np.int64)
    row_ptr_sectors = 4 + 5          # row_ptr[r] (r < 32) and row_ptr[r + 1] (r + 1 <= 32)
    # SASS: a pass of 16 copies (the even lanes' four groups), a pass of 8 (the odd
    # lanes' two groups); no remainder, no pass of 4
    assert spmv_sectors_sass(row_ptr, col) == row_ptr_sectors + 16 * 33 + 8 * 33
    # source order (and unrolled by four): 8 iterations of 32 lanes, 8 of the 16 even ones
    assert spmv_sectors(row_ptr, col) == (row_ptr_sectors + 8 * 65 + 8 * 33,) * 2
