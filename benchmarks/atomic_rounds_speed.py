"""How long TrafficCounter._rounds takes per atomic access (sim:h100's word rounds).

    python benchmarks/atomic_rounds_speed.py [--accesses 300] [--repeat 5]

A block of 256 threads (8 warps) does a 4-byte atomic; each row is one kind of access:

* "256 distinct, rising": lane k of warp w on word 32 w + k (a thread-indexed atomic,
  ``atomic_add(a, i, v)``), at a new base each time;
* "256 distinct, falling": the same words in reverse (``a[n - 1 - i]``);
* "256 distinct, random": 256 distinct random words of a 64 MiB array (a scatter);
* "256 warps of 1 lane, 8 a word": a warp-uniform atomic that the compiler aggregated
  (``atomic_add(counts, blockIdx.x, v)`` after TrafficCounter.issued: one lane a warp,
  the 8 warps of a block on one word);
* "256 repeated words": each lane on one of 16 random words (a small histogram: most
  warps have a word twice, so the rounds are built).

Each figure is microseconds of wall time per call, the fastest of --repeat passes over
--accesses distinct accesses.  Whoever compares two versions runs both in one session
(the machine is shared and its timings vary).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from simgpu.mem.access import MemoryAccess
from simgpu.sim.counters import TrafficCounter

WORD = 4
BLOCK = 256
ARRAY_WORDS = (64 << 20) // WORD


def _access(words: np.ndarray, lanes_per_warp: int = 32) -> MemoryAccess:
    t = np.arange(BLOCK)
    return MemoryAccess(kind="atomic", space="global", node=None, array="a",
                        warp=(t // lanes_per_warp).astype(np.int64),
                        lane=(t % lanes_per_warp).astype(np.int64),
                        address=words.astype(np.int64) * WORD, word_size=WORD)


def shapes(rng: np.random.Generator, n: int) -> dict:
    rising = [_access(rng.integers(0, ARRAY_WORDS - BLOCK) + np.arange(BLOCK)) for _ in range(n)]
    return {
        "256 distinct, rising": rising,
        "256 distinct, falling": [_access(a.address[::-1] // WORD) for a in rising],
        "256 distinct, random": [_access(rng.choice(ARRAY_WORDS, BLOCK, replace=False))
                                 for _ in range(n)],
        "256 warps of 1 lane, 8 a word": [_access(rng.integers(0, ARRAY_WORDS) + np.arange(BLOCK) // 8, 1)
                                          for _ in range(n)],
        "256 repeated words": [_access(rng.choice(rng.integers(0, ARRAY_WORDS, 16), BLOCK))
                               for _ in range(n)],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--accesses", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print("| access | us per call | rounds built |")
    print("|---|---:|---:|")
    for name, accs in shapes(np.random.default_rng(1), args.accesses).items():
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            built = sum(TrafficCounter._rounds(a) is not None for a in accs)
            best = min(best, time.perf_counter() - t0)
        print(f"| {name} | {best / len(accs) * 1e6:.1f} | {built}/{len(accs)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
