"""Run a user's kernel on two devices and compare outputs, counts and times.

    from simgpu_apps.compare import compare
    result = compare(double, 4, 128, a, out, 1000, devices=("sim:h100", "sim:gtx260"))
    print(result.table())          # or result.to_json(), result.markdown()

``args`` are host values: numpy arrays (copied to each device; every array is an
output too, compared after the launch) and scalars. Outputs are compared bitwise for
integer and bool arrays and within ``rtol`` (stated in the result) for floats.

Times are kernel times from a cold L2 on both sides: a simulated device empties its
L2 at the launch (``cache_control="all"``, as ncu's ``--cache-control all``), runs the
timed-block engine and gives ``report.cycles`` (the kernel's device time; its
``time_ms`` also holds the modelled host launch interval, reported apart); on the GPU (``cuda``) the arrays are uploaded, then FLUSH_BYTES
are written to push them out of L2, then the kernel runs, timed by CUDA events with
the host's launch call left out (cuda_backend.kernel_timing), median of ``repeats``
such launches (the outputs of the last; each launch gets fresh copies of the inputs).

Counts come from the simulator. A real GPU's launch carries none: the API says so
in ``notes``; ``simgpu validate FILE.py`` runs the file's cases under Nsight Compute
when ncu is found and then compares them, and takes the GPU's time from ncu
(simgpu_apps.compare_ncu). Without a GPU, compare two simulated configs, or one
config under two engines (``engines=("lockstep", "timed")``).
"""
from __future__ import annotations

import importlib.util
import json
import pathlib
import sys
from dataclasses import dataclass, field

import numpy as np

import simgpu
from simgpu.lang.errors import ArgumentError

KINDS = ("loads", "stores", "atomics")
FIELDS = ("requests", "transactions", "bytes")
FLUSH_BYTES = 256 << 20      # over 2x the L2 of any card the project knows (H100/H200: 50 MB)
NO_GPU_COUNTS = ("counts not compared: a real GPU's launch carries none; simgpu validate "
                 "FILE.py reads them with Nsight Compute (ncu) when it is on PATH")


@dataclass
class Comparison:
    kernel: str
    devices: tuple
    outputs: list = field(default_factory=list)    # (arg index, dtype, equal, max diff)
    counts: list = field(default_factory=list)     # (kind.field, a, b)
    times_ms: tuple = (None, None)
    rtol: float = 0.0
    notes: list = field(default_factory=list)
    name: str = ""                                 # the case's name (default: the kernel's)
    time_sources: tuple = ("", "")                 # how each time was taken
    launch_overhead_ms: tuple = (None, None)       # a GPU's host launch call, apart
    device_counts: tuple = (None, None)            # {"loads.requests": n, ...} where counted

    @property
    def outputs_agree(self) -> bool:
        return all(ok for _, _, ok, _ in self.outputs)

    @property
    def counts_agree(self) -> bool | None:
        """True/False where counts were compared, None where they were not."""
        return all(x == y for _, x, y in self.counts) if self.counts else None

    @property
    def ratio(self) -> float | None:
        """Time of device a over time of device b (sim / GPU for sim:h100,cuda)."""
        a, b = self.times_ms
        return a / b if a and b else None

    def to_dict(self) -> dict:
        return {"case": self.name or self.kernel, "kernel": self.kernel,
                "devices": list(self.devices), "rtol": self.rtol,
                "outputs": [dict(arg=i, dtype=d, equal=ok, max_diff=m)
                            for i, d, ok, m in self.outputs],
                "counts": [dict(counter=c, a=a, b=b) for c, a, b in self.counts],
                "time_ms": list(self.times_ms), "time_sources": list(self.time_sources),
                "launch_overhead_ms": list(self.launch_overhead_ms), "notes": self.notes}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def markdown(self) -> str:
        a, b = self.devices
        title = self.kernel if not self.name or self.name == self.kernel else \
            f"{self.name} (kernel {self.kernel})"
        lines = [f"### {title}: {a} vs {b}", "",
                 f"| what | {a} | {b} | verdict |", "|---|---:|---:|---|"]
        for i, d, ok, m in self.outputs:
            lines.append(f"| output arg {i} ({d}) | | | {'equal' if ok else f'differs (max {m})'} |")
        for c, x, y in self.counts:
            lines.append(f"| {c} | {_num(x)} | {_num(y)} | {'equal' if x == y else 'differs'} |")
        ta, tb = self.times_ms
        ratio = f"a/b {self.ratio:.2f}" if self.ratio else "-"
        lines.append(f"| time ms (cold L2) | {_fmt(ta)} | {_fmt(tb)} | {ratio} |")
        oa, ob = self.launch_overhead_ms
        if oa is not None or ob is not None:
            lines.append(f"| launch overhead ms (host, not in the time) | {_fmt(oa)} | {_fmt(ob)} | |")
        sources = [f"{d}: {s}" for d, s in zip(self.devices, self.time_sources) if s]
        if sources:
            lines.append("\ntimes: " + "; ".join(sources))
        lines += [f"\n{n}" for n in self.notes]
        return "\n".join(lines)

    def table(self) -> str:
        return self.markdown()


def _fmt(t):
    return "-" if t is None else f"{t:.6f}"


def _num(v):
    return f"{v:,}" if isinstance(v, int) else str(v)


def summary_markdown(results) -> str:
    """One row per case: outputs, counts, both times and their ratio, within 15% or not."""
    a, b = results[0].devices if results else ("a", "b")
    lines = [f"| case | outputs | counts | {a} ms | {b} ms | a/b | within 15% |",
             "|---|---|---|---:|---:|---:|---|"]
    for r in results:
        counts = {None: "not compared", True: "equal"}.get(r.counts_agree) or \
            "differ: " + ", ".join(c for c, x, y in r.counts if x != y)
        q = r.ratio
        lines.append(f"| {r.name or r.kernel} | {'equal' if r.outputs_agree else 'DIFFER'} | "
                     f"{counts} | {_fmt(r.times_ms[0])} | {_fmt(r.times_ms[1])} | "
                     f"{f'{q:.2f}' if q else '-'} | {('yes' if abs(q - 1) <= 0.15 else 'no') if q else '-'} |")
    ratios = [r.ratio for r in results if r.ratio]
    if ratios:
        lines += ["", f"a/b over {len(ratios)} cases: median {np.median(ratios):.2f}, range "
                  f"{min(ratios):.2f} to {max(ratios):.2f}, "
                  f"{sum(abs(q - 1) <= 0.15 for q in ratios)} within 15%."]
    return "\n".join(lines)


def _open(device, engine):
    dev = device if isinstance(device, simgpu.Device) else simgpu.get_device(device)
    if dev.is_simulated:
        dev.cache_control = "all"                    # every launch starts with an empty L2
        dev.default_engine = engine or "timed-block"
    return dev


def _flush_l2(dev):
    """Write FLUSH_BYTES on the GPU and wait: what the kernel's inputs left in L2 is evicted."""
    scratch = dev.zeros(FLUSH_BYTES // 4, np.int32)
    dev.synchronize()
    del scratch


def _run(dev, kernel, grid, block, host, repeats):
    """Launch on ``dev`` with fresh copies of ``host``: (outputs, [reports])."""
    reports = []
    for _ in range(1 if dev.is_simulated else repeats):
        dargs = [dev.to_device(a) if isinstance(a, np.ndarray) else a for a in host]
        if not dev.is_simulated:
            _flush_l2(dev)
        reports.append(dev.launch(kernel, grid, block, *dargs))
        outputs = [d.to_host() if isinstance(d, simgpu.DeviceArray) else None for d in dargs]
    return outputs, reports


def _time(dev, reports):
    """(time ms, how it was taken, launch overhead ms) of one device's launches."""
    if dev.is_simulated:
        rep = reports[0]
        if rep.cycles is None or rep.time_ms is None:
            return rep.time_ms, "", None
        # The kernel's device time, as Nsight Compute's gpu__time_duration and the
        # gated events measure it: report.cycles (the body and the GPU's fixed cost per
        # kernel). report.time_ms adds the host's launch interval where that is longer:
        # reported apart, as the GPU's launch overhead is.
        kernel_ms = rep.cycles / (dev.config.gpu.core_clock_mhz * 1e3)
        how = (f"simulated kernel time (report.cycles), engine {rep.engine}, empty L2 at the "
               "launch; the modelled host launch interval apart")
        return kernel_ms, how, max(rep.time_ms - kernel_ms, 0.0)
    times = [r.time_ms for r in reports if r.time_ms is not None]
    timing = reports[0].extra.get("kernel_timing", "events")
    how = (f"CUDA events ({timing}), median of {len(times)} launches, each after writing "
           f"{FLUSH_BYTES >> 20} MiB to flush L2")
    overheads = [r.launch_overhead_ms for r in reports if r.launch_overhead_ms is not None]
    return (float(np.median(times)) if times else None, how,
            float(np.median(overheads)) if overheads else None)


def compare(kernel, grid, block, *args, devices=("sim:h100", "sim:gtx260"), engines=(None, None),
            rtol: float = 1e-6, repeats: int = 5, name: str = "") -> Comparison:
    """Launch ``kernel`` with the same host ``args`` on both ``devices``; see the module."""
    if not isinstance(kernel, simgpu.lang.Kernel):
        raise ArgumentError(f"compare takes a @kernel, not {type(kernel).__name__}")
    if len(devices) != 2 or len(engines) != 2:
        raise ArgumentError("compare needs two devices (and two engines, None for the default)")
    if not isinstance(rtol, (int, float)) or isinstance(rtol, bool) or rtol < 0:
        raise ArgumentError(f"rtol must be a number >= 0, not {rtol!r}")
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ArgumentError(f"repeats must be an int >= 1, not {repeats!r}")
    host = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
    results, reports, timing = [], [], []
    for device, engine in zip(devices, engines):
        dev = _open(device, engine)
        outputs, reps = _run(dev, kernel, grid, block, host, repeats)
        results.append(outputs)
        reports.append(reps[-1])
        timing.append(_time(dev, reps))
    names = tuple(f"{r.device} ({r.engine})" for r in reports)
    out = Comparison(kernel.name, names, rtol=rtol, name=name or kernel.name,
                     times_ms=tuple(t for t, _, _ in timing),
                     time_sources=tuple(h for _, h, _ in timing),
                     launch_overhead_ms=tuple(o for _, _, o in timing))
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
    out.device_counts = tuple({f"{k}.{f}": getattr(getattr(r, k), f) for k in KINDS for f in FIELDS}
                              if r.counted else None for r in reports)
    if all(r.counted for r in reports):
        for kind in KINDS:
            for f in FIELDS:
                out.counts.append((f"{kind}.{f}", getattr(getattr(reports[0], kind), f),
                                   getattr(getattr(reports[1], kind), f)))
    else:
        out.notes.append(NO_GPU_COUNTS)
    return out


# --- the cases of a user's file (simgpu validate FILE.py: simgpu_apps.validate_file) ---

def load_cases(path):
    """The CASES a user's file defines (see the module), checked."""
    p = pathlib.Path(path)
    if not p.is_file():
        raise ArgumentError(f"{path}: no such file (a Python file that defines CASES)")
    spec = importlib.util.spec_from_file_location(p.stem, p)
    module = importlib.util.module_from_spec(spec)
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


def case_names(cases) -> list:
    """Each case's ``name``, else its kernel's; a repeated name gets ' #k' (its index)."""
    names = [c.get("name") or c["kernel"].name for c in cases]
    return [f"{n} #{k}" if names.count(n) > 1 else n for k, n in enumerate(names)]
