"""What a list-ranking point asks of the trace-block replay, per node: the replayed
events (memory instructions, stalls, fences), the calls of the compiled memory core
(first calls and resumes after waiting for miss entries or a held request), the warps
and transactions they book.  Counted on the Python replay (simgpu.sim.timed.run_timed
with trace=), which makes one core call per call counted here; the compiled loop
(simgpu/sim/trace_loop.py) makes the same calls from compiled code.

    PYTHONPATH=. python3 benchmarks/trace_counts.py [--variants rs48 rs64] [--log2 20]
"""
from __future__ import annotations

import argparse
import collections

from simgpu.mem import fast_memory
from simgpu.sim import trace_compiled, trace_replay
from simgpu_apps.experiments import list_ranking as L


def count(variant: str, log2: int) -> collections.Counter:
    c: collections.Counter = collections.Counter()
    serve, replay = fast_memory.FastMemory.serve, trace_replay.TraceSource._replay

    def counting_serve(self, kind, per_warp, *args):
        c["core calls"] += 1
        if isinstance(per_warp, fast_memory.PackedWarps):
            c["resumes"] += 1
        else:
            c["warps"] += len(per_warp)
            c["transactions"] += sum(len(a) for a, _ in per_warp)
        return serve(self, kind, per_warp, *args)

    def counting_replay(wave, b, wc, env, source):
        for event in replay(wave, b, wc, env, source):
            c[type(event).__name__] += 1
            yield event

    fast_memory.FastMemory.serve = counting_serve
    trace_replay.TraceSource._replay = staticmethod(counting_replay)
    enabled, trace_compiled.ENABLED = trace_compiled.ENABLED, False
    try:
        L.compute_sim(L.point_params(variant, 1 << log2), "sim:gtx260")
    finally:
        fast_memory.FastMemory.serve = serve
        trace_replay.TraceSource._replay = staticmethod(replay)
        trace_compiled.ENABLED = enabled
    return c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", nargs="+", default=["rs48", "rs64"])
    ap.add_argument("--log2", type=int, default=20)
    args = ap.parse_args()
    fields = ("TracedAccess", "Stall", "core calls", "resumes", "warps", "transactions")
    print(f"sim:gtx260, trace-block, 2^{args.log2} nodes, per node (all launches of the point)\n")
    print("| point | memory instructions | stalls | core calls | of them resumes | warps "
          "| transactions |\n|---|---|---|---|---|---|---|")
    for v in args.variants:
        c = count(v, args.log2)
        n = 1 << args.log2
        print(f"| {v} | " + " | ".join(f"{c[f] / n:.3f}" for f in fields) + " |", flush=True)


if __name__ == "__main__":
    main()
