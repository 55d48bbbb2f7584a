"""List ranking on the real GPU against its floor and its peer (issue 5's bar).

For random lists of n = 2^24 and 2^26 nodes, in one run on one GPU:
  - one random int32 gather of n elements, ``out = src[perm]`` (CuPy): the floor;
  - one random 64-bit scatter of n elements, ``words[perm] = vals``: what writing
    each node's owner and local rank costs on its own;
  - pointer jumping written with CuPy array operations: the peer a CuPy user writes;
  - the CPU random splitter (the paper's multi-core baseline), one run each with
    1, 4 and 16 processes (wall time: it has no kernels);
  - simgpu's random splitter (64-bit packing) on the "cuda" device, for several
    thread counts p (fixed ones, and n/128 .. n/16 splitters): the sum of its
    kernels' CUDA-event times, per step RS1..RS5, and end to end.
All results are checked against each other (the ranks must be identical).
Run: ``python benchmarks/gpu_list_ranking.py [--log2n 24 26] [--out DIR]``.
"""
from __future__ import annotations

import argparse
import datetime
import time

import numpy as np

from gpu_timing import algorithm_time, cuda_time
from simgpu_apps.gpu_tools.inputs import pointer_jumping_ranks, random_list_gpu
from simgpu_apps.table_out import emit


def main():
    import cupy as cp

    import simgpu
    from algorithms import list_ranking
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--log2n", type=int, nargs="+", default=[24, 26])
    p.add_argument("--threads", type=int, nargs="+", default=[33792, 135168],
                   help="fixed thread counts p (default: %(default)s)")
    p.add_argument("--per-node", type=int, nargs="+", default=[128, 64, 32, 16],
                   help="also p = n / each of these (default: %(default)s)")
    p.add_argument("--cpu-workers", type=int, nargs="*", default=[1, 4, 16],
                   help="also time the CPU random splitter with these many processes "
                        "(default: %(default)s; none: skip)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    dev = simgpu.get_device("cuda")
    lines = [f"# List ranking on {dev.gpu_name} — benchmarks/gpu_list_ranking.py, "
             f"{datetime.date.today()}", "",
             "| n | what | p | kernel ms | RS1 / RS2 / RS3 / RS4 / RS5 ms | end-to-end ms "
             "| vs gather | peer / this |",
             "|---:|---|---:|---:|---|---:|---:|---:|"]
    for log2n in args.log2n:
        n = 1 << log2n
        succ = random_list_gpu(cp, n, seed=log2n)
        src = cp.arange(n, dtype=cp.int32)
        perm = cp.random.RandomState(1).permutation(n).astype(cp.int32)
        gather = cuda_time(cp, lambda: src[perm])
        words = cp.zeros(n, cp.uint64)
        vals = cp.arange(n, dtype=cp.uint64)

        def scatter():
            words[perm] = vals
        store = cuda_time(cp, scatter)
        peer_rank = pointer_jumping_ranks(cp, succ)
        peer = cuda_time(cp, lambda: pointer_jumping_ranks(cp, succ), repeats=3)
        lines.append(f"| 2^{log2n} | random int32 gather (floor) | | {gather:.3f} | | | 1.00 | |")
        lines.append(f"| 2^{log2n} | random 64-bit scatter | | {store:.3f} | | | "
                     f"{store / gather:.2f} | |")
        lines.append(f"| 2^{log2n} | CuPy pointer jumping (peer) | | | | {peer:.3f} | "
                     f"{peer / gather:.1f} | 1.0 |")
        host = cp.asnumpy(succ)
        expected = cp.asnumpy(peer_rank)
        counts = list(args.threads) + [n // k for k in args.per_node]
        for threads in counts:
            r = list_ranking.rank(host, method="random-splitter", device=dev, threads=threads,
                                  packing=64, validate=False)      # warm-up + correctness
            if not np.array_equal(r.ranks, expected):
                raise SystemExit(f"ranks differ from the CuPy peer at n=2^{log2n}, p={threads}")
            k, e, last = algorithm_time(lambda: list_ranking.rank(
                host, method="random-splitter", device=dev, threads=threads, packing=64,
                validate=False))
            steps = " / ".join(f"{sum(rep.time_ms for rep in last.launches if rep.extra['step'] == s):.3f}"
                               for s in ("RS1", "RS2", "RS3", "RS4", "RS5"))
            lines.append(f"| 2^{log2n} | random splitter, 64-bit | {threads:,} | {k:.3f} | "
                         f"{steps} | {e:.1f} | {k / gather:.2f} | {peer / k:.1f} |")
        for workers in args.cpu_workers:
            t0 = time.perf_counter()
            r = list_ranking.rank(host, method="cpu-random-splitter", workers=workers,
                                  validate=False)
            wall = (time.perf_counter() - t0) * 1e3
            if not np.array_equal(r.ranks, expected):
                raise SystemExit(f"CPU ranks differ from the CuPy peer at n=2^{log2n}")
            lines.append(f"| 2^{log2n} | CPU random splitter, {workers} processes | "
                         f"{r.stats['threads']:,} | | | {wall:.1f} | {wall / gather:.0f} | "
                         f"{peer / wall:.2f} |")
        print("\n".join(lines[-(len(counts) + 3 + len(args.cpu_workers)):]), flush=True)
    lines += ["", "kernel ms: the sum of the launches' CUDA-event times (the last of the "
              "timed runs for the per-step split); end-to-end: "
              "wall time of list_ranking.rank() including host<->device copies; "
              "vs gather: kernel ms / gather ms (the bar: <= 3); peer / this: CuPy "
              "pointer jumping ms / kernel ms (the bar: >= 10).  The scatter ``words[perm] = "
              "vals`` (one random 64-bit store per element) is what RS3's walk must also "
              "do once per node, on top of its one dependent random read per node."]
    emit("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
