"""Fig. 3 right's section of the paper report, from points computed apart (the JSON lines
in docs/results/fig3-right-points/, written by benchmarks/fig3_right_points.py before
0de7d84): the same analysis ``simgpu paper --size paper``
applies to its cache (experiments.fig3_right: the crossing, each curve's knee, the
memory model's counters per point), printed as Markdown.

    PYTHONPATH=. python3 benchmarks/fig3_right_report.py POINTS.jsonl [MORE.jsonl ...]

A point found in several files must have the same simulated time in each (else this
stops: the simulator is deterministic); the last file's row is used (its footprint).
"""
import argparse
import json
import sys
import time

from simgpu_apps.experiments import SIZES, Ctx, device_info
from simgpu_apps.experiments import list_ranking as L
from simgpu_apps.experiments.fig3_right import fig3_right
from simgpu_apps.experiments.paper_document import table_markdown


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    rows: dict = {}
    for name in args.files:
        with open(name) as f:
            for line in f:
                row = json.loads(line)
                key = (row["device"], row["variant"], row["n"])
                old = rows.get(key)
                if old and old["result"].get("time_ms") is not None \
                        and row["result"].get("time_ms") is not None \
                        and old["result"]["time_ms"] != row["result"]["time_ms"]:
                    sys.exit(f"{key}: {old['result']['time_ms']} ms in one file, "
                             f"{row['result']['time_ms']} in {name}")
                rows[key] = row
    devices = {k[0] for k in rows}
    if len(devices) != 1:
        sys.exit(f"points of several devices: {sorted(devices)}")
    device = devices.pop()
    info = device_info(device)
    ctx = Ctx(device=device, count_device=device, host="-", info=info,
              sizes=dict(SIZES["paper"]), size_name="paper")
    res, refused = {}, {}
    for (_, variant, n), row in rows.items():
        point = L.sim_point(ctx, variant, n)
        (refused if row["result"].get("refused") else res)[point] = row["result"]
    ns = sorted({n for _, _, n in rows})
    sec = fig3_right(ctx, res, ns, refused, L)
    meta = dict(device=device, device_desc=info["gpu_name"], date=time.strftime("%Y-%m-%d"),
                script="benchmarks/fig3_right_report.py " + " ".join(args.files))
    for c in sec.claims:
        print(f"**[{c.id}] {c.verdict}.** Paper: {c.paper}. Criterion: {c.criterion}.\n\n"
              f"Numbers: {c.numbers}\n")
    for t in sec.tables:
        print(table_markdown(t, meta))


if __name__ == "__main__":
    main()
