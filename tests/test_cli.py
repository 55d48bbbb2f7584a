"""The simgpu command: output people read, exit codes scripts rely on."""
import json

import pytest

from simgpu_apps.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_devices_lists_the_bundled_gpus(capsys):
    code, out, _ = run(capsys, "devices")
    assert code == 0
    assert "sim:gtx260" in out and "sm_13" in out and "111.9 GB/s" in out
    code, out, _ = run(capsys, "devices", "--json")
    names = {d["device"] for d in json.loads(out)}
    assert {"sim:gtx260", "sim:h100", "sim:h200"} <= names


def test_coalesce_pattern_views(capsys):
    code, out, _ = run(capsys, "coalesce", "--stride", "1", "--offset", "1")
    assert code == 0
    assert "half-warp 1 (lanes 16-31): 2 transactions (64 B, 32 B)" in out
    assert "3 transactions, 224 bytes moved for 128 bytes wanted (57% efficiency)" in out
    code, out, _ = run(capsys, "coalesce", "--stride", "2", "--arch", "sm_90", "--json")
    assert json.loads(out)["transactions"] == [[32 * k, 32] for k in range(8)]


def test_coalesce_example_shows_the_paper_lesson(capsys):
    code, out, _ = run(capsys, "coalesce", "--example", "striding", "-n", "8192")
    assert code == 0
    assert "copy_striding" in out and "copy_partitioning" in out
    assert "(100% efficiency)" in out
    assert "slower than striding on sim:gtx260" in out


@pytest.mark.parametrize("argv,text", [
    (("coalesce", "--arch", "sm_x"), "arch must be a string 'sm_NN'"),
    (("coalesce", "--lanes", "40"), "--lanes must be 1..32"),
    (("coalesce", "--device", "sim:nonexistent"), "nonexistent"),
    (("coalesce", "--stride", "-1", "--offset", "0"), "negative addresses"),
])
def test_bad_arguments_exit_2_with_one_line(capsys, argv, text):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert text in err and err.count("\n") <= 2 and "Traceback" not in err


def test_rank_and_cc_commands(capsys, tmp_path):
    import numpy as np
    from algorithms import generators
    from algorithms.list_ranking.sequential import rank_sequential
    succ = generators.random_forest(2000, 3, seed=4)
    np.save(tmp_path / "succ.npy", succ)
    code, out, _ = run(capsys, "rank", "--input", str(tmp_path / "succ.npy"),
                       "--output", str(tmp_path / "ranks.npy"), "--json")
    assert code == 0 and json.loads(out)["tails"] == 3
    assert np.array_equal(np.load(tmp_path / "ranks.npy"), rank_sequential(succ))
    code, out, _ = run(capsys, "cc", "--uniform", "500", "300", "--engine", "timed-block", "--json")
    summary = json.loads(out)
    assert code == 0 and summary["kernel_ms"] > 0 and summary["components"] >= 200


def test_show_cuda_prints_the_rendered_kernel(capsys):
    code, out, _ = run(capsys, "show-cuda", "simgpu_apps.lessons.coalescing:copy_striding")
    assert code == 0
    assert 'extern "C" __global__ void copy_striding(int32_t* src, int32_t* dst, int32_t n)' in out
    code, _, err = run(capsys, "show-cuda", "simgpu_apps.lessons.coalescing:nothing_here")
    assert code == 2 and "cannot find" in err


def test_show_cuda_finds_a_module_in_the_current_folder(tmp_path, monkeypatch, capsys):
    from simgpu_apps.cli import main
    (tmp_path / "mykernels_here.py").write_text(
        "from simgpu.lang import kernel, Array, i32, threadIdx\n"
        "@kernel\ndef block_sum(a: Array[i32]):\n    a[threadIdx.x] = 1\n")
    monkeypatch.chdir(tmp_path)
    assert main(["show-cuda", "mykernels_here:block_sum"]) == 0
    assert "block_sum" in capsys.readouterr().out


@pytest.mark.parametrize("argv,message", [
    (["rank", "--random", "100", "--output", "."], "is a directory"),
    (["paper", "--tiny", "--out", __file__], "is a file, not a folder"),
    (["coalesce", "--example", "striding", "-n", "0"], "must be >= 1"),
    (["rank", "--random", "100", "--output", "/nonexistent_dir/x.npy"], "does not exist"),
])
def test_bad_paths_and_values_are_one_line_errors(argv, message, capsys):
    from simgpu_apps.cli import main
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


def test_plot_without_matplotlib_is_one_line(monkeypatch, capsys, tmp_path):
    import sys
    from simgpu_apps.cli import main
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["coalesce", "--stride", "1", "--plot", str(tmp_path / "x.png")]) == 2
    assert "needs matplotlib" in capsys.readouterr().err


def test_coalesce_compares_architectures_side_by_side(capsys):
    code, out, _ = run(capsys, "coalesce", "--stride", "1", "--offset", "1",
                       "--arch", "sm_11,sm_13,sm_90")
    assert code == 0
    rows = {line.split()[0]: line.split()[-3:] for line in out.splitlines()
            if line.split() and line.split()[0] in ("sm_11", "sm_13", "sm_90")}
    assert rows == {"sm_11": ["32", "1024", "12%"], "sm_13": ["3", "224", "57%"],
                    "sm_90": ["5", "160", "80%"]}
    assert out.count("total: ") == 3            # and each one's picture
    code, out, _ = run(capsys, "coalesce", "--stride", "2", "--arch", "sm_13,sm_90", "--json")
    assert json.loads(out)["by_arch"]["sm_90"] == [[32 * k, 32] for k in range(8)]


def test_coalesce_steps_and_whole_warp_lane_labels(capsys):
    code, out, _ = run(capsys, "coalesce", "--stride", "1", "--offset", "1", "--steps")
    assert code == 0
    assert "only the upper half is used: 128 B -> 64 B at 0x40" in out
    assert "result: 3 transactions, 224 bytes" in out
    code, out, _ = run(capsys, "coalesce", "--stride", "1", "--arch", "sm_90")
    assert "|0123456789abcdefghijklmnopqrstuv|" in out      # lane 16 is 'g', not '0' again


def test_coalesce_stride_zero_is_a_broadcast_not_200_percent(capsys):
    code, out, _ = run(capsys, "coalesce", "--stride", "0")
    assert code == 0
    assert "64 bytes moved for 4 bytes wanted (6% efficiency; 31 lanes read a word" in out


@pytest.mark.parametrize("argv,text", [
    (("coalesce", "--example", "striding", "--stride", "4"), "--stride: options of a pattern"),
    (("coalesce", "--example", "striding", "--steps"), "--steps: options of a pattern"),
    (("coalesce", "--example", "striding", "--arch", "sm_11"), "its numbers are that device's"),
    (("coalesce", "--stride", "2", "--chart"), "--chart draws the launches of --example"),
])
def test_coalesce_refuses_options_it_would_ignore(capsys, argv, text):
    code, out, err = run(capsys, *argv)
    assert code == 2 and text in err and out == ""


def test_coalesce_example_chart_and_naming_note(capsys):
    code, out, _ = run(capsys, "coalesce", "--example", "striding", "-n", "4096",
                       "--device", "sim:h100", "--chart")
    assert code == 0
    assert "NVIDIA's strideCopy" in out
    assert out.count("memory chart: copy_") == 2 and "L2" in out and "DRAM" in out


def test_times_words_never_say_fractions_slower():
    from simgpu_apps.cli_coalesce import _times
    assert _times(2.0, 1.0) == "2.0x slower than"
    assert _times(0.9, 1.0) == "1.1x faster than"
    assert _times(1.01, 1.0) == "about as fast as"


def test_validate_help_names_itself_and_the_file_mode(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["validate", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: simgpu validate ")
    assert "simgpu validate FILE.py" in out and "cuda_backend" not in out
