"""The DRAM model alone: one partition fed sequential 64-byte fills from k interleaved
streams (k SMs reading their own regions), one fill at a time at the partition's peak
rate. A controller with FR-FCFS over a window of queued requests serves each open row's
run of fills together and stays near its peak; the model's partition schedules
FR-FCFS only within the transactions of one request, and books each request at its
arrival (first come, first served across requests), so interleaved streams conflict in
the banks.

    python benchmarks/dram_streams.py [--device sim:h100] [--fills 4096]

Prints the fraction of the partition's peak for k = 1, 2, 8, 32 and 128 streams, and
the row hit rate (bursts to an open row / bursts).
"""
from __future__ import annotations

import argparse
import datetime

import simgpu
from simgpu.mem import memory_system as ms


def fraction(cfg, streams: int, fills: int, size: int = 64) -> tuple[float, float]:
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
    print("| streams | fraction of the partition's peak | row hit rate |\n|---:|---:|---:|")
    for k in (1, 2, 8, 32, 128):
        f, hits = fraction(cfg, k, args.fills)
        print(f"| {k} | {f:.2f} | {hits:.2f} |", flush=True)


if __name__ == "__main__":
    main()
