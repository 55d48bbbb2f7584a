"""Where the validation's kernels spend their time, on the GPU and in the model: L1 and
L2 hit rates, DRAM bytes, the busiest L2 slice and, on the GPU, what its warps stalled
on.  Needs a GPU, CuPy and Nsight Compute for the GPU's side; the model's runs anywhere.

The validation (``python -m simgpu_apps.gpu_tools.validate``) compares each launch's requests,
sectors and time; where the times differ, this says why.  It runs the same cases
(``simgpu_apps.gpu_tools.validate.cases``, seed 0, chosen with ``--cases``) under ncu with
the metrics below, each kernel after ncu flushed the caches (its default), and on
``sim:h100`` as the validation does (an empty L2 at each launch), and sets per
launch the GPU's figures beside the model's.

    python -m calibration.kernel_counters --gpu OUT [--cases "wylie,shiloach-vishkin uniform"]
    python -m calibration.kernel_counters --report OUT [--md F.md]    # runs the model's side

(``--gpu`` asks ncu which of the metrics the GPU has and leaves out the others,
saying so; it runs ``--child OUT`` under ncu.)
"""
from __future__ import annotations

import datetime
import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np

from calibration import probe_cli
from simgpu_apps import table_out
from simgpu_apps.gpu_tools.validate import occurrences

# What the GPU's side reads (Nsight Compute metric names; .sum over the units, .max:
# the busiest unit, so sum / max / units says how evenly the slices were used).
CACHE_METRICS = [
    "gpu__time_duration.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum",
    "lts__t_sectors_srcunit_tex_lookup_hit.sum",
    "lts__t_sectors_srcunit_tex_lookup_miss.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_sectors_srcunit_tex_op_write.max",
    "lts__t_sectors_srcunit_tex.max",
    "lts__t_sectors_srcunit_tex.avg",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
]
# Why warps waited: the share of active warps' cycles stalled on each reason.
STALLS = ["long_scoreboard", "lg_throttle", "drain", "membar", "short_scoreboard",
          "barrier", "wait", "math_pipe_throttle", "mio_throttle", "not_selected",
          "selected", "no_instruction", "branch_resolving", "dispatch_stall"]
STALL_METRICS = [f"smsp__warp_issue_stalled_{s}_per_warp_active.pct" for s in STALLS]
DEFAULT_CASES = "shiloach-vishkin uniform,wylie-single-block,random-splitter 48 even"


def selected(names: str):
    from simgpu_apps.gpu_tools.validate import cases
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = {c.name: c for c in cases()}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; the validation's cases are: "
                         + ", ".join(known))
    return [known[n] for n in wanted]


def child(out: pathlib.Path, names: str) -> None:
    """Run the cases on the GPU (under ncu, which reads the counters) and say which
    launch belongs to which case."""
    import simgpu
    dev = simgpu.get_device("cuda")
    manifest = []
    for case in selected(names):
        _, reports = case.run(dev, 0)
        manifest.append([case.name, [r.kernel for r in reports]])
    (out / "manifest.json").write_text(json.dumps(manifest))


def available(ncu: str, metrics: list) -> tuple[list, list]:
    """The metrics this GPU has, and those it lacks (by their base names)."""
    listed = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True).stdout
    bases = {line.split()[0] for line in listed.splitlines() if line.strip()}
    has = [m for m in metrics if m.rsplit(".", 1)[0] in bases]
    return has, [m for m in metrics if m not in has]


def describe_gpu(out: pathlib.Path, lacking: list = ()) -> None:
    """OUT/gpu.json: the date, the GPU (name and driver, nvidia-smi) and the metrics ncu
    lacked, which a probe's report names its table by."""
    (out / "gpu.json").write_text(json.dumps({
        "date": str(datetime.date.today()), "lacking": list(lacking),
        "device": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                                  "--format=csv,noheader"], capture_output=True,
                                 text=True).stdout.strip()}))


def under_ncu(out: pathlib.Path, metrics: list, child: list, ncu_args: tuple = ()) -> None:
    """Run ``python child...`` under ncu (each kernel after a cache flush, unless
    ``ncu_args`` say otherwise), its CSV to OUT/ncu.csv; OUT/gpu.json says the date, the
    GPU and the metrics it lacked."""
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    metrics, lacking = available(ncu, metrics)
    if lacking:
        print("ncu lacks, left out:", ", ".join(lacking), flush=True)
    describe_gpu(out, lacking)
    cmd = [ncu, "--clock-control", "none", *ncu_args, "--csv", "--print-units", "base",
           "--metrics", ",".join(metrics), "--log-file", str(out / "ncu.csv"),
           sys.executable, *child]
    from simgpu_apps.gpu_tools.ncu_csv import ncu_env      # plain events under ncu
    subprocess.run(cmd, check=True, env=ncu_env())


def gpu(out: pathlib.Path, names: str) -> None:
    under_ncu(out, CACHE_METRICS + STALL_METRICS,
              ["-m", "calibration.kernel_counters", "--child", str(out), "--cases", names])


def model(names: str) -> dict:
    """{(case, kernel, r): (time us, l1 hit, l2 hit, DRAM MB)} of the r-th launch of each
    kernel, on sim:h100 as the validation runs it."""
    from simgpu_apps.gpu_tools.validate import sim_device
    rows = {}
    for case in selected(names):
        dev = sim_device()
        _, reports = case.run(dev, 0)
        for (kernel, r), rep in zip(occurrences([x.kernel for x in reports]), reports):
            x = rep.extra
            rows[(case.name, kernel, r)] = (rep.cycles / dev.config.gpu.core_clock_mhz,
                                            x.get("l1_hit_rate"), x.get("l2_hit_rate"),
                                            x.get("dram_bytes", 0) / 1e6)
    return rows


def report(out: pathlib.Path) -> str:
    from simgpu_apps.gpu_tools import ncu_csv
    table_out.need(out, "manifest.json", "ncu.csv", "gpu.json")
    meta = json.loads((out / "gpu.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    launches = ncu_csv.parse_csv((out / "ncu.csv").read_text())
    names = ",".join(name for name, _ in manifest)
    sim = model(names)

    def v(values, metric):
        return float(values[metric]) if metric in values else float("nan")

    lines = [f"Kernel counters: {meta['device']} (ncu, each kernel after a cache flush) "
             f"against sim:h100 (timed-block, an empty L2 at each launch), "
             f"`python -m calibration.kernel_counters`, GPU run {meta['date']}, seed 0.", "",
             "| case | launch | kernel | GPU us | sim us | L1 hit GPU / sim | "
             "L2 hit GPU / sim | DRAM MB GPU / sim | L2 busiest slice / mean | "
             "GPU stalls (share of warp cycles) |",
             "|---|---:|---|---:|---:|---|---|---|---:|---|"]
    at = 0
    for name, kernels in manifest:
        for k, (kernel, r) in enumerate(occurrences(kernels)):
            got_kernel, values = launches[at]
            at += 1
            s_us, s_l1, s_l2, s_dram = sim.get((name, kernel, r), [np.nan] * 4)
            hit1 = v(values, CACHE_METRICS[1])
            l1 = hit1 / max(hit1 + v(values, CACHE_METRICS[2]), 1)
            hit2 = v(values, CACHE_METRICS[3])
            l2 = hit2 / max(hit2 + v(values, CACHE_METRICS[4]), 1)
            dram = (v(values, "dram__bytes_read.sum") + v(values, "dram__bytes_write.sum")) / 1e6
            busiest = v(values, "lts__t_sectors_srcunit_tex.max") / \
                max(v(values, "lts__t_sectors_srcunit_tex.avg"), 1)
            stalls = sorted(((v(values, m), s) for s, m in zip(STALLS, STALL_METRICS)
                             if m in values), reverse=True)
            total = sum(x for x, _ in stalls) or 1
            top = ", ".join(f"{s} {x / total:.0%}" for x, s in stalls[:3])
            lines.append(
                f"| {name} | {k} | {got_kernel} | {v(values, CACHE_METRICS[0]) / 1e3:.2f} | "
                f"{s_us:.2f} | {l1:.0%} / {_pct(s_l1)} | {l2:.0%} / {_pct(s_l2)} | "
                f"{dram:.2f} / {s_dram:.2f} | {busiest:.1f} | {top} |")
    if meta["lacking"]:
        lines += ["", "Metrics the GPU lacked (left out): " + ", ".join(meta["lacking"])]
    return "\n".join(lines)


def _pct(x) -> str:
    return "-" if x is None or x != x else f"{x:.0%}"


def main(argv=None) -> int:
    return probe_cli.probe_main(
        __doc__, argv, usage_error="give --gpu OUT or --report OUT",
        gpu=probe_cli.action("run the cases under ncu, files to here",
                             lambda a: gpu(a.gpu, a.cases), mkdir=True),
        child=probe_cli.action(probe_cli.HIDDEN, lambda a: child(a.child, a.cases)),
        report=probe_cli.table("folder of a --gpu run", lambda a: report(a.report)),
        cases=probe_cli.setting("validation cases, comma-separated", default=DEFAULT_CASES),
        md=probe_cli.setting("with --report: also write the table here"))


if __name__ == "__main__":
    raise SystemExit(main())
