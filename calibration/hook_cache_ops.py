"""Which cache operation makes the hooking's stores costly on the GPU: the hooking's loads
and store (``calibration/hook_stores.py``) with the loads or the store taking another
path past the L1.  Needs a GPU, CuPy and Nsight Compute.

``hook_stores.py`` finds the hooking's loads three times slower on the H100 when its
random stores go into the parent array the other warps load, and 20-45% slower when
they go into an array no one loads.  Here the same loads and stores, written in raw
CUDA so that each access can take its own path (the kernel language has one load
and one store), on the same first-round state of the validation's graph:

* ``loads``: the result stored coalesced (``out[k] = dj``);
* ``store D[di]``: as the hooking does (``D[di] = dj``);
* ``store D[di] .cg``: the same store as ``st.global.cg`` (``__stcg``);
* ``store D[random]``: ``D[r] = r`` for a random vertex r (D stays as it was: every
  vertex its own parent), into a line of D that this warp did not just read;
* ``store X[di]``: into an array no one loads;
* ``.cg loads``, ``.cg loads, store D[di]``: every load past the L1 (``__ldcg``).

Each on 128 blocks of 256 threads (four edges a thread, as the algorithm launches it),
timed by Nsight Compute after a cache flush.

    python -m calibration.hook_cache_ops --gpu OUT
    python -m calibration.hook_cache_ops --report OUT [--md F.md]
"""
from __future__ import annotations

import json
import pathlib

import numpy as np

from calibration import kernel_counters, probe_cli  # (kernel_counters: running a child under ncu)
from simgpu_apps import table_out

SOURCE = r"""
extern "C" __global__ void hook_ops(const long long* E, int* D, int* X, int* out, int m,
                                    int variant) {
    const bool cg_loads = variant >= 5;
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < m;
         k += (long long)gridDim.x * blockDim.x) {
        long long e = cg_loads ? __ldcg(E + k) : E[k];
        int i = (int)(e >> 32), j = (int)(e & 0xFFFFFFFFLL);
        int di = cg_loads ? __ldcg(D + i) : D[i];
        int ddi = cg_loads ? __ldcg(D + di) : D[di];
        int dj = cg_loads ? __ldcg(D + j) : D[j];
        if (di == ddi && dj < di) {
            switch (variant) {
            case 0: case 5: out[k] = dj; break;
            case 1: case 6: D[di] = dj; break;
            case 2: __stcg(D + di, dj); break;
            case 3: {                     // a random vertex r keeps D[r] = r (first round)
                int r = (int)((unsigned)(k * 2654435761ull) % 16384u);
                D[r] = r;
                break;
            }
            case 4: X[di] = dj; break;
            }
        }
    }
}
"""
VARIANTS = ["loads", "store D[di]", "store D[di] .cg", "store D[random]", "store X[di]",
            ".cg loads", ".cg loads, store D[di]"]
GRID, BLOCK = 128, 256


def child(out: pathlib.Path) -> None:
    import cupy as cp
    from algorithms import generators
    from algorithms.connected_components.shiloach_vishkin import prepare_edges
    fn = cp.RawModule(code=SOURCE, options=("-std=c++17",)).get_function("hook_ops")
    n, edges = generators.uniform_random_graph(1 << 14, seed=0, m=1 << 16)
    E = cp.asarray(prepare_edges(n, edges))
    m = E.size
    for v in range(len(VARIANTS)):
        D, X = cp.arange(n, dtype=cp.int32), cp.arange(n, dtype=cp.int32)
        fn((GRID,), (BLOCK,), (E, D, X, cp.zeros(m, cp.int32), np.int32(m), np.int32(v)))
        cp.cuda.runtime.deviceSynchronize()
    (out / "manifest.json").write_text(json.dumps(VARIANTS))


def report(out: pathlib.Path) -> str:
    from simgpu_apps.gpu_tools import ncu_csv
    table_out.need(out, "manifest.json", "ncu.csv", "gpu.json")
    meta = json.loads((out / "gpu.json").read_text())
    rows = [r for r in ncu_csv.parse_csv((out / "ncu.csv").read_text()) if r[0] == "hook_ops"]
    names = json.loads((out / "manifest.json").read_text())
    us = {name: float(values["gpu__time_duration.sum"]) / 1e3 for name, (_, values) in zip(names, rows)}
    base = us["loads"]
    lines = [f"Hooking's cache operations: {meta['device']}, {meta['date']}, "
             "`python -m calibration.hook_cache_ops` (ncu `gpu__time_duration` after a cache "
             f"flush; {GRID} blocks of {BLOCK}).", "",
             "| variant | GPU us | over `loads` |", "|---|---:|---:|"]
    lines += [f"| {name} | {t:.2f} | {t / base:.2f} |" for name, t in us.items()]
    return "\n".join(lines)


def gpu(out: pathlib.Path) -> None:
    """Run the variants (the --child process) under ncu, files to OUT."""
    out.mkdir(parents=True, exist_ok=True)
    kernel_counters.under_ncu(out, ["gpu__time_duration.sum"],
                              ["-m", "calibration.hook_cache_ops", "--child", str(out)])


def main(argv=None) -> int:
    return probe_cli.probe_main(
        __doc__, argv, usage_error="give --gpu OUT or --report OUT",
        gpu=probe_cli.action("run the variants under ncu, files here", lambda a: gpu(a.gpu)),
        child=probe_cli.action(probe_cli.HIDDEN, lambda a: child(a.child)),
        report=probe_cli.table("folder of a --gpu run", lambda a: report(a.report)),
        md=probe_cli.setting("with --report: also write the table here"))


if __name__ == "__main__":
    raise SystemExit(main())
