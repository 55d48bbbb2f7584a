"""The validation script's own logic, without a GPU: cases run on the simulator, ncu CSV parsing."""
import numpy as np

import simgpu
from simgpu_apps.gpu_tools import validate as V

NCU_CSV = '''==PROF== Connected to process 123
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","123","python","h","copy_striding","1","7","(256, 1, 1)","(264, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","","512"
"0","123","python","h","copy_striding","1","7","(256, 1, 1)","(264, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","","2,048"
"0","123","python","h","copy_striding","1","7","(256, 1, 1)","(264, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum","","5"
"0","123","python","h","copy_striding","1","7","(256, 1, 1)","(264, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","4,512"
"1","123","python","h","wylie_init","1","7","(256, 1, 1)","(4, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_requests_pipe_lsu_mem_global_op_st.sum","","9"
'''


def test_parse_ncu_csv():
    launches = V.parse_ncu_csv(NCU_CSV)
    assert [lc.kernel for lc in launches] == ["copy_striding", "wylie_init"]
    first = launches[0]
    assert first.counts[("loads", "requests")] == 512
    assert first.counts[("loads", "transactions")] == 2048
    assert abs(first.kernel_ms - 0.004512) < 1e-12
    assert V.merged(first.counts)[("atom", "transactions")] == 5
    assert launches[1].counts[("stores", "requests")] == 9


def test_every_case_runs_on_the_simulator_and_agrees_with_itself(tmp_path):
    dev = simgpu.get_device("sim:h100")
    dev.default_engine = "lockstep"       # outputs and counts, not times: the fast engine
    selected = V.cases(quick=True)
    a = V.run_cases(dev, selected, [0])
    b = V.run_cases(dev, selected, [0])
    names = {c.name for c in selected}
    assert {"copy_striding", "wylie", "random-splitter 64 even"} <= names
    for key, (outputs, launches) in a.items():
        assert launches and all(lc.counts for lc in launches)
        for k in outputs:
            assert np.array_equal(outputs[k], b[key][0][k])
    # compare() against itself: every output identical and every count equal
    manifest = [(name, seed, [lc.kernel for lc in ls]) for (name, seed), (_, ls) in b.items()]
    table = V.compare(selected, a, b, [lc for _, (_, ls) in b.items() for lc in ls], manifest)
    assert all(r[2] for r in table["outputs"])
    assert all(r[7] == "equal" for r in table["counts"])
    V.write_validation_page(tmp_path / "v.md", table, "itself", selected, V.project_kernels())
    text = (tmp_path / "v.md").read_text()
    assert "runs bit-identical" in text and "## Kernels not validated by any case" in text


def test_the_report_gives_the_times_by_kernel(tmp_path):
    times = [("a", 0, 0, "k1", None, 2.0, 1.0), ("a", 0, 1, "k2", None, 1.0, 1.1),
             ("a", 1, 0, "k1", None, 1.0, 0.6), ("a", 1, 1, "k2", None, 1.0, None)]
    assert V.by_kernel(times) == {"k1": [0.5, 0.6], "k2": [1.1]}
    table = {"outputs": [], "counts": [], "times": times, "unpaired": []}
    V.write_validation_page(tmp_path / "v.md", table, "itself", [], {})
    text = (tmp_path / "v.md").read_text()
    assert "| k1 | 2 | 0.55 | 0.50-0.60 | 0 |" in text and "| k2 | 1 | 1.10 | 1.10-1.10 | 1 |" in text
    assert text.index("| k1 |") < text.index("| k2 |")


def test_runs_with_different_rounds_pair_round_by_round():
    L = V.LaunchCounts
    sim = [L(k) for k in ("sv0", "sv1", "sv2", "sv1", "sv2", "label")]
    gpu = [L(k) for k in ("sv0", "sv1", "sv2", "sv1", "sv2", "sv1", "sv2", "label")]
    assert V.pair_launches(sim, gpu) == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 7)]
    assert V.pair_launches(gpu, sim)[-1] == (7, 5)


def test_project_kernels_are_found():
    kernels = V.project_kernels()
    assert "copy_striding" in kernels and "rs3_walk_64" in kernels


def test_both_scripts_read_ncu_csv_through_one_parser():
    """validate and calibrate share simgpu_apps.gpu_tools.ncu_csv: the same launches, and the
    same clear error where ncu printed no CSV (a failed profile, say)."""
    import pytest
    from simgpu_apps.gpu_tools.calibrate_gpu import parse_ncu
    from simgpu_apps.gpu_tools import ncu_csv
    raw = ncu_csv.parse_csv(NCU_CSV)
    assert [k for k, _ in raw] == [lc.kernel for lc in V.parse_ncu_csv(NCU_CSV)]
    assert [k for k, _ in raw] == [l["kernel"] for l in parse_ncu(NCU_CSV)]
    assert raw[0][1]["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == "2048"
    for parse in (V.parse_ncu_csv, parse_ncu):
        with pytest.raises(ValueError, match="no ncu CSV header"):
            parse("==ERROR== the application returned an error\n")


def test_the_simulators_side_is_the_same_in_any_number_of_processes():
    """run_sim: each (case, seed) on a fresh device with an empty L2 at each launch, so
    outputs, counts and times do not depend on the processes or on what ran before."""
    selected = [c for c in V.cases(quick=True) if c.name in ("copy_striding", "random-splitter 64 even")]
    one = V.run_sim(selected, [0, 1], quick=True, jobs=1)
    two = V.run_sim(selected[::-1], [1, 0], quick=True, jobs=2)
    assert set(one) == set(two) == {(c.name, s) for c in selected for s in (0, 1)}
    for key, (outputs, launches) in one.items():
        other_outputs, other_launches = two[key]
        assert all(np.array_equal(outputs[k], other_outputs[k]) for k in outputs)
        assert [(lc.kernel, lc.counts, lc.kernel_ms) for lc in launches] == \
               [(lc.kernel, lc.counts, lc.kernel_ms) for lc in other_launches]
    # as ncu's default --cache-control all (test_memory_timing checks what it does)
    dev = V.sim_device()
    assert (dev.name, dev.default_engine, dev.cache_control) == ("sim:h100", "timed-block", "all")
