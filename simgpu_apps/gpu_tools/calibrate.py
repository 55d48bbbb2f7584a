"""Microbenchmarks that calibrate the memory model, run the same way on any device.

    python -m simgpu_apps.gpu_tools.calibrate --device cuda     --out gpu.json     # on the GPU machine
    python -m simgpu_apps.gpu_tools.calibrate --device sim:h100 --out sim.json     # the simulator
    python -m simgpu_apps.gpu_tools.calibrate --compare gpu.json sim.json [--md table.md]
    python -m simgpu_apps.gpu_tools.calibrate --report gpu.json                    # the GPU's sweep

On the GPU, ``--steps`` picks what runs (``what:plan`` pairs, default all of
the sweep; ``--steps warm:rw,cold:rw,graph:gpu`` was the second H100 run;
``cold:sim@reverse`` runs a plan's cases in another order, one of ORDERS);
the simulator runs the ``sim`` plan (``--benches`` to split it over
processes; JSON files given comma-separated to ``--compare`` are pooled:
the GPU's figure is the median over all their launches, and the table gives
the range of the figure over the runs and orders it was pooled from).

Each benchmark is a kernel of the kernel language, so the GPU and the
simulator run the very same code, on the same grid (one full wave of
blocks: sm_count x 2048 / 256 blocks of 256 threads, grid-stride loops):

* ``empty``: a kernel that does nothing (its time is the GPU's fixed cost
  per kernel: launch, block dispatch, completion);
* ``copy``: coalesced copy of n ints; GB/s counting read + write;
* ``read`` / ``write``: streaming read (a load compared, never stored) or
  write of n ints; GB/s;
* ``gather``: ``out[i] = src[idx[i]]`` with a random permutation; G elements/s,
  by footprint (the L2 holds small footprints, not large ones);
* ``chase``: one thread following a random cycle of n nodes for ``steps``
  dependent loads; the latency per load is the slope between two step counts
  (fixed costs cancel);
* ``atomic``: every thread adds 1 to one counter; atomics per ns;
* ``atomic_spread``: thread i adds 1 to ``counter[i & (2^20 - 1)]``
  (4 MiB of counters, L2-resident); atomics per ns.

Two cache states, on both devices:

* ``warm``: one warm-up launch, then the measured ones, on the same buffers
  (footprints under the L2's size are served from it);
* ``cold``: caches emptied before every measured launch (on the GPU Nsight
  Compute's ``--cache-control all``; on the simulator a fresh L2).

Device time on the GPU is Nsight Compute's ``gpu__time_duration`` per launch
(``--clock-control none``, median over launches), not CUDA events around one
launch, which add the host's launch overhead (about 20 us through CuPy).
The sweep runs from sizes that are all fixed cost to sizes where the rate no
longer changes with n, so it shows where a rate has converged. Beside it, a
CUDA graph of back-to-back launches timed with events (warm) checks the
ncu durations without a profiler attached.

On the simulator the time is the timed-block engine's cycles at the
config's clock (without ``kernel_launch_overhead_us``).  The comparison
takes the GPU's time net of its empty kernel's (same grid), since the model
has no fixed GPU-side cost per kernel; both figures are in the table.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import numpy as np

import simgpu
from simgpu.lang import Array, atomic_add, blockDim, blockIdx, gridDim, i32, kernel, threadIdx

from . import ncu_csv


@kernel
def empty(out: Array[i32], n: i32):
    if n < 0:                       # never true: the kernel does no memory access
        out[0] = n


@kernel
def copy(src: Array[i32], dst: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        dst[i] = src[i]


@kernel
def read(src: Array[i32], out: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        if src[i] < 0:              # never true (src holds 0..n-1): a pure streaming read
            out[0] = i


@kernel
def write(dst: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        dst[i] = i


@kernel
def gather(src: Array[i32], idx: Array[i32], out: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        out[i] = src[idx[i]]


@kernel
def chase(nxt: Array[i32], out: Array[i32], steps: i32):
    j = 0
    for k in range(steps):
        j = nxt[j]
    out[0] = j


@kernel
def atomic_one_counter(counter: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        atomic_add(counter, 0, 1)


SPREAD_MASK = (1 << 20) - 1


@kernel
def atomic_spread(counter: Array[i32], n: i32, mask: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        atomic_add(counter, i & mask, 1)


KERNELS = {"empty": empty, "copy": copy, "read": read, "write": write, "gather": gather, "chase": chase,
           "atomic": atomic_one_counter, "atomic_spread": atomic_spread}
UNITS = {"empty": "us", "copy": "GB/s", "read": "GB/s", "write": "GB/s", "gather": "G elem/s", "chase": "ns/load",
         "atomic": "atomics/ns", "atomic_spread": "atomics/ns"}


@dataclasses.dataclass(frozen=True)
class Case:
    bench: str
    n: int                 # elements (copy, gather, atomics), nodes (chase), blocks (empty)
    steps: int = 0         # chase: dependent loads per launch

    @property
    def label(self) -> str:
        return f"{self.bench} n={self.n}" + (f" steps={self.steps}" if self.steps else "")

    def footprint(self) -> int:
        """Bytes the kernel touches."""
        return {"empty": 0, "copy": 8 * self.n, "read": 4 * self.n, "write": 4 * self.n, "gather": 12 * self.n, "chase": 4 * self.n,
                "atomic": 4, "atomic_spread": 4 * (SPREAD_MASK + 1)}[self.bench]

    def value(self, seconds: float) -> float:
        """The benchmark's rate for one launch of ``seconds`` (chase: see ``chase_latency``)."""
        b, n = self.bench, self.n
        if b == "empty":
            return seconds * 1e6
        if b in ("copy", "read", "write"):
            return self.footprint() / seconds / 1e9
        if b == "chase":
            return seconds * 1e9 / self.steps
        return n / seconds / 1e9           # gather: G elem/s; atomics: per ns


FULL = 132 * 2048 // 256      # blocks of one full wave on an H100 (and H200): 1056


def _p2(lo, hi, extra=()):
    return sorted({1 << k for k in range(lo, hi + 1, 2)} | {1 << k for k in extra})


PLANS = ("gpu", "rw", "sim", "quick")


def plan(kind: str) -> list:
    """The cases of a run: ``gpu`` (the whole sweep), ``rw`` (its streaming read and
    write part), ``sim`` (what the simulator can run in tens of seconds to minutes
    each), ``quick`` (tiny, for tests)."""
    if kind == "quick":
        return [Case("empty", FULL), Case("copy", 1 << 14), Case("gather", 1 << 14),
                Case("chase", 1 << 10, 64), Case("chase", 1 << 10, 256),
                Case("atomic", 1 << 12), Case("atomic_spread", 1 << 12)]
    chase_n = _p2(10, 26)
    chase_steps = (512, 4096)
    rw = [Case(b, n) for b in ("read", "write") for n in _p2(14, 28, (21, 23, 25))]
    if kind == "rw":
        return [Case("empty", b) for b in (1, FULL)] + rw
    if kind == "gpu":
        return ([Case("empty", b) for b in (1, 64, 264, FULL, 4 * FULL)]
                + [Case("copy", n) for n in _p2(10, 28, (21, 23, 25))] + rw
                + [Case("gather", n) for n in _p2(10, 26, (21, 23, 25))]
                + [Case("chase", n, s) for n in chase_n for s in chase_steps]
                + [Case("atomic", n) for n in _p2(10, 26)]
                + [Case("atomic_spread", n) for n in _p2(14, 26)])
    if kind == "sim":
        return ([Case("empty", FULL)]
                + [Case("copy", n) for n in (1 << 20, 1 << 22, 1 << 24)]
                + [Case(b, n) for b in ("read", "write") for n in (1 << 22, 1 << 24)]
                + [Case("gather", n) for n in (1 << 18, 1 << 20, 1 << 22, 1 << 24)]
                + [Case("chase", n, s) for n in chase_n for s in chase_steps]
                + [Case("atomic", n) for n in (1 << 20, 1 << 22)]
                + [Case("atomic_spread", n) for n in (1 << 22, 1 << 24)])
    raise ValueError(f"unknown plan {kind!r}: one of {', '.join(PLANS)}")


def full_grid(dev, block=256):
    """One full wave: every SM at its thread limit."""
    cfg = getattr(dev, "config", None)
    sms = cfg.gpu.sm_count if cfg else 132
    per_sm = cfg.limits.max_threads_per_sm if cfg else 2048
    return sms * per_sm // block, block


def setup(dev, case: Case, rng):
    """(kernel, grid, block, args) of one case on ``dev``."""
    grid, block = full_grid(dev)
    n = case.n
    if case.bench == "empty":                             # n blocks of 256 threads
        return empty, n, block, (dev.zeros(1, np.int32), n)
    if case.bench == "copy":
        return copy, grid, block, (dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32), n)
    if case.bench == "read":
        return read, grid, block, (dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(1, np.int32), n)
    if case.bench == "write":
        return write, grid, block, (dev.zeros(n, np.int32), n)
    if case.bench == "gather":
        src = dev.to_device(np.arange(n, dtype=np.int32))
        idx = dev.to_device(rng.permutation(n).astype(np.int32))
        return gather, grid, block, (src, idx, dev.zeros(n, np.int32), n)
    if case.bench == "chase":
        order = rng.permutation(n).astype(np.int32)
        nxt = np.empty(n, np.int32)
        nxt[order] = np.roll(order, -1)                   # one random cycle through all n
        return chase, 1, 1, (dev.to_device(nxt), dev.zeros(1, np.int32), case.steps)
    if case.bench == "atomic":
        return atomic_one_counter, grid, block, (dev.zeros(1, np.int32), n)
    if case.bench == "atomic_spread":
        return atomic_spread, grid, block, (dev.zeros(SPREAD_MASK + 1, np.int32), n, SPREAD_MASK)
    raise ValueError(case.bench)


# --- the simulator side ----------------------------------------------------------------

def measure_sim(dev, cases, states=("warm", "cold")) -> list:
    """Rows {bench, n, steps, state, us, wall_s} on a simulated device (timed-block)."""
    dev.default_engine = "timed-block"
    cfg = dev.config
    rows = []
    for case in cases:
        for state in states:
            # Read-only footprints over twice the L2 leave nothing of use in it for the next
            # launch, so their warm state is the cold one (simulated once); kernels that
            # write leave dirty data that the next launch must write back: run both.
            big = (cfg.cache.present and case.bench in ("read", "gather")
                   and case.footprint() > 2 * cfg.cache.l2_bytes)
            if state == "warm" and big and "cold" in states:
                continue                 # nothing of it survives in the L2: warm is cold (below)
            rng = np.random.default_rng(0)
            kern, grid, block, args = setup(dev, case, rng)
            t0 = time.perf_counter()
            if state == "warm":
                dev.launch(kern, grid, block, *args)
            else:
                dev.flush_caches()
            rep = dev.launch(kern, grid, block, *args)
            us = rep.cycles / cfg.gpu.core_clock_mhz
            rows.append({"bench": case.bench, "n": case.n, "steps": case.steps, "state": state,
                         "us": us, "wall_s": round(time.perf_counter() - t0, 2),
                         "l2_hit_rate": rep.extra.get("l2_hit_rate"),
                         "dram_bytes": rep.extra.get("dram_bytes")})
            print(f"{case.label:28} {state:5} {us:10.3f} us  ({rows[-1]['wall_s']} s)", flush=True)
            if state == "cold" and "warm" in states and big:
                # An LRU L2 keeps nothing of a read-only footprint over twice its size from
                # one launch to the next: the steady (warm) state is this cold run.
                rows.append(dict(rows[-1], state="warm", same_run_as="cold"))
    return rows


# --- the GPU side ----------------------------------------------------------------------

#: Orders a plan's cases can run in on the GPU.  A case's time there depends a little
#: on what ran before it (the cold 8 MiB copy took 0.25-0.4 us more inside the sweep
#: than alone, docs/results/dram-ramp-h100.md, 0.16-0.29 us more than in the sim plan
#: in any of these orders, calibration-h100.md), so a figure is taken over several.
ORDERS = ("forward", "reverse", "shuffle")


def ordered(cases: list, order: str) -> list:
    """``cases`` in one of ORDERS (``shuffle``: a fixed permutation, seed 0)."""
    if order == "forward":
        return list(cases)
    if order == "reverse":
        return cases[::-1]
    if order == "shuffle":
        return [cases[i] for i in np.random.default_rng(0).permutation(len(cases))]
    raise ValueError(f"unknown order {order!r}: one of {', '.join(ORDERS)}")


def child(out: pathlib.Path, kind: str, state: str, measured: int, tag: str, order: str = "forward"):
    """Run under ncu: every case, a warm-up launch first (warm state), then ``measured``
    launches. Writes the launch order (labels) for the parent to zip with ncu's rows."""
    import cupy as cp
    dev = simgpu.get_device("cuda")
    labels = []
    for case in ordered(plan(kind), order):
        rng = np.random.default_rng(0)
        kern, grid, block, args = setup(dev, case, rng)
        fn = dev.function(kern)
        if state == "warm":
            dev.launch(kern, grid, block, *args)
            labels.append({"bench": case.bench, "n": case.n, "steps": case.steps, "warmup": True})
        for _ in range(measured):
            dev.launch(kern, grid, block, *args)
            labels.append({"bench": case.bench, "n": case.n, "steps": case.steps, "warmup": False})
        dev.synchronize()
        del args, fn
        cp.get_default_memory_pool().free_all_blocks()
    (out / f"order-{tag}.json").write_text(json.dumps(labels))


def parse_ncu(text: str) -> list:
    """[{kernel, metrics: {name: float}}] in launch order from ``ncu --csv`` output
    (values that are not numbers are left out)."""
    launches = []
    for kernel, values in ncu_csv.parse_csv(text):
        metrics = {}
        for name, value in values.items():
            try:
                metrics[name] = float(value)
            except ValueError:
                pass
        launches.append({"kernel": kernel, "metrics": metrics})
    return launches


TIME = "gpu__time_duration.sum"
COUNTERS = [TIME, "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sector_hit_rate.pct",
            "sm__cycles_elapsed.avg.per_second", "dram__cycles_elapsed.avg.per_second",
            "lts__cycles_elapsed.avg.per_second",
            "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
            "l1tex__t_sector_hit_rate.pct",
            # sectors the SMs ask the L2 for, and those that reach a slice of the other
            # half of the L2 (docs/results/l2-halves-h100.md)
            "lts__t_sectors_srcunit_tex.sum", "lts__t_sectors_srcunit_ltcfabric.sum"]


def run_ncu(out: pathlib.Path, kind: str, state: str, measured: int, metrics, tag: str,
            timeout: int, order: str = "forward") -> list:
    """One child under Nsight Compute; rows {bench, n, steps, state, order, metrics}."""
    from cuda_backend.render import kernel_symbol
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    log = out / f"ncu-{tag}.csv"
    cmd = [ncu, "--clock-control", "none", "--cache-control", "all" if state == "cold" else "none",
           "--csv", "--print-units", "base", "--metrics", ",".join(metrics), "--log-file", str(log),
           sys.executable, "-m", "simgpu_apps.gpu_tools.calibrate", "--child", str(out), "--plan", kind,
           "--state", state, "--measured", str(measured), "--tag", tag, "--order", order]
    print("$", " ".join(cmd), flush=True)
    t0 = time.time()
    subprocess.run(cmd, check=True, timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                   stdout=subprocess.DEVNULL)
    print(f"  ncu {tag}: {time.time() - t0:.0f} s", flush=True)
    launches = parse_ncu(log.read_text())
    labels = json.loads((out / f"order-{tag}.json").read_text())
    if len(launches) != len(labels):
        raise RuntimeError(f"ncu saw {len(launches)} launches, the child made {len(labels)}")
    rows = []
    for o, l in zip(labels, launches):
        if kernel_symbol(KERNELS[o["bench"]]) not in l["kernel"]:
            raise RuntimeError(f"launch order differs: {o} vs ncu's {l['kernel']}")
        if not o["warmup"]:
            rows.append({"bench": o["bench"], "n": o["n"], "steps": o["steps"], "state": state,
                         "order": order,
                         **l["metrics"]})
    return rows


def graph_times(kind: str, order: str = "forward") -> list:
    """Warm per-launch device time without a profiler: a CUDA graph of K back-to-back
    launches, replayed 5 times, timed with events; us per launch (median replay / K)."""
    import cupy as cp
    dev = simgpu.get_device("cuda")
    rows = []
    for case in ordered(plan(kind), order):
        rng = np.random.default_rng(0)
        kern, grid, block, args = setup(dev, case, rng)
        t1 = dev.launch(kern, grid, block, *args, sync=True).time_ms   # warm-up; one launch, events
        fn = dev.function(kern)
        argv = [a._data if hasattr(a, "_data") else np.int32(a) for a in args]
        k = int(min(200, max(5, 2.0 / max(t1, 1e-3))))
        try:
            stream = cp.cuda.Stream(non_blocking=True)
            with stream:
                stream.begin_capture()
                for _ in range(k):
                    fn((grid,), (block,), tuple(argv))
                graph = stream.end_capture()
                graph.launch(stream)
                stream.synchronize()
                ts = []
                for _ in range(5):
                    a, b = cp.cuda.Event(), cp.cuda.Event()
                    a.record(stream)
                    graph.launch(stream)
                    b.record(stream)
                    b.synchronize()
                    ts.append(cp.cuda.get_elapsed_time(a, b))
            rows.append({"bench": case.bench, "n": case.n, "steps": case.steps, "state": "warm",
                         "graph_us": float(np.median(ts)) * 1e3 / k, "graph_k": k,
                         "event_one_launch_us": t1 * 1e3})
        except Exception as exc:                       # keep the rest of the run
            rows.append({"bench": case.bench, "n": case.n, "steps": case.steps, "state": "warm",
                         "graph_error": repr(exc)[:200], "event_one_launch_us": t1 * 1e3})
        del args, argv, fn
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def smi() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem,"
                               "clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw",
                               "--format=csv"], capture_output=True, text=True, timeout=30).stdout
    except Exception as exc:
        return repr(exc)


STEPS = "warm:gpu,cold:gpu,graph:gpu,counters-warm:sim,counters-cold:sim"
WHATS = ("warm", "cold", "graph", "counters-warm", "counters-cold")


def parse_steps(steps: str) -> list:
    """``--steps`` as [(what, plan, order)]; a ValueError that names the bad item."""
    out = []
    for item in steps.split(","):
        what, _, rest = item.partition(":")
        kind, _, order = rest.partition("@")
        order = order or "forward"
        if what not in WHATS or kind not in PLANS or order not in ORDERS:
            raise ValueError(f"--steps item {item!r}: expected what:plan[@order] with what one "
                             f"of {', '.join(WHATS)}, plan one of {', '.join(PLANS)} and order "
                             f"one of {', '.join(ORDERS)}")
        out.append((what, kind, order))
    return out


def measure_gpu(out_json: pathlib.Path, steps: str, budget_s: int) -> dict:
    """The whole GPU side; writes ``out_json`` after every step, so a cut-off run keeps data."""
    out = out_json.parent
    out.mkdir(parents=True, exist_ok=True)
    dev = simgpu.get_device("cuda")
    result = {"device": dev.gpu_name, "date": str(datetime.date.today()), "steps": steps,
              "script": "python -m simgpu_apps.gpu_tools.calibrate --device cuda", "smi_before": smi(),
              "grid": list(full_grid(dev)), "ncu": [], "graph": [], "counters": [], "errors": []}
    t_end = time.time() + budget_s

    def save():
        out_json.write_text(json.dumps(result, indent=1))

    todo = []
    for what, kind, order in parse_steps(steps):
        tag = f"{what}-{kind}" + ("" if order == "forward" else f"-{order}")
        if what == "graph":
            todo.append(("graph", lambda kind=kind, order=order: graph_times(kind, order)))
        elif what in ("warm", "cold"):
            todo.append(("ncu", lambda kind=kind, st=what, tag=tag, order=order: run_ncu(
                out, kind, st, 4 if st == "warm" else 3, [TIME], tag, 240, order)))
        else:                                            # counters-warm / counters-cold
            todo.append(("counters", lambda kind=kind, st=what.split("-")[1], tag=tag, order=order:
                         run_ncu(out, kind, st, 1, COUNTERS, tag, 150, order)))
    for key, step in todo:
        if time.time() > t_end:
            result["errors"].append(f"{key}: skipped, out of time")
            continue
        try:
            result[key] += step()
        except Exception as exc:
            result["errors"].append(f"{key}: {exc!r}"[:500])
            print("ERROR", key, exc, flush=True)
        save()
    result["smi_after"] = smi()
    save()
    return result


# --- summaries and the comparison ------------------------------------------------------

def _median(rows, key, **match):
    vals = [r[key] for r in rows if key in r and all(r.get(k) == v for k, v in match.items())]
    return float(np.median(vals)) if vals else None


def gpu_table(gpu: dict, state: str) -> dict:
    """{(bench, n, steps): median ncu us} for one cache state."""
    keys = {(r["bench"], r["n"], r["steps"]) for r in gpu["ncu"] if r["state"] == state}
    return {k: _median(gpu["ncu"], TIME, bench=k[0], n=k[1], steps=k[2], state=state) / 1e3
            for k in sorted(keys)}


def chase_latency(times: dict, n: int):
    """ns per dependent load: the slope between the two step counts of ``n`` nodes."""
    pts = sorted((s, t) for (b, m, s), t in times.items() if b == "chase" and m == n and t is not None)
    if len(pts) < 2:
        return None
    (s1, t1), (s2, t2) = pts[0], pts[-1]
    return (t2 - t1) * 1e3 / (s2 - s1)


def report(gpu: dict) -> str:
    """The GPU's sweep: device times and rates by size and footprint, both cache states."""
    lines = [f"GPU sweep: {gpu['device']}, {gpu['date']}, `{gpu.get('script', '')}`; grid "
             f"{gpu.get('grid')} (blocks, threads). Times: Nsight Compute `gpu__time_duration` "
             "(`--clock-control none`), median of 4 warm launches after a warm-up (warm) or of "
             "3 launches each after ncu flushed the caches (`--cache-control all`, cold); "
             "'net' subtracts the empty kernel's time; graph: CUDA graph of back-to-back warm "
             "launches timed with events, per launch.", ""]
    warm, cold = gpu_table(gpu, "warm"), gpu_table(gpu, "cold")
    graph = {(r["bench"], r["n"], r["steps"]): r.get("graph_us") for r in gpu.get("graph", [])}
    e_w, e_c = warm.get(("empty", FULL, 0)), cold.get(("empty", FULL, 0))
    lines += ["Empty kernel (fixed cost per kernel), by grid:", "",
              "| blocks of 256 | warm us | cold us | graph us per launch | one launch, CUDA events us |",
              "|---:|---:|---:|---:|---:|"]
    one = {(r["bench"], r["n"], r["steps"]): r.get("event_one_launch_us") for r in gpu.get("graph", [])}
    for key in sorted(k for k in warm if k[0] == "empty"):
        lines.append(f"| {key[1]:,} | {warm[key]:.2f} | {_f(cold.get(key))} | {_f(graph.get(key))} | "
                     f"{_f(one.get(key))} |")
    lines += ["", f"Rates below are net of the full-grid empty kernel ({_f(e_w)} us warm, {_f(e_c)} us "
              "cold).", ""]
    lines += ["| benchmark | n | footprint | warm us | cold us | graph us | warm rate (net) | "
              "cold rate (net) | unit |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for key in sorted(warm, key=lambda k: (list(KERNELS).index(k[0]), k[1], k[2])):
        b, n, s = key
        if b in ("empty", "chase"):
            continue
        c = Case(b, n, s)
        w, co, g = warm[key], cold.get(key), graph.get(key)
        rw = c.value((w - e_w) * 1e-6) if w > e_w else float("nan")
        rc = c.value((co - e_c) * 1e-6) if co and co > e_c else float("nan")
        lines.append(f"| {b} | {n:,} | {_bytes(c.footprint())} | {w:.2f} | {_f(co)} | {_f(g)} | "
                     f"{rw:.4g} | {rc:.4g} | {UNITS[b]} |")
    lines += ["", "Pointer chase, ns per dependent load (slope between 512 and 4096 steps):", "",
              "| nodes | footprint | warm ns/load | cold ns/load |", "|---:|---:|---:|---:|"]
    for n in sorted({k[1] for k in warm if k[0] == "chase"}):
        lines.append(f"| {n:,} | {_bytes(4 * n)} | {_f(chase_latency(warm, n))} | "
                     f"{_f(chase_latency(cold, n))} |")
    if gpu.get("counters"):
        lines += ["", "Counters (ncu, one launch per case, sim-sized cases; collecting them takes "
                  "several replays of each kernel, between which ncu restores memory, so even the "
                  "'warm' rows see a mostly cold L2):", "",
                  "| benchmark | n | steps | state | us | DRAM read MB | DRAM write MB | L2 hit % | "
                  "SM GHz | red req | atom req |", "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in gpu["counters"]:
            lines.append(f"| {r['bench']} | {r['n']:,} | {r['steps']} | {r['state']} | "
                         f"{r.get(TIME, 0) / 1e3:.2f} | {r.get('dram__bytes_read.sum', 0) / 1e6:.2f} | "
                         f"{r.get('dram__bytes_write.sum', 0) / 1e6:.2f} | "
                         f"{_f(r.get('lts__t_sector_hit_rate.pct'), 1)} | "
                         f"{_f(r.get('sm__cycles_elapsed.avg.per_second', 0) / 1e9, 3)} | "
                         f"{r.get('l1tex__t_requests_pipe_lsu_mem_global_op_red.sum', 0):,.0f} | "
                         f"{r.get('l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum', 0):,.0f} |")
    if gpu.get("errors"):
        lines += ["", "Errors: " + "; ".join(gpu["errors"])]
    return "\n".join(lines)


def _f(x, digits=2):
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}f}"


def _rate(x):
    return _f(x, 3) if x and x < 100 else _f(x, 0)


def _bytes(b):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size:
            return f"{b / size:.3g} {unit}"
    return f"{b} B"


def gpu_figure(times: dict, case: "Case"):
    """The GPU's figure for ``case`` from {(bench, n, steps): us}: its rate net of the
    empty kernel, or for the chase its ns per load; None where it cannot be had."""
    if case.bench == "chase":
        return chase_latency(times, case.n)
    t, e = times.get((case.bench, case.n, case.steps)), times.get(("empty", FULL, 0))
    return case.value((t - e) * 1e-6) if t is not None and e is not None and t > e else None


def contexts(gpu: dict, state: str) -> list:
    """{(bench, n, steps): median us} per run and order the pooled launches came from."""
    names = sorted({r.get("context", "") for r in gpu["ncu"] if r["state"] == state})
    return [gpu_table({"ncu": [r for r in gpu["ncu"] if r.get("context", "") == c]}, state)
            for c in names]


def compare_rows(gpu: dict, sim: dict) -> list:
    """One row per simulated case and cache state: GPU net rate, sim rate, ratio, and the
    range of the GPU's figure over the runs and orders its launches were pooled from."""
    out = []
    for state in ("warm", "cold"):
        g = gpu_table(gpu, state)
        each = contexts(gpu, state)
        e = g.get(("empty", FULL, 0)) or 0.0
        s = {(r["bench"], r["n"], r["steps"]): r["us"] for r in sim["rows"] if r["state"] == state}
        se = s.get(("empty", FULL, 0)) or 0.0      # the model's fixed cost per kernel, likewise
        for key in sorted(s, key=lambda k: (list(KERNELS).index(k[0]), k[1], k[2])):
            b, n, steps = key
            if b == "empty" or (b == "chase" and steps != max(k[2] for k in s if k[:2] == key[:2])):
                continue
            if key not in g:
                continue
            c = Case(b, n, steps)
            if b == "chase":
                gv, sv = chase_latency(g, n), chase_latency(s, n)
                gus, net = g[key], None
            else:
                gus, net = g[key], g[key] - e
                gv = c.value(net * 1e-6) if net > 0 else None
                sv = c.value((s[key] - se) * 1e-6) if s[key] > se else None
            ratio = sv / gv if gv and sv else None
            spread = [v for v in (gpu_figure(t, c) for t in each) if v is not None]
            out.append({"bench": b, "n": n, "steps": steps, "state": state, "gpu_us": gus,
                        "gpu_net_us": net, "sim_us": s[key], "gpu": gv, "sim": sv,
                        "gpu_range": (min(spread), max(spread), len(spread)) if spread else None,
                        "unit": UNITS[b], "ratio": ratio,
                        "within": ratio is not None and abs(ratio - 1) <= 0.15})
    return out


def compare(gpu: dict, sim: dict) -> str:
    rows = compare_rows(gpu, sim)
    g = gpu_table(gpu, "warm")
    e = g.get(("empty", FULL, 0))
    se = next((r["us"] for r in sim["rows"] if r["bench"] == "empty" and r["n"] == FULL
               and r["state"] == "warm"), 0.0)
    lines = [f"Calibration: {sim['device']} ({sim.get('config', '')}) against {gpu['device']} "
             f"(GPU run {gpu['date']}, simulator run {sim['date']}).", "",
             f"GPU: Nsight Compute `gpu__time_duration`, median; 'net' is that minus the empty "
             f"kernel's time on the same grid ({_f(e)} us warm). Simulator: timed-block cycles at "
             f"{sim.get('clock_mhz', '?')} MHz, no launch overhead; its rates are net of its "
             f"own empty kernel ({_f(se)} us) likewise. Chase: ns per load from the slope "
             "between 512 and 4096 steps on both devices (fixed costs cancel).", "",
             "| benchmark | n | footprint | cache | GPU us | GPU net us | sim us | GPU | GPU by run | "
             "sim | unit | sim / GPU | within 15% |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---|"]
    for r in rows:
        c = Case(r["bench"], r["n"], r["steps"])
        spread = "-"
        if r["gpu_range"]:
            lo, hi, k = r["gpu_range"]
            spread = _rate(lo) if k == 1 else f"{_rate(lo)}-{_rate(hi)} ({k})"
        lines.append(f"| {r['bench']} | {r['n']:,} | {_bytes(c.footprint())} | {r['state']} | "
                     f"{r['gpu_us']:.2f} | {_f(r['gpu_net_us'])} | {r['sim_us']:.2f} | "
                     f"{_rate(r['gpu'])} | {spread} | {_rate(r['sim'])} | "
                     f"{r['unit']} | {_f(r['ratio'])} | {'yes' if r['within'] else 'no'} |")
    ok = sum(r["within"] for r in rows)
    lines += ["", f"{ok} of {len(rows)} within 15%."]
    return "\n".join(lines)


def load_gpu(paths: str) -> dict:
    """One GPU result from one JSON file or several, comma-separated (their samples pooled;
    each launch labelled with its context: the file and the order its plan ran in)."""
    files = paths.split(",")
    runs = [json.loads(pathlib.Path(f).read_text()) for f in files]
    gpu = dict(runs[0])
    for key in ("ncu", "graph", "counters", "errors"):
        gpu[key] = [x for r in runs for x in r.get(key, [])]
    gpu["ncu"] = [{**x, "context": f"{pathlib.Path(f).stem}@{x.get('order', 'forward')}"}
                  for f, r in zip(files, runs) for x in r.get("ncu", [])]
    gpu["date"] = ", ".join(sorted({r["date"] for r in runs}))
    return gpu


def load_sim(paths: str) -> dict:
    """One simulator result from one JSON file or several, comma-separated (rows joined)."""
    runs = [json.loads(pathlib.Path(f).read_text()) for f in paths.split(",")]
    sim = dict(runs[0])
    sim["rows"] = [x for r in runs for x in r["rows"]]
    return sim


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m simgpu_apps.gpu_tools.calibrate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", help="JSON file to write (GPU: its folder also gets ncu's CSVs)")
    p.add_argument("--plan", default=None, help="gpu (default on the GPU), sim (default on a "
                   "simulator) or quick")
    p.add_argument("--states", default="warm,cold", help="simulator: cache states to run")
    p.add_argument("--benches", help="simulator: only these benchmarks (comma-separated)")
    p.add_argument("--budget", type=int, default=420, help="GPU: seconds to stop starting steps")
    p.add_argument("--steps", default=STEPS, help="GPU: what:plan pairs (warm, cold: ncu sweeps; "
                   "graph: CUDA-graph times; counters-warm, counters-cold: ncu counters; a plan may "
                   "end in @reverse or @shuffle: its cases in that order); default "
                   + STEPS)
    p.add_argument("--compare", nargs=2, metavar=("GPU_JSON[,GPU_JSON...]", "SIM_JSON[,SIM_JSON...]"))
    p.add_argument("--md", help="with --compare or --report: also write the table here")
    p.add_argument("--report", metavar="GPU_JSON[,GPU_JSON...]")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--state", help=argparse.SUPPRESS)
    p.add_argument("--measured", type=int, default=3, help=argparse.SUPPRESS)
    p.add_argument("--tag", help=argparse.SUPPRESS)
    p.add_argument("--order", default="forward", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(pathlib.Path(args.child), args.plan, args.state, args.measured, args.tag, args.order)
    if args.compare or args.report:
        if args.compare:
            gpu, sim = load_gpu(args.compare[0]), load_sim(args.compare[1])
            text = compare(gpu, sim)
        else:
            text = report(load_gpu(args.report))
        print(text)
        if args.md:
            pathlib.Path(args.md).write_text(text + "\n")
        return
    if args.device.startswith("sim:"):
        dev = simgpu.get_device(args.device)
        cases = [c for c in plan(args.plan or "sim") if not args.benches or c.bench in args.benches.split(",")]
        rows = measure_sim(dev, cases, tuple(args.states.split(",")))
        result = {"device": args.device, "config": dev.config.gpu.name,
                  "clock_mhz": dev.config.gpu.core_clock_mhz, "date": str(datetime.date.today()),
                  "script": f"python -m simgpu_apps.gpu_tools.calibrate --device {args.device}", "rows": rows}
        if args.out:
            pathlib.Path(args.out).write_text(json.dumps(result, indent=1))
        return
    from cuda_backend.device import CudaUnavailable
    try:
        parse_steps(args.steps)
        simgpu.get_device(args.device)
    except (ValueError, CudaUnavailable) as exc:
        raise SystemExit(f"python -m simgpu_apps.gpu_tools.calibrate: {exc}") from None
    out = pathlib.Path(args.out or "calibration-gpu.json")
    result = measure_gpu(out, args.steps, args.budget)
    text = report(result)
    out.with_suffix(".md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
