"""The GPU probes' analysis (calibration/*.py), on synthetic stamps whose answer is known:
the probes themselves need a GPU, but what they conclude from their stamps is code that
can be wrong like any other."""
import json

import numpy as np
import pytest

from calibration import dram_ramp, first_access, l2_chunks, l2_fabric, l2_fabric_cases

MASK = 0b10110011                       # chunk-index bits 0, 1, 4, 5, 7: address bits 12-19
GHZ = 1.98


def records(latencies_ns: np.ndarray, smids: np.ndarray) -> np.ndarray:
    """dram_ramp's per-warp records for warps whose iterations took ``latencies_ns``
    (warps x iterations, NaN after a warp's last): SM id, global start and end, then the
    SM clock at the start and after each iteration, and once more at the end."""
    warps, its = latencies_ns.shape
    rec = np.zeros((warps, dram_ramp.REC), np.int64)
    rec[:, 0] = smids
    start_clock = 10_000
    clocks = np.full((warps, dram_ramp.MAXIT + 2), np.nan)
    clocks[:, 0] = start_clock
    lat = np.nan_to_num(latencies_ns)
    clocks[:, 1:its + 1] = start_clock + np.cumsum(lat, axis=1) * GHZ
    done = np.nanmax(clocks, axis=1)
    clocks = np.where(np.isnan(clocks), done[:, None], clocks)
    rec[:, 3:] = np.round(clocks).astype(np.int64)
    rec[:, 1] = 1_000_000
    rec[:, 2] = 1_000_000 + np.round((done - start_clock) / GHZ).astype(np.int64)
    return rec.ravel()


def halves_of(sms: int = 132) -> dict:
    return {s: bin(s).count("1") & 1 for s in range(sms)}


def copy_stamps(offset: int, rng) -> np.ndarray:
    """The l2_chunks copy: warp w reads 128 B at offset + 128 w + k stride; its SM is its
    block's modulo 132; a load homed beside the SM takes 370 ns, across 700 (+ noise)."""
    halves = halves_of()
    warps = l2_chunks.GRID * l2_chunks.BLOCK // 32
    smids = (np.arange(warps) // (l2_chunks.BLOCK // 32)) % 132
    half = np.array([halves[s] for s in smids])
    stride = l2_chunks.GRID * l2_chunks.BLOCK * 4
    lat = np.full((warps, 4), np.nan)
    for k in range(4):
        at = 128 * np.arange(warps) + k * stride
        ok = at < 4 * l2_chunks.N
        chunk = (offset + at) // 4096
        home = l2_chunks.parity(chunk % 512, MASK) ^ (chunk // 512) % 2
        lat[ok, k] = np.where(home[ok] == half[ok], 370.0, 700.0) + rng.normal(0, 15, ok.sum())
    return records(lat, smids)


def test_fit_mask_finds_the_parity_bits_with_a_constant_per_page():
    chunks = np.arange(1024)
    home = l2_chunks.parity(chunks % 512, MASK) ^ (chunks // 512 == 1)
    fits = l2_chunks.fit_mask({int(c): [int(h)] for c, h in zip(chunks, home)})
    assert fits[0] == (1.0, MASK) and fits[1][0] < 0.9
    assert l2_chunks.bits(MASK) == "12, 13, 16, 17, 19"


def test_home_labels_recover_the_hash_from_the_copys_stamps(rng, tmp_path):
    halves_json = tmp_path / "halves.json"
    halves = halves_of()
    halves_json.write_text(json.dumps({"summary": {
        "same_half_as_sm0": [s for s, h in halves.items() if h == 0],
        "other_half": [s for s, h in halves.items() if h == 1]}}))
    assert l2_chunks.sm_halves(halves_json) == halves
    labels = l2_chunks.home_labels(copy_stamps(512, rng), 512, halves)
    assert len(labels) > 700
    (best, mask), (second, _) = l2_chunks.fit_mask(labels)[:2]
    assert mask == MASK and best > 0.99 and second < 0.9


def test_warp_clocks_read_back_the_latencies():
    lat = np.array([[300.0, 400.0, 500.0], [200.0, np.nan, np.nan]] * 4)
    rec, g0, g1, rel, ghz = dram_ramp.warp_clocks(records(lat, np.arange(8)))
    assert ghz == pytest.approx(GHZ, rel=1e-3)
    assert np.diff(rel[0, :4]) / ghz == pytest.approx([300, 400, 500], abs=1)
    assert rec[:, 0].tolist() == list(range(8))


def test_first_access_report_gives_each_waves_first_load_over_its_later_ones(tmp_path):
    sms, its = 132, first_access.ITERATIONS
    stamps = {}
    for state, extra in (("warm", 70.0), ("cold", 60.0)):
        for r in range(first_access.REPEATS):
            lat = np.full((first_access.WAVES * sms, its), 200.0)
            lat[:, 0] += extra
            lat[:sms, 0] += 100.0 if state == "warm" else 0.0      # wave 0, the kernel's start
            stamps[f"{state}|{r}"] = records(lat, np.arange(first_access.WAVES * sms) % sms)
    np.savez(tmp_path / "first.npz", sms=np.int64(sms), **stamps)
    rows = [line.split("|")[1:-1] for line in first_access.report(tmp_path).splitlines()
            if line.startswith("| warm") or line.startswith("| cold")]
    got = {(r[0].strip(), int(r[1])): (float(r[4]), float(r[5]), float(r[6])) for r in rows}
    assert got["warm", 0] == pytest.approx((370, 200, 170), abs=1)
    assert got["warm", 2] == pytest.approx((270, 200, 70), abs=1)
    assert got["cold", 3] == pytest.approx((260, 200, 60), abs=1)


def test_l2_fabric_report_times_each_half_from_its_blocks(tmp_path):
    """A half's time is its blocks' first start to last end; GB/s: the bytes it moved."""
    mib = 8
    rows = []
    for name, mine, other, _ in l2_fabric.CASES:
        for g in (0, 1):
            for r in range(l2_fabric.REPEATS):
                blocks = [[1000, 1000 + 4000 + 10 * b, g + 1] for b in range(8)]   # g: 4.07 us
                if other is not None:
                    blocks += [[2000, 2000 + 2000, 2 - g]]                         # the other: 2 us
                rows.append({"case": name, "g": g, "repeat": r, "blocks": blocks})
    (tmp_path / "fabric.json").write_text(json.dumps({"per_half": [528, 528], "mib": mib, "rows": rows}))
    table = l2_fabric.report(tmp_path)
    line = next(x for x in table.splitlines() if x.startswith("| g reads X far; the other half writes Y | 1 |"))
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[2:] == ["4.07", f"{(mib << 20) / 4.07e3:.0f}", "2.00", f"{(mib << 20) / 2e3:.0f}"]
    copy = next(x for x in table.splitlines() if x.startswith("| g copies X (far) to Y | 0 |"))
    assert copy.split("|")[4].strip() == f"{2 * (mib << 20) / 4.07e3:.0f}"       # read + write


def test_l2_fabric_launches_prepare_then_measure_each_half():
    """g reads X far while the other half writes Y: the other half reads X first, then
    both halves write Y; the measured launch has g reading X and the other writing Y."""
    case = next(c for c in l2_fabric_cases.CASES if c[0] == "g reads X far; the other half writes Y")
    none, read, write = l2_fabric_cases.NONE, l2_fabric_cases.READ, l2_fabric_cases.WRITE
    preps, measured = l2_fabric_cases.launches(*case[1:], g=1)
    assert preps == [[(read, "X", "X"), (none, "X", "X")], [(write, "Y", "Y"), (write, "Y", "Y")]]
    assert measured == [(write, "Y", "Y"), (read, "X", "X")]
    copy = next(c for c in l2_fabric_cases.CASES if c[1][0] == l2_fabric_cases.COPY)
    assert l2_fabric_cases.launches(*copy[1:], g=0)[1] == [(l2_fabric_cases.COPY, "X", "Y"), (none, "Z", "Z")]


def test_kernel_overlap_table_nets_out_the_empty_grid_and_fits_the_slope():
    from calibration import kernel_overlap
    us = {("cold", 0): {k: 3.0 + 0.35 * max(k - 1, 0) for k in kernel_overlap.STEPS}}
    (row,) = kernel_overlap.table(us)[2:]
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[:3] == ["cold", "0", "0.00"]              # the first load hidden
    assert cells[-3:] == ["5.25", "3.00", "350"]           # k = 16 net, k = 0, slope


def test_a_report_on_a_folder_without_the_runs_files_says_which(tmp_path):
    with pytest.raises(SystemExit, match="has no fabric.json: give the folder"):
        l2_fabric.report(tmp_path)
    with pytest.raises(SystemExit, match="has no first.npz"):
        first_access.report(tmp_path)


HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
          '"Metric Value"\n')


def ncu_rows(launches) -> str:
    """An ncu CSV with ``launches`` = [(kernel, {metric: value})]."""
    lines = [HEADER]
    for k, (kernel, values) in enumerate(launches):
        for metric, value in values.items():
            lines.append(f'"{k}","1","python","h","{kernel}","1","7","(256, 1, 1)","(1, 1, 1)",'
                         f'"0","9.0","Command line profiler metrics","{metric}","","{value}"\n')
    return "".join(lines)


def test_kernel_counters_pairs_launches_by_occurrence_and_reads_the_rates(tmp_path):
    """A GPU run with one round more than the model: its extra launches get no model
    figures, the others their own kernel's (not the one at the same position)."""
    from calibration import kernel_counters as KC
    assert KC.occurrences(["a", "b", "a", "c"]) == [("a", 0), ("b", 0), ("a", 1), ("c", 0)]
    values = {"gpu__time_duration.sum": "20000",
              "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum": "3",
              "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum": "1",
              "lts__t_sectors_srcunit_tex_lookup_hit.sum": "1",
              "lts__t_sectors_srcunit_tex_lookup_miss.sum": "1",
              "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct": "60",
              "smsp__warp_issue_stalled_barrier_per_warp_active.pct": "20"}
    (tmp_path / "ncu.csv").write_text(ncu_rows([("wylie_single_block", values)] * 2))
    (tmp_path / "manifest.json").write_text(json.dumps(
        [["wylie-single-block", ["wylie_single_block", "wylie_single_block"]]]))
    (tmp_path / "gpu.json").write_text(json.dumps({"date": "d", "device": "GPU", "lacking": []}))
    rows = [line for line in KC.report(tmp_path).splitlines() if "| wylie_single_block |" in line]
    first, extra = rows
    assert "| 20.00 |" in first and "75% /" in first and "50% /" in first
    assert "long_scoreboard 75%, barrier 25%" in first
    assert "| nan |" in extra and "75% / -" in extra


def test_hook_stores_table_gives_each_variant_over_the_loads():
    from calibration import hook_stores as HS
    sim = {(v, g): (2.0 * (1 + k), 100, 64, 0.5, 0.7)
           for g in HS.GRIDS for k, v in enumerate(HS.VARIANTS)}
    gpu = {(v, g): {"gpu__time_duration.sum": str(4000 * (1 + k)),
                    "lts__t_sectors_srcunit_ltcfabric_op_read.sum": "300",
                    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum": "1",
                    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum": "3"}
           for g in HS.GRIDS for k, v in enumerate(HS.VARIANTS)}
    text = HS.table(sim, gpu, {"device": "GPU", "date": "d"})
    assert "| store_same | 128 | 4 | 100 | 12.00 (3.00) | 6.00 (3.00) | 0.50 | 300 / nan | 64 | 25% / 50% |" in text
    assert "| loads | 512 | 1 | 100 | 4.00 (1.00) | 2.00 (1.00) | 0.50 |" in text
    assert "| hook | 512 | 1 | 100 | 8.00 (4.00) | 64 | 50% |" in HS.table(sim, None, None)


def test_hook_cache_ops_report_sets_each_variant_over_the_loads(tmp_path):
    from calibration import hook_cache_ops as HC
    times = [6000 * (1 + k) for k in range(len(HC.VARIANTS))]
    (tmp_path / "ncu.csv").write_text(ncu_rows([("hook_ops", {"gpu__time_duration.sum": str(t)})
                                                for t in times]))
    (tmp_path / "manifest.json").write_text(json.dumps(HC.VARIANTS))
    (tmp_path / "gpu.json").write_text(json.dumps({"date": "d", "device": "GPU", "lacking": []}))
    text = HC.report(tmp_path)
    assert "| loads | 6.00 | 1.00 |" in text and "| store X[di] | 30.00 | 5.00 |" in text


def test_coherence_report_reads_each_case_and_the_l1_cases_second_lap(tmp_path):
    from calibration import coherence as CO
    base = [100] * CO.SMALL
    results = [{"case": name, "repeat": 0, "writers": 1, "l1": l1, "stores": 2_000_000,
                "latency": base + [300 + k] * CO.SMALL if l1 else [300 + k] * (2 * CO.SMALL)}
               for k, (name, _half, _mode, l1) in enumerate(CO.CASES)]
    (tmp_path / "coherence.json").write_text(json.dumps(
        {"device": "GPU", "date": "d", "results": results}))
    text = CO.report(tmp_path)
    first, l1_none = CO.CASES[0][0], CO.CASES[5][0]
    assert f"| {first} | 1 | 1 | 300 | 300 | 300 | 300 | 2.0 |" in text
    assert f"| {l1_none} | 1 | 1 | 305 | 305 |" in text       # the first lap's 100s left out


def test_kernel_counters_names_the_cases_it_knows():
    from calibration import kernel_counters as KC
    with pytest.raises(SystemExit, match="unknown case.*'no such case'.*copy_striding"):
        KC.selected("copy_striding, no such case")


def test_atomic_sectors_rules_and_report_say_which_rule_every_launch_follows(tmp_path):
    """The candidate rules on patterns whose answer is worked out by hand, and a run whose
    GPU counts follow 'distinct sectors' everywhere: the report credits that rule with
    every launch and no other rule with a launch where they differ."""
    from calibration import atomic_sectors as AS
    lane = list(range(32))
    assert AS.distinct_sectors([0] * 32) == 1
    assert AS.distinct_sectors(lane) == 4                       # 32 words, 128 bytes
    assert AS.max_same_word_per_sector([w // 4 for w in lane]) == 4   # 4 lanes a word
    assert AS.max_same_word_per_sector([8 * (w // 2) for w in lane]) == 32
    assert AS.distinct_words([w % 3 for w in lane]) == 3
    pats = AS.patterns()
    assert len(pats) > AS.HISTOGRAM_WARPS and all(len(w) == 32 for _, w in pats)
    launches = [("red_lanes", {AS.METRICS[0]: "1",
                               AS.METRICS[1]: str(AS.distinct_sectors(list(w)))})
                for _, w in pats]
    (tmp_path / "ncu.csv").write_text(ncu_rows(launches))
    (tmp_path / "launches.json").write_text(json.dumps([n for n, _ in pats]))
    (tmp_path / "gpu.json").write_text(json.dumps({"date": "d", "device": "GPU"}))
    text = AS.report(tmp_path)
    assert f"distinct sectors (the model) {len(pats)}," in text
    words = sum(AS.distinct_words(list(w)) == AS.distinct_sectors(list(w)) for _, w in pats)
    assert f"distinct words {words}." in text and words < len(pats)


def test_atomic_sectors_conflict_passes():
    """With a conflict on one word only, the passes are the round rule on every pattern;
    a wider conflict splits a line's lanes into more passes, by hand on one line."""
    from calibration import atomic_sectors as AS
    same = lambda a, b: a == b                          # noqa: E731
    for _, w in AS.patterns():
        assert AS.passes_by_conflict(list(w), same)[0] == AS.max_same_word_per_sector(list(w))
    # words 0, 1, 8 of one line: one pass of two sectors; if offsets 1 apart conflict,
    # word 1 waits for a second pass (sector 0 again)
    assert AS.passes_by_conflict([0, 1, 8], same) == (2, 1)
    assert AS.passes_by_conflict([0, 1, 8], lambda a, b: abs(a - b) in (0, 1)) == (3, 2)


def test_atomic_sectors_conflict_search_credits_the_rule_a_run_follows(tmp_path):
    """A run whose counts are the round rule's everywhere: the search's table gives that
    rule every launch, sectors and requests both."""
    from calibration import atomic_sectors as AS
    pats = AS.patterns()
    same = lambda a, b: a == b                          # noqa: E731
    launches = []
    for _, w in pats:
        sectors, requests = AS.passes_by_conflict(list(w), same)
        launches.append(("red_lanes", {AS.METRICS[1]: str(sectors), AS.METRICS[2]: str(requests)}))
    (tmp_path / "ncu.csv").write_text(ncu_rows(launches))
    (tmp_path / "launches.json").write_text(json.dumps([n for n, _ in pats]))
    text = AS.conflict_search(tmp_path)
    assert f"on the {len(pats)} launches" in text
    assert f"| one word (the round rule) | {len(pats)} | {len(pats)} |" in text


def test_atomic_sectors_repeats_count_launches_whose_counters_all_agree(tmp_path):
    """Two runs made from one ncu table agree on every launch; a copy with one launch's
    L2 sector count changed agrees on all but that one; another launch list is refused."""
    from calibration import atomic_sectors as AS
    pats = AS.patterns()[:5]
    for folder, changed in (("a", None), ("b", None), ("c", 3)):
        launches = [("red_lanes", {m: str(10 * k + i + (i == 3 and k == changed))
                                   for i, m in enumerate(AS.METRICS)})
                    for k, _ in enumerate(pats)]
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "ncu.csv").write_text(ncu_rows(launches))
        (tmp_path / folder / "launches.json").write_text(json.dumps([n for n, _ in pats]))
    text = AS.repeats(tmp_path / "a", [tmp_path / "b", tmp_path / "c"])
    assert f"| {tmp_path / 'b'} | 5 | 5 |" in text and f"| {tmp_path / 'c'} | 5 | 4 |" in text
    (tmp_path / "c" / "launches.json").write_text(json.dumps([n for n, _ in pats][::-1]))
    with pytest.raises(SystemExit, match="not the same launches"):
        AS.repeats(tmp_path / "a", [tmp_path / "c"])


def test_l2_slice_map_turns_times_into_slices(tmp_path):
    """sectors_per_request is atomic_sectors' round rule, vectorized; a run whose times
    are 1.45 cycles a sector over k slices reads back k."""
    from calibration import atomic_sectors as AS
    from calibration import l2_slice_map as SM
    keys = np.random.default_rng(3).integers(0, 2**31, 32 * 64, dtype=np.int32)
    for bins in (16, 256, 4096):
        warps = (keys & (bins - 1)).reshape(-1, 32)
        want = sum(AS.max_same_word_per_sector(list(w)) for w in warps) / len(warps)
        assert SM.sectors_per_request(keys, bins) == pytest.approx(want)
    full = np.random.default_rng(1).integers(0, 2**31, SM.N, dtype=np.int32)
    rows = []
    for bins, slices in ((64, 1), (256, 2), (1024, 8)):
        sectors = SM.sectors_per_request(full, bins) * SM.N / 32
        rows.append({"offset": 0, "bins": bins, "ok": True,
                     "ms": sectors * 1.45 / 1.98 / slices / 1e6})
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    (tmp_path / "gpu.json").write_text(json.dumps({"date": "d", "device": "GPU"}))
    text = SM.report(tmp_path)
    for bins, slices in ((64, 1), (256, 2), (1024, 8)):
        line = next(x for x in text.splitlines() if x.startswith(f"| 0 | {bins} |"))
        assert f"| {slices}.00 | True |" in line


def test_partial_stores_report_keeps_each_experiments_last_launch(tmp_path):
    """The flushes are left out, a "then read" experiment is its read (its second
    launch), and each model's figures sit beside the GPU's of the same experiment."""
    from calibration import partial_stores as PS
    launches, manifest = [], []
    for k, (mib, name, kernels) in enumerate(PS.experiments()):
        launches.append(("flush_l2", {"gpu__time_duration.sum": "1", "dram__bytes_read.sum": "1",
                                      "dram__bytes_write.sum": "1"}))
        for j, (kernel, _, _) in enumerate(kernels):
            launches.append((kernel, {"gpu__time_duration.sum": str(1000 * (k + 1) + 500 * j),
                                      "dram__bytes_read.sum": str(1e6 * (k + 1 + j / 2)),
                                      "dram__bytes_write.sum": "0"}))
            manifest.append([mib, name, kernel])
    (tmp_path / "ncu.csv").write_text(ncu_rows(launches))
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "gpu.json").write_text(json.dumps({"date": "d", "device": "GPU", "lacking": []}))
    rows = [{"mib": 64, "experiment": "sector 4 B, then read", "us": 9.5, "dram_read_mb": 8.25,
             "dram_write_mb": 0.5}]
    (tmp_path / "sim.json").write_text(json.dumps({"device": "sim:x", "date": "d", "rows": rows}))
    text = PS.report(tmp_path)
    k = [(m, n) for m, n, _ in PS.experiments()].index((64, "sector 4 B, then read"))
    assert f"| 64 | sector 4 B, then read | {k + 1}.50 | 9.50 | {k + 1}.50 | 8.25 | 0.00 | 0.50 |" in text
    assert "| 8 | full | 1.00 |  | 1.00 |  | 0.00 |  |" in text      # no model row: empty cells
    assert "flush" not in text.split("\n", 2)[2]


def test_partial_stores_retention_set_is_two_patterns_per_size():
    from calibration import partial_stores as PS
    got = PS.experiments("retention")
    assert [(m, n) for m, n, _ in got] == [(m, n) for m in PS.RETENTION_MIB
                                          for n in ("full", "sector 4 B")]
    for mib, name, ((kernel, mode, count),) in got:      # one store launch, over the size
        assert kernel == "store_pattern" and mode == PS.PATTERNS[name][0]
        assert count * (32 if name == "sector 4 B" else 4) == mib << 20


def test_write_queue_sweep_keeps_gpgpu_sims_proportions_and_refuses_odd_depths(capsys):
    """Depth 64 is GPGPU-Sim's 64:56:32, the model's before the fit; the kept fit is what
    h100.toml has; a depth the proportions cannot divide is refused before any run."""
    from calibration import write_queue_sweep as WQ
    from simgpu.configs import load_config
    assert WQ.queue(64) == {"write_queue_depth": 64, "write_drain_high": 56, "write_drain_low": 32}
    d = load_config("h100").dram
    assert WQ.queue(512) == {"write_queue_depth": d.write_queue_depth,
                             "write_drain_high": d.write_drain_high,
                             "write_drain_low": d.write_drain_low}
    with pytest.raises(SystemExit):
        WQ.main(["12", "full"])
    assert "give a multiple of 8" in capsys.readouterr().err


def test_partial_stores_requests_set_writes_word_r_of_every_line_in_sweep_r():
    """--set requests: sweep r (of REQUEST_SWEEPS[i]) stores word r of each 128-B line, so
    every store is a request of one sector; the model's kernel (mode 5) against numpy."""
    import simgpu
    from calibration import partial_stores as PS
    got = PS.experiments("requests")
    assert [name for _, name, _ in got] == [f"line 4 B x {r}" for r in PS.REQUEST_SWEEPS]
    assert all(mib == 8 and launches[0][1] == 5 and launches[0][2] == (8 << 20) // 128 * r
               for (mib, _, launches), r in zip(got, PS.REQUEST_SWEEPS))
    dev = simgpu.get_device("sim:h100")
    words, sweeps = 4096, 3                          # 128 lines of 32 words, 3 sweeps
    lines, count = words // 32, words // 32 * sweeps
    a = dev.zeros(words, np.int32)
    dev.launch(PS.sim_store_pattern, 4, 64, a, count, 5, words // 8, engine="lockstep")
    want = np.zeros(words, np.int32)
    k = np.arange(count)
    want[(k % lines) * 32 + k // lines] = k
    np.testing.assert_array_equal(a.to_host(), want)


def test_l1_throughput_shapes_and_report(tmp_path):
    """The probe's lane patterns touch the lines and sectors its table names, and the
    report puts each row per warp request, the model's beside the GPU's (132 SMs only)."""
    from calibration import l1_throughput as p
    assert [p.lines_and_sectors(L, "packed")[1] for L in p.LS] == [4, 4, 4, 8, 16, 32]
    assert [p.lines_and_sectors(L, "spread")[1] for L in p.LS] == [4, 8, 16, 32, 32, 32]
    assert p.lines_and_sectors(32, "diag") == (32, 32)
    per = p.WARPS * p.ITERS * p.UNROLL
    rows = [{"blocks": 132, "mode": "st", "pattern": "packed", "L": 32, "cycles": 100.0 * per,
             "ms": 1.0},
            {"blocks": 8, "mode": "st", "pattern": "packed", "L": 32, "cycles": 64.0 * per,
             "ms": 1.0}]
    (tmp_path / "l1.json").write_text(json.dumps({"device": "GPU", "sms": 132, "date": "d",
                                                  "rows": rows}))
    (tmp_path / "l1_sim.json").write_text(json.dumps({"device": "sim:h100", "date": "d", "rows": [
        {"mode": "st", "pattern": "packed", "L": 32, "cycles": 50.0 * per}]}))
    table = p.report(tmp_path)
    assert "| 132 | st | packed | 32 | 32 | 100.00 | 3.12 | 50.00 | 0.50 |" in table
    assert "| 8 | st | packed | 32 | 32 | 64.00 | 2.00 | - | - |" in table


def test_l1_throughput_mixed_streams_against_their_parts(tmp_path):
    """A mixed stream's row: a load and a store together over the two apart (pair / sum),
    beside what side by side would give and the model's own pair / sum (132 SMs)."""
    from calibration import l1_throughput as p
    per = p.WARPS * p.ITERS * p.UNROLL
    cycles = {"cg": 30.0, "st": 70.0, "mix_cg": 45.0, "ca": 10.0, "mix_ca": 40.0}
    rows = [{"blocks": b, "mode": m, "pattern": "diag", "L": 32, "cycles": c * per, "ms": 1.0}
            for b in (132, 8) for m, c in cycles.items()]
    (tmp_path / "l1.json").write_text(json.dumps({"device": "GPU", "sms": 132, "date": "d",
                                                  "rows": rows}))
    model = {"ca": 12.0, "st": 60.0, "mix_ca": 36.0}
    (tmp_path / "l1_sim.json").write_text(json.dumps({"device": "sim:h100", "date": "d", "rows": [
        {"mode": m, "pattern": "diag", "L": 32, "cycles": c * per} for m, c in model.items()]}))
    table = p.report(tmp_path)
    assert "| 132 | cg | diag | 32 | 30.00 | 70.00 | 45.00 | 0.90 | 0.70 | - |" in table
    assert "| 132 | ca | diag | 32 | 10.00 | 70.00 | 40.00 | 1.00 | 0.88 | 1.00 |" in table
    assert "| 8 | ca | diag | 32 | 10.00 | 70.00 | 40.00 | 1.00 | 0.88 | - |" in table
    (tmp_path / "l1.json").write_text(json.dumps({"device": "GPU", "sms": 132, "date": "d",
                                                  "rows": rows[:2]}))
    assert "alternating" not in p.report(tmp_path)          # no mixed stream: no table
