"""Peak host memory of one paper list-ranking point on sim:gtx260: rank() on the paper
run's input list (simgpu_apps.experiments.list_ranking.input_list), then the paper
run's check, each followed by the process's peak resident memory so far (ru_maxrss,
MiB; a whole process per point, so the peak is this point's own).  --log-sizes also
prints the largest size each array of the compiled replay's wave logs reached
(simgpu/sim/trace_log.py), the part of the peak that grows with the recorded trace.

    PYTHONPATH=. python3 benchmarks/lr_point_peak.py 64e6 --packing 48 [--log-sizes]
"""
import argparse
import resource


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def nodes(text: str) -> int:
    """2^K given as K, or a count such as 64e6."""
    try:
        n = int(float(text)) if "e" in text.lower() else 1 << int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give K for 2^K nodes (e.g. 23) or a "
                                         "count (e.g. 64e6)") from None
    if n < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: a list needs at least 2 nodes")
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("nodes", type=nodes,
                    help="the list's nodes: 2^K as K (e.g. 23) or a count (64e6)")
    ap.add_argument("--packing", type=int, default=48, choices=(48, 64))
    ap.add_argument("--log-sizes", action="store_true")
    args = ap.parse_args()
    n = args.nodes

    from algorithms import list_ranking
    from simgpu.sim import trace_log
    from simgpu_apps.experiments import list_ranking as L

    largest: dict = {}
    if args.log_sizes:
        grow = trace_log.WaveLog.grow

        def recorded(self, need, extra=0):
            grow(self, need, extra)
            for name in ("rows", "dlog", "taddr", "tsize", "tcut"):
                largest[name] = max(largest.get(name, 0), getattr(self, name).nbytes)

        trace_log.WaveLog.grow = recorded
    try:
        succ = L.input_list(n, L.INPUT_SEED)
        print(f"input list: {peak_mib():,.0f} MiB", flush=True)
        r = list_ranking.rank(succ, method="random-splitter",
                              device=L.make_device("sim:gtx260"), validate=False,
                              packing=args.packing, splitters="random",
                              seed=L.SPLITTER_SEED, threads=None, walk=None)
        print(f"rank():     {peak_mib():,.0f} MiB", flush=True)
    finally:
        if args.log_sizes:
            trace_log.WaveLog.grow = grow
    ok = L.ranks_are_right(succ, r.ranks)
    print(f"check:      {peak_mib():,.0f} MiB (ranks right: {ok})")
    if args.log_sizes:
        print("wave log, largest MiB:", {k: round(v / 2**20, 1) for k, v in largest.items()})


if __name__ == "__main__":
    main()
