"""benchmarks/paper_scaling.py runs the plan with each worker count and prints its table."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_scaling_script_prints_its_table(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("paper_scaling",
                                                  ROOT / "benchmarks" / "paper_scaling.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    md = tmp_path / "scaling.md"
    mod.main(["--size", "tiny", "--only", "lr", "--workers", "1", "2",
              "--markdown", str(md)])
    text = md.read_text()
    assert "| --jobs | 1 |" in text and "| --jobs | 2 |" in text
    assert "1.00x" in text                        # the speedup column against one process
    assert "bound" in text
