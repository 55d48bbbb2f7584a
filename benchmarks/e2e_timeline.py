"""gpu_end_to_end.py --timeline: one call's launches, allocations and host reads on one
clock (the host's issue times, the GPU's kernel start and end from CUDA events), to show
where the time beside the kernels goes.  CUDA only."""
from __future__ import annotations

import time


def timeline(g, call, what, lines, calls=3):
    """Where a call's time beside its kernels goes: every launch's host issue time and
    its kernel's start and end on the GPU, on one clock (ms from the call's start: an
    event recorded on the idle stream just before the call), the host reads, the
    allocations (zeroed ones are a memset on the GPU, seen as idle time before the next
    kernel) and when the call returns.  Reads the CUDA device's pending (report, start,
    end) event triple of each launch right after it (cuda_backend.device.CudaDevice.
    _pending): a diagnostic.  ``call()`` makes one call (label() or rank())."""
    cp, dev = g.cp, g.dev
    real = {k: getattr(dev, k) for k in ("launch", "_to_host", "_allocate_zeros",
                                          "_allocate_uninitialized",
                                          "_allocate_uninitialized_together", "_settle")
            if hasattr(dev, k)}
    log = []
    t0 = [0.0]

    def now():
        return (time.perf_counter() - t0[0]) * 1e3

    def launch(kernel, *a, **o):
        h0 = now()
        rep = real["launch"](kernel, *a, **o)
        h1 = now()
        _, start, end = dev._pending[-1]
        log.append((rep.kernel, h0, h1, start, end, rep))
        return rep

    def host_step(key, label):
        def step(*a, **kw):
            h0 = now()
            out = real[key](*a, **kw)
            if key.startswith("_allocate"):
                made = out if isinstance(out, list) else [out]
                what = f"{label} {' + '.join(f'{a.nbytes:,}' for a in made)} B"
            else:
                what = label
            log.append((what, h0, now(), None, None, None))
            return out
        return step

    summary = []
    dev.launch = launch
    dev._to_host = host_step("_to_host", "(host read)")
    dev._allocate_zeros = host_step("_allocate_zeros", "(alloc, zeroed)")
    if "_allocate_uninitialized" in real:
        dev._allocate_uninitialized = host_step("_allocate_uninitialized", "(alloc, no memset)")
    if "_allocate_uninitialized_together" in real:
        dev._allocate_uninitialized_together = host_step("_allocate_uninitialized_together",
                                                         "(allocs in one, no memset)")
    if "_settle" in real:           # the launches' event times, read after a host read
        dev._settle = host_step("_settle", "(event times read)")
    try:
        call()                                                      # warm-up
        g.sync()
        dev.synchronize()
        for _ in range(calls):
            log.clear()
            ev0 = cp.cuda.Event()
            g.sync()
            t0[0] = time.perf_counter()
            ev0.record()
            call()
            returned = now()
            g.sync()
            wall = now()
            dev.synchronize()
            rows = []
            # by host start: a read's event-time step is nested inside it; the
            # synchronize() after the call, outside the wall time, is left out
            for kname, h0, h1, start, end, rep in sorted(log, key=lambda x: x[1]):
                if h0 > wall:
                    continue
                if start is None:
                    rows.append((kname, h0, h1, None, None, None))
                else:
                    rows.append((kname, h0, h1, cp.cuda.get_elapsed_time(ev0, start),
                                 cp.cuda.get_elapsed_time(ev0, end), rep.time_ms))
            summary.append((wall, returned, rows))
    finally:
        for k in real:
            dev.__dict__.pop(k, None)               # the class's methods again
    lines += ["", f"### Timeline of {what} ({calls} calls; ms from the call's start)", "",
              "| call | wall | kernels | launches | host before the first kernel starts | "
              "gaps between kernels on the GPU | after the last kernel ends | host issue of "
              "the last launch ends | the call returns | wall / kernels |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for i, (wall, returned, rows) in enumerate(summary):
        ks = [r for r in rows if r[3] is not None]
        gaps = sum(max(0.0, b[3] - a[4]) for a, b in zip(ks, ks[1:]))
        kern = sum(r[5] for r in ks)
        lines.append(f"| {i + 1} | {wall:.3f} | {kern:.3f} | {len(ks)} | {ks[0][3]:.3f} | "
                     f"{gaps:.3f} | {wall - ks[-1][4]:.3f} | {ks[-1][2]:.3f} | "
                     f"{returned:.3f} | {wall / kern:.3f} |")
    wall, returned, rows = summary[-1]
    lines += ["", f"Call {len(summary)} step by step:", "",
              "| step | host issue from | to | GPU start | GPU end | kernel ms | GPU idle before |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    prev_end = 0.0
    for kname, h0, h1, gs, ge, k in rows:
        if gs is None:
            lines.append(f"| {kname} | {h0:.3f} | {h1:.3f} | | | | |")
            continue
        lines.append(f"| {kname} | {h0:.3f} | {h1:.3f} | {gs:.3f} | {ge:.3f} | {k:.3f} | "
                     f"{max(0.0, gs - prev_end):.3f} |")
        prev_end = ge
    lines.append(f"| (call returns) | {returned:.3f} | | | | | |")
    lines.append(f"| (GPU synchronized) | {wall:.3f} | | | | | |")
