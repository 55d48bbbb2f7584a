"""How long the coalescer takes per block-level memory access (issue 19).

    python benchmarks/coalescer_speed.py [--accesses 300] [--repeat 5]

A block of 256 threads (8 warps) reads 8-byte words; each row of the table is one
kind of access, coalesced with :meth:`Coalescer.per_warp` (the timed engines) and
:meth:`Coalescer.batch` (the lockstep engine), on sm_13 (segment rules) and sm_90
(sectors):

* "256 random": every lane reads a random word of a 64 MiB array (the list-ranking
  walk: pointer chasing), a new access each time, as in a run;
* "256 coalesced": lane k of warp w reads word 32 w + k of a run that starts at a
  new 512-byte-aligned place each time (patterns the pattern cache has seen);
* "16 random": 16 lanes of the block, chosen at random, read random words (the tail
  of a walk, where few lanes are left).

Each figure is microseconds of wall time per access, the fastest of --repeat passes
over --accesses distinct accesses, each pass with a fresh Coalescer (an empty
pattern cache: a random access is not seen twice in a run, and the coalesced ones
all share one pattern, so only its first accesses miss).  The first line says
whether the per-lane loop ran compiled (``python -m simgpu.native build``).  Whoever compares two
versions runs both in one session: the machine is shared and its timings vary.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from simgpu.mem import native_load
from simgpu.mem.access import MemoryAccess
from simgpu.mem.coalescer import Coalescer

WORD = 8
BLOCK = 256
ARRAY_WORDS = (64 << 20) // WORD


def _access(warp, lane, address) -> MemoryAccess:
    return MemoryAccess("load", "global", None, "a", warp.astype(np.int64),
                        lane.astype(np.int64), address.astype(np.int64), WORD)


def accesses(kind: str, count: int, rng) -> list:
    """``count`` distinct block accesses of one kind (the block's warps are 40..47)."""
    thread = np.arange(BLOCK)
    out = []
    for _ in range(count):
        if kind == "256 random":
            t = thread
            address = rng.integers(0, ARRAY_WORDS, BLOCK) * WORD
        elif kind == "256 coalesced":
            t = thread
            address = (int(rng.integers(0, ARRAY_WORDS // 64)) * 64 + thread) * WORD
        else:                                  # 16 random lanes of the block
            t = np.sort(rng.choice(BLOCK, 16, replace=False))
            address = rng.integers(0, ARRAY_WORDS, t.size) * WORD
        out.append(_access(40 + t // 32, t % 32, address))
    return out


def per_access_us(method: str, arch: str, accs: list, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        run = getattr(Coalescer(arch), method)     # an empty pattern cache each pass
        t0 = time.perf_counter()
        for acc in accs:
            run(acc)
        best = min(best, time.perf_counter() - t0)
    return best / len(accs) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--accesses", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(19)
    kinds = ("256 random", "256 coalesced", "16 random")
    units = "compiled" if "simgpu.mem.warp_coalesce" in native_load.loaded() else "source"
    print(f"warp_transactions (the per-lane loop): {units}\n")
    print("| access | arch | per_warp, us | batch, us |")
    print("|---|---|---:|---:|")
    for kind in kinds:
        accs = accesses(kind, args.accesses, rng)
        for arch in ("sm_13", "sm_90"):
            pw = per_access_us("per_warp", arch, accs, args.repeat)
            bt = per_access_us("batch", arch, accs, args.repeat)
            print(f"| {kind} | {arch} | {pw:.1f} | {bt:.1f} |", flush=True)


if __name__ == "__main__":
    main()
