"""Speed of the timed engine per simulated list node (issue 18: the timed engine must
stay within 1.5x of its earlier speed per node).

    python benchmarks/timed_speed.py [--log2 16 17 18] [--engine timed-block]

Ranks a random list (one list, random splitters, 64-bit packing) on sim:gtx260 with
the given timed engine and prints CPU seconds (time.process_time of this process,
fastest of --repeat runs) per node, with the simulated cycles so that runs of two
versions can be told apart from runs of one.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from algorithms.list_ranking import rank


def random_list(n: int, seed: int = 1) -> np.ndarray:
    order = np.random.default_rng(seed).permutation(n)
    succ = np.empty(n, dtype=np.int64)
    succ[order[:-1]] = order[1:]
    succ[order[-1]] = order[-1]
    return succ


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", type=int, nargs="+", default=[16, 17, 18])
    ap.add_argument("--engine", default="timed-block")
    ap.add_argument("--device", default="sim:gtx260")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    print(f"| n | engine | device | CPU s | us per node | simulated ms |")
    print("|---:|---|---|---:|---:|---:|")
    for k in args.log2:
        succ = random_list(1 << k)
        best, ms = None, None
        for _ in range(args.repeat):
            t0 = time.process_time()
            res = rank(succ, device=args.device, launch_options={"engine": args.engine})
            cpu = time.process_time() - t0
            best = cpu if best is None else min(best, cpu)
            ms = sum(r.time_ms for r in res.launches)
        print(f"| 2^{k} | {args.engine} | {args.device} | {best:.2f} | "
              f"{best / (1 << k) * 1e6:.2f} | {ms:.4f} |", flush=True)


if __name__ == "__main__":
    main()
