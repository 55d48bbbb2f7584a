"""benchmarks/lr_point_peak.py: the peak memory of one paper list-ranking point, and
the wave log's largest arrays with --log-sizes."""
import argparse
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load():
    spec = importlib.util.spec_from_file_location("lr_point_peak",
                                                  ROOT / "benchmarks" / "lr_point_peak.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sizes_parse_and_bad_ones_say_what_to_give():
    mod = load()
    assert mod.nodes("10") == 1024 and mod.nodes("64e6") == 64_000_000
    for bad, says in (("abc", "give K"), ("1e0", "at least 2")):
        with pytest.raises(argparse.ArgumentTypeError, match=says):
            mod.nodes(bad)


def test_a_small_point_prints_its_peaks_and_the_logs_arrays(monkeypatch, capsys):
    pytest.importorskip("numba")
    from simgpu.mem.fast_jit import ENABLED
    from simgpu.sim import trace_log
    grow = trace_log.WaveLog.grow
    mod = load()
    monkeypatch.setattr(sys, "argv", ["lr_point_peak.py", "12", "--packing", "48",
                                      "--log-sizes"])
    mod.main()
    assert trace_log.WaveLog.grow is grow            # (the recording hook is taken off)
    out = capsys.readouterr().out
    assert "rank():" in out and "(ranks right: True)" in out
    if ENABLED:                          # (the wave log exists only on the compiled loop)
        assert "'rows'" in out and "'taddr'" in out
