"""What check="races" (and "uninit") costs: CPU seconds of one launch, checked and not.

    python benchmarks/racecheck_overhead.py [--repeat 3] [--plot overhead.png]
    python benchmarks/racecheck_overhead.py --modes off     # the default path alone

Two kernels: Shiloach-Vishkin's hooking step ``sv2_hook`` (global memory, gathers and
concurrent stores, a random graph of 2^14 vertices and 2^16 edges, 16 blocks of 128)
and a shared-memory tree reduction (256 blocks of 128).  Each runs on sim:h100 under
the lockstep and the warps engines, without a check, with check="races", "uninit" and
"races,uninit".  Prints CPU seconds (time.process_time, fastest of --repeat) and the
slowdown against the unchecked launch; --plot draws the slowdowns (needs matplotlib).
Running it with PYTHONPATH at another checkout and ``--modes off`` times that
checkout's default path, to compare with this one's.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import simgpu
from algorithms.connected_components import kernels as CC
from simgpu.lang import Array, blockDim, blockIdx, i32, kernel, shared_array, syncthreads, threadIdx

MODES = ("off", "races", "uninit", "races,uninit")


@kernel
def tree_reduce(x: Array[i32], out: Array[i32]):
    s = shared_array(i32, 128)
    t = threadIdx.x
    s[t] = x[blockIdx.x * blockDim.x + t]
    syncthreads()
    off = blockDim.x // 2
    while off > 0:
        if t < off:
            s[t] += s[t + off]
        syncthreads()
        off //= 2
    if t == 0:
        out[blockIdx.x] = s[0]


def sv2_case(dev):
    n, m = 1 << 14, 1 << 16
    rng = np.random.default_rng(7)
    i, j = rng.integers(0, n, m), rng.integers(0, n, m)
    E = dev.to_device((i.astype(np.int64) << 32) | j)
    D0 = np.arange(n, dtype=np.int32)
    Q = dev.zeros(n, np.int32)
    return lambda: (CC.sv2_hook, 16, 128, E, dev.to_device(D0), Q, 1, m)


def reduce_case(dev):
    x = dev.to_device(np.arange(256 * 128, dtype=np.int32))
    out = dev.zeros(256, np.int32)
    return lambda: (tree_reduce, 256, 128, x, out)


def seconds(dev, make, engine, mode, repeat) -> float:
    best = None
    for _ in range(repeat):
        kern, grid, block, *args = make()
        opts = {} if mode == "off" else {"check": mode}
        t0 = time.process_time()
        dev.launch(kern, grid, block, *args, engine=engine, **opts)
        dt = time.process_time() - t0
        best = dt if best is None else min(best, dt)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--engines", nargs="+", default=["lockstep", "warps"])
    ap.add_argument("--plot", help="write the slowdowns as a PNG (needs matplotlib)")
    args = ap.parse_args()
    dev = simgpu.get_device("sim:h100")
    cases = {"sv2_hook (global)": sv2_case(dev), "tree_reduce (shared)": reduce_case(dev)}
    print("| kernel | engine | check | CPU s | x unchecked |")
    print("|---|---|---|---:|---:|")
    rows = []
    for name, make in cases.items():
        for engine in args.engines:
            base = None
            for mode in args.modes:
                s = seconds(dev, make, engine, mode, args.repeat)
                base = s if mode == "off" else base
                ratio = s / base if base else float("nan")
                rows.append((name, engine, mode, s, ratio))
                print(f"| {name} | {engine} | {mode} | {s:.3f} | {ratio:.2f} |", flush=True)
    if args.plot:
        plot(rows, args.modes, args.plot)


def plot(rows, modes, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = sorted({(r[0], r[1]) for r in rows}, key=lambda g: [(r[0], r[1]) for r in rows].index(g))
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(modes)
    for k, mode in enumerate(modes):
        ys = [next(r[4] for r in rows if (r[0], r[1]) == g and r[2] == mode) for g in groups]
        ax.bar([g + k * width for g in range(len(groups))], ys, width, label=f"check={mode}"
               if mode != "off" else "no check")
    ax.set_xticks([g + width * (len(modes) - 1) / 2 for g in range(len(groups))])
    ax.set_xticklabels([f"{a}\n{b}" for a, b in groups], fontsize=8)
    ax.set_ylabel("CPU time / unchecked launch")
    ax.set_title("Cost of the simulator's checks (sim:h100, benchmarks/racecheck_overhead.py)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
