"""Per-point cost models: the estimate ``simgpu paper`` prints before it starts.

Each point's host seconds are ``a + b * size`` (Wylie: ``b * n * log2 n``), with
``b`` per node (or per edge) of the point's kind, measured on this project's
development machine (a shared 2-core Xeon VM at 2.5 GHz, process CPU time of one
point at two sizes, sim:gtx260, timed-block engine; 2026-11-26, main at 6bbe709,
the larger size's figure; rerun with
``python3 benchmarks/paper_point_costs.py``).  On a real GPU the host's work
dominates (building the input, checking the result, the CPU baselines), so its
points use the host-side coefficients (HOST_*) plus the repeats of the GPU time.

The estimate of a run is

    time = sum(cost of the simulated points to compute) / parallel processes
           + sum(cost of the wall-clock points)        (they run one at a time)
    peak host memory = the largest `parallel` point memories, summed

with a point's memory ``MEM_BASE + MEM_PER_NODE * size`` (RSS measured here at
2^16 and 2^18 nodes: 68 and 120 MB; the issue's 386 MB at 2^23).  These are
models of one machine: the real time varies with the load (2x seen on this VM).
"""
from __future__ import annotations

import math

# seconds per node (lists) or per input edge (graphs), simulated on sim:gtx260
SIM_PER_NODE = {"rs64": 2.8e-5, "rs48": 3.9e-5, "even48": 2.6e-5, "rs64p": 3.4e-5}
SIM_WYLIE_PER_NODE_ROUND = 6.5e-6      # Wylie: per node and per round (log2 n rounds)
SIM_PER_EDGE = {"lists": 3.8e-4, "trees": 2.7e-4, "random": 1.8e-4, "lockstep": 1e-5}
# host work per point on any device (seconds per node / edge): input, result check
HOST_PER_NODE = 2.0e-7                 # random_list 1.7e-7 + the O(n) rank check
HOST_PER_EDGE = 5.0e-7                 # graph 2.5e-7 + host labels 2.4e-7
CHECK_PER_NODE = 3e-8                  # the O(n) rank check alone
# CPU baselines, one run (this machine)
WALL_PER_NODE = {"sequential": 2.6e-7, "cpu-random-splitter": 2.8e-8}
WALL_PER_EDGE = 2.5e-7
# real GPU, one run of the algorithm (H100-class; seconds per node / edge)
GPU_PER_NODE = {"rs64": 2e-9, "rs48": 2e-9, "even48": 2e-9, "rs64p": 2e-9, "wylie": 1e-8}
GPU_PER_EDGE = 5e-9
FIXED = 0.05
MEM_BASE = 120e6                       # bytes: the interpreter, numpy, simgpu, a small point
MEM_PER_NODE = 46.0                    # bytes per node / edge of the simulated point
MEASURED = "sim:gtx260, timed-block (source, no compiled build), 2-core Xeon VM at 2.5 GHz, 2026-11-26"


def _numba_core() -> bool:
    from simgpu.mem.fast_jit import ENABLED      # numba importable, SIMGPU_NUMBA not "0"
    return ENABLED


if _numba_core():
    # With the compiled memory core (pip install simgpu[fast]), list ranking on trace-block
    # with its compiled replay loop (simgpu/sim/trace_loop.py): `benchmarks/
    # paper_point_costs.py --lists 18 20 --graphs 15 17 --variants rs64 rs48 even48 wylie`,
    # the larger size's figure, 2026-11-26, branch wt-nrt (the core's arrays unowned: no
    # atomic reference counts) with the numba core and a mypyc build, this shared 2-core
    # VM at load average ~2; main (4284ac8) run just before it there gave rs64 4.0e-6,
    # rs48 5.7e-6, even48 4.0e-6, wylie 21.4 s, lists 1.32e-4, trees 9.5e-5, random
    # 4.6e-5 (docs/results/numba-refcount-2026-11-26.md).  rs64p (the paper's 64-bit
    # accesses): 1.22x rs64, its ratio at 2^21 (trace-block, source replay, 2026-11-26:
    # 14.3 s against 11.7 s).
    # Then scaled for branch wt-lrspeed (the compiled replay's trace kept as arrays,
    # simgpu/sim/trace_log.py): divided by the CPU ratio main/branch of the whole rank()
    # call, interleaved A/B on this shared 2-core Xeon VM, loaded (two other sessions'
    # simulations at nice 5, load average ~3), 2026-11-27 (docs/results/
    # lr-speed-2026-11-26.md): `python benchmarks/lr_speed_ab.py <main 9bd0ff1> <branch>
    # --log2 20 --repeat 2 --cases rs64 rs48`: rs64 1.10x, rs48 1.06x (medians; each
    # range includes 1.0 on this VM); Wylie 1.11x (the same at --log2 18, 6 repeats);
    # even48 not A/B-measured: unchanged.  Before: rs64 3.5e-6, rs48 5.0e-6, rs64p
    # 4.3e-6, Wylie 0.83e-6.
    SIM_PER_NODE = {"rs64": 3.2e-6, "rs48": 4.7e-6, "even48": 3.4e-6, "rs64p": 3.9e-6}
    SIM_WYLIE_PER_NODE_ROUND = 0.75e-6           # 17.4 s at 2^20 (20 rounds), / 1.11
    # Graphs (SV on timed-block, loads and stores coalesced by simgpu.mem.fast_coalesce):
    # the 2^17 figure of the same run.
    SIM_PER_EDGE = {"lists": 1.2e-4, "trees": 0.93e-4, "random": 4.2e-5, "lockstep": 1e-5}
    MEASURED = ("sim:gtx260 with the numba memory core, list ranking on trace-block's compiled "
                "replay, 2-core AMD EPYC VM, 2026-11-26")


def lr_cost(variant: str, n: int, real: bool, repeats: int = 1, first: bool = True) -> float:
    """first: this point builds the input list of its n (the other points of the same n
    reuse it: list_ranking.input_list); every plan has a default-threads rs64 per n."""
    if real:
        host = HOST_PER_NODE * n if first else CHECK_PER_NODE * n
        return FIXED + host + GPU_PER_NODE[variant] * n * (repeats + 1)
    if variant == "wylie":
        return FIXED + SIM_WYLIE_PER_NODE_ROUND * n * max(math.log2(max(n, 2)), 1)
    return FIXED + SIM_PER_NODE[variant] * n


# device bytes per node (the arrays of algorithms/list_ranking): succ 4n plus the packed
# 64-bit words 8n; succ, a 16-bit owner and a 32-bit rank; Wylie's succ and two 8n buffers
DEVICE_BYTES_PER_NODE = {"rs64": 12, "rs48": 10, "even48": 10, "rs64p": 12, "wylie": 20}


def lr_fits(variant: str, n: int, capacity) -> bool:
    """False when the predicted footprint exceeds the device's memory: the device will
    refuse the point at once (the estimate then counts it as free)."""
    return capacity is None or DEVICE_BYTES_PER_NODE[variant] * n <= capacity


def lr_wall_cost(method: str, n: int, repeats: int) -> float:
    one = WALL_PER_NODE[method] * n
    warm = 1 if one < 1.0 else 0            # measure.cpu_times: a warm-up only for short runs
    return FIXED + HOST_PER_NODE * n + one * (repeats + warm)


def cc_cost(graph: str, m: int, engine: str, real: bool, repeats: int = 1, blocks=None) -> float:
    if real and engine != "lockstep":
        slow = 1.0 if not blocks else max(1.0, 30.0 / blocks)   # few blocks: latency-bound
        return FIXED + HOST_PER_EDGE * m + GPU_PER_EDGE * slow * m * (repeats + 1)
    per = SIM_PER_EDGE["lockstep" if engine == "lockstep" else graph]
    return FIXED + HOST_PER_EDGE * m + per * m + (0.015 * blocks if blocks else 0)


def cc_wall_cost(m: int, repeats: int) -> float:
    one = WALL_PER_EDGE * m
    return FIXED + HOST_PER_EDGE * m + one * (repeats + (1 if one < 1.0 else 0))


def point_memory(size: int) -> float:
    return MEM_BASE + MEM_PER_NODE * size


def estimate(points, parallel: int) -> dict:
    """{"seconds", "sim_seconds", "wall_seconds", "peak_bytes"} of computing ``points``
    (those not cached) with ``parallel`` processes for the simulated ones."""
    parallel = max(1, int(parallel))
    sim = sum(p.cost for p in points if p.kind != "wall")
    wall = sum(p.cost for p in points if p.kind == "wall")
    mems = sorted((p.memory for p in points if p.cost > FIXED), reverse=True)
    peak = sum(mems[:parallel]) if mems else 0.0
    return {"seconds": sim / parallel + wall, "sim_seconds": sim, "wall_seconds": wall,
            "peak_bytes": peak}


def describe(est: dict, parallel: int) -> str:
    from .runner import fmt_seconds
    return (f"estimated time ~{fmt_seconds(est['seconds'])} ({fmt_seconds(est['sim_seconds'])} "
            f"of device points / {parallel} process{'es' if parallel > 1 else ''} + "
            f"{fmt_seconds(est['wall_seconds'])} of CPU baselines), peak host memory "
            f"~{est['peak_bytes'] / 2**30:.2f} GiB; from per-point cost models (seconds = a + "
            f"b x size, memory = {MEM_BASE / 1e6:.0f} MB + {MEM_PER_NODE:g} B x size) measured "
            f"on {MEASURED} (simgpu_apps/experiments/costs.py, benchmarks/paper_point_costs.py)")
