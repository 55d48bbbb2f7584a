"""The DRAM model alone: one partition fed sequential 64-byte fills from k interleaved
streams (k SMs reading their own regions), one fill at a time at the partition's peak
rate, under the partition's two schedulers:

* "booked at arrival" (``Dram.serve``, what the timed engines use): each fill is booked
  when it arrives, FR-FCFS only within one request's transactions and first come,
  first served across requests, so interleaved streams conflict in the banks;
* "FR-FCFS" (``dram_scheduler.schedule_reads``): the fills' arrivals known in advance, FR-FCFS
  across them over each sub-channel's window (``read_queue_depth``) with the
  starvation bound (``frfcfs_cap``), which serves each open row's run of fills
  together.

    python benchmarks/dram_streams.py [--device sim:h100] [--fills 4096]

Prints the fraction of the partition's peak for k = 1, 2, 8, 32 and 128 streams, and
the row hit rate (bursts to an open row / bursts), under each.
"""
from __future__ import annotations

import argparse
import datetime

import simgpu
from simgpu.mem import memory_system as ms
from simgpu.mem.dram_scheduler import schedule_reads


def fraction(cfg, streams: int, fills: int, size: int = 64,
             scheduler: str = "arrival") -> tuple[float, float]:
    """(fraction of the partition's peak, row hit rate) of ``fills`` fills from
    ``streams`` interleaved streams; ``scheduler``: "arrival" or "fr-fcfs"."""
    if scheduler not in ("arrival", "fr-fcfs"):
        raise ValueError(f"scheduler must be 'arrival' or 'fr-fcfs', not {scheduler!r}")
    m = ms.MemorySystem(cfg)
    dram, amap = m.dram, m.amap
    per_part = cfg.memory.peak_bandwidth_gbps * 1e9 / cfg.memory.partitions / \
        (cfg.gpu.core_clock_mhz * 1e6)            # bytes per core cycle
    lists = []
    for s in range(streams):
        addr, mine = s * (1 << 26), []
        while len(mine) < fills // streams:
            part, bank, row = amap.where(addr)
            if part == 0:
                mine.append((bank, row, size, addr))
            addr += size
        lists.append(mine)
    order = [lists[i % streams][i // streams] for i in range(fills)]
    gap = size / per_part
    if scheduler == "fr-fcfs":
        end = max(schedule_reads(dram, 0, [(i * gap, *txn) for i, txn in enumerate(order)]))
    else:
        end = 0.0
        for i, txn in enumerate(order):
            end = max(end, dram.serve(0, [txn], i * gap))
    p = dram.parts[0]
    return fills * size / end / per_part, p.row_hits / max(1, p.row_hits + p.activations)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="sim:h100")
    ap.add_argument("--fills", type=int, default=4096)
    args = ap.parse_args()
    cfg = simgpu.get_device(args.device).config
    print(f"# {args.device}: one partition, 64-B fills from k interleaved streams at its peak "
          f"rate ({datetime.date.today()}, benchmarks/dram_streams.py)")
    print("| streams | booked at arrival: fraction of peak | row hit rate | "
          "FR-FCFS: fraction of peak | row hit rate |\n|---:|---:|---:|---:|---:|")
    for k in (1, 2, 8, 32, 128):
        f, hits = fraction(cfg, k, args.fills)
        g, g_hits = fraction(cfg, k, args.fills, scheduler="fr-fcfs")
        print(f"| {k} | {f:.2f} | {hits:.2f} | {g:.2f} | {g_hits:.2f} |", flush=True)


if __name__ == "__main__":
    main()
