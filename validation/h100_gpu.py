"""Measure the H100 held-out set on the GPU, under Nsight Compute, before any tuning.

    python -m validation.h100_gpu --out DIR [--replay-mode application|kernel] [--only TEXT]

on a machine with an NVIDIA GPU, CuPy and ncu. Every case of validation.heldout
(sizes "full") runs through the project's cuda device under
``ncu --clock-control none --cache-control all`` (ncu's default: every profiled
kernel starts with flushed caches) and the script records, per launch,
gpu__time_duration.sum and the request and sector counts of global loads, stores,
atomics and reductions (the built-in validation's METRICS), plus a checksum of
every output array and whether it equals the case's numpy reference. It writes
DIR/h100_heldout_gpu.json (with date, device, driver, ncu version, commit).

Application replay (the default) reruns the whole worker once per ncu pass instead
of saving and restoring device memory around each kernel: the chase allocates up
to 40 GiB. The worker is deterministic (fixed seeds), so the passes see the same
launches.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

import simgpu

from . import heldout
from simgpu_apps.gpu_tools import ncu_csv

RESULT = "h100_heldout_gpu.json"


def checksum(a: np.ndarray) -> dict:
    """What the comparison needs of an output: its bytes' sha256, dtype, length, sum."""
    a = np.ascontiguousarray(a)
    total = float(a.astype(np.float64).sum()) if a.dtype.kind == "f" else int(a.astype(object).sum())
    return {"sha256": hashlib.sha256(a.tobytes()).hexdigest(), "dtype": str(a.dtype),
            "n": int(a.size), "sum": total}


def run_case(dev, case) -> dict:
    """One case on ``dev``: its launches' kernel names, its outputs' checksums and
    whether each equals the numpy reference."""
    t0 = time.time()
    outputs, reports = case.run(dev)
    ref = case.reference()
    return {"case": case.name, "kernel": case.kernel, "what": case.what,
            "kernels": [r.kernel for r in reports],
            "outputs": {k: {**checksum(v), "equals_numpy": bool(np.array_equal(v, ref[k]))}
                        for k, v in outputs.items()},
            "host_seconds": round(time.time() - t0, 2)}, reports


def worker(out: pathlib.Path, only: str | None):
    dev = simgpu.get_device("cuda")
    manifest = []
    for case in heldout.cases("full"):
        if only and only not in case.name:
            continue
        row, _ = run_case(dev, case)
        dev.synchronize()
        manifest.append(row)
        print(f"  {case.name}: {row['host_seconds']} s", flush=True)
        dev.cp.get_default_memory_pool().free_all_blocks()
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


def machine_facts() -> dict:
    def cmd(*args):
        try:
            return subprocess.run(args, capture_output=True, text=True, timeout=60).stdout.strip()
        except Exception as exc:                    # a fact we could not read is named so
            return f"unavailable ({exc})"
    smi = cmd("nvidia-smi", "--query-gpu=name,driver_version,memory.total",
              "--format=csv,noheader")
    return {"date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "nvidia_smi": smi, "ncu_version": cmd(ncu_path(), "--version").splitlines()[-1:],
            "commit": os.environ.get("SIMGPU_COMMIT", "unknown"),
            "python": sys.version.split()[0]}


def ncu_path() -> str:
    return ncu_csv.find_ncu() or "ncu"


def attach(manifest: list, launches: list) -> list:
    """Give each case its launches from ncu's rows (in launch order); a row whose
    kernel name does not match the manifest's is an error, not a guess."""
    at = 0
    for row in manifest:
        row["launches"] = []
        for name in row["kernels"]:
            if at >= len(launches):
                raise RuntimeError(f"ncu saw {len(launches)} launches; the worker made more")
            lc = launches[at]
            if name not in lc.kernel:
                raise RuntimeError(f"launch {at}: the worker launched {name}, ncu saw {lc.kernel}")
            counts = ncu_csv.merged(lc.counts)
            row["launches"].append({
                "kernel": name, "gpu_time_ms": lc.kernel_ms,
                "counts": {f"{kind}.{what}": int(v) for (kind, what), v in sorted(counts.items())}})
            at += 1
    if at != len(launches):
        raise RuntimeError(f"ncu saw {len(launches)} launches, the worker made {at}")
    return manifest


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m validation.h100_gpu", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="h100-heldout-out")
    p.add_argument("--replay-mode", choices=("application", "kernel"), default="application")
    p.add_argument("--only", help="run only the cases whose name contains this text")
    p.add_argument("--timeout", type=int, default=540, help="seconds for the ncu run")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.worker:
        return worker(out, args.only)
    cmd = ncu_csv.ncu_command(ncu_path(), out / "ncu.csv",
                              ["-m", "validation.h100_gpu", "--worker", "--out", str(out)],
                              replay_mode=args.replay_mode)
    if args.only:
        cmd += ["--only", args.only]
    print("$", " ".join(cmd), flush=True)
    t0 = time.time()
    subprocess.run(cmd, check=True, timeout=args.timeout, env=ncu_csv.ncu_env())
    launches = ncu_csv.parse_ncu_csv((out / "ncu.csv").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    result = {**machine_facts(), "replay_mode": args.replay_mode,
              "ncu_options": "--clock-control none --cache-control all",
              "ncu_seconds": round(time.time() - t0, 1),
              "cases": attach(manifest, launches)}
    (out / RESULT).write_text(json.dumps(result, indent=1) + "\n")
    for row in result["cases"]:
        times = ", ".join(f"{lc['kernel']} {lc['gpu_time_ms']:.4f} ms" for lc in row["launches"])
        ok = all(o["equals_numpy"] for o in row["outputs"].values())
        print(f"{row['case']:42s} numpy {'ok' if ok else 'DIFFERS'}  {times}")


if __name__ == "__main__":
    main()
