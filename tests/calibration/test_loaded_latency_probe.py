"""calibration/loaded_latency_probe.py's analysis on synthetic records whose answer is
known (the probe itself needs a GPU)."""
import numpy as np

from calibration import loaded_latency_probe as llp

GHZ = 1.755


def records(lat_ns: list, roles: list, span_ns: float = 50_000.0) -> np.ndarray:
    """Per-warp records: warp k kept the samples lat_ns[k] (ns) and has role roles[k]."""
    rec = np.zeros((len(lat_ns), llp.REC), np.int64)
    for k, (lat, role) in enumerate(zip(lat_ns, roles)):
        rec[k, :3] = (k % 132, role, len(lat))
        rec[k, 3:5] = (1_000_000 + 10 * k, 1_000_000 + 10 * k + span_ns)
        rec[k, 5:7] = (7_000, 7_000 + round(span_ns * GHZ))
        rec[k, llp.HEAD:llp.HEAD + len(lat)] = np.round(np.asarray(lat) * GHZ)
    return rec.ravel()


def test_latencies_come_back_in_ns_by_role_with_the_clock_from_the_timers():
    got = llp.warp_latencies(records([[400.0, 420.0], [300.0], [500.0] * 3], [0, 1, 0]))
    assert abs(got["ghz"] - GHZ) < 1e-3
    assert np.allclose(np.sort(got["lat_ns"][0]), [400, 420, 500, 500, 500], atol=1)
    assert np.allclose(got["lat_ns"][1], [300], atol=1)
    assert abs(got["span_us"] - (50_000 + 20) / 1e3) < 1e-6


def test_summary_pools_the_repeats_and_orders_levels_within_states():
    recs = {"b8|cold|0": records([[500.0] * 4], [0]), "b8|cold|1": records([[600.0] * 4], [0]),
            "b1|cold|0": records([[380.0] * 4], [0]), "b1|warm|0": records([[250.0] * 4], [0])}
    rows = llp.summarize(recs)
    assert [(r["level"], r["state"]) for r in rows] == [("b1", "cold"), ("b8", "cold"), ("b1", "warm")]
    assert abs(rows[1]["lat0"][50] - 550) < 1 and abs(rows[1]["lat0"][10] - 500) < 1
    assert "lat1" not in rows[0]


def test_metric_list_keeps_what_the_device_lists_and_finds_crossbar_counters():
    listing = "\n".join(["Device GH100", "gpu__time_duration.sum  time", "dram__bytes_read.sum  b",
                         "lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed  x",
                         "lts__foo.sum  not wanted", "ltc__bar.sum  found by name"])
    got = llp.metric_list(listing)
    assert got[:2] == ["gpu__time_duration.sum", "dram__bytes_read.sum"]
    assert "ltc__bar.sum" in got and "lts__foo.sum" not in got
    assert "dram__throughput.avg.pct_of_peak_sustained_elapsed" not in got


def test_every_level_fits_the_sm_and_divides_the_array():
    for _, bps, threads, loads in llp.LEVELS:
        assert bps * threads <= 2048
        assert llp.iterations(bps, threads, loads) >= 8


def split_records(level: str, extra_ns: float, rng) -> np.ndarray:
    """One run of ``level`` whose lane-0 loads take 330 ns from their SM's own L2 half and
    430 through the other (SM half: SM id odd; chunk home: (chunk // 3) % 2), plus
    ``extra_ns``, with +-10 ns of noise; every warp keeps NS samples."""
    bps, threads, loads = {lv[0]: lv[1:] for lv in llp.LEVELS}[level]
    grid = llp.SMS * bps * threads
    every = max(1, llp.iterations(bps, threads, loads) // llp.NS)
    warps = grid // 32
    lat = np.zeros((warps, llp.NS))
    for w in range(warps):
        for k in range(llp.NS):
            first = w * 32 + k * every * loads * grid
            chunks = [((first + u * grid) % llp.COLD_WORDS) * 4 // 4096 for u in range(loads)]
            far = any((c // 3) % 2 != (w % llp.SMS) % 2 for c in chunks)
            lat[w, k] = (430 if far else 330) + extra_ns + rng.uniform(-10, 10)
    rec = records(list(lat), [0] * warps).reshape(warps, llp.REC)
    rec[:, 0] = np.arange(warps) % llp.SMS
    return rec.ravel()


def test_near_far_learns_the_halves_and_splits_each_runs_loads():
    rng = np.random.default_rng(1)
    recs = {"b1|cold|0": split_records("b1", 0.0, rng), "b2|cold|0": split_records("b2", 0.0, rng),
            "b8|cold|0": split_records("b8", 200.0, rng)}
    odd = list(range(1, llp.SMS, 2))
    guess = odd[3:] + [0, 2]                  # three SMs missing, two wrong: the votes fix them
    got = llp.near_far(recs, guess)
    assert got["agreement"] > 0.99 and got["sm_half_changed"] == 5
    for key, extra in (("b1|cold|0", 0), ("b8|cold|0", 200)):
        (n_near, near, _), (n_far, far, _) = got[key]["near"], got[key]["far"]
        assert n_near > 100 and n_far > 100
        assert abs(near - 330 - extra) < 3 and abs(far - 430 - extra) < 3


def test_compact_keeps_two_warps_a_block_with_their_grid_indices_and_zeroes_unused_slots():
    rng = np.random.default_rng(2)
    full = {"b2|cold|0": split_records("b2", 0.0, rng), "b2|cold|1": split_records("b2", 0.0, rng)}
    rec = full["b2|cold|0"].reshape(-1, llp.REC)
    rec[5, 2] = 3                             # warp 5 kept 3 samples: slots 3.. are stale
    sub = llp.compact(full, warps_per_block=1)
    assert set(sub) == {"b2|cold|0", llp.WARPS + "b2|cold|0"}
    assert list(sub[llp.WARPS + "b2|cold|0"][:4]) == [0, 1, 8, 9]
    whole = llp.compact(full)["b2|cold|0"].reshape(-1, llp.REC)
    assert (whole[5, llp.HEAD + 3:] == 0).all() and (whole[5, llp.HEAD:llp.HEAD + 3] > 0).all()
    a = llp.near_far(sub, list(range(1, llp.SMS, 2)))["b2|cold|0"]
    b = llp.near_far(llp.compact(full), list(range(1, llp.SMS, 2)))["b2|cold|0"]
    assert abs(a["near"][1] - b["near"][1]) < 3 and abs(a["far"][1] - b["far"][1]) < 3


def test_sim_side_times_each_load_and_more_blocks_read_faster():
    import pytest
    from calibration import loaded_latency_probe_sim as sim
    one, two = sim.run("b1", 16), sim.run("b2", 17)      # one iteration per thread each
    assert one["words"] == llp.SMS * 256 and two["words"] == 2 * llp.SMS * 256
    for r in (one, two):
        mean, median, p90 = r["lat_ns"]
        assert 200 < median <= p90 < 2000                 # DRAM loads: hundreds of ns
    assert two["gbps"] > one["gbps"]
    with pytest.raises(SystemExit, match="unknown level"):
        sim.run("b3", 16)
