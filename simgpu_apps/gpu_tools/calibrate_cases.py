"""The calibration's microbenchmarks (see calibrate.py): the kernels, the cases of each plan,
how a case is set up on a device, the orders a plan can run in, and the simulator's side
(``measure_sim``). The GPU's side is calibrate_gpu.py, the tables calibrate_tables.py."""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from simgpu.lang import Array, atomic_add, blockDim, blockIdx, gridDim, i32, kernel, threadIdx


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
    """Rows {bench, n, steps, state, us, wall_s} on a simulated device, on its default
    engine (``calibrate --engine``: timed-block unless told)."""
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


#: Orders a plan's cases can run in on the GPU.  A case's time there depends a little
#: on what ran before it (the cold 8 MiB copy took 0.25-0.4 us more inside the sweep
#: than alone, docs/calibration/dram-ramp-h100.md, 0.16-0.29 us more than in the sim plan
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
