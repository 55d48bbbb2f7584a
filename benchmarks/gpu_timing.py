"""Timing helpers shared by the GPU benchmark scripts (imported as a sibling module)."""
from __future__ import annotations

import time

import numpy as np


def cuda_time(cp, fn, repeats=5):
    """Median CUDA-event time of fn() in ms (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return float(np.median(times))


def algorithm_time(run, repeats=3):
    """(median kernel ms, median end-to-end ms, last result) of ``run()``, which
    returns a result with ``.launches``: kernel ms sums the launches' times,
    end-to-end is the wall time of the whole call."""
    kernel_ms, e2e = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = run()
        e2e.append((time.perf_counter() - t0) * 1e3)
        kernel_ms.append(sum(rep.time_ms for rep in result.launches))
    return float(np.median(kernel_ms)), float(np.median(e2e)), result
