"""Nsight Compute, in one place for every script that runs it: where ``ncu`` is, the
command line that runs a Python child under it, the metrics that match the
simulator's counts, and its ``--csv`` output read back (``validate`` for counters,
``calibrate`` for times, ``validation.h100_gpu`` for the held-out set,
``simgpu_apps.compare_ncu`` for a user's own cases)."""
from __future__ import annotations

import csv
import io
import os
import shutil
import sys
from dataclasses import dataclass, field

# Nsight Compute metrics for each of the simulator's counts (GPU.md lists them;
# atomics whose result is unused compile to reductions, counted as op_red).
METRICS = {
    ("loads", "requests"): "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    ("loads", "transactions"): "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    ("stores", "requests"): "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    ("stores", "transactions"): "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    ("atom", "requests"): "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    ("atom", "transactions"): "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
    ("red", "requests"): "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    ("red", "transactions"): "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
}
TIME_METRIC = "gpu__time_duration.sum"
DEFAULT_NCU = "/usr/local/cuda/bin/ncu"


@dataclass
class LaunchCounts:
    kernel: str
    counts: dict = field(default_factory=dict)   # (kind, what) -> int
    time_ms: float | None = None                 # as the device reports it
    kernel_ms: float | None = None               # without launch overhead (sim: cycles)


def find_ncu() -> str | None:
    """``ncu`` on PATH, else CUDA's default install place, else None."""
    found = shutil.which("ncu")
    if found:
        return found
    return DEFAULT_NCU if os.access(DEFAULT_NCU, os.X_OK) else None


def ncu_command(ncu: str, log_file, child_args, metrics=None, cache_control="all",
                replay_mode=None) -> list:
    """``ncu --clock-control none --cache-control ... --csv ... python CHILD_ARGS``:
    base units (ns, plain counts), one CSV row per launch and metric in ``log_file``.
    Run it with ``ncu_env()``."""
    metrics = metrics or list(METRICS.values()) + [TIME_METRIC]
    cmd = [ncu, "--clock-control", "none", "--cache-control", cache_control]
    if replay_mode:
        cmd += ["--replay-mode", replay_mode]
    return cmd + ["--csv", "--print-units", "base", "--metrics", ",".join(metrics),
                  "--log-file", str(log_file), sys.executable, *child_args]


def ncu_env() -> dict:
    """The child's environment under ncu: unbuffered output, and the cuda device's plain
    CUDA events (no gate kernel: ncu serializes launches, so a kernel waiting for the
    host's next call would wait out its timeout; cuda_backend.kernel_timing)."""
    return {**os.environ, "PYTHONUNBUFFERED": "1", "SIMGPU_CUDA_TIMING": "events"}


def parse_csv(text: str) -> list:
    """[(kernel name, {metric name: value text without thousands separators})], one
    per profiled launch, in launch order. Raises ValueError without ncu's header."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    at = next((i for i, r in enumerate(rows) if r[:2] == ["ID", "Process ID"]), None)
    if at is None:
        raise ValueError("no ncu CSV header ('ID', 'Process ID', ...) in the ncu output")
    header = rows[at]
    col = {k: header.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Value")}
    by_id: dict = {}
    for r in rows[at + 1:]:
        if len(r) != len(header) or r[0] == "ID":
            continue
        _, metrics = by_id.setdefault(int(r[col["ID"]]), (r[col["Kernel Name"]], {}))
        metrics[r[col["Metric Name"]]] = r[col["Metric Value"]].replace(",", "")
    return [by_id[k] for k in sorted(by_id)]


def parse_ncu_csv(text: str) -> list:
    """Launches in order, each a LaunchCounts with the METRICS read from ncu's CSV."""
    inverse = {m: key for key, m in METRICS.items()}
    launches = []
    for kernel, values in parse_csv(text):
        lc = LaunchCounts(kernel)
        for metric, value in values.items():
            if metric in inverse:
                lc.counts[inverse[metric]] = int(float(value))
            elif metric == TIME_METRIC:
                lc.kernel_ms = float(value) / 1e6
        launches.append(lc)
    return launches


def merged(counts: dict) -> dict:
    """GPU counts with reductions folded into atomics, as the simulator counts them."""
    out = {k: v for k, v in counts.items() if k[0] != "red"}
    for what in ("requests", "transactions"):
        out[("atom", what)] = counts.get(("atom", what), 0) + counts.get(("red", what), 0)
    return out
