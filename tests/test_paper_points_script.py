"""benchmarks/paper_points.py computes chosen points into the cache a paper run reads."""
import importlib.util
from pathlib import Path

from simgpu_apps.experiments import run_paper

ROOT = Path(__file__).resolve().parents[1]


def test_chosen_points_land_in_the_paper_runs_cache(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("paper_points",
                                                  ROOT / "benchmarks" / "paper_points.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "run"
    before = run_paper(out, "tiny", only=["lr"], dry_run=True, stream=open("/dev/null", "w"))
    mod.main([str(out), "--size", "tiny", "--only", "lr", "--where", "n=256",
              "--where", "packing=48", "--where", "splitters=random"])
    printed = capsys.readouterr().out
    assert printed.startswith("1 point(s) to compute") and "done lr_sim" in printed
    after = run_paper(out, "tiny", only=["lr"], dry_run=True, stream=open("/dev/null", "w"))
    assert after["todo"] == before["todo"] - 1          # the paper run reads it from the cache
    mod.main([str(out), "--size", "tiny", "--only", "lr", "--where", "n=256",
              "--where", "packing=48", "--where", "splitters=random"])
    assert capsys.readouterr().out.startswith("0 point(s)")   # nothing recomputed


def test_cached_sim_reports_only_the_cached_simulated_points(tmp_path):
    """--cached-sim: the one simulated point in the cache is used, the plan's other
    simulated points are left out (listed in report.md), nothing simulated is computed."""
    spec = importlib.util.spec_from_file_location("paper_points",
                                                  ROOT / "benchmarks" / "paper_points.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "run"
    plan = run_paper(out, "tiny", only=["lr"], dry_run=True, stream=open("/dev/null", "w"))["plan"]
    sims = [p for p in plan if p.kind == "sim"]
    mod.main([str(out), "--size", "tiny", "--only", "lr", "--where", "n=256",
              "--where", "packing=48", "--where", "splitters=random"])
    res = run_paper(out, "tiny", only=["lr"], progress=False, cached_sim=True,
                    stream=open("/dev/null", "w"))
    report = (out / "report.md").read_text()
    assert "## Points left out (--cached-sim: not in the cache)" in report
    left = report.split("## Points left out")[1].split("\n## ")[0]
    assert left.count("\n- `lr_sim") == len(sims) - 1       # all simulated points but the one
    kept = mod.chosen(sims, [("n", {"256"}), ("packing", {"48"}), ("splitters", {"random"})])
    assert len(kept) == 1 and f"`{kept[0].label()}`" not in left
    assert res["points"] == len(plan) - (len(sims) - 1) and res["cache_hits"] == 1


def test_slices_split_the_costliest_first_list(tmp_path, capsys):
    """--slice A:B keeps points A..B-1 of what is left, costliest first: 0:2 and 2:
    together list every point once; a malformed slice is refused with what to give."""
    import pytest
    spec = importlib.util.spec_from_file_location("paper_points",
                                                  ROOT / "benchmarks" / "paper_points.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = str(tmp_path / "run")

    def listed(*extra):
        mod.main([out, "--size", "tiny", "--only", "lr", "--list", *extra])
        lines = capsys.readouterr().out.splitlines()
        return lines[0], [ln for ln in lines[1:] if ln.startswith("  ")]

    _, every = listed()
    head, first = listed("--slice", "0:2")
    _, rest = listed("--slice", "2:")
    assert head.startswith("2 point(s)") and len(every) > 2
    assert first + rest == every
    for bad in ("2", "a:b", "1:2:3"):
        with pytest.raises(SystemExit, match="--slice"):
            mod.main([out, "--size", "tiny", "--only", "lr", "--list", "--slice", bad])
