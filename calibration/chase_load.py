"""What a warp's dependent scattered load costs as more warps do the same (issue 18).

The built-in validation's pointer-jumping kernels (``wylie_jump``, ``rs3_walk``,
``sv2_hook``) are each warp's lanes reading random words, every load's address taken
from the one before.  On the per-warp engine the model runs them 0.42-0.84 of the card's
time (docs/results/h100-block-groups-2026-11-28.md, "Afterwards"), while one thread's
chase (the calibration's ``chase`` cases) and the streaming reads agree.  The question:
how does the time of one such step grow with the number of warps doing it, on the card
and on the model, with the data in the L2 and in DRAM?

The kernel (one source for both devices, ``chase_lanes``): every thread follows its own
stretch of one random cycle (Sattolo) through ``n`` words, ``steps`` dependent loads, so
each warp load touches 32 unrelated sectors.  The threads start ``n / threads`` words
apart along the cycle and take fewer steps than that, so no word is read twice in a
launch.  W warps per SM (W = 1 ... 64; blocks of min(W, 8) warps, 132 x max(1, W / 8)
blocks).  A step's time is the slope between a launch of 2 steps and one of K (the
launch's fixed cost cancels): ``(t(K) - t(2)) / (K - 2)``, K from 66 steps (1-8 warps per
SM) down to 10 (64; ``--high`` sets one K for all).  The card's time is the fastest of 7
repeats, each after the earlier ones; the model's, a second launch after a first.  Data:

* ``l2``: 12 MiB (3 x 2^20 words), read whole just before (every load an L2 hit);
* ``dram``: 256 MiB (2^26 words), the L2 emptied of it before each launch (the GPU: a
  read of a 256 MiB buffer; the model: ``cache_control = "all"``).

    python -m calibration.chase_load --gpu OUT                  # the card (CuPy), ~1 min
    python -m calibration.chase_load --sim OUT [--engine E] [--jobs J] [--config C]
                                     [--only l2|dram] [--tag=-NAME] [--high K]
    python -m calibration.chase_load --report OUT [--md F.md]   # both sides' tables
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import pathlib

import numpy as np

from simgpu.lang import Array, blockDim, blockIdx, i32, kernel, threadIdx
from simgpu_apps.memory_kernels import read_sum

SMS = 132
WARPS = (1, 2, 4, 8, 16, 32, 64)          # warps per SM
LOW = 2                                   # the slope's shorter launch: 2 steps
#: its longer launch, by warps per SM: long enough that the card's CUDA events (about
#: 0.5 us apart) blur a step by little, short enough for the model's time and the spacing
HIGH = {1: 66, 2: 66, 4: 66, 8: 66, 16: 34, 32: 18, 64: 10}
WORDS = {"l2": 3 << 20, "dram": 1 << 26}  # int32 words: 12 MiB, 256 MiB
REPEATS = 7                               # the card: the fastest of these


@kernel
def chase_lanes(nxt: Array[i32], start: Array[i32], out: Array[i32], steps: i32):
    t = blockIdx.x * blockDim.x + threadIdx.x
    p = start[t]
    for k in range(steps):
        p = nxt[p]
    out[t] = p


def shape(warps: int) -> tuple[int, int]:
    """(grid, block) for ``warps`` warps on each of the 132 SMs."""
    return SMS * max(1, warps // 8), 32 * min(warps, 8)


def cycle(n: int, threads: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(next, start): one random cycle through n words, threads starting n // threads
    apart along it."""
    order = np.random.default_rng(seed).permutation(n).astype(np.int32)
    nxt = np.empty(n, np.int32)
    nxt[order] = np.roll(order, -1)
    return nxt, order[np.arange(threads, dtype=np.int64) * (n // threads)]


def cases() -> list[tuple[str, int]]:
    return [(data, w) for data in WORDS for w in WARPS]


def check_spacing(high: int | None = None) -> None:
    """No thread reaches the next one's start within a launch (so no word is read twice)."""
    for data, w in cases():
        grid, block = shape(w)
        steps = HIGH[w] if high is None else high
        if WORDS[data] // (grid * block) <= steps:
            raise SystemExit(f"chase_load: {steps} steps at {w} warps per SM ({data}) would "
                             f"take threads onto each other's words: give --high below "
                             f"{WORDS[data] // (grid * block)}")


def measure(dev, data: str, warps: int, timer, high: int | None = None) -> dict:
    """One case on ``dev``: the launch time at each step count (``timer(launch, warm,
    data)`` -> seconds) and the per-step slope in ns; ``high``: the longer launch's steps,
    if not HIGH's."""
    n = WORDS[data]
    grid, block = shape(warps)
    nxt, start = cycle(n, grid * block)
    d_nxt, d_start = dev.to_device(nxt), dev.to_device(start)
    d_out = dev.zeros(grid * block, np.int32)
    times = {}
    lo, hi = LOW, HIGH[warps] if high is None else high
    def warm():                    # l2: the whole array read just before (a grid-stride sum)
        if data == "l2":
            dev.launch(read_sum, SMS, 256, d_nxt, dev.zeros(SMS * 256, np.int32), n)

    for steps in (lo, hi):
        def launch(steps=steps):
            return dev.launch(chase_lanes, grid, block, d_nxt, d_start, d_out, steps)
        times[steps] = timer(launch, warm, data)
    check = d_out.to_host()
    ends = start.copy()
    for _ in range(hi):
        ends = nxt[ends]
    if not np.array_equal(check, ends):
        raise AssertionError(f"{data} {warps}: the chase's ends differ from numpy's")
    return {"data": data, "warps": warps, "grid": grid, "block": block,
            "us": {str(s): t * 1e6 for s, t in times.items()},
            "step_ns": (times[hi] - times[lo]) / (hi - lo) * 1e9}


def gpu(out: pathlib.Path, high: int | None = None) -> None:
    import cupy as cp
    import simgpu
    dev = simgpu.get_device("cuda")
    flush = cp.zeros(1 << 26, cp.int32)

    def timer(launch, warm, data):
        best = None
        for _ in range(REPEATS):
            if data == "dram":
                cp.add(flush, 1, out=flush)  # 256 MiB read, written: no nxt in the L2
            warm()
            dev.synchronize()
            rep = launch()
            dev.synchronize()
            t = rep.time_ms / 1e3
            best = t if best is None else min(best, t)
        return best

    rows = [measure(dev, data, w, timer, high) for data, w in cases()]
    props = cp.cuda.runtime.getDeviceProperties(0)
    meta = {"device": props["name"].decode(), "date": str(datetime.date.today()),
            "timing": "CUDA events, the fastest of %d" % REPEATS}
    (out / "gpu.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


def _sim_case(config: str, engine: str, data: str, warps: int, high: int | None) -> dict:
    import simgpu
    dev = simgpu.get_device(config)
    dev.default_engine = engine

    def timer(launch, warm, data):
        # twice, the second timed: the card's fastest repeat follows an earlier one, whose
        # loads left near copies in each SM's half of the L2 (the same words, the same SMs)
        for first in (True, False):
            dev.cache_control = "all" if first or data == "dram" else "none"
            warm()
            if data == "l2":
                dev.cache_control = "none"
            rep = launch()
        return rep.cycles / dev.config.gpu.core_clock_mhz * 1e-6

    return measure(dev, data, warps, timer, high)


def sim(out: pathlib.Path, config: str, engine: str, jobs: int, high: int | None = None,
        only: str | None = None, tag: str = "") -> None:
    """Every case in its own process, the largest first; the file is rewritten as each
    case ends, so a run cut short keeps what it finished."""
    meta = {"device": config + tag, "engine": engine, "date": str(datetime.date.today())}
    rows = []
    with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
        todo = [pool.submit(_sim_case, config, engine, d, w, high)
                for d, w in sorted(cases(), key=lambda c: -c[1]) if only in (None, d)]
        for done in concurrent.futures.as_completed(todo):
            rows.append(done.result())
            rows.sort(key=lambda r: (r["data"], r["warps"]))
            (out / f"sim-{engine}{tag}.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                               indent=1))


def _load(out: pathlib.Path) -> dict:
    """{side: (meta, {(data, warps): row})} of the JSON files in ``out``."""
    sides = {}
    for f in sorted(out.glob("*.json")):
        doc = json.loads(f.read_text())
        sides[f.stem] = (doc["meta"], {(r["data"], r["warps"]): r for r in doc["rows"]})
    return sides


def report(out: pathlib.Path) -> str:
    """Per data and warps per SM: each side's ns per step, the sectors a ns it implies
    (every lane a sector), and the model's step over the card's."""
    sides = _load(out)
    if "gpu" not in sides:
        raise SystemExit(f"chase_load: {out} has no gpu.json (run --gpu first)")
    models = [k for k in sides if k != "gpu"]
    lines = [f"card: {sides['gpu'][0]['device']}, {sides['gpu'][0]['date']}, "
             f"{sides['gpu'][0]['timing']}; " + "; ".join(
                 f"{k}: {sides[k][0]['device']}, {sides[k][0]['engine']}, {sides[k][0]['date']}"
                 for k in models), ""]
    head = "| data | warps per SM | card ns a step | card sectors/ns |"
    head += "".join(f" {k} ns | {k} / card |" for k in models)
    lines += [head, "|---|---:|---:|---:|" + "---:|---:|" * len(models)]
    for key, g in sides["gpu"][1].items():
        sectors = g["grid"] * g["block"]
        row = f"| {key[0]} | {key[1]} | {g['step_ns']:.0f} | {sectors / g['step_ns']:.1f} |"
        for k in models:
            m = sides[k][1].get(key)
            row += (f" {m['step_ns']:.0f} | {m['step_ns'] / g['step_ns']:.2f} |" if m
                    else " - | - |")
        lines.append(row)
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m calibration.chase_load",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", type=pathlib.Path, help="run the card's side, files to here")
    ap.add_argument("--sim", type=pathlib.Path, help="run the model's side, files to here")
    ap.add_argument("--engine", default="timed-block", help="with --sim (default timed-block)")
    ap.add_argument("--config", default="sim:h100", help="with --sim (default sim:h100)")
    ap.add_argument("--jobs", type=int, default=1, help="with --sim: processes")
    ap.add_argument("--high", type=int, help="the longer launch's steps in every case "
                    "(default: 66 at 1-8 warps per SM down to 10 at 64)")
    ap.add_argument("--only", choices=tuple(WORDS), help="with --sim: only this data's cases")
    ap.add_argument("--tag", default="", help="with --sim: added to the file's name and the "
                    "device's (a config variant)")
    ap.add_argument("--report", type=pathlib.Path, help="print the tables of this folder")
    ap.add_argument("--md", type=pathlib.Path, help="with --report: also write them here")
    a = ap.parse_args(argv)
    if not (a.gpu or a.sim or a.report):
        ap.error("give --gpu, --sim or --report")
    check_spacing(a.high)
    for folder in (a.gpu, a.sim):
        if folder:
            folder.mkdir(parents=True, exist_ok=True)
    if a.gpu:
        gpu(a.gpu, a.high)
    if a.sim:
        sim(a.sim, a.config, a.engine, a.jobs, a.high, a.only, a.tag)
    if a.report:
        text = report(a.report)
        print(text, end="")
        if a.md:
            a.md.write_text(text)


if __name__ == "__main__":
    main()
