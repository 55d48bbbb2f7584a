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
