"""calibration/loaded_latency_sweep.py's scoring of a sweep's output against the card's
figures: synthetic lines whose ratios are known."""
import math

import pytest

from calibration import loaded_latency_sweep as sweep


def lines(variant: str, factor: float, empty: float = 2.5) -> list:
    """A variant's output lines, each figure ``factor`` times the card's (cold cases net
    of ``empty``), with noise lines between them as the sweep's log has."""
    out = [f"| {variant} | empty n=1056 cold | {empty:.3f} | 1 |", "read n=4194304  cold  9.9 us"]
    for label, gpu in sweep.GPU_NET_US.items():
        out.append(f"| {variant} | {label} cold | {empty + factor * gpu:.6f} | 3 |")
    for shape, gpu in sweep.GPU_SHAPE_US.items():
        out.append(f"| {variant} | {shape} | {variant} | {factor * gpu:.6f} | 1 | 0.5 | x |")
    for experiment in sweep.STORES:
        out.append(f"| {variant} | store {experiment} | {factor * store_us(experiment):.6f} | 9 |")
    return out


def store_us(experiment: str) -> float:
    """A stand-in for the card's time of a store pattern (the committed run's in use)."""
    return 10.0 + len(experiment)


def test_score_nets_each_variant_of_its_own_empty_kernel():
    s = sweep.score(lines("a", 1.25, empty=2.0) + lines("b", 0.8, empty=3.0), store_us)
    assert set(s) == {"a", "b"}
    assert len(s["a"]) == len(sweep.GPU_NET_US) + len(sweep.GPU_SHAPE_US) + len(sweep.STORES)
    assert all(math.isclose(r, 1.25, rel_tol=1e-5) for r in s["a"].values())
    assert all(math.isclose(r, 0.8, rel_tol=1e-5) for r in s["b"].values())


def test_table_counts_the_band_and_the_geometric_mean_over_common_figures():
    out = lines("out", 1 / 1.2)
    out = [x for x in out if "stride32" not in x and "store full" not in x]
    text = sweep.table(lines("in", 1.1) + out, store_us)       # "out" lacks two figures
    rows = {r.split("|")[1].strip(): r for r in text.splitlines()}
    n = len(sweep.GPU_NET_US) + len(sweep.GPU_SHAPE_US) + len(sweep.STORES) - 2
    assert rows["within 15%"].split("|")[2:4] == [f" {n}/{n} ", f" 0/{n} "]
    assert rows["geometric-mean error"].split("|")[2:4] == [" 1.100x ", " 1.200x "]
    assert "stride32" not in rows and "store full" not in rows
    assert "read4" in rows and "store sector 16 B" in rows


@pytest.mark.parametrize("argv, says", [
    (["nosuch", "wide"], "variant 'nosuch': give one of base,"),
    (["[1]", "wide"], "a JSON object of h100.toml keys"),
    (["base", "store:full_x"], "the store patterns are store:full, store:sector_4_B"),
])
def test_a_bad_variant_or_store_job_is_refused_by_name(argv, says, capsys):
    with pytest.raises(SystemExit) as stop:
        sweep.main(argv)
    assert stop.value.code == 2 and says in capsys.readouterr().err
