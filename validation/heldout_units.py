"""The held-out set on sim:h100, case by case, with what each memory unit did.

    python -m validation.heldout_units run CASE OUT.json [--dram KEY=VALUE ...]
    python -m validation.heldout_units table OUT_DIR [--markdown FILE]

``run`` simulates one case of validation.heldout (sizes "full") as
validation.h100_compare does (fresh sim:h100, timed-block engine, ``cache_control =
"all"``) and writes its launches: simulated ms, counts, and the report's memory figures
(``LaunchReport.extra``). ``--dram`` and ``--cache`` override ``[dram]`` and ``[cache]``
keys of h100.toml for the run (a mechanism switched on or off, never a figure fitted
here; e.g. ``--cache l2_write_masks=false``).

``table`` reads every OUT.json of a folder, holds each case's own kernel against the
committed GPU measurement (validation/h100_heldout/gpu-h100-2026-11-25.json) and prints
per kernel: sim/GPU time, requests and sectors (sim vs GPU), and each memory unit's busy
fraction over the kernel's simulated time, with the unit that is busiest:

- ``dram``: the DRAM data buses' utilization (report ``bus_utilization``);
- ``dram-q``: the DRAM read queues' mean occupancy (report ``queue_mean``, the reads an
  arriving read finds queued) over ``read_queue_depth``: high while the buses are not
  means the reads wait on the banks (row switches, activate limits), not on the buses;
- ``l2``: bytes booked on the L2 slices' combined budgets over ``l2_combined_bandwidth``;
- ``fill``: bytes through the slices' fill ports over ``l2_fill_bandwidth``;
- ``fabric``: bytes across the link between the L2 halves over both ways' bandwidth;
- ``issue``: the SMs' issue utilization (``sm_issue_utilization``).

Where none is above one half, the kernel waits on latency and the table says "latency".
These are the model's own figures: they say which unit sets the simulated time, not the
GPU's.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pathlib

from . import heldout
from .h100_compare import COUNT_KEYS, DEFAULT_GPU, TOLERANCE

BUSY_ENOUGH = 0.5


def sim_device(dram: dict, cache: dict | None = None):
    import simgpu
    dev = simgpu.get_device("sim:h100")
    dev.default_engine = "timed-block"
    dev.cache_control = "all"
    c = dev.config
    for section, changes in (("dram", dram), ("cache", cache or {})):
        if not changes:
            continue
        known = {f.name for f in dataclasses.fields(getattr(c, section))}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise SystemExit(f"--{section}: no key {', '.join(unknown)} in h100.toml's "
                             f"[{section}]; its keys: {', '.join(sorted(known))}")
        c = dataclasses.replace(c, **{section: dataclasses.replace(getattr(c, section), **changes)})
    dev.config = c
    return dev


def _value(text: str):
    if text in ("true", "false"):
        return text == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def run_case(name: str, dram: dict, cache: dict | None = None) -> dict:
    cases = {c.name: c for c in heldout.cases("full")}
    if name not in cases:
        raise SystemExit(f"no held-out case named {name!r}; the cases: {sorted(cases)}")
    dev = sim_device(dram, cache)
    try:
        outputs, reports = cases[name].run(dev)
    except MemoryError as exc:
        return {"case": name, "skipped": f"host memory ({exc})"}
    cfg = dev.config
    launches = []
    for r in reports:
        counts = {f"{kind}.{what}": int(getattr(getattr(r, attr), what))
                  for kind, attr in (("loads", "loads"), ("stores", "stores"), ("atom", "atomics"))
                  for what in ("requests", "transactions")}
        extra = {k: v for k, v in r.extra.items() if isinstance(v, (int, float, str))}
        launches.append({"kernel": r.kernel, "cycles": r.cycles,
                         "sim_ms": r.cycles / (cfg.gpu.core_clock_mhz * 1e3),
                         "counts": counts, "extra": extra})
    c = cfg.cache
    return {"case": name, "dram_overrides": dram, "cache_overrides": cache or {},
            "launches": launches,
            "budgets_gbps": {"read_queue_depth": cfg.dram.read_queue_depth,"l2": c.l2_combined_bandwidth_gbps,
                             "fill": c.l2_fill_bandwidth_gbps,
                             "fabric": 2 * c.l2_fabric_bandwidth_gbps if c.l2_fabric_bandwidth_gbps
                             else 0.0}}


def busy(launch: dict, budgets: dict) -> dict:
    """Each unit's busy fraction over the launch's simulated time."""
    e, seconds = launch["extra"], launch["sim_ms"] / 1e3
    out = {"dram": e.get("bus_utilization", 0.0),
           "dram-q": e.get("queue_mean", 0.0) / budgets.get("read_queue_depth", 32),
           "issue": e.get("sm_issue_utilization", 0.0)}
    for unit, key in (("l2", "l2_slice_bytes"), ("fill", "l2_fill_port_bytes"),
                      ("fabric", "l2_fabric_bytes")):
        rate = budgets.get(unit) or 0.0
        out[unit] = e.get(key, 0) / (rate * 1e9 * seconds) if rate and seconds else 0.0
    return out


def rows(folder: pathlib.Path, gpu_path: pathlib.Path = DEFAULT_GPU) -> list:
    gpu = {c["case"]: c for c in json.loads(gpu_path.read_text())["cases"]}
    kernel_of = {c.name: c.kernel for c in heldout.cases("full")}
    order = [c.name for c in heldout.cases("full")]
    sims = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    sims.sort(key=lambda s: order.index(s["case"]))
    out = []
    for s in sims:
        if "skipped" in s:
            out.append({"case": s["case"], "skipped": s["skipped"]})
            continue
        g = gpu[s["case"]]
        k = kernel_of[s["case"]]
        (gl,) = [x for x in g["launches"] if x["kernel"] == k]
        (sl,) = [x for x in s["launches"] if x["kernel"] == k]
        ratio = sl["sim_ms"] / gl["gpu_time_ms"]
        b = busy(sl, s["budgets_gbps"])
        top = max(b, key=b.get)
        e = sl["extra"]
        out.append({"case": s["case"], "ratio": ratio, "within": abs(ratio - 1) <= TOLERANCE,
                    "counts": {key: (sl["counts"][key], gl["counts"].get(key)) for key in COUNT_KEYS},
                    "busy": b, "dominant": top if b[top] > BUSY_ENOUGH else "latency",
                    "dram_queue_mean": e.get("queue_mean", 0.0), "row_hit_rate": e.get("row_hit_rate", 0.0),
                    "l2_writebacks": e.get("l2_writebacks", 0), "mshr_waits": e.get("mshr_waits", 0)})
    return out


def _pair(sim, gpu) -> str:
    return f"{sim:,}" if sim == gpu else f"{sim:,} / {gpu:,}"


def table(rs: list) -> str:
    lines = ["| case | sim/GPU | load req | load sectors | store req | store sectors | atomic req | "
             "atomic sectors | DRAM | DRAM-q | L2 | fill | fabric | issue | busiest | row hits | "
             "L2 write-backs |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in rs:
        if "skipped" in r:
            lines.append(f"| {r['case']} | not simulated: {r['skipped']} |" + " |" * 15)
            continue
        c, b = r["counts"], r["busy"]
        cells = [_pair(*c[k]) for k in COUNT_KEYS]
        lines.append(f"| {r['case']} | {r['ratio']:.2f}{'' if r['within'] else ' *'} | "
                     + " | ".join(cells)
                     + f" | {b['dram']:.2f} | {b['dram-q']:.2f} | {b['l2']:.2f} | {b['fill']:.2f} "
                       f"| {b['fabric']:.2f} | {b['issue']:.2f} | {r['dominant']} "
                       f"| {r['row_hit_rate']:.2f} | {r['l2_writebacks']:,} |")
    return "\n".join(lines)


def summary(rs: list) -> str:
    done = [r for r in rs if "ratio" in r]
    if not done:
        return "No case was compared."
    within = sum(r["within"] for r in done)
    gm = math.exp(sum(abs(math.log(r["ratio"])) for r in done) / len(done))
    equal = sum(all(s == g for s, g in r["counts"].values()) for r in done)
    return (f"{within} of {len(done)} kernels within 15% in time, geometric-mean error "
            f"{gm:.3f}x; every count equal {equal}/{len(done)}; not simulated: "
            f"{len(rs) - len(done)}.")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m validation.heldout_units", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("case")
    r.add_argument("out")
    r.add_argument("--dram", action="append", default=[], metavar="KEY=VALUE")
    r.add_argument("--cache", action="append", default=[], metavar="KEY=VALUE")
    t = sub.add_parser("table")
    t.add_argument("folder")
    t.add_argument("--gpu", default=str(DEFAULT_GPU))
    t.add_argument("--markdown")
    args = p.parse_args(argv)
    if args.cmd == "run":
        given = {}
        for section in ("dram", "cache"):
            given[section] = {}
            for item in getattr(args, section):
                key, sep, value = item.partition("=")
                if not sep:
                    raise SystemExit(f"--{section} {item!r}: write KEY=VALUE, e.g. --dram "
                                     "trefi_pb=638 or --cache l2_write_masks=false")
                given[section][key] = _value(value)
        out = run_case(args.case, given["dram"], given["cache"])
        pathlib.Path(args.out).write_text(json.dumps(out, indent=1))
        return
    rs = rows(pathlib.Path(args.folder), pathlib.Path(args.gpu))
    text = table(rs) + "\n\n" + summary(rs) + "\n"
    print(text)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
