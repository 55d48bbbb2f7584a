"""Compare sim:h100 with the committed H100 measurements of the held-out set.

    python -m validation.h100_compare [--gpu validation/h100_heldout/gpu-h100-2026-11-25.json]
                                      [--jobs N] [--only TEXT] [--markdown FILE]
                                      [--read-scheduling at-arrival|fr-fcfs]

Each case of validation.heldout (sizes "full") runs on a fresh sim:h100 (the
timed-block engine, an empty L2 at each launch: ``cache_control = "all"``, as the
built-in validation runs it, since ncu flushed the GPU's caches before each kernel).
Per launch it prints: outputs equal (sha256 of the bytes), counts equal (load,
store and atomic requests and sectors, reductions folded into atomics), the
sim / GPU kernel time ratio (simulated cycles at the core clock against ncu's
gpu__time_duration.sum) and whether that is within 15%. The summary covers each
case's own kernel (a setup launch such as chain_link is shown, not scored):
the fraction within 15% and the geometric-mean error exp(mean |ln(sim/GPU)|).
``--read-scheduling`` runs sim:h100 with ``[dram] read_scheduling`` set so (default:
as configured).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import pathlib

from . import heldout
from .h100_gpu import checksum

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_GPU = HERE / "h100_heldout" / "gpu-h100-2026-11-25.json"
COUNT_KEYS = ("loads.requests", "loads.transactions", "stores.requests", "stores.transactions",
              "atom.requests", "atom.transactions")
TOLERANCE = 0.15


def sim_device(read_scheduling: str | None = None):
    import simgpu
    dev = simgpu.get_device("sim:h100")
    dev.default_engine = "timed-block"
    dev.cache_control = "all"
    if read_scheduling is not None:
        c = dev.config
        dev.config = dataclasses.replace(c, dram=dataclasses.replace(
            c.dram, read_scheduling=read_scheduling))
    return dev


def run_sim(name: str, read_scheduling: str | None = None) -> dict:
    """One case on a fresh simulator: {case, outputs: checksums, launches: [...]} or
    {case, skipped: why} when the host cannot hold the case's arrays."""
    case = next(c for c in heldout.cases("full") if c.name == name)
    dev = sim_device(read_scheduling)
    try:
        outputs, reports = case.run(dev)
    except MemoryError as exc:
        return {"case": name, "skipped": f"host memory ({exc})"}
    clock_khz = dev.config.gpu.core_clock_mhz * 1e3
    launches = []
    for r in reports:
        counts = {f"{kind}.{what}": int(getattr(getattr(r, attr), what))
                  for kind, attr in (("loads", "loads"), ("stores", "stores"), ("atom", "atomics"))
                  for what in ("requests", "transactions")}
        launches.append({"kernel": r.kernel, "sim_ms": r.cycles / clock_khz, "counts": counts})
    return {"case": name, "outputs": {k: checksum(v) for k, v in outputs.items()},
            "launches": launches}


def compare_case(gpu: dict, sim: dict, main_kernel: str) -> list:
    """Rows, one per launch: {case, kernel, scored, outputs_equal, counts_equal, diffs,
    gpu_ms, sim_ms, ratio, within}. ``scored`` marks the case's own kernel."""
    if "skipped" in sim:
        return [{"case": gpu["case"], "kernel": main_kernel, "scored": False,
                 "skipped": sim["skipped"]}]
    same = all(sim["outputs"].get(k, {}).get("sha256") == v["sha256"]
               for k, v in gpu["outputs"].items())
    if len(gpu["launches"]) != len(sim["launches"]):
        raise ValueError(f"{gpu['case']}: GPU made {len(gpu['launches'])} launches, "
                         f"the simulator {len(sim['launches'])}")
    rows = []
    for g, s in zip(gpu["launches"], sim["launches"]):
        diffs = {k: (s["counts"].get(k), g["counts"].get(k)) for k in COUNT_KEYS
                 if s["counts"].get(k) != g["counts"].get(k)}
        ratio = s["sim_ms"] / g["gpu_time_ms"]
        rows.append({"case": gpu["case"], "kernel": g["kernel"], "scored": g["kernel"] == main_kernel,
                     "outputs_equal": same, "counts_equal": not diffs, "diffs": diffs,
                     "gpu_ms": g["gpu_time_ms"], "sim_ms": s["sim_ms"], "ratio": ratio,
                     "within": abs(ratio - 1) <= TOLERANCE})
    return rows


def summary(rows: list) -> dict:
    """Over the scored rows that ran: how many within 15%, the fraction, the
    geometric-mean error exp(mean |ln ratio|), outputs and counts equal."""
    scored = [r for r in rows if r["scored"] and "ratio" in r]
    if not scored:
        return {"scored": 0}
    logs = [abs(math.log(r["ratio"])) for r in scored]
    return {"scored": len(scored), "within": sum(r["within"] for r in scored),
            "fraction_within": sum(r["within"] for r in scored) / len(scored),
            "geomean_error": math.exp(sum(logs) / len(logs)),
            "outputs_equal": sum(r["outputs_equal"] for r in scored),
            "counts_equal": sum(r["counts_equal"] for r in scored),
            "skipped": sum(1 for r in rows if "skipped" in r)}


def table(rows: list) -> str:
    lines = ["| case | kernel | outputs equal | counts equal | GPU ms | sim ms | sim/GPU | within 15% |",
             "|---|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['case']} | {r['kernel']} | - | - | - | - | - | not simulated: "
                         f"{r['skipped']} |")
            continue
        counts = "yes" if r["counts_equal"] else "NO: " + ", ".join(
            f"{k} sim {s:,} GPU {g:,}" for k, (s, g) in r["diffs"].items())
        note = "" if r["scored"] else " (setup, not scored)"
        lines.append(f"| {r['case']} | {r['kernel']}{note} | {'yes' if r['outputs_equal'] else 'NO'} "
                     f"| {counts} | {r['gpu_ms']:.4f} | {r['sim_ms']:.4f} | {r['ratio']:.2f} "
                     f"| {'yes' if r['within'] else 'no'} |")
    return "\n".join(lines)


def summary_text(s: dict) -> str:
    if not s.get("scored"):
        return "No case was compared."
    return (f"{s['within']} of {s['scored']} kernels within 15% in time "
            f"({100 * s['fraction_within']:.0f}%), geometric-mean error {s['geomean_error']:.2f}x; "
            f"outputs equal {s['outputs_equal']}/{s['scored']}, every count equal "
            f"{s['counts_equal']}/{s['scored']}; not simulated here: {s['skipped']}.")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m validation.h100_compare", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpu", default=str(DEFAULT_GPU))
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--only", help="compare only the cases whose name contains this text")
    p.add_argument("--markdown", help="also write the table and summary to this file")
    p.add_argument("--read-scheduling", choices=("at-arrival", "fr-fcfs"),
                   help="sim:h100's [dram] read_scheduling (default: as configured)")
    args = p.parse_args(argv)
    gpu = json.loads(pathlib.Path(args.gpu).read_text())
    by_name = {c["case"]: c for c in gpu["cases"]}
    selected = [c for c in heldout.cases("full") if c.name in by_name
                and (not args.only or args.only in c.name)]
    names = [c.name for c in selected]
    if args.jobs > 1:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(args.jobs) as pool:
            sims = list(pool.map(functools.partial(run_sim, read_scheduling=args.read_scheduling),
                                 names))
    else:
        sims = [run_sim(n, args.read_scheduling) for n in names]
    rows = [r for c, s in zip(selected, sims) for r in compare_case(by_name[c.name], s, c.kernel)]
    mode = f", read_scheduling {args.read_scheduling}" if args.read_scheduling else ""
    text = (f"sim:h100{mode} against {gpu['nvidia_smi']} (measured {gpu['date_utc']}, code "
            f"{gpu['commit']})\n\n{table(rows)}\n\n{summary_text(summary(rows))}\n")
    print(text)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
