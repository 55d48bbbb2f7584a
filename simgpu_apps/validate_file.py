"""``simgpu validate FILE.py``: the cases of a user's file on two devices, side by side.

FILE.py defines ``CASES``, a list of dicts with ``kernel``, ``grid``, ``block``,
``args`` (host values) and optionally ``name`` and ``rtol``. Each case runs through
simgpu_apps.compare.compare; where one device is the GPU (``cuda``) and ncu is
found, the file's cases also run under Nsight Compute (simgpu_apps.compare_ncu) for
the GPU's counts and its cold-L2 kernel times. ``--plot`` draws the scatter of the
two devices' times (simgpu_apps.scatter_svg).
"""
from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import sys
import tempfile

import simgpu
from simgpu.lang.errors import ArgumentError

from . import compare_ncu, scatter_svg
from .compare import case_names, compare, load_cases, summary_markdown  # noqa: F401
from .gpu_tools.ncu_csv import find_ncu


def _parser():
    ap = argparse.ArgumentParser(prog="simgpu validate FILE.py", description=(
        "Run the kernels of FILE.py (its CASES) on two devices and compare outputs, "
        "counts and cold-L2 times. Simulator-only by default; --devices sim:h100,cuda "
        "holds the simulator against the GPU (counts from Nsight Compute where ncu is "
        "found). docs/validate-your-kernel.md"))
    ap.add_argument("file")
    ap.add_argument("--devices", default="sim:h100,sim:gtx260")
    ap.add_argument("--engines", default=",", help="engine per device, e.g. lockstep,timed")
    ap.add_argument("--json", action="store_true", help="print JSON, not Markdown tables")
    ap.add_argument("--markdown", action="store_true", help="a header and a summary table "
                    "first (date, devices, file), then a table per case")
    ap.add_argument("--plot", metavar="OUT.svg|OUT.png", help="scatter of the two devices' "
                    "times over all cases, log-log, with y = x and the 15%% band")
    ap.add_argument("--ncu-dir", metavar="DIR", help="keep ncu's CSV and the child's manifest "
                    "here (default: a temporary folder)")
    ap.add_argument("--gpu-json", metavar="FILE", help="take the second device's side (its "
                    "counts, times, the outputs' verdicts) from an earlier --json run of this "
                    "file and run only the first device: the simulator after a model change, "
                    "without a GPU")
    ap.add_argument("--repeats", type=int, default=5, help="GPU launches per case for the "
                    "CUDA-event time (median); default 5")
    return ap


def _check(args):
    """Every option, before any case runs."""
    devices = tuple(d.strip() for d in args.devices.split(","))
    engines = tuple((e.strip() or None) for e in args.engines.split(","))
    if len(devices) != 2 or len(engines) != 2:
        raise ArgumentError("--devices and --engines take two comma-separated names")
    if args.repeats < 1:
        raise ArgumentError(f"--repeats must be >= 1, not {args.repeats}")
    if args.plot:
        plot = pathlib.Path(args.plot)
        if plot.suffix.lower() not in (".svg", ".png"):
            raise ArgumentError(f"--plot {args.plot}: name an .svg or a .png file")
        if plot.is_dir() or not plot.parent.is_dir():
            raise ArgumentError(f"--plot {args.plot}: not a file in an existing folder")
        if plot.suffix.lower() == ".png":
            try:
                scatter_svg.check_png_possible()
            except ValueError as exc:
                raise ArgumentError(str(exc)) from None
    if args.gpu_json and not pathlib.Path(args.gpu_json).is_file():
        raise ArgumentError(f"--gpu-json {args.gpu_json}: no such file (an earlier --json run)")
    if args.ncu_dir and pathlib.Path(args.ncu_dir).is_file():
        raise ArgumentError(f"--ncu-dir {args.ncu_dir} is a file; name a folder")
    return devices, engines


def _with_ncu(args, results, devices):
    """ncu's counts and times for the GPU side, or a note in every case saying why not."""
    gpu_side = next(k for k, d in enumerate(devices) if d.startswith("cuda"))
    ncu = find_ncu()
    if ncu is None:
        note, launches = ("counts not compared: ncu not found on PATH (nor "
                          "/usr/local/cuda/bin/ncu); GPU times are CUDA events"), None
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(args.ncu_dir or tmp)
            launches, note = compare_ncu.profile(args.file, out, ncu, devices[gpu_side])
    for k, r in enumerate(results):
        if launches is None:
            r.notes = [n for n in r.notes if not n.startswith("counts not compared")] + [note]
        else:
            compare_ncu.attach(r, launches[k], gpu_side, r.device_counts[1 - gpu_side])


def _from_saved(args, cases, names, devices, engines):
    """The first device run now, the second taken from ``--gpu-json``: [Comparison]."""
    from .compare import Comparison, _open, _run, _time
    saved = json.loads(pathlib.Path(args.gpu_json).read_text())
    if not isinstance(saved, list) or [c.get("case") for c in saved] != names:
        raise ArgumentError(f"--gpu-json {args.gpu_json} holds other cases than {args.file} "
                            f"({[c.get('case') for c in saved] if isinstance(saved, list) else '?'})")
    results = []
    for name, c, old in zip(names, cases, saved):
        dev = _open(devices[0], engines[0])
        _, reps = _run(dev, c["kernel"], c["grid"], c["block"], list(c["args"]), 1)
        t, how, over = _time(dev, reps)
        mine = {f"{k}.{f}": getattr(getattr(reps[-1], k), f)
                for k in ("loads", "stores", "atomics") for f in ("requests", "transactions")}
        r = Comparison(c["kernel"].name, (f"{reps[-1].device} ({reps[-1].engine})", old["devices"][1]),
                       name=name, rtol=old["rtol"], times_ms=(t, old["time_ms"][1]),
                       time_sources=(how, old["time_sources"][1]),
                       launch_overhead_ms=(over, old["launch_overhead_ms"][1]))
        r.outputs = [(o["arg"], o["dtype"], o["equal"], o["max_diff"]) for o in old["outputs"]]
        r.counts = [(x["counter"], mine.get(x["counter"]), x["b"]) for x in old["counts"]
                    if x["counter"] in mine]
        r.notes = [n for n in old["notes"] if not n.startswith(old["devices"][0])] + [
            f"{old['devices'][1]}: from {args.gpu_json}; the outputs' verdicts are that run's "
            f"(its {old['devices'][0]} against the GPU)"]
        results.append(r)
    return results


def _header(args, argv, devices, results, gpu_name) -> str:
    import os
    commit = os.environ.get("SIMGPU_COMMIT", "")
    lines = [f"# simgpu validate {pathlib.Path(args.file).name}: {devices[0]} vs {devices[1]}", "",
             f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"
             + (f", commit {commit}" if commit else "") + f": `simgpu validate {' '.join(argv)}`.", ""]
    if gpu_name:
        lines += [f"GPU: {gpu_name}.", ""]
    if args.gpu_json:
        lines += [f"{devices[0]} run now; {results[0].devices[1]}'s side (counts, times, the "
                  f"outputs' verdicts) from `{args.gpu_json}`, an earlier --json run.", ""]
    lines += [summary_markdown(results), ""]
    return "\n".join(lines)


def main(argv) -> int:
    args = _parser().parse_args(argv)
    devices, engines = _check(args)
    cases = load_cases(args.file)
    if args.gpu_json:
        return _report(args, argv, devices, _from_saved(args, cases, case_names(cases), devices,
                                                         engines), "")
    opened = [simgpu.get_device(d) if d.startswith("cuda") else d for d in devices]
    gpu_name = next((d.gpu_name for d in opened if not isinstance(d, str)), "")
    results = []
    for k, (name, c) in enumerate(zip(case_names(cases), cases)):
        print(f"case {k + 1}/{len(cases)}: {name}", file=sys.stderr, flush=True)   # progress
        results.append(compare(c["kernel"], c["grid"], c["block"], *c["args"], devices=opened,
                               engines=engines, rtol=c.get("rtol", 1e-6), repeats=args.repeats,
                               name=name))
    if any(d.startswith("cuda") for d in devices):
        _with_ncu(args, results, devices)
    return _report(args, argv, devices, results, gpu_name)


def _report(args, argv, devices, results, gpu_name) -> int:
    if args.plot:
        writer = scatter_svg.write_png if args.plot.lower().endswith(".png") else scatter_svg.write_svg
        writer(results, args.plot)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
    else:
        if args.markdown:
            print(_header(args, argv, devices, results, gpu_name))
        print("\n\n".join(r.markdown() for r in results))
    bad = [r.name for r in results if not r.outputs_agree]
    if bad:
        print(f"\noutputs differ: {', '.join(bad)}")
    return 1 if bad else 0
