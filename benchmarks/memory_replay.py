"""Replay a run's memory-pipeline calls: the memory system's own CPU time, and a check
that a change to it keeps every result.

    python benchmarks/memory_replay.py record FILE [--log2 16] [--device sim:gtx260]
    python benchmarks/memory_replay.py replay FILE [--repeat 3]

``record`` runs benchmarks/timed_speed.py's list ranking (timed-block; on
sim:gtx260 unless --device says otherwise) and writes
every call the timed engine makes into the memory system (``access``, the miss
entries' ``free_at``/``when_free``, the far loads' ``crossings`` and ``cross``,
``drained``, ``summary``) with its result, per
launch, with the device's TLB state as the launch found it.  ``replay`` makes a
fresh memory system per launch, repeats the calls in order, checks that each
returns exactly what it returned when recorded, and prints the CPU seconds the
calls took (time.process_time, fastest of --repeat).  Recorded with one version
of simgpu/mem and replayed with another, it shows whether the second changes any
result, and how much faster or slower its pipeline is, without the interpreter.
"""
from __future__ import annotations

import argparse
import copy
import pickle
import time

from simgpu.mem import memory_system as ms
from simgpu.mem.mshr import Mshr


def _record(path: str, log2: int, device: str = "sim:gtx260") -> None:
    import numpy as np

    from algorithms.list_ranking import rank

    launches: list = []
    orig_init, orig_access = ms.MemorySystem.__init__, ms.MemorySystem.access
    orig_free, orig_when = Mshr.free_at, Mshr.when_free
    orig_drained, orig_summary = ms.MemorySystem.drained, ms.MemorySystem.summary
    orig_crossings, orig_cross = ms.MemorySystem.crossings, ms.MemorySystem.cross

    def init(self, config, l2=None, tlbs=None):
        launches.append({"config": config, "l2": copy.deepcopy(l2),
                         "tlbs": copy.deepcopy(tlbs), "calls": []})
        orig_init(self, config, l2, tlbs)

    def calls():
        return launches[-1]["calls"]

    def access(self, kind, addresses, sizes, t, sm=0, *, l1=True, lanes=None):
        args = (kind, list(addresses), list(sizes), t, sm, l1, copy.deepcopy(lanes))
        done = orig_access(self, kind, addresses, sizes, t, sm, l1=l1, lanes=lanes)
        calls().append(("access", args, (done, self.accepted)))
        return done

    def free_at(self, sm, t):
        out = orig_free(self, sm, t)
        calls().append(("free_at", (sm, t), out))
        return out

    def when_free(self, sm, n):
        out = orig_when(self, sm, n)
        calls().append(("when_free", (sm, n), out))
        return out

    def drained_get(self):
        out = orig_drained.fget(self)
        calls().append(("drained", (), out))
        return out

    def summary(self, cycles):
        out = orig_summary(self, cycles)
        calls().append(("summary", (cycles,), out))
        return out

    def set_crossings(self, value):
        calls().append(("set_crossings", (copy.deepcopy(value),),
                        copy.deepcopy(orig_crossings.fget(self))))   # (what it replaces)
        orig_crossings.fset(self, value)

    def cross(self, crossings):
        args = (copy.deepcopy(crossings),)
        out = orig_cross(self, crossings)
        calls().append(("cross", args, out))
        return out

    ms.MemorySystem.__init__, ms.MemorySystem.access = init, access
    ms.MemorySystem.crossings = property(orig_crossings.fget, set_crossings)
    ms.MemorySystem.cross = cross
    Mshr.free_at, Mshr.when_free = free_at, when_free
    ms.MemorySystem.drained = property(drained_get, orig_drained.fset)
    ms.MemorySystem.summary = summary
    n = 1 << log2
    order = np.random.default_rng(1).permutation(n)      # timed_speed.random_list
    succ = np.empty(n, dtype=np.int64)
    succ[order[:-1]] = order[1:]
    succ[order[-1]] = order[-1]
    rank(succ, device=device, launch_options={"engine": "timed-block"})
    with open(path, "wb") as f:
        pickle.dump(launches, f)
    print(f"{len(launches)} launches, {sum(len(x['calls']) for x in launches)} calls -> {path}")


def _replay(path: str, repeat: int) -> None:
    with open(path, "rb") as f:
        launches = pickle.load(f)
    best = None
    for _ in range(repeat):
        states = [(copy.deepcopy(x["l2"]), copy.deepcopy(x["tlbs"])) for x in launches]
        mismatches = 0
        t0 = time.process_time()
        for x, (l2, tlbs) in zip(launches, states):
            memory = ms.MemorySystem(x["config"], l2, tlbs)
            mshr = memory.mshr
            for name, args, expect in x["calls"]:
                if name == "access":
                    kind, a, s, t, sm, l1, lanes = args
                    got = (memory.access(kind, a, s, t, sm, l1=l1, lanes=lanes),
                           memory.accepted)
                elif name == "free_at":
                    got = mshr.free_at(*args)
                elif name == "when_free":
                    got = mshr.when_free(*args)
                elif name == "set_crossings":  # (the engine takes the far loads' data)
                    got = copy.deepcopy(memory.crossings)
                    memory.crossings = copy.deepcopy(args[0])
                elif name == "cross":
                    got = memory.cross(copy.deepcopy(args[0]))
                elif name == "drained":
                    got = memory.drained
                else:                  # (mshr_waits: the engine counts them, not these calls)
                    got = {k: v for k, v in memory.summary(*args).items() if k != "mshr_waits"}
                    expect = {k: v for k, v in expect.items() if k != "mshr_waits"}
                if got != expect:
                    mismatches += 1
                    if mismatches <= 5:
                        print(f"MISMATCH {name}{args[:4]}: {str(got)[:300]} != {str(expect)[:300]}")
        cpu = time.process_time() - t0
        best = cpu if best is None else min(best, cpu)
    calls = sum(len(x["calls"]) for x in launches)
    print(f"| calls | mismatches | CPU s (best of {repeat}) |\n|---:|---:|---:|\n"
          f"| {calls} | {mismatches} | {best:.3f} |")
    if mismatches:
        raise SystemExit(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["record", "replay"])
    ap.add_argument("file")
    ap.add_argument("--log2", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="sim:gtx260")
    args = ap.parse_args()
    if args.action == "record":
        _record(args.file, args.log2, args.device)
    else:
        _replay(args.file, args.repeat)


if __name__ == "__main__":
    main()
