"""What Shiloach-Vishkin's hooking pays for its stores on the GPU, and in the model.

The validation finds ``sv2_hook`` 3x slower on the H100 than in the model in its first
rounds, where most edges hook and store, while ``sv3_hook_stagnant``, the same loads
with almost no stores, agrees (docs/validation.md).  Here the hooking's loads run
as ``sv2_hook`` does them (an edge, its endpoints' parents, a grandparent) on the
first round's state (every vertex its own parent) of the validation's graph
(2^14 vertices, 2^16 random edges, both directions), with what follows a hook:

* ``loads``: nothing stored but the result, coalesced (``out[k] = dj``);
* ``store_other``: ``X[di] = dj``, a random store to an array no one loads;
* ``store_same``: ``D[di] = dj``, the same store into the array the others load;
* ``hook``: ``sv2_hook`` itself (that store, the fresh read-back, ``Q[D[di]] = s``).

Each on 128 blocks of 256 threads (four edges a thread, as the algorithm launches
it) and on 512 (one edge a thread), timed by Nsight Compute after a cache flush,
and on ``sim:h100`` as the validation runs it (an empty L2 at each launch).

    python -m calibration.hook_stores --gpu OUT          # under ncu, files to OUT
    python -m calibration.hook_stores --report OUT [--md F.md]   # with the model's side
    python -m calibration.hook_stores --sim              # the model's side alone
"""
from __future__ import annotations

import json
import pathlib

import numpy as np

from algorithms.connected_components.kernels import LOW32, sv2_hook
from calibration import kernel_counters, probe_cli  # (kernel_counters: running a child under ncu)
from simgpu.lang import Array, blockDim, blockIdx, gridDim, i32, i64, kernel, threadIdx
from simgpu_apps import table_out


@kernel
def hook_variant(E: Array[i64], D: Array[i32], X: Array[i32], out: Array[i32], m: i32,
                 variant: i32):
    """sv2_hook's loads; then, where it would hook, 0: out[k] = dj (coalesced),
    1: X[di] = dj (an array no one loads), 2: D[di] = dj (the array the others load)."""
    for k in range(i64(blockIdx.x) * blockDim.x + threadIdx.x, m, i64(gridDim.x) * blockDim.x):
        e = E[k]
        i = i32(e >> 32)
        j = i32(e & LOW32)
        di = D[i]
        ddi = D[di]
        dj = D[j]
        if di == ddi and dj < di:
            if variant == 0:
                out[k] = dj
            elif variant == 1:
                X[di] = dj
            else:
                D[di] = dj


VARIANTS = ["loads", "store_other", "store_same", "hook"]
# What ncu reads besides the time: where the sectors went (the link between the L2's
# halves: a far load's data or a store homed across), and the caches' hits.
METRICS = ["gpu__time_duration.sum",
           "lts__t_sectors_srcunit_ltcfabric_op_read.sum",
           "lts__t_sectors_srcunit_ltcfabric_op_write.sum",
           "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
           "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum",
           "lts__ltcfabric2lts_cycles_stalled.sum"]
GRIDS = [128, 512]
BLOCK = 256
N_LOG2, M_LOG2 = 14, 16


def launches(dev):
    """[(variant, grid, LaunchReport)] on ``dev``, each launch on the first round's D."""
    from algorithms import generators
    from algorithms.connected_components.shiloach_vishkin import prepare_edges
    n, edges = generators.uniform_random_graph(1 << N_LOG2, seed=0, m=1 << M_LOG2)
    E = dev.to_device(prepare_edges(n, edges))
    m = E.size
    out = []
    for grid in GRIDS:
        for name in VARIANTS:
            D = dev.to_device(np.arange(n, dtype=np.int32))
            X, Q = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
            if name == "hook":
                rep = dev.launch(sv2_hook, grid, BLOCK, E, D, Q, 1, m)
            else:
                rep = dev.launch(hook_variant, grid, BLOCK, E, D, X, dev.zeros(m, np.int32), m,
                                 VARIANTS.index(name))
            out.append((name, grid, rep))
    return out


def child(out: pathlib.Path) -> None:
    import simgpu
    done = launches(simgpu.get_device("cuda"))
    (out / "manifest.json").write_text(json.dumps([[name, grid] for name, grid, _ in done]))


def model() -> dict:
    from simgpu_apps.gpu_tools.validate import sim_device
    dev = sim_device()
    mhz = dev.config.gpu.core_clock_mhz
    return {(name, grid): (rep.cycles / mhz, rep.stores.requests, rep.extra.get("l2_fabric_bytes", 0) / 32,
                           rep.extra.get("l1_hit_rate"), rep.extra.get("l2_hit_rate"))
            for name, grid, rep in launches(dev)}


def table(sim: dict, gpu: dict | None, meta: dict | None) -> str:
    """sim: {(variant, grid): (us, store requests, fabric sectors, L1 hit, L2 hit)};
    gpu: {(variant, grid): {metric: value}} as ncu read them."""
    head = ("Hooking's stores: " + (f"{meta['device']} (ncu after a cache flush, "
            f"{meta['date']}) against " if meta else "")
            + "sim:h100 (timed-block, an empty L2 at each launch), "
              "`python -m calibration.hook_stores`; each variant's time over `loads` on the "
              "same grid in brackets; fabric: sectors that crossed between the L2's "
              "halves (GPU: read / written by the far half's requests).")
    cols = ["variant", "blocks", "edges a thread", "store requests (sim)"]
    cols += ["GPU us", "sim us", "sim / GPU", "fabric sectors GPU", "fabric sectors sim",
             "L1 hit GPU / sim", "L2 read hit GPU", "fabric stalled cycles GPU"] if gpu else \
        ["sim us", "fabric sectors sim", "L1 hit sim"]
    lines = [head, "", "| " + " | ".join(cols) + " |",
             "|---|" + "---:|" * (len(cols) - 1)]

    def v(values, metric):
        return float(values.get(metric, "nan"))

    for grid in GRIDS:
        for name in VARIANTS:
            s_us, stores, s_fabric, s_l1, _ = sim[(name, grid)]
            s_base = sim[("loads", grid)][0]
            row = [name, str(grid), str(-(-(2 << M_LOG2) // (grid * BLOCK))), f"{stores:,}"]
            s_cell = f"{s_us:.2f} ({s_us / s_base:.2f})"
            if gpu:
                g = gpu[(name, grid)]
                g_us = v(g, METRICS[0]) / 1e3
                g_base = v(gpu[("loads", grid)], METRICS[0]) / 1e3
                hit1, miss1 = v(g, METRICS[5]), v(g, METRICS[6])
                hit2, miss2 = v(g, METRICS[3]), v(g, METRICS[4])
                row += [f"{g_us:.2f} ({g_us / g_base:.2f})", s_cell, f"{s_us / g_us:.2f}",
                        f"{v(g, METRICS[1]):,.0f} / {v(g, METRICS[2]):,.0f}", f"{s_fabric:,.0f}",
                        f"{hit1 / max(hit1 + miss1, 1):.0%} / {s_l1 or 0:.0%}",
                        f"{hit2 / max(hit2 + miss2, 1):.0%}", f"{v(g, METRICS[7]):,.0f}"]
            else:
                row += [s_cell, f"{s_fabric:,.0f}", f"{s_l1 or 0:.0%}"]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def report(out: pathlib.Path) -> str:
    from simgpu_apps.gpu_tools import ncu_csv
    table_out.need(out, "manifest.json", "ncu.csv", "gpu.json")
    manifest = json.loads((out / "manifest.json").read_text())
    rows = ncu_csv.parse_csv((out / "ncu.csv").read_text())
    if len(rows) != len(manifest):
        raise SystemExit(f"ncu saw {len(rows)} launches, the child made {len(manifest)}")
    gpu = {(name, grid): values for (name, grid), (_, values) in zip(manifest, rows)}
    return table(model(), gpu, json.loads((out / "gpu.json").read_text()))


def gpu(out: pathlib.Path) -> None:
    """Run the variants (the --child process) under ncu, files to OUT."""
    out.mkdir(parents=True, exist_ok=True)
    kernel_counters.under_ncu(out, METRICS, ["-m", "calibration.hook_stores", "--child", str(out)])


def main(argv=None) -> int:
    return probe_cli.probe_main(
        __doc__, argv, usage_error="give --gpu OUT, --report OUT or --sim",
        gpu=probe_cli.action("run the variants under ncu, files here", lambda a: gpu(a.gpu)),
        child=probe_cli.action(probe_cli.HIDDEN, lambda a: child(a.child)),
        report=probe_cli.table("folder of a --gpu run", lambda a: report(a.report)),
        sim=probe_cli.table("the model's side alone", lambda a: table(model(), None, None),
                            action="store_true"),
        md=probe_cli.setting("with --report or --sim: also write the table here"))


if __name__ == "__main__":
    raise SystemExit(main())
