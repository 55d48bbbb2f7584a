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
              D2H, each measured alone in the same run: H2D = device.to_device of the
              int32 array, D2H = to_host of n int64 (both as rank() copies: page-locked
              for the copy, the locking included).
Connected components (uniform random graph 2^22 vertices / 2^24 edges, and the
Kronecker/R-MAT graph of scale 21, edge factor 16, generators.rmat_graph; int32
edges): label(method="union-find") split into the CSR build and the union-find
kernels proper (uf_init .. uf_flatten: what ECL-CC's published time covers),
end to end from a CuPy array and from numpy like rank(); Shiloach-Vishkin's
kernels beside it.  Every result is checked (ranks against a CuPy pointer jumping,
labels of the two CC methods against each other).

``python benchmarks/gpu_end_to_end.py [--out FILE] [--quick]``; ``--sim`` runs the
same code on the simulator at tiny sizes (wall times, meaningless: a check that the
script works before it goes to a GPU).
"""
from __future__ import annotations

import argparse
import datetime
import time

import numpy as np

from simgpu_apps.gpu_tools.inputs import random_list_gpu
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
        cp = self.cp
        n = succ.size
        rank = (succ != cp.arange(n, dtype=cp.int32)).astype(cp.int64)
        s = succ.copy()
        for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))))):
            rank = rank + rank[s]
            s = s[s]
        return rank

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


def wall_ms(g, fn, repeats=3):
    """(median wall ms of fn() with the GPU synchronized after it, last result);
    one warm-up call first."""
    fn()
    g.sync()
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        g.sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times)), out


def kernel_ms(reports):
    if ARGS.sim:                       # the lockstep engine times nothing
        return sum(r.time_ms or 1e-3 for r in reports)
    return sum(r.time_ms for r in reports)


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

    # kernels: median over 3 calls of the sums of the CUDA-event times
    ks, rs = [], []
    for _ in range(3):
        r = call()
        g.sync()
        dev.synchronize()
        ks.append(kernel_ms(r.launches) + kernel_ms(r.helper_launches))
        rs.append(kernel_ms(r.launches))
    k_all, k_rs = float(np.median(ks)), float(np.median(rs))
    assert bool((g.asnumpy(r.ranks) == g.asnumpy(want)).all()), "ranks differ from the reference"
    e2e_on, r_on = wall_ms(g, lambda: call(True))
    e2e_off, r_off = wall_ms(g, lambda: call(False))
    dev.synchronize()
    k_off = kernel_ms(r_off.launches) + kernel_ms(r_off.helper_launches)
    host = g.asnumpy(d_succ)
    e2e_np, r_np = wall_ms(g, lambda: call(True, host))
    assert np.array_equal(r_np.ranks, g.asnumpy(want))
    h2d, _ = wall_ms(g, lambda: dev.to_device(host))
    out_d = dev.zeros(n, np.int64)
    d2h, _ = wall_ms(g, lambda: out_d.to_host())
    steps = {}
    for rep in r_on.launches + r_on.helper_launches:
        steps[rep.extra["step"]] = steps.get(rep.extra["step"], 0.0) + kernel_ms([rep])
    lines.append(f"| 2^{log2n} | {gather_n:.3f} | {rw:.3f} | {k_rs:.3f} ({k_rs / rw:.2f}x rw, "
                 f"{k_rs / gather24:.2f} g24) | {k_all:.3f} ({k_all / gather24:.2f} g24) | "
                 f"{e2e_on:.3f} ({e2e_on / k_all:.2f}x) | {e2e_off:.3f} (kernels {k_off:.3f}) | "
                 f"{e2e_np:.1f} vs {h2d:.1f} + {k_all:.2f} + {d2h:.1f} "
                 f"({e2e_np / (h2d + k_all + d2h):.2f}x) |")
    lines.append("|  | steps (ms, one call): " + ", ".join(f"{k} {v:.3f}" for k, v in steps.items())
                 + " | | | | | | |")
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
        " | | | | | | |")
    verdicts.append(("rank() from device arrays / its kernels", f"2^{log2n}", e2e_on / k_all, 1.15))
    verdicts.append(("rank() from numpy / (H2D + kernels + D2H)", f"2^{log2n}",
                     e2e_np / (h2d + k_all + d2h), 1.15))
    verdicts.append(("rank() validation's added cost (e2e on / off)", f"2^{log2n}",
                     e2e_on / e2e_off, 1.10))
    verdicts.append((f"best RS1..RS5 (p = {best_p:,}) / one random 64-bit read + write per "
                     "node", f"2^{log2n}", best / rw, 1.10))


def cc_rows(g, name, n, edges, gather24, lines, verdicts, target):
    from algorithms import connected_components as cc
    from algorithms.connected_components.union_find import CSR_KERNELS, UF_KERNELS
    dev = g.dev
    e32 = edges.astype(np.int32)
    d_edges = g.asarray(e32)

    def call(method="union-find", src=d_edges):
        return cc.label(n, src, method=method, device=dev)

    ks, csr, ufk = [], [], []
    for _ in range(3):
        r = call()
        g.sync()
        dev.synchronize()
        ks.append(kernel_ms(r.launches))
        csr.append(kernel_ms([x for x in r.launches if x.kernel in CSR_KERNELS]))
        ufk.append(kernel_ms([x for x in r.launches if x.kernel in UF_KERNELS]))
    k_all, k_csr, k_uf = (float(np.median(x)) for x in (ks, csr, ufk))
    check = [kernel_ms([x]) for x in r.launches if x.kernel.startswith("cc_edges_count")]
    e2e_dev, r_dev = wall_ms(g, call)
    e2e_np, r_np = wall_ms(g, lambda: call(src=e32))
    h2d, _ = wall_ms(g, lambda: dev.to_device(e32.ravel()))
    out_d = dev.zeros(n, np.int64)
    d2h, _ = wall_ms(g, lambda: out_d.to_host())
    sv = call("shiloach-vishkin")
    g.sync()
    dev.synchronize()
    k_sv = kernel_ms(sv.launches)
    assert np.array_equal(g.asnumpy(sv.labels), g.asnumpy(r_dev.labels)), "SV and UF differ"
    assert np.array_equal(r_np.labels, g.asnumpy(r_dev.labels))
    per = {}
    for x in r.launches:
        per[x.kernel] = per.get(x.kernel, 0.0) + kernel_ms([x])
    breakdown = ", ".join(f"{k} {v:.3f}" for k, v in per.items())
    lines.append(f"| {name} | {k_uf:.3f} ({k_uf / gather24:.2f} g24) | {k_csr:.3f} | "
                 f"{k_all:.3f} ({k_all / gather24:.2f} g24) | {e2e_dev:.3f} "
                 f"({e2e_dev / k_all:.2f}x) | {check[0]:.3f} | {e2e_np:.1f} vs {h2d:.1f} + "
                 f"{k_all:.2f} + {d2h:.1f} ({e2e_np / (h2d + k_all + d2h):.2f}x) | "
                 f"{k_sv:.2f} ({k_sv / gather24:.1f} g24, {sv.rounds} rounds) |")
    lines.append(f"|  | one call, p = {r.threads:,}: {breakdown} | | | | | | |")
    resident = int(dev.sm_count) * int(dev.max_threads_per_sm)
    for p in (32768, 4 * resident):      # SV's default geometry; union-find's earlier default
        rp = cc.label(n, d_edges, method="union-find", device=dev, threads=p)
        g.sync()
        dev.synchronize()
        assert np.array_equal(g.asnumpy(rp.labels), g.asnumpy(r_dev.labels)), f"p={p} differs"
        lines.append(f"|  | union-find kernels at p = {p:,}: "
                     f"{kernel_ms([x for x in rp.launches if x.kernel in UF_KERNELS]):.3f}, "
                     f"CSR {kernel_ms([x for x in rp.launches if x.kernel in CSR_KERNELS]):.3f}"
                     " | | | | | | |")
    verdicts.append((f"union-find kernels / gather24, {name}", "", k_uf / gather24, target))
    verdicts.append((f"label() from device arrays / its kernels, {name}", "", e2e_dev / k_all,
                     1.15))
    verdicts.append((f"label() from numpy / (H2D + kernels + D2H), {name}", "",
                     e2e_np / (h2d + k_all + d2h), 1.15))
    verdicts.append((f"label() validation (edge range check kernel) / e2e, {name}", "",
                     1 + check[0] / e2e_dev, 1.10))


ARGS = None


def main():
    global ARGS
    import simgpu
    from algorithms import generators as gen
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--log2n", type=int, nargs="+", default=[24, 26])
    p.add_argument("--graph", type=int, nargs=2, default=[22, 24], help="log2 n, log2 m")
    p.add_argument("--kron", type=int, nargs=2, default=[21, 16], help="scale, edge factor")
    p.add_argument("--sim", action="store_true")
    p.add_argument("--out")
    ARGS = args = p.parse_args()
    if args.sim:
        dev = simgpu.get_device("sim:h100")
        g = Sim(dev)
    else:
        dev = simgpu.get_device("cuda")
        g = Gpu(dev)
    gather24 = g.gather_ms(1 << 24 if not args.sim else 1 << 10)
    lines = [f"# rank() and label() end to end on {dev.gpu_name} — benchmarks/gpu_end_to_end.py, "
             f"{datetime.date.today()}", "",
             f"One random int32 gather of 2^24 elements (g24): {gather24:.3f} ms (CUDA events, "
             "median of 5). Times in ms; kernels: sums of CUDA-event times, median of 3 calls; "
             "e2e: wall time, synchronized, median of 3 after a warm-up.", "",
             "## List ranking (random-splitter, one random list, int32 CuPy input)", "",
             "| n | gather n | 64-bit read + write | RS1..RS5 | all kernels of rank() | "
             "device e2e, validate (x kernels) | device e2e, no validation | "
             "numpy e2e vs H2D + kernels + D2H |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    verdicts = []
    for k in args.log2n:
        list_ranking_rows(g, k, gather24, lines, verdicts)
    lines += ["", "## Connected components (int32 edges)", "",
              "| graph | union-find kernels (uf_init..uf_flatten) | CSR build kernels | "
              "all kernels of label() | device e2e (x kernels) | edge check kernel | "
              "numpy e2e vs H2D + kernels + D2H | Shiloach-Vishkin kernels |",
              "|---|---:|---:|---:|---:|---:|---|---:|"]
    t0 = time.perf_counter()
    n, edges = gen.uniform_random_graph(1 << args.graph[0], 1 << args.graph[1], seed=1)
    cc_rows(g, f"uniform 2^{args.graph[0]} / 2^{args.graph[1]}", n, edges, gather24, lines,
            verdicts, 2.9)
    n, edges = gen.rmat_graph(args.kron[0], args.kron[1], seed=1)
    cc_rows(g, f"Kronecker {args.kron[0]}/{args.kron[1]}", n, edges, gather24, lines,
            verdicts, 3.1)
    print(f"graphs and CC: {time.perf_counter() - t0:.1f} s")
    lines += ["", "## Targets (issue 20)", "", "| what | n | measured | target | met |",
              "|---|---|---:|---:|---|"]
    for what, size, got, target in verdicts:
        lines.append(f"| {what} | {size} | {got:.2f} | <= {target:.2f} | "
                     f"{'yes' if got <= target else 'NO'} |")
    return emit("\n".join(lines), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
