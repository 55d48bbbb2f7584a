"""Measuring helpers shared by the experiments (run inside worker processes):

- ``Footprint``: the device memory an algorithm takes (peak of the live arrays
  it allocated; on a simulated device also the allocator's own peak, which
  includes page rounding and the driver's page tables).
- ``refusal``: a point whose arrays do not fit the device is refused by the
  device with ``simgpu.DeviceMemoryError``; the experiment records that refusal
  (a deterministic result, cached like any other) instead of a time.
- ``memory_counts``: the memory-system counters of a group of launches, read
  generically from each launch report's ``extra`` (so counters the timing model
  adds later -- TLB misses and walks, MSHR waits, ... -- show up without a change
  here), plus the DRAM row misses derived from the row hit rate.
- ``cpu_times``: a host baseline timed robustly: ``repeats`` runs (after a
  warm-up when a run is short), wall-clock and process CPU time each, the
  minimum as the figure and the spread of the runs beside it.
"""
from __future__ import annotations

import os
import time
import weakref

import numpy as np

# launch-report keys in ``extra`` that describe the launch, not memory counters
_NOT_COUNTERS = {"blocks_per_sm", "active_sms", "step", "occupancy"}


class Footprint:
    """Track the device memory of one device object while an algorithm runs."""

    def __init__(self, dev):
        self.dev = dev
        self.live = 0
        self.peak = 0                      # peak bytes of live arrays (as asked for)
        self.allocator_peak = 0            # simulated device: peak in_use (pages, tables)
        self.arrays = 0
        alloc, zeros = dev._allocate, dev._allocate_zeros

        def track(arr):
            nbytes = int(arr.nbytes)
            self.live += nbytes
            self.arrays += 1
            self.peak = max(self.peak, self.live)
            weakref.finalize(arr, self._freed, nbytes)
            mem = getattr(dev, "memory", None)
            if mem is not None and hasattr(mem, "in_use"):
                self.allocator_peak = max(self.allocator_peak, int(mem.in_use))
            return arr

        dev._allocate = lambda host: track(alloc(host))
        dev._allocate_zeros = lambda n, dtype: track(zeros(n, dtype))

    def _freed(self, nbytes: int) -> None:
        self.live -= nbytes

    def capacity(self) -> int | None:
        mem = getattr(self.dev, "memory", None)
        if mem is not None and hasattr(mem, "capacity"):
            return int(mem.capacity)
        cfg = getattr(self.dev, "config", None)
        try:
            return int(cfg.memory.global_memory_bytes)
        except AttributeError:
            return None

    def summary(self) -> dict:
        return {"footprint_bytes": self.peak, "allocator_peak_bytes": self.allocator_peak or None,
                "capacity_bytes": self.capacity(), "arrays": self.arrays}


def refusal(exc, fp: Footprint) -> dict:
    """The result of a point the device refused (simgpu.DeviceMemoryError)."""
    need = int(getattr(exc, "in_use", 0)) + int(getattr(exc, "requested", 0))
    return {"refused": True, "error": f"{type(exc).__name__}: {exc}",
            "footprint_bytes": max(need, fp.peak), "capacity_bytes": getattr(exc, "capacity", None)
            or fp.capacity(), "correct": None, "time_ms": None}


def memory_counts(launches) -> dict:
    """Integer counters of the launches' ``extra`` summed (lists summed too; a key
    with "max" in its name: the maximum), and
    ``dram_row_misses`` = sum over launches of DRAM transactions x (1 - row hit rate)."""
    out: dict = {}
    row_misses, have_rows = 0.0, False
    for rep in launches:
        extra = rep.extra or {}
        for k, v in extra.items():
            if k in _NOT_COUNTERS or isinstance(v, bool):
                continue
            if isinstance(v, (int, np.integer)) and "max" in k:      # queue_max: a maximum
                out[k] = max(out.get(k, 0), int(v))
            elif isinstance(v, (int, np.integer)):
                out[k] = out.get(k, 0) + int(v)
            elif isinstance(v, (list, tuple)) and v and all(isinstance(x, (int, np.integer)) for x in v):
                out[k] = out.get(k, 0) + int(sum(v))
        tx = extra.get("partition_transactions")
        rate = extra.get("row_hit_rate")
        if isinstance(tx, (list, tuple)) and isinstance(rate, (int, float)):
            row_misses += sum(tx) * (1.0 - float(rate))
            have_rows = True
    if have_rows:
        out["dram_row_misses"] = int(round(row_misses))
    return out


def pin_threads() -> str:
    """Pin the math libraries' thread pools to one thread (threadpoolctl when it is
    installed, else the environment variables that forked workers read); says how."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return "BLAS/OpenMP pools: environment variables set to 1 (threadpoolctl not installed)"
    threadpool_limits(1)
    return "BLAS/OpenMP pools limited to 1 thread (threadpoolctl)"


def cpu_times(run, repeats: int, measure: str = "cpu", warmup_below_s: float = 1.0) -> dict:
    """Time ``run()`` ``repeats`` times; a warm-up run first unless one run takes
    longer than ``warmup_below_s`` (then the first timed run serves, and a long
    run has no JIT or cold-cache start worth removing).  Returns the wall-clock and
    process-CPU times of each run (ms), their minima, and the spread of each:
    (max - min) / min.  ``ms`` and ``spread`` are those of ``measure``: "cpu"
    (process CPU time: right for single-threaded work in this process, which
    other processes' load then hardly changes) or "wall" (work in forked
    workers, whose CPU time this process does not see)."""
    how = pin_threads()
    walls, cpus = [], []

    def once():
        w0, c0 = time.perf_counter(), time.process_time()
        run()
        walls.append((time.perf_counter() - w0) * 1e3)
        cpus.append((time.process_time() - c0) * 1e3)

    once()
    if walls[0] < warmup_below_s * 1e3:        # short: that one was the warm-up
        walls.clear()
        cpus.clear()
        once()
    while len(walls) < max(1, repeats):
        once()
    spread = lambda t: (max(t) - min(t)) / min(t) if min(t) > 0 else 0.0
    chosen = cpus if measure == "cpu" else walls
    return {"ms": float(min(chosen)), "spread": float(spread(chosen)),
            "measure": "process CPU time" if measure == "cpu" else "wall-clock time",
            "min_ms": float(min(walls)), "median_ms": float(np.median(walls)), "times_ms": walls,
            "cpu_min_ms": float(min(cpus)), "cpu_times_ms": cpus,
            "wall_spread": float(spread(walls)), "cpu_spread": float(spread(cpus)), "pinning": how}
