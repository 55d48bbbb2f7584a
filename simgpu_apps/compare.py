"""Run a user's kernel on two devices and compare outputs, counts and times.

    from simgpu_apps.compare import compare
    result = compare(double, 4, 128, a, out, 1000, devices=("sim:h100", "sim:gtx260"))
    print(result.table())          # or result.to_json(), result.markdown()

``args`` are host values: numpy arrays (copied to each device; every array is an
output too, compared after the launch) and scalars. Outputs are compared bitwise for
integer and bool arrays and within ``rtol`` (stated in the result) for floats. Times:
each device starts the launch with an empty L2 (``cache_control="all"`` on a simulated
device, as ncu's ``--cache-control all``); a simulated device runs the timed-block
engine. Counts come from the simulator; a real GPU's report carries none (``counted``
is False), which the result says rather than compare. Without a GPU, compare two
simulated configs, or one config under two engines (``engines=("lockstep", "timed")``).

This is the first part of issue 21 item 1 (the API, simulator-only tested); the CLI
``simgpu validate my_kernels.py``, ncu counts and the scatter plot are not here yet.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

import simgpu
from simgpu.lang.errors import ArgumentError

KINDS = ("loads", "stores", "atomics")
FIELDS = ("requests", "transactions", "bytes")


@dataclass
class Comparison:
    kernel: str
    devices: tuple
    outputs: list = field(default_factory=list)    # (arg index, dtype, equal, max diff)
    counts: list = field(default_factory=list)     # (kind.field, a, b)
    times_ms: tuple = (None, None)
    rtol: float = 0.0
    notes: list = field(default_factory=list)

    @property
    def outputs_agree(self) -> bool:
        return all(ok for _, _, ok, _ in self.outputs)

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "devices": list(self.devices), "rtol": self.rtol,
                "outputs": [dict(arg=i, dtype=d, equal=ok, max_diff=m)
                            for i, d, ok, m in self.outputs],
                "counts": [dict(counter=c, a=a, b=b) for c, a, b in self.counts],
                "time_ms": list(self.times_ms), "notes": self.notes}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def markdown(self) -> str:
        a, b = self.devices
        lines = [f"### {self.kernel}: {a} vs {b}", "",
                 f"| what | {a} | {b} | verdict |", "|---|---:|---:|---|"]
        for i, d, ok, m in self.outputs:
            lines.append(f"| output arg {i} ({d}) | | | {'equal' if ok else f'differs (max {m})'} |")
        for c, x, y in self.counts:
            lines.append(f"| {c} | {x} | {y} | {'equal' if x == y else 'differs'} |")
        ta, tb = self.times_ms
        ratio = f"{tb / ta:.2f}x" if ta and tb else "-"
        lines.append(f"| time ms (cold L2) | {_fmt(ta)} | {_fmt(tb)} | b/a {ratio} |")
        lines += [f"\n{n}" for n in self.notes]
        return "\n".join(lines)

    def table(self) -> str:
        return self.markdown()


def _fmt(t):
    return "-" if t is None else f"{t:.6f}"


def _open(device, engine):
    dev = device if isinstance(device, simgpu.Device) else simgpu.get_device(device)
    if dev.is_simulated:
        dev.cache_control = "all"                    # every launch starts with an empty L2
        dev.default_engine = engine or "timed-block"
    return dev


def compare(kernel, grid, block, *args, devices=("sim:h100", "sim:gtx260"), engines=(None, None),
            rtol: float = 1e-6) -> Comparison:
    """Launch ``kernel`` with the same host ``args`` on both ``devices``; see the module."""
    if not isinstance(kernel, simgpu.lang.Kernel):
        raise ArgumentError(f"compare takes a @kernel, not {type(kernel).__name__}")
    if len(devices) != 2 or len(engines) != 2:
        raise ArgumentError("compare needs two devices (and two engines, None for the default)")
    if not isinstance(rtol, (int, float)) or isinstance(rtol, bool) or rtol < 0:
        raise ArgumentError(f"rtol must be a number >= 0, not {rtol!r}")
    host = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
    results, reports = [], []
    for device, engine in zip(devices, engines):
        dev = _open(device, engine)
        dargs = [dev.to_device(a) if isinstance(a, np.ndarray) else a for a in host]
        rep = dev.launch(kernel, grid, block, *dargs)
        results.append([d.to_host() if isinstance(d, simgpu.DeviceArray) else None for d in dargs])
        reports.append(rep)
    names = tuple(f"{r.device} ({r.engine})" for r in reports)
    out = Comparison(kernel.name, names, rtol=rtol,
                     times_ms=(reports[0].time_ms, reports[1].time_ms))
    for i, (x, y) in enumerate(zip(*results)):
        if x is None:
            continue
        if x.dtype.kind == "f":
            ok = bool(np.allclose(x, y, rtol=rtol, atol=0, equal_nan=True))
            diff = float(np.nanmax(np.abs(x - y))) if x.size else 0.0
        else:
            ok = bool(np.array_equal(x, y))
            diff = int(np.max(np.abs(x.astype(np.int64) - y.astype(np.int64)))) if x.size else 0
        out.outputs.append((i, str(x.dtype), ok, diff))
    if all(r.counted for r in reports):
        for kind in KINDS:
            for f in FIELDS:
                out.counts.append((f"{kind}.{f}", getattr(getattr(reports[0], kind), f),
                                   getattr(getattr(reports[1], kind), f)))
    else:
        out.notes.append("counts: not compared (a real GPU's launch carries none; Nsight "
                         "Compute reads them, which this comparison does not run yet)")
    return out


# --- simgpu validate my_kernels.py ----------------------------------------------------

def load_cases(path):
    """The cases a user's file defines: ``CASES``, a list of dicts with ``kernel``,
    ``grid``, ``block``, ``args`` (host values) and optionally ``name`` and ``rtol``."""
    import importlib.util
    from pathlib import Path
    p = Path(path)
    if not p.is_file():
        raise ArgumentError(f"{path}: no such file (a Python file that defines CASES)")
    spec = importlib.util.spec_from_file_location(p.stem, p)
    module = importlib.util.module_from_spec(spec)
    import sys
    sys.modules[p.stem] = module                # kernels read their source through it
    spec.loader.exec_module(module)
    cases = getattr(module, "CASES", None)
    if not isinstance(cases, (list, tuple)) or not cases:
        raise ArgumentError(f"{path} must define CASES = [dict(kernel=..., grid=..., block=..., "
                            "args=[...]), ...]")
    for k, c in enumerate(cases):
        missing = {"kernel", "grid", "block", "args"} - set(c) if isinstance(c, dict) else {"all"}
        if missing:
            raise ArgumentError(f"{path}: CASES[{k}] lacks {', '.join(sorted(missing))}")
    return cases


def validate_file(argv) -> int:
    """``simgpu validate FILE.py [--devices A,B] [--engines E,F] [--json|--markdown]``."""
    import argparse
    ap = argparse.ArgumentParser(prog="simgpu validate FILE.py", description=(
        "Run the kernels of FILE.py (its CASES) on two devices and compare outputs, "
        "counts and cold-L2 times. Simulator-only by default; --devices sim:h100,cuda "
        "holds the simulator against the GPU."))
    ap.add_argument("file")
    ap.add_argument("--devices", default="sim:h100,sim:gtx260")
    ap.add_argument("--engines", default=",", help="engine per device, e.g. lockstep,timed")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    devices = tuple(d.strip() for d in args.devices.split(","))
    engines = tuple((e.strip() or None) for e in args.engines.split(","))
    if len(devices) != 2 or len(engines) != 2:
        raise ArgumentError("--devices and --engines take two comma-separated names")
    results = []
    for c in load_cases(args.file):
        r = compare(c["kernel"], c["grid"], c["block"], *c["args"], devices=devices,
                    engines=engines, rtol=c.get("rtol", 1e-6))
        results.append(r)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
    else:
        print("\n\n".join(r.markdown() for r in results))
    bad = [r.kernel for r in results if not r.outputs_agree]
    if bad:
        print(f"\noutputs differ: {', '.join(bad)}")
    return 1 if bad else 0
