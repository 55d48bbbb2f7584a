"""Latency of a random one-thread pointer chase against its footprint, on a simulated GPU
(issue 18: address translation). Prints cycles per dependent load and the launch's TLB
counts for each footprint.

    python benchmarks/tlb_chase.py [--device sim:gtx260] [--steps 400] [--mib 1 4 8 16 ...]

The array is allocated with ``dev.zeros`` and never written: numpy's zeros are calloc'ed,
so only the pages the chase touches take host memory and a 768 MiB footprint costs a
few MB.  The chase is dependent all the same: each address is a pseudo-random function
(an LCG) of the value the previous load returned (zeros, added to the LCG state), so
every load waits for the one before it.  After a warm-up launch, the slope between two
step counts removes the launch's fixed costs.
"""
from __future__ import annotations

import argparse

import numpy as np

from simgpu import get_device
from simgpu.lang import Array, i32, i64, kernel


@kernel
def lcg_chase(a: Array[i32], out: Array[i32], steps: i32, n: i32, seed: i32):
    x = seed
    j = 0
    for k in range(steps):
        x = x * 1103515245 + 12345 + a[j]       # the load's value feeds the next address
        j = ((x >> 1) & 0x3FFFFFFF) % n
    out[0] = j


@kernel
def lcg_chase64(a: Array[i32], out: Array[i32], steps: i32, n: i64, seed: i32):
    x = i64(seed)
    j = i64(0)
    for k in range(steps):
        x = x * 6364136223846793005 + 1442695040888963407 + a[j]
        j = ((x >> 17) & 0x3FFFFFFFFFFF) % n
    out[0] = i32(j)


def chase_cycles(dev, mib: float, steps: tuple = (200, 400)) -> tuple[float, dict]:
    """(cycles per load, the longer launch's report extras) of a chase over ``mib`` MiB."""
    n = int(mib * 2**20) // 4
    chase = lcg_chase if n < 2**31 else lcg_chase64     # (indices past i32)
    a = dev.zeros(n, np.int32)
    out = dev.zeros(1, np.int32)
    # A warm-up launch first, so that both measured launches start from the TLB state
    # the chase leaves behind (the device keeps it from one launch to the next).
    dev.launch(chase, 1, 1, a, out, steps[-1], n, 1, engine="timed")
    cycles, extra = [], {}
    for seed, s in enumerate(steps, start=2):
        rep = dev.launch(chase, 1, 1, a, out, s, n, seed, engine="timed")
        cycles.append(rep.cycles)
        extra = rep.extra
    return (cycles[1] - cycles[0]) / (steps[1] - steps[0]), extra


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="sim:gtx260")
    ap.add_argument("--steps", type=int, nargs=2, default=[200, 400])
    ap.add_argument("--mib", type=float, nargs="+",
                    default=[1, 4, 8, 12, 16, 24, 32, 48, 64, 128, 256, 512, 768])
    args = ap.parse_args()
    print("| footprint MiB | cycles per load | L1 TLB misses | L2 TLB misses | walks | walk reads |")
    print("|---:|---:|---:|---:|---:|---:|")
    for mib in args.mib:
        dev = get_device(args.device)          # a fresh device: cold TLBs and L2 each time
        c, x = chase_cycles(dev, mib, tuple(args.steps))
        print(f"| {mib:g} | {c:.1f} | {x.get('tlb_l1_misses', '-')} | {x.get('tlb_l2_misses', '-')} "
              f"| {x.get('tlb_walks', '-')} | {x.get('tlb_walk_reads', '-')} |", flush=True)


if __name__ == "__main__":
    main()
