"""One list-ranking run (rank(), its default random-splitter method, packing 64) on a
simulated device: the simulated time, the process CPU time and the peak resident
memory (a whole process per size, so that the peak is this run's own).

    PYTHONPATH=. python3 benchmarks/rank_peak.py 23 [--engine trace-block] [--device sim:gtx260]
"""
import argparse
import resource
import time

import simgpu
from algorithms.list_ranking import rank
from timed_speed import random_list      # (a sibling script: benchmarks/ is on sys.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log2", type=int, help="log2 of the list's nodes")
    ap.add_argument("--engine", default="trace-block")
    ap.add_argument("--device", default="sim:gtx260")
    args = ap.parse_args()
    n = 1 << args.log2
    succ = random_list(n)
    dev = simgpu.get_device(args.device)
    dev.default_engine = args.engine
    t = time.process_time()
    res = rank(succ, device=dev)
    cpu = time.process_time() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"| {args.device} | {args.engine} | 2^{args.log2} | "
          f"{sum(r.time_ms for r in res.launches):.4f} | {cpu:.1f} | {peak:,.0f} |")


if __name__ == "__main__":
    main()
