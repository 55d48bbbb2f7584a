"""Where rank()'s end-to-end time goes on a real GPU beside its kernels: a GPU
timeline of one call (every launch's start and end, from its CUDA events, relative
to an event recorded just before the call), the host's cost of the pieces a call
is made of, and a cProfile of a few calls.

``python benchmarks/rank_host_profile.py [--log2n 24] [--out FILE]`` (CUDA only).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import numpy as np

from simgpu_apps.gpu_tools.inputs import random_list_gpu
from simgpu_apps.table_out import emit


def host_us(fn, repeats=200):
    fn()
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - t0) / repeats * 1e6


def timeline(cp, dev, call, lines, label):
    """One call with every launch's events kept: when each kernel ran (GPU time,
    ms after an event recorded when the call began) and the gaps between them."""
    kept = []
    launch = dev.launch

    def keep(kernel, grid, block, *args, **kw):
        rep = launch(kernel, grid, block, *args, **kw)
        _, start, end = dev._pending[-1] if dev._pending else (None, None, None)
        kept.append((rep, start, end))
        return rep
    dev.launch = keep
    try:
        cp.cuda.runtime.deviceSynchronize()
        e0 = cp.cuda.Event()
        t0 = time.perf_counter()
        e0.record()
        r = call()
        t_ret = time.perf_counter()
        e1 = cp.cuda.Event()
        e1.record()
        e1.synchronize()
        t_end = time.perf_counter()
    finally:
        dev.launch = launch
    lines.append(f"### {label}: wall {1e3 * (t_ret - t0):.3f} ms to return, "
                 f"{1e3 * (t_end - t0):.3f} ms to the GPU idle; GPU span to e1 "
                 f"{cp.cuda.get_elapsed_time(e0, e1):.3f} ms")
    lines += ["", "| launch | step | start | end | kernel | gap before |", "|---|---|---:|---:|---:|---:|"]
    prev_end = 0.0
    busy = 0.0
    for rep, s, e in kept:
        if s is None:
            continue
        a = cp.cuda.get_elapsed_time(e0, s)
        b = cp.cuda.get_elapsed_time(e0, e)
        busy += b - a
        lines.append(f"| {rep.kernel} | {rep.extra.get('step', '')} | {a:.3f} | {b:.3f} | "
                     f"{b - a:.3f} | {a - prev_end:.3f} |")
        prev_end = b
    lines += ["", f"kernels {busy:.3f} ms of a {prev_end:.3f} ms span; {len(kept)} launches", ""]
    return r


def main():
    import cupy as cp

    import simgpu
    from algorithms import list_ranking as LR
    from algorithms.list_ranking.wylie import wylie_jump
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--log2n", type=int, nargs="+", default=[24])
    p.add_argument("--rs4-sweep", type=int, nargs="*", default=[24, 26])
    p.add_argument("--out")
    args = p.parse_args()
    dev = simgpu.get_device("cuda")
    lines = [f"# rank() host profile on {dev.gpu_name} — benchmarks/rank_host_profile.py", ""]
    small = dev.zeros(1024, np.uint64)
    flags = dev.zeros(64, np.int32)
    lines += ["## Host cost of the pieces (us per call)", "",
              f"- dev.launch(wylie_jump, 4 blocks): {host_us(lambda: dev.launch(wylie_jump, 4, 256, small, small, flags, 1, 1024)):.1f}",
              f"- dev.zeros(1024, uint64): {host_us(lambda: dev.zeros(1024, np.uint64)):.1f}",
              f"- dev.empty(1024, uint64): {host_us(lambda: dev.empty(1024, np.uint64)):.1f}",
              f"- dev.to_device(5 int64): {host_us(lambda: dev.to_device(np.zeros(5, np.int64))):.1f}",
              f"- 4 int32 to_host (GPU idle): {host_us(lambda: flags.to_host()):.1f}",
              f"- dev.synchronize() (idle): {host_us(dev.synchronize):.1f}",
              f"- cp.cuda.Event() + record: {host_us(lambda: cp.cuda.Event().record()):.1f}", ""]
    for log2n in args.log2n:
        n = 1 << log2n
        succ = random_list_gpu(cp, n, log2n)
        for validate in (False, True):
            call = lambda: LR.rank(succ, device=dev, validate=validate)   # noqa: E731
            for _ in range(3):
                call()
            dev.synchronize()
            walls = []
            for _ in range(10):
                t0 = time.perf_counter()
                r = call()
                cp.cuda.runtime.deviceSynchronize()
                walls.append((time.perf_counter() - t0) * 1e3)
            dev.synchronize()
            k = sum(x.time_ms for x in r.launches + r.helper_launches)
            lines.append(f"## 2^{log2n}, validate={validate}: wall median {np.median(walls):.3f} ms "
                         f"(min {min(walls):.3f}), kernels {k:.3f} ms")
            lines.append("")
            timeline(cp, dev, call, lines, f"2^{log2n} validate={validate} timeline")
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(5):
                call()
                cp.cuda.runtime.deviceSynchronize()
            prof.disable()
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
            lines += ["```", s.getvalue()[-6000:], "```", ""]
    from algorithms.list_ranking import random_splitter
    for log2n in args.rs4_sweep:
        n = 1 << log2n
        succ = random_list_gpu(cp, n, log2n)
        lines += [f"## RS4 at 2^{log2n}: in place (factor 8) vs wylie_jump rounds (factor 0)", ""]
        for factor in (0, 8, 0, 8):
            random_splitter.IN_PLACE_RESIDENT_FACTOR = factor
            walls, ks, rs4 = [], [], []
            for _ in range(4):
                t0 = time.perf_counter()
                r = LR.rank(succ, device=dev)
                cp.cuda.runtime.deviceSynchronize()
                walls.append((time.perf_counter() - t0) * 1e3)
                dev.synchronize()
                ks.append(sum(x.time_ms for x in r.launches))
                rs4.append(sum(x.time_ms for x in r.launches if x.extra["step"] == "RS4"))
            lines.append(f"- factor {factor}: wall {np.median(walls[1:]):.3f} ms, RS1..RS5 "
                         f"{np.median(ks[1:]):.3f}, RS4 {np.median(rs4[1:]):.3f} "
                         f"({len([x for x in r.launches if x.extra['step'] == 'RS4'])} launches)")
        random_splitter.IN_PLACE_RESIDENT_FACTOR = 1
    return emit("\n".join(lines), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
