"""The calibration's cold DRAM cases on sim:h100, as configured and without some keys
(a mechanism's switch), side by side (docs/results/l2-fill-port.md).

    python -m calibration.cold_dram_cases [--without l2_fill_bandwidth_gbps]

Runs ``calibrate_cases.measure_sim`` (the calibration's own simulator side: timed-block,
the caches flushed before the launch) on the cold cases of the calibration's ``sim`` plan
that read DRAM (copy, read, gather at the sizes of docs/calibration/calibration-h100.md)
and the empty kernel, once on sim:h100 and once on a copy of h100.toml without the
``--without`` keys, and prints the microseconds (the kernel's time with the fixed cost)
and the time net of the empty kernel. The GPU's net times are those of the calibration
page (calibrate.py --compare), which this script does not read.
"""
from __future__ import annotations

import argparse
import datetime
import pathlib
import tempfile

import simgpu
from simgpu_apps.config_variants import h100_without
from simgpu_apps.gpu_tools.calibrate_cases import Case, FULL, measure_sim

CASES = [Case("copy", 1 << 20), Case("copy", 1 << 22), Case("read", 1 << 22), Case("read", 1 << 24),
         Case("gather", 1 << 20), Case("gather", 1 << 22)]


def times(name: str) -> dict:
    """{label: us} of the empty kernel and the cold cases on a fresh device each."""
    out = {}
    for case in [Case("empty", FULL)] + CASES:
        rows = measure_sim(simgpu.get_device(name), [case], states=("cold",))
        out[case.label] = rows[0]["us"]
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--without", nargs="+", default=["l2_fill_bandwidth_gbps"])
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = times("sim:" + h100_without(args.without, pathlib.Path(tmp)))
    now = times("sim:h100")
    empty = Case("empty", FULL).label
    print(f"# the calibration's cold DRAM cases on sim:h100, timed-block, {datetime.date.today()} "
          "(calibration/cold_dram_cases.py)")
    print(f"| case | without {', '.join(args.without)}: us, net us | as configured: us, net us |")
    print("|---|---|---|")
    for label in base:
        print(f"| {label} | {base[label]:.2f}, {base[label] - base[empty]:.2f} | "
              f"{now[label]:.2f}, {now[label] - now[empty]:.2f} |")


if __name__ == "__main__":
    main()
