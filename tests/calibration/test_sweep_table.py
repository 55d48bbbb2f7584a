"""calibration/loaded_latency_sweep.py's scoring of a sweep's output against the card's
figures: synthetic lines whose ratios are known."""
import math

from calibration import loaded_latency_sweep as sweep


def lines(variant: str, factor: float, empty: float = 2.5) -> list:
    """A variant's output lines, each figure ``factor`` times the card's (cold cases net
    of ``empty``), with noise lines between them as the sweep's log has."""
    out = [f"| {variant} | empty n=1056 cold | {empty:.3f} | 1 |", "read n=4194304  cold  9.9 us"]
    for label, gpu in sweep.GPU_NET_US.items():
        out.append(f"| {variant} | {label} cold | {empty + factor * gpu:.6f} | 3 |")
    for shape, gpu in sweep.GPU_SHAPE_US.items():
        out.append(f"| {variant} | {shape} | {variant} | {factor * gpu:.6f} | 1 | 0.5 | x |")
    return out


def test_score_nets_each_variant_of_its_own_empty_kernel():
    s = sweep.score(lines("a", 1.25, empty=2.0) + lines("b", 0.8, empty=3.0))
    assert set(s) == {"a", "b"}
    assert len(s["a"]) == len(sweep.GPU_NET_US) + len(sweep.GPU_SHAPE_US)
    assert all(math.isclose(r, 1.25, rel_tol=1e-5) for r in s["a"].values())
    assert all(math.isclose(r, 0.8, rel_tol=1e-5) for r in s["b"].values())


def test_table_counts_the_band_and_the_geometric_mean_over_common_figures():
    text = sweep.table(lines("in", 1.1) + lines("out", 1 / 1.2)[:-2])   # "out" lacks 2 shapes
    rows = {r.split("|")[1].strip(): r for r in text.splitlines()}
    n = len(sweep.GPU_NET_US) + len(sweep.GPU_SHAPE_US) - 2
    assert rows["within 15%"].split("|")[2:4] == [f" {n}/{n} ", f" 0/{n} "]
    assert rows["geometric-mean error"].split("|")[2:4] == [" 1.100x ", " 1.200x "]
    assert "stride32" not in rows and "read4" in rows
