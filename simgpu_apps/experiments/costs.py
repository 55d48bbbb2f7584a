"""Per-point cost models: the estimate ``simgpu paper`` prints before it starts.

Each point's host seconds are ``a + b * g(size) * size`` (Wylie: ``b * g(n) * n * log2
n``; a random splitter with p threads set: ``+ c * n / p``, its threads' walks), with
``g`` the growth of the per-node cost with size (``growth``, measured at the paper's
sizes) and ``b`` per node (or per edge) of the point's kind, measured on this project's
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
2^16 and 2^18 nodes: 68 and 120 MB; the issue's 386 MB at 2^23), and a simulated
list-ranking point's from its peaks at 2^23 and 64M nodes (``lr_memory``).  These are
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
    # with its compiled replay loop (simgpu/sim/trace_loop.py).  (The history of these
    # figures: docs/results/numba-refcount-2026-11-26.md, lr-speed-2026-11-26.md.)
    # Re-measured 2026-11-27 on this project's 2-core development VM of that day (Intel
    # Xeon at 2.5 GHz, `pip install -e '.[fast]'`, no mypyc build), main at c6da3b0:
    # `benchmarks/paper_point_costs.py --lists 16 20 --variants rs64 rs48 even48 rs64p wylie
    # --graphs 15 17`, the larger size's figure.  These are 2.2-2.9x the figures of the
    # 2-core AMD EPYC VM of 2026-11-26 (rs64 3.2e-6, rs48 4.7e-6, even48 3.4e-6, rs64p
    # 3.9e-6, Wylie 0.75e-6 per node and round; graphs 1.2e-4, 0.93e-4, 4.2e-5), which the
    # estimate used before: a different machine, and that run had a mypyc build too.
    SIM_PER_NODE = {"rs64": 7.6e-6, "rs48": 10.5e-6, "even48": 8.3e-6, "rs64p": 10.3e-6}
    SIM_WYLIE_PER_NODE_ROUND = 1.78e-6           # 37.3 s at 2^20 (20 rounds)
    # Graphs (SV on timed-block, loads and stores coalesced by simgpu.mem.fast_coalesce):
    # the 2^17 figure of the same run.
    SIM_PER_EDGE = {"lists": 3.3e-4, "trees": 2.7e-4, "random": 1.2e-4, "lockstep": 1e-5}
    MEASURED = ("sim:gtx260 with the numba memory core, list ranking on trace-block's compiled "
                "replay, 2-core Intel Xeon VM at 2.5 GHz, 2026-11-27; per-node cost rising "
                "with size (costs.growth)")

# A point's cost per node (edge) grows past the sizes the coefficients were measured at:
# the host's caches and TLBs miss more on the simulator's arrays.  growth() is 1 up to the
# first anchor, then rises linearly in log2(size) to the second, and stays there.
#   Lists: rs48 here (2026-11-27) cost 10.5 us per node at 2^20 and 2^22 (43.9 s), and
#   1,242 s at 64M nodes (19.4 us; benchmarks/paper_points.py, two points at a time on
#   the two cores): 1.85x.  The same growth is taken for every list variant: on the lent
#   CPUs of 2026-11-26 (docs/results/fig3-right-points) rs64 and rs64p cost 0.71x and
#   0.79x of rs48 at 64M, about their ratios at 2^20 (0.72x, 0.98x); Wylie and even48
#   ASSUMED (a Wylie point at 32M had passed 1,380 CPU s, 2.4x its old estimate, when it
#   was stopped).
#   Graphs: trees k=6 and k=8 at m = 8M took 1,519 and 1,520 s on the lent x1's CPUs
#   (2026-11-27), 2.03x the 2^17 coefficient's prediction on a machine of that speed for
#   list ranking (docs/paper-gtx260-paper-size-cc).
LR_GROWTH = ((22, 1.0), (26, 1.85))
CC_GROWTH = ((17, 1.0), (23, 2.0))
# Peak host memory of a list-ranking point (the largest, rs48): 1,094 MiB at 2^23 and
# 6,503 MiB at 64M nodes (ru_maxrss of rank() in its own process, this VM, 2026-11-27,
# main at 98be7b5: the wave log's rows in int32; 1,379 and 8,625 MiB before).
LR_MEM_BASE = 290e6
LR_MEM_PER_NODE = 102.0


def growth(size: int, anchors) -> float:
    (x0, g0), (x1, g1) = anchors
    x = math.log2(max(size, 2))
    if x <= x0:
        return g0
    return g0 + (g1 - g0) * min(x - x0, x1 - x0) / (x1 - x0)


# A random splitter with few threads (Sec. 3.2's sweep of p) costs more to simulate: each
# thread walks n/p nodes, and the few warps give the compiled replay little to batch.
# FITTED, seconds per node of one thread's walk, here (2-core Xeon VM, 2026-11-27, code
# 2a0b13e): rs64 at 16M nodes took 720 s with p = 108 and 560 s with p = 216 (two points
# at once on the two cores), against about 172 s at the default p; on the lent x1's CPUs
# the same sweep gave 190 s at p = 432 and 79-108 s at p >= 1728 (16 processes at once).
SIM_PER_THREAD_NODE = 4.5e-3


def lr_cost(variant: str, n: int, real: bool, repeats: int = 1, first: bool = True,
            threads=None) -> float:
    """first: this point builds the input list of its n (the other points of the same n
    reuse it: list_ranking.input_list); every plan has a default-threads rs64 per n.
    threads: the random splitter's p where the point sets it (None: the default)."""
    if real:
        host = HOST_PER_NODE * n if first else CHECK_PER_NODE * n
        return FIXED + host + GPU_PER_NODE[variant] * n * (repeats + 1)
    if variant == "wylie":
        per = SIM_WYLIE_PER_NODE_ROUND * max(math.log2(max(n, 2)), 1)
    else:
        per = SIM_PER_NODE[variant]
    walk = SIM_PER_THREAD_NODE * n / threads if threads else 0.0
    return FIXED + per * growth(n, LR_GROWTH) * n + walk


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
    return (FIXED + HOST_PER_EDGE * m + per * growth(m, CC_GROWTH) * m
            + (0.015 * blocks if blocks else 0))


def cc_wall_cost(m: int, repeats: int) -> float:
    one = WALL_PER_EDGE * m
    return FIXED + HOST_PER_EDGE * m + one * (repeats + (1 if one < 1.0 else 0))


def point_memory(size: int) -> float:
    return MEM_BASE + MEM_PER_NODE * size


def lr_memory(n: int) -> float:
    """A simulated list-ranking point's peak host memory (the costliest variant's)."""
    return LR_MEM_BASE + LR_MEM_PER_NODE * n


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
            f"b x size, memory = {MEM_BASE / 1e6:.0f} MB + {MEM_PER_NODE:g} B x size; list "
            f"ranking {LR_MEM_BASE / 1e6:.0f} MB + {LR_MEM_PER_NODE:g} B x node) measured "
            f"on {MEASURED} (simgpu_apps/experiments/costs.py, benchmarks/paper_point_costs.py)")
