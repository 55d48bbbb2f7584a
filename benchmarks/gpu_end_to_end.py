"""rank() and label() end to end on the real GPU against their own kernels, the copies
and one random gather (issue 20's targets), in one run.

Every time is also given as a ratio to one random int32 gather of 2^24 elements
(``out = src[perm]``, CuPy, CUDA events) measured in the same run (`gather24`), and
list ranking's kernels also against a gather of n and against one random 64-bit
read plus one random 64-bit write per node (``dst[p1] = src[p2]``, uint64, CuPy: it
also streams the two index arrays, which a list ranking does not).

List ranking (random lists of 2^24 and 2^26 nodes, built on the GPU; method
random-splitter, its defaults):
  kernels     the CUDA-event times of all launches of one rank() call (RS1..RS5 and
              the helpers: checks, heads, validation), from a CuPy array;
  RS1..RS5    the method's kernels alone ("the best kernel sequence");
  device e2e  wall time of rank(cupy_succ) to the CuPy ranks, synchronized, with
              the default validate=True and with validate=False;
  numpy e2e   wall time of rank(numpy_succ) to numpy ranks, against H2D + kernels +
              D2H: H2D = device.to_device of the int32 array, D2H = to_host of n int64
              (both as rank() copies: page-locked for the copy, the locking included),
              each the median of CALLS copies alone in the same run.
Per-call ratios: each timed call's wall time (the whole call, the GPU synchronized
after it, as a user sees it) is divided by the kernel time of that same call (the
sum of its own launches' CUDA events), so that the kernels' call-to-call variation
(about 10% for union-find on Kronecker graphs) cancels; the tables give the median
of CALLS such ratios and their range.  Validation's cost: calls with and without it
alternate, and each pair gives a ratio.
Connected components (uniform random graph 2^22 vertices / 2^24 edges, and the
Kronecker/R-MAT graph of scale 21, edge factor 16, generators.rmat_graph; int32
edges): label(method="union-find") split into the CSR build and the union-find
kernels proper (uf_init .. uf_flatten: what ECL-CC's published time covers),
end to end from a CuPy array and from numpy like rank(); Shiloach-Vishkin's
kernels beside it.  Every result is checked (ranks against a CuPy pointer jumping,
labels of the two CC methods against each other).

Timeline (CUDA only, ``--timeline``): for a few calls of rank() (each list size) and of
label() (each graph) from device arrays, every launch's host issue time and its kernel's
start and end on the GPU (CUDA events, on one clock with an event recorded when the call
starts), the host reads and allocations (a zeroed one is a memset on the GPU), and when
the call returns: where the time beside the kernels goes (host before the first kernel,
gaps on the GPU, after the last kernel).

``python benchmarks/gpu_end_to_end.py [--out FILE] [--timeline]``; ``--sim`` runs the
same code on the simulator at tiny sizes (wall times, meaningless: a check that the
script works before it goes to a GPU).
"""
from __future__ import annotations

import argparse
import datetime
import time

import numpy as np

from e2e_timeline import timeline          # benchmarks/e2e_timeline.py (--timeline)
from simgpu_apps.gpu_tools.inputs import pointer_jumping_ranks, random_list_gpu
from simgpu_apps.table_out import emit


class Gpu:
    """The few CuPy things the benchmark needs."""

    def __init__(self, dev):
        import cupy as cp
        self.cp, self.dev = cp, dev

    def sync(self):
        self.cp.cuda.runtime.deviceSynchronize()

    def event_ms(self, fn, repeats=5):
        from gpu_timing import cuda_time
        return cuda_time(self.cp, fn, repeats)

    def gather_ms(self, n):
        cp = self.cp
        src = cp.arange(n, dtype=cp.int32)
        perm = cp.random.RandomState(1).permutation(n).astype(cp.int32)
        return self.event_ms(lambda: src[perm])

    def rw64_ms(self, n):
        cp = self.cp
        src = cp.arange(n, dtype=cp.uint64)
        dst = cp.empty(n, dtype=cp.uint64)
        p1 = cp.random.RandomState(2).permutation(n).astype(cp.int32)
        p2 = cp.random.RandomState(3).permutation(n).astype(cp.int32)

        def run():
            dst[p1] = src[p2]
        return self.event_ms(run)

    def random_list(self, n, seed):
        return random_list_gpu(self.cp, n, seed)

    def reference_ranks(self, succ):
        return pointer_jumping_ranks(self.cp, succ)

    def asarray(self, host):
        return self.cp.asarray(host)

    def asnumpy(self, arr):
        return self.cp.asnumpy(arr)


class Sim(Gpu):
    """The same calls on the simulator (DeviceArrays instead of CuPy; wall times)."""

    def __init__(self, dev):
        self.dev = dev

    def sync(self):
        pass

    def event_ms(self, fn, repeats=1):
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3

    def gather_ms(self, n):
        src, perm = np.arange(n), np.random.default_rng(1).permutation(n)
        return self.event_ms(lambda: src[perm])

    def rw64_ms(self, n):
        return self.gather_ms(n)

    def random_list(self, n, seed):
        from algorithms.generators import random_list
        return self.dev.to_device(random_list(n, seed).astype(np.int32))

    def reference_ranks(self, succ):
        from algorithms.list_ranking.sequential import rank_sequential
        return self.dev.to_device(rank_sequential(succ.to_host()))

    def asarray(self, host):
        return self.dev.to_device(np.ascontiguousarray(host).ravel())

    def asnumpy(self, arr):
        return arr.to_host()


CALLS = 7


def timed(g, fn):
    """(wall ms, result) of one call of fn(), the GPU synchronized after it; the
    launches' event times are read afterwards."""
    t0 = time.perf_counter()
    r = fn()
    g.sync()
    wall = (time.perf_counter() - t0) * 1e3
    g.dev.synchronize()
    return wall, r


def per_call(g, fn, kernels_of, calls=None):
    """[(wall ms, kernel ms, result)] of `calls` calls of fn() (timed), after one
    warm-up: the wall time of the whole call with the GPU synchronized after it, and
    the kernel time of that same call's launches.  Only the last result keeps its
    output array: a call's output is dropped before the next call, as a loop over
    calls would, so that each call reuses the memory pool's blocks (keeping all of
    them alive would charge every call a fresh cudaMalloc of its output)."""
    fn()
    g.sync()
    g.dev.synchronize()
    out = []
    for _ in range(calls or CALLS):
        if out:
            drop_output(out[-1][2])
        wall, r = timed(g, fn)
        out.append((wall, kernels_of(r), r))
    return out


def drop_output(result):
    """The result without its (large) output array; its launches stay."""
    for name in ("labels", "ranks"):
        if hasattr(result, name):
            setattr(result, name, None)


def spread(xs, fmt="{:.2f}"):
    """'median (min..max)' of xs."""
    return f"{fmt.format(np.median(xs))} ({fmt.format(min(xs))}..{fmt.format(max(xs))})"


def kernel_ms(reports):
    if ARGS.sim:                       # the lockstep engine times nothing
        return sum(r.time_ms or 1e-3 for r in reports)
    return sum(r.time_ms for r in reports)


def copy_ms(g, fn):
    """Median wall ms of CALLS calls of a copy, after a warm-up."""
    fn()
    g.sync()
    return float(np.median([timed(g, fn)[0] for _ in range(CALLS)]))


def list_ranking_rows(g, log2n, gather24, lines, verdicts):
    from algorithms import list_ranking as LR
    dev = g.dev
    n = 1 << log2n
    d_succ = g.random_list(n, log2n)
    gather_n = g.gather_ms(n)
    rw = g.rw64_ms(n)
    want = g.reference_ranks(d_succ)

    def call(validate=True, src=d_succ):
        return LR.rank(src, device=dev, validate=validate)

    def all_kernels(r):
        return kernel_ms(r.launches) + kernel_ms(r.helper_launches)

    dev_calls = per_call(g, call, all_kernels)
    r_on = dev_calls[-1][2]
    assert bool((g.asnumpy(r_on.ranks) == g.asnumpy(want)).all()), "ranks differ from the reference"
    dev_ratio = [w / k for w, k, _ in dev_calls]
    k_all = float(np.median([k for _, k, _ in dev_calls]))
    k_rs = float(np.median([kernel_ms(r.launches) for _, _, r in dev_calls]))
    e2e_on = float(np.median([w for w, _, _ in dev_calls]))
    call(False)
    g.sync()
    pairs, off_walls = [], []
    for _ in range(CALLS):                   # validation on and off, alternating
        w_on, _ = timed(g, call)
        w_off, r_off = timed(g, lambda: call(False))
        pairs.append(w_on / w_off)
        off_walls.append(w_off)
    host = g.asnumpy(d_succ)
    h2d = copy_ms(g, lambda: dev.to_device(host))
    out_d = dev.zeros(n, np.int64)
    d2h = copy_ms(g, lambda: out_d.to_host())
    np_calls = per_call(g, lambda: call(True, host), all_kernels)
    assert np.array_equal(np_calls[-1][2].ranks, g.asnumpy(want))
    np_ratio = [w / (h2d + k + d2h) for w, k, _ in np_calls]
    e2e_np = float(np.median([w for w, _, _ in np_calls]))
    steps = {}
    for rep in r_on.launches + r_on.helper_launches:
        steps[rep.extra["step"]] = steps.get(rep.extra["step"], 0.0) + kernel_ms([rep])
    lines.append(f"| 2^{log2n} | {gather_n:.3f} | {rw:.3f} | {k_rs:.3f} ({k_rs / rw:.2f}x rw, "
                 f"{k_rs / gather24:.2f} g24) | {k_all:.3f} ({k_all / gather24:.2f} g24) | "
                 f"{e2e_on:.3f} | **{spread(dev_ratio)}** | {float(np.median(off_walls)):.3f}, "
                 f"on / off **{spread(pairs)}** | {e2e_np:.1f} vs {h2d:.1f} + {k_all:.2f} + "
                 f"{d2h:.1f} | **{spread(np_ratio)}** |")
    lines.append("|  | steps (ms, one call): " + ", ".join(f"{k} {v:.3f}" for k, v in steps.items())
                 + " | | | | | | | | |")
    lines.append("|  | per call, device e2e / kernels (ms): " + ", ".join(
        f"{w:.3f} / {k:.3f}" for w, k, _ in dev_calls) + " | | | | | | | | |")
    sweep = []
    for p in sorted({n // 128, n // 64, n // 32, r_on.stats["threads"]}):
        times = []
        for _ in range(3):
            rp = LR.rank(d_succ, device=dev, threads=p, validate=False)
            dev.synchronize()
            times.append(kernel_ms(rp.launches))
        sweep.append((float(np.median(times)), p))
    best, best_p = min(sweep)
    lines.append(f"|  | RS1..RS5 by p (validate=False): " + ", ".join(
        f"p={p:,}: {t:.3f}" for t, p in sweep) + f"; default p = {r_on.stats['threads']:,}"
        " | | | | | | | | |")
    size = f"2^{log2n}"
    verdicts.append(("rank() from device arrays / its kernels (per call)", size, dev_ratio, 1.15))
    verdicts.append(("rank() from numpy / (H2D + kernels + D2H) (per call)", size, np_ratio,
                     1.15))
    verdicts.append(("rank() validation's added cost (e2e on / off, per pair)", size, pairs,
                     1.10))
    verdicts.append((f"best RS1..RS5 (p = {best_p:,}) / one random 64-bit read + write per "
                     "node", size, [best / rw], 1.10))
    return d_succ


def cc_rows(g, name, n, edges, gather24, lines, verdicts, target):
    from algorithms import connected_components as cc
    from algorithms.connected_components.union_find import CSR_KERNELS, UF_KERNELS
    dev = g.dev
    e32 = edges.astype(np.int32)
    d_edges = g.asarray(e32)

    def call(method="union-find", src=d_edges):
        return cc.label(n, src, method=method, device=dev)

    def all_kernels(r):
        return kernel_ms(r.launches)

    dev_calls = per_call(g, call, all_kernels)
    r_dev = dev_calls[-1][2]
    dev_ratio = [w / k for w, k, _ in dev_calls]
    ufk = [kernel_ms([x for x in r.launches if x.kernel in UF_KERNELS]) for _, _, r in dev_calls]
    csr = [kernel_ms([x for x in r.launches if x.kernel in CSR_KERNELS]) for _, _, r in dev_calls]
    check = [kernel_ms([x for x in r.launches if x.kernel.startswith("cc_edges_count")])
             for _, _, r in dev_calls]
    valid = [1 + c / w for c, (w, _, _) in zip(check, dev_calls)]
    k_all = float(np.median([k for _, k, _ in dev_calls]))
    k_csr, k_uf = float(np.median(csr)), float(np.median(ufk))
    e2e_dev = float(np.median([w for w, _, _ in dev_calls]))
    h2d = copy_ms(g, lambda: dev.to_device(e32.ravel()))
    out_d = dev.zeros(n, np.int64)
    d2h = copy_ms(g, lambda: out_d.to_host())
    np_calls = per_call(g, lambda: call(src=e32), all_kernels)
    np_ratio = [w / (h2d + k + d2h) for w, k, _ in np_calls]
    e2e_np = float(np.median([w for w, _, _ in np_calls]))
    sv = call("shiloach-vishkin")
    g.sync()
    dev.synchronize()
    k_sv = kernel_ms(sv.launches)
    assert np.array_equal(g.asnumpy(sv.labels), g.asnumpy(r_dev.labels)), "SV and UF differ"
    assert np.array_equal(np_calls[-1][2].labels, g.asnumpy(r_dev.labels))
    per = {}
    for x in r_dev.launches:
        per[x.kernel] = per.get(x.kernel, 0.0) + kernel_ms([x])
    breakdown = ", ".join(f"{k} {v:.3f}" for k, v in per.items())
    uf_g24 = [u / gather24 for u in ufk]
    lines.append(f"| {name} | {k_uf:.3f} ({spread(uf_g24)} g24) | {k_csr:.3f} | "
                 f"{k_all:.3f} ({k_all / gather24:.2f} g24) | {e2e_dev:.3f} | "
                 f"**{spread(dev_ratio)}** | {float(np.median(check)):.3f}, "
                 f"**{spread(valid, '{:.3f}')}** | {e2e_np:.1f} vs {h2d:.1f} + {k_all:.2f} + "
                 f"{d2h:.1f} | **{spread(np_ratio)}** | "
                 f"{k_sv:.2f} ({k_sv / gather24:.1f} g24, {sv.rounds} rounds) |")
    lines.append(f"|  | one call, p = {r_dev.threads:,}: {breakdown} | | | | | | | | |")
    lines.append("|  | per call, device e2e / kernels (ms): " + ", ".join(
        f"{w:.3f} / {k:.3f}" for w, k, _ in dev_calls) + " | | | | | | | | |")
    resident = int(dev.sm_count) * int(dev.max_threads_per_sm)
    for p in (32768, 4 * resident):      # SV's default geometry; union-find's earlier default
        rp = cc.label(n, d_edges, method="union-find", device=dev, threads=p)
        g.sync()
        dev.synchronize()
        assert np.array_equal(g.asnumpy(rp.labels), g.asnumpy(r_dev.labels)), f"p={p} differs"
        lines.append(f"|  | union-find kernels at p = {p:,}: "
                     f"{kernel_ms([x for x in rp.launches if x.kernel in UF_KERNELS]):.3f}, "
                     f"CSR {kernel_ms([x for x in rp.launches if x.kernel in CSR_KERNELS]):.3f}"
                     " | | | | | | | | |")
    verdicts.append((f"union-find kernels / gather24, {name} (per call)", "", uf_g24, target))
    verdicts.append((f"label() from device arrays / its kernels, {name} (per call)", "",
                     dev_ratio, 1.15))
    verdicts.append((f"label() from numpy / (H2D + kernels + D2H), {name} (per call)", "",
                     np_ratio, 1.15))
    verdicts.append((f"label() validation (1 + edge check kernel / e2e), {name} (per call)", "",
                     valid, 1.10))
    return d_edges


ARGS = None


def main():
    global ARGS, CALLS
    import simgpu
    from algorithms import generators as gen
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--log2n", type=int, nargs="+", default=[24, 26])
    p.add_argument("--graph", type=int, nargs=2, default=[22, 24], help="log2 n, log2 m")
    p.add_argument("--kron", type=int, nargs=2, default=[21, 16], help="scale, edge factor")
    p.add_argument("--sim", action="store_true")
    p.add_argument("--timeline", action="store_true", help="rank()'s and label()'s launch timelines (CUDA)")
    p.add_argument("--calls", type=int, default=CALLS, help="timed calls per measurement")
    p.add_argument("--out")
    ARGS = args = p.parse_args()
    CALLS = args.calls
    if args.sim:
        dev = simgpu.get_device("sim:h100")
        g = Sim(dev)
    else:
        dev = simgpu.get_device("cuda")
        g = Gpu(dev)
    gather24 = float(np.median([g.gather_ms(1 << 24 if not args.sim else 1 << 10)
                                for _ in range(3)]))
    lines = [f"# rank() and label() end to end on {dev.gpu_name} — benchmarks/gpu_end_to_end.py, "
             f"{datetime.date.today()}", "",
             f"One random int32 gather of 2^24 elements (g24): {gather24:.3f} ms (CUDA events, "
             "median of 3 measurements of a median of 5). Times in ms, medians of "
             f"{CALLS} calls after a warm-up; kernels: sums of the call's CUDA-event times; "
             "e2e: wall time of the whole call, synchronized. Ratios in bold: per call (the "
             "call's wall time / that same call's kernels), median (min..max) of "
             f"{CALLS}.", "",
             "## List ranking (random-splitter, one random list, int32 CuPy input)", "",
             "| n | gather n | 64-bit read + write | RS1..RS5 | all kernels of rank() | "
             "device e2e, validate | device e2e / its kernels | device e2e, no validation; "
             "validate on / off | numpy e2e vs H2D + kernels + D2H | numpy e2e / "
             "(H2D + kernels + D2H) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    verdicts = []
    lists = []
    for k in args.log2n:
        lists.append((k, list_ranking_rows(g, k, gather24, lines, verdicts)))
        print("\n".join(lines), flush=True)           # so far, in case a time limit stops the run
    lines += ["", "## Connected components (int32 edges)", "",
              "| graph | union-find kernels (uf_init..uf_flatten) | CSR build kernels | "
              "all kernels of label() | device e2e | device e2e / its kernels | edge check "
              "kernel; 1 + check / e2e | numpy e2e vs H2D + kernels + D2H | numpy e2e / "
              "(H2D + kernels + D2H) | Shiloach-Vishkin kernels |",
              "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    t0 = time.perf_counter()
    n, edges = gen.uniform_random_graph(1 << args.graph[0], 1 << args.graph[1], seed=1)
    graphs = []
    name = f"uniform 2^{args.graph[0]} / 2^{args.graph[1]}"
    graphs.append((name, n, cc_rows(g, name, n, edges, gather24, lines, verdicts, 2.9)))
    print(lines[-5], flush=True)
    n, edges = gen.rmat_graph(args.kron[0], args.kron[1], seed=1)
    name = f"Kronecker {args.kron[0]}/{args.kron[1]}"
    graphs.append((name, n, cc_rows(g, name, n, edges, gather24, lines, verdicts, 3.1)))
    print(f"graphs and CC: {time.perf_counter() - t0:.1f} s")
    if args.timeline and not args.sim:
        from algorithms import connected_components as cc
        from algorithms import list_ranking as LR
        calls = [(f"rank() from a CuPy array, 2^{k} (random-splitter, validate=True)",
                  lambda s=d_succ: LR.rank(s, device=dev)) for k, d_succ in lists]
        calls += [(f"label() from device arrays, {name}",
                   lambda n=n, e=d_edges: cc.label(n, e, method="union-find", device=dev))
                  for name, n, d_edges in graphs]
        for what, call in calls:
            try:
                timeline(g, call, what, lines)
            except Exception as exc:          # a diagnostic: keep the tables above
                import traceback
                lines += ["", f"timeline of {what} failed: {exc!r}", "```",
                          traceback.format_exc(), "```"]
    lines += ["", "## Targets (issue 20)", "", "| what | n | median | min..max | met (median) | "
              "calls over the target |", "|---|---|---:|---|---|---:|"]
    for what, size, got, target in verdicts:
        med = float(np.median(got))
        lines.append(f"| {what} | {size} | {med:.2f} | {min(got):.2f}..{max(got):.2f} | "
                     f"{'yes' if med <= target else 'NO'} (<= {target:.2f}) | "
                     f"{sum(x > target for x in got)} of {len(got)} |")
    return emit("\n".join(lines), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
