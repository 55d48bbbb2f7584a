"""Cycles and memory figures of a few kernels on the GT200 configs, to compare two trees:
a change meant for the configs with an L2 (sim:h100, sim:h200) must leave these bit for bit.

    python benchmarks/gt200_cycles.py > a.txt      # in each tree, then: diff a.txt b.txt

Kernels (engine timed-block and timed, a fresh device each): the coalesced and the
stride-32 copy of docs/memory-model.md, one thread's four independent loads per iteration, and every
thread adding twice to one word or to words of its own.
"""
from __future__ import annotations

import numpy as np

import simgpu
from simgpu_apps.lessons.coalescing import copy_with_stride
from simgpu_apps.mechanism_kernels import count_many, mlp_loads_4

KEYS = ("dram_bytes", "row_hits", "activations", "partition_transactions", "queue_max")


def line(name, engine, label, rep) -> str:
    x = rep.extra
    return f"{name} {engine} {label}: cycles {rep.cycles!r} " + " ".join(
        f"{k} {x.get(k)!r}" for k in KEYS)


def main() -> None:
    for name in ("sim:gtx260", "sim:gtx280"):
        for engine in ("timed-block", "timed"):
            for stride in (1, 32):
                dev = simgpu.get_device(name)
                n = 1 << 14
                src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
                rep = dev.launch(copy_with_stride, 27, 256, src, dst, stride, n, engine=engine)
                print(line(name, engine, f"copy stride {stride}", rep))
            dev = simgpu.get_device(name)
            arrays = [dev.to_device(np.arange(1 << 18, dtype=np.int32)) for _ in range(4)]
            out = dev.zeros(1, np.int32)
            rep = dev.launch(mlp_loads_4, 1, 1, *arrays, out, 64, engine=engine)
            print(line(name, engine, "four loads", rep))
            for spread in (0, 1):
                dev = simgpu.get_device(name)
                words = dev.zeros(27 * 256 * 2, np.int32)
                rep = dev.launch(count_many, 27, 256, words, spread, 2, engine=engine)
                print(line(name, engine, f"atomics spread {spread}", rep))


if __name__ == "__main__":
    main()
