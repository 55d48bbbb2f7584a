"""calibration/chase_load.py without a GPU: its cycle, its shapes, the spacing rule that
keeps threads off each other's words, and the report's arithmetic on written-out files."""
from __future__ import annotations

import json

import numpy as np
import pytest

from calibration import chase_load as cl


def test_the_cycle_is_one_cycle_and_the_threads_start_apart():
    n, threads = 4096, 64
    nxt, start = cl.cycle(n, threads, seed=5)
    seen, p = np.zeros(n, bool), 0
    for _ in range(n):                                 # one cycle through every word
        assert not seen[p]
        seen[p] = True
        p = nxt[p]
    assert p == 0 and seen.all()
    pos = np.empty(n, np.int64)                        # each word's place along the cycle
    p = int(start[0])
    for k in range(n):
        pos[p] = k
        p = nxt[p]
    gaps = np.diff(pos[start])
    assert (gaps == n // threads).all()


@pytest.mark.parametrize("warps", cl.WARPS)
def test_shapes_put_the_warps_on_every_sm(warps):
    grid, block = cl.shape(warps)
    assert grid * block == cl.SMS * warps * 32 and block <= 256 and grid % cl.SMS == 0


def test_steps_that_would_overlap_are_refused():
    cl.check_spacing()                                 # the defaults fit
    with pytest.raises(SystemExit, match="give --high below 11"):
        cl.check_spacing(20)                           # l2 at 64 warps per SM: 11 words apart


def test_the_report_divides_the_sides(tmp_path):
    def rows(scale):
        return [{"data": "dram", "warps": w, "grid": cl.shape(w)[0], "block": cl.shape(w)[1],
                 "us": {}, "step_ns": 100.0 * w * scale} for w in (1, 64)]
    gpu = {"meta": {"device": "card", "date": "d", "timing": "t"}, "rows": rows(1.0)}
    sim = {"meta": {"device": "sim:x", "engine": "e", "date": "d"}, "rows": rows(1.5)[:1]}
    (tmp_path / "gpu.json").write_text(json.dumps(gpu))
    (tmp_path / "sim-e.json").write_text(json.dumps(sim))
    text = cl.report(tmp_path)
    assert "| dram | 1 | 100 | 42.2 | 150 | 1.50 |" in text    # 4,224 sectors / 100 ns
    assert "| dram | 64 | 6400 | 42.2 | - | - |" in text       # no model row: dashes


def test_the_model_side_runs_the_chase_and_an_l2_step_costs_less_than_a_dram_one(monkeypatch):
    """``_sim_case`` on small arrays: each case's chase ends where numpy's does (measure
    raises otherwise), and a step over data the L2 holds (read whole before, and by the
    first of the two launches) is cheaper than one over data it was emptied of."""
    monkeypatch.setattr(cl, "WORDS", {"l2": 1 << 18, "dram": 1 << 18})   # (only the L2 differs)
    monkeypatch.setattr(cl, "HIGH", {1: 6})
    l2 = cl._sim_case("sim:h100", "timed-block", "l2", 1, None)
    dram = cl._sim_case("sim:h100", "timed-block", "dram", 1, None)
    assert set(l2["us"]) == {"2", "6"}
    assert 0 < l2["step_ns"] < 0.6 * dram["step_ns"]
