"""List ranking experiments of the paper (section 3): Fig. 2, Fig. 3 left and
right, Table 2, Table 3, and the choice of p (section 3.2, text).

Points (runner.Point):
  lr_sim   one ranking on the device: method wylie or random-splitter
           (packing 64/48, splitters random/even, threads p), input
           generators.random_list(n, input_seed).  Result: total time, time
           and memory transactions per step (RS1..RS5; Wylie: init, rounds),
           sublist statistics, and whether the ranks were right.
  lr_wall  wall-clock time of a host method (sequential, cpu-random-splitter)
           on this machine: median of `repeats` runs after one warm-up run.
"""
from __future__ import annotations

import sys

import numpy as np

from .paper_document import (Claim, Figure, Panel, Section, Series, Table, fmt, pow2, size_range,
                     unstable_margin)
from . import costs
from .runner import Point

RS_STEPS = ("RS1", "RS2", "RS3", "RS4", "RS5")
INPUT_SEED = 1            # the random list of size n
SPLITTER_SEED = 0         # KISS seed of the random splitters


# --- devices and measurements (run inside worker processes) ----------------------

def make_device(name: str, engine: str = "trace-block"):
    """A fresh device per point: allocation addresses (hence memory partitions)
    and cache contents then depend on the point alone, not on what ran before.
    trace-block gives timed-block's times bit for bit (it replays the race-free
    launches from a recorded trace and runs the others on timed-block), faster."""
    import simgpu
    dev = simgpu.get_device(name)
    if dev.is_simulated:
        dev.default_engine = engine
    return dev


def jsonable(v):
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return None if v.size > 64 else v.tolist()
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def step_summary(launches) -> dict:
    """{step: {time_ms, transactions, bytes, launches}}; Wylie's 'round k' are one step."""
    out: dict = {}
    for rep in launches:
        step = rep.extra.get("step", rep.kernel)
        if isinstance(step, str) and step.startswith("round"):
            step = "rounds"
        s = out.setdefault(step, {"time_ms": 0.0, "transactions": 0, "bytes": 0, "launches": 0})
        s["time_ms"] += rep.time_ms or 0.0
        if not rep.counted:                 # a real GPU: counts come from Nsight Compute
            s["transactions"] = s["bytes"] = None
        elif s["transactions"] is not None:
            for c in (rep.loads, rep.stores, rep.atomics):
                s["transactions"] += c.transactions
                s["bytes"] += c.bytes
        s["launches"] += 1
    return out


_INPUT: dict = {}          # the last input list of this process: (n, seed) -> succ


def input_list(n: int, seed: int):
    """generators.random_list(n, seed), kept for the next point of the same n (the
    plan runs the variants of one n one after the other; at 64M nodes generating
    the list costs seconds)."""
    from algorithms import generators
    key = (int(n), int(seed))
    if key not in _INPUT:
        _INPUT.clear()
        _INPUT[key] = generators.random_list(n, seed)
    return _INPUT[key]


def ranks_are_right(succ, ranks) -> bool:
    """True when ``ranks`` is the ranking of the list(s) ``succ``: every tail
    (succ[i] == i) has rank 0 and every other node one more than its successor.
    Since every node reaches a tail, these equations have one solution, so the
    check is complete, and O(n) (no reference ranking needed at 64M nodes)."""
    succ = np.asarray(succ)
    ranks = np.asarray(ranks, dtype=np.int64)
    if ranks.shape != succ.shape:
        return False
    tail = succ == np.arange(len(succ))
    return bool(np.all(ranks[tail] == 0) and np.all(ranks[~tail] == ranks[succ[~tail]] + 1))


def compute_sim(params: dict, device: str) -> dict:
    import simgpu
    from algorithms import list_ranking
    from .measure import Footprint, memory_counts, refusal
    n = params["n"]
    succ = input_list(n, params["input_seed"])
    dev = make_device(device)
    fp = Footprint(dev)
    kw = {}
    if params["method"] == "random-splitter":
        kw = dict(packing=params["packing"], splitters=params["splitters"],
                  seed=params["seed"], threads=params["threads"], walk=params.get("walk"))
    real = not dev.is_simulated                         # cuda: warm up, then median of repeats
    runs = params.get("repeats", 1) + (1 if real else 0)
    totals, r = [], None
    try:
        for k in range(runs):
            r = None                                     # frees the last run's arrays first
            r = list_ranking.rank(succ, method=params["method"], device=dev, validate=False, **kw)
            if not real or k > 0:
                totals.append(sum(rep.time_ms or 0.0 for rep in r.launches))
    except simgpu.DeviceMemoryError as exc:              # does not fit: refused, not simulated
        return refusal(exc, fp)
    correct = ranks_are_right(succ, r.ranks)
    stats = {k: v for k, v in r.stats.items() if k != "splitter_nodes"}
    groups: dict = {}
    for rep in r.launches:
        groups.setdefault(_step_of(rep), []).append(rep)
    memory = {step: memory_counts(reps) for step, reps in groups.items()}
    return {"time_ms": float(np.median(totals)), "times_ms": totals, "steps": step_summary(r.launches),
            "stats": jsonable(stats), "correct": correct, "launches": len(r.launches),
            "timed": all(rep.time_ms is not None for rep in r.launches),
            "memory": memory, **fp.summary()}


def _step_of(rep):
    step = rep.extra.get("step", rep.kernel)
    return "rounds" if isinstance(step, str) and step.startswith("round") else step


WALL_MEASURE = {"sequential": "cpu", "cpu-random-splitter": "wall"}   # the latter forks workers


def compute_wall(params: dict, device: str) -> dict:
    from algorithms import list_ranking
    from .measure import cpu_times
    succ = input_list(params["n"], params["input_seed"])
    kw = {"seed": params["seed"]} if params["method"] == "cpu-random-splitter" else {}
    return cpu_times(lambda: list_ranking.rank(succ, method=params["method"], validate=False, **kw),
                     params["repeats"], WALL_MEASURE[params["method"]])


# --- the plan -----------------------------------------------------------------------

GPU_VARIANTS = {   # label -> parameters of lr_sim
    "wylie": dict(method="wylie"),
    "rs64": dict(method="random-splitter", packing=64, splitters="random"),
    "rs48": dict(method="random-splitter", packing=48, splitters="random"),
    # the paper's own 64-bit accesses (RS3: a 64-bit read, a 32-bit read, a 64-bit write);
    # "rs64" is the fused walk, faster (list_ranking.random_splitter: walks)
    "rs64p": dict(method="random-splitter", packing=64, splitters="random", walk="paper"),
    "even48": dict(method="random-splitter", packing=48, splitters="even"),
}
LABELS = {"wylie": "GPU Wylie (pointer jumping)", "rs64": "GPU random splitter, 64-bit",
          "rs48": "GPU random splitter, 48-bit",
          "rs64p": "GPU random splitter, 64-bit, the paper's accesses", "even48": "GPU even splitters, 48-bit",
          "sequential": "CPU sequential (this machine)",
          "cpu-random-splitter": "CPU random splitter, numpy (this machine)"}


def point_params(variant: str, n: int, threads=None) -> dict:
    """The parameters of a simulated point (what compute_sim takes, the cache key's core)."""
    params = dict(GPU_VARIANTS[variant], n=int(n), input_seed=INPUT_SEED)
    if params["method"] == "random-splitter":
        params.update(threads=threads, seed=SPLITTER_SEED)
    return params


def sim_point(ctx, variant: str, n: int, threads=None) -> Point:
    params = point_params(variant, n, threads)
    if ctx.real_gpu:
        params["repeats"] = ctx.sizes["gpu_repeats"]
    cost = costs.lr_cost(variant, n, ctx.real_gpu, ctx.sizes["gpu_repeats"],
                         first=variant == "rs64" and threads is None, threads=threads)
    if not costs.lr_fits(variant, n, ctx.info.get("capacity")):
        cost = costs.FIXED                     # the device refuses it at once
    return Point.make("lr_sim", ctx.device, cost=cost, memory=costs.lr_memory(n), **params)


def wall_point(ctx, method: str, n: int) -> Point:
    reps = ctx.sizes["cpu_repeats"]
    return Point.make("lr_wall", ctx.host, kind="wall", cost=costs.lr_wall_cost(method, n, reps),
                      memory=costs.point_memory(n), method=method, n=int(n), input_seed=INPUT_SEED, repeats=reps,
                      seed=SPLITTER_SEED)


def p_values(ctx) -> list:
    cores = ctx.info["cores"]
    return sorted({max(32, min(16384, int(cores * f))) for f in ctx.sizes["p_factors"]})


def dense_sizes(ctx) -> list:
    """Fig. 3 right's sizes: lr_n and the dense grid (lr_dense: both packings only)."""
    return sorted(set(ctx.sizes["lr_n"]) | set(ctx.sizes.get("lr_dense", ())))


def plan(ctx) -> list:
    pts = []
    dense = set(ctx.sizes.get("lr_dense", ()))
    # Fig. 3 right's window first: on a real GPU (points in plan order) a run stopped
    # early still has the crossing and the knees
    low = min(dense, default=0)
    order = [n for n in dense_sizes(ctx) if dense and n >= low]
    order += [n for n in dense_sizes(ctx) if n not in order]
    for n in order:
        if n in dense and n not in ctx.sizes["lr_n"]:
            pts += [sim_point(ctx, v, n) for v in ("rs64", "rs64p", "rs48")]
            continue
        pts += [sim_point(ctx, v, n) for v in GPU_VARIANTS]
        pts += [wall_point(ctx, m, n) for m in ("sequential", "cpu-random-splitter")]
    pts += [sim_point(ctx, "rs64", ctx.sizes["p_n"], threads=p) for p in p_values(ctx)]
    return pts


# --- analysis ---------------------------------------------------------------------

def _series(ctx, res, variant, ns, key=lambda r: r["time_ms"]):
    xs, ys = [], []
    for n in ns:
        r = res.get(sim_point(ctx, variant, n))
        if r is not None:
            xs.append(n)
            ys.append(key(r))
    return xs, ys


def _wall(ctx, res, method, ns):
    xs, ys = [], []
    for n in ns:
        r = res.get(wall_point(ctx, method, n))
        if r is not None:
            xs.append(n)
            ys.append(r["ms"])
    return xs, ys


def _missing(claim_id, source, paper, criterion, why="points missing (failed or not run)"):
    return Claim(claim_id, source, paper, criterion, "not available", why)


def analyze(ctx, res) -> list:
    from .fig3_right import fig3_right
    from .footprint import lr_footprints
    ns = list(ctx.sizes["lr_n"])
    mine = {p: r for p, r in res.items() if p.experiment in ("lr_sim", "lr_wall")}
    refused = {p: r for p, r in mine.items() if r.get("refused")}
    res = {p: r for p, r in mine.items() if not r.get("refused")}
    wrong = [f"{v} n={n}" for v in GPU_VARIANTS for n in dense_sizes(ctx)
             if (r := res.get(sim_point(ctx, v, n))) is not None and not r["correct"]]
    secs = [_fig2(ctx, res, ns), _fig3_left(ctx, res, ns),
            fig3_right(ctx, res, dense_sizes(ctx), refused, sys.modules[__name__]),
            _table2(ctx, res, ns), _table3(ctx, res, ns), _p_choice(ctx, res),
            lr_footprints(ctx, mine)]
    if wrong:
        secs[0].text.insert(0, "**WRONG RANKS** from the device for: " + ", ".join(wrong))
    return secs


def _fig2(ctx, res, ns) -> Section:
    sec = Section("fig2", "Fig. 2: GPU vs CPU list ranking time")
    series = [Series(LABELS[v], *_series(ctx, res, v, ns)) for v in ("wylie", "rs48", "rs64")]
    series += [Series(LABELS[m], *_wall(ctx, res, m, ns), style="--s")
               for m in ("sequential", "cpu-random-splitter")]
    sec.figures.append(Figure("fig2_list_ranking_time", "Fig. 2: list ranking time vs n",
                              [Panel("time vs n", "list size n", "time (ms)", series, True, True)],
                              size_range(ns)))
    paper = "GPU list ranking (random splitter) is about 20x faster than sequential list ranking on the CPU"
    crit = ("speedup S = CPU sequential time (process CPU time, fastest of the repeats) / best "
            "GPU random splitter time (48- or 64-bit) at the "
            "largest n: held if 10 <= S <= 40 ('about 20x'); partly held if S > 1 but outside "
            "that band (the GPU wins, by a different factor); not held if S <= 1")
    rows, speed, spread = [], {}, {}
    for n in ns:
        s = res.get(wall_point(ctx, "sequential", n))
        g = [r["time_ms"] for v in ("rs64", "rs48") if (r := res.get(sim_point(ctx, v, n)))]
        w = res.get(sim_point(ctx, "wylie", n))
        if s and g:
            speed[n], spread[n] = s["ms"] / min(g), s["spread"]
            rows.append([pow2(n), s["ms"], s["spread"], len(s["times_ms"]), min(g), speed[n],
                         s["ms"] / w["time_ms"] if w else None])
    sec.tables.append(Table("fig2_numbers", "Fig. 2 (numbers): CPU sequential vs GPU", [
        "n", "CPU sequential ms (this machine)", "CPU spread (max-min)/min", "CPU runs",
        "GPU best random splitter ms", "speedup", "speedup of GPU Wylie"], rows, size_range(ns),
        ["CPU: process CPU time of the fastest run (robust to other processes' load; the "
         "spread of the runs is beside it)."]))
    if not speed:
        sec.claims.append(_missing("fig2-gpu-vs-cpu", "Fig. 2", paper, crit))
        return sec
    n = max(speed)
    S = speed[n]
    verdict = "held" if 10 <= S <= 40 else "partly held" if S > 1 else "not held"
    nums = f"at n = {pow2(n)}: S = {S:.1f}x; all sizes: " + ", ".join(
        f"{pow2(k)}: {v:.1f}x" for k, v in speed.items())
    sec.claims.append(Claim("fig2-gpu-vs-cpu", "Fig. 2", paper, crit, verdict, nums,
                            unstable_margin(S, spread[n], (1, 10, 40))))
    return sec


def _fig3_left(ctx, res, ns) -> Section:
    sec = Section("fig3left", "Fig. 3 left: time per element vs n")
    per = {}
    series = []
    for v in ("wylie", "rs64", "rs48"):
        x, y = _series(ctx, res, v, ns, key=lambda r: r["time_ms"] * 1e6)
        per[v] = {a: b / a for a, b in zip(x, y)}
        series.append(Series(LABELS[v], x, [b / a for a, b in zip(x, y)]))
    full = ctx.info["resident_threads"]
    sec.figures.append(Figure("fig3_left_time_per_element", "Fig. 3 left: time per element",
                              [Panel("time / n", "list size n", "time per element (ns)", series,
                                     xlog=True)], size_range(ns),
                              [f"the device holds {full:,} resident threads"]))
    paper = ("time per element grows like log n for Wylie (O(n log n) work) and stays flat for "
             "the random splitter (O(n) work)")
    crit = (f"over the sizes with n >= the device's resident threads ({full:,}: the GPU is full, "
            "below that time/n mostly measures idle hardware and launch overhead): Wylie's "
            "time/n increases from each such size to the next, and the 64-bit random "
            "splitter's time/n stays within 25% (max/min <= 1.25); needs >= 2 such sizes")
    big = [n for n in ns if n >= full and n in per["wylie"] and n in per["rs64"]]
    allnums = "; ".join(f"{v}: " + ", ".join(f"{pow2(n)} {t:.2f} ns" for n, t in per[v].items())
                        for v in ("wylie", "rs64"))
    if len(big) < 2:
        sec.claims.append(Claim("fig3l-per-element", "Fig. 3 left", paper, crit, "not tested",
                                f"only {len(big)} size(s) with n >= {full:,}; time/n at all "
                                f"sizes: {allnums}"))
        return sec
    w = [per["wylie"][n] for n in big]
    r = [per["rs64"][n] for n in big]
    w_ok = all(b > a for a, b in zip(w, w[1:]))
    r_ok = max(r) / min(r) <= 1.25
    verdict = "held" if w_ok and r_ok else "partly held" if w_ok or r_ok else "not held"
    nums = (f"n >= {full:,}: Wylie time/n " + ", ".join(f"{t:.2f}" for t in w)
            + f" ns ({'increasing' if w_ok else 'not increasing'}); random splitter "
            + ", ".join(f"{t:.2f}" for t in r) + f" ns (max/min {max(r) / min(r):.2f}). "
            f"All sizes: {allnums}")
    sec.claims.append(Claim("fig3l-per-element", "Fig. 3 left", paper, crit, verdict, nums))
    return sec


def _table2(ctx, res, ns) -> Section:
    sec = Section("table2", "Table 2: kernel times of the random splitter (RS1..RS5)")
    rows, ratios = [], {}
    for n in ns:
        for v in ("rs48", "rs64"):
            r = res.get(sim_point(ctx, v, n))
            if r is None:
                continue
            st = r["steps"]
            t = [st[s]["time_ms"] for s in RS_STEPS]
            tx = [st[s]["transactions"] for s in RS_STEPS]
            ratio = t[2] / t[4] if t[4] else None
            ratios[(n, v)] = (ratio, tx[2] / tx[4] if tx[2] is not None and tx[4] else None)
            rows.append([pow2(n), v[-2:], r["stats"]["threads"], *t, r["time_ms"], ratio, *tx])
    sec.tables.append(Table(
        "table2_rs_kernels", "Table 2: random splitter kernel times (ms) and memory transactions",
        ["n", "bits", "p", *(f"{s} ms" for s in RS_STEPS), "total ms", "RS3/RS5 time",
         *(f"{s} transactions" for s in RS_STEPS)], rows, size_range(ns),
        ["p: the default number of threads (= random splitters) for that n."]))
    paper = "RS3 (the irregular walk) costs more than 10x RS5 (coalesced), though both are O(n)"
    crit = "RS3 time > 10 x RS5 time at the largest n, for both the 48- and the 64-bit version"
    top = max((n for n, _ in ratios), default=None)
    if top is None:
        sec.claims.append(_missing("table2-rs3-vs-rs5", "Table 2", paper, crit))
        return sec
    at_top = {v: ratios[(top, v)] for v in ("rs48", "rs64") if (top, v) in ratios}
    ok = [v for v, (r, _) in at_top.items() if r is not None and r > 10]
    verdict = "held" if len(ok) == len(at_top) else "partly held" if ok else "not held"
    nums = (f"at n = {pow2(top)}: " + ", ".join(
        f"{v[-2:]}-bit RS3/RS5 time {fmt(r, 3)}x (transactions {fmt(x, 3)}x)"
        for v, (r, x) in at_top.items())
        + "; by n (64-bit): " + ", ".join(f"{pow2(n)} {r:.1f}x" for (n, v), (r, _) in ratios.items()
                                          if v == "rs64" and r is not None))
    sec.claims.append(Claim("table2-rs3-vs-rs5", "Table 2", paper, crit, verdict, nums))
    return sec


def _tv_distance(hist) -> float | None:
    exp = hist.get("expected")
    if not exp:
        return None
    obs = np.asarray(hist["counts"], float)
    exp = np.asarray(exp, float)
    if obs.sum() == 0 or exp.sum() == 0:
        return None
    return float(0.5 * np.abs(obs / obs.sum() - exp / exp.sum()).sum())


def _table3(ctx, res, ns) -> Section:
    sec = Section("table3", "Table 3: random vs even splitters (48-bit)")
    rows, top = [], None
    for n in ns:
        r, e = res.get(sim_point(ctx, "rs48", n)), res.get(sim_point(ctx, "even48", n))
        if r is None or e is None:
            continue
        s, se = r["stats"], e["stats"]
        top = (n, r, e)
        rows.append([pow2(n), s["threads"], r["time_ms"], e["time_ms"], r["time_ms"] / e["time_ms"],
                     r["steps"]["RS3"]["time_ms"], e["steps"]["RS3"]["time_ms"],
                     s["sublists"], s.get("expected_sublists"), s["mean"], s.get("expected_mean"),
                     s["max"], s.get("expected_max"), se["max"], s["max"] / max(se["max"], 1),
                     _tv_distance(s["histogram"])])
    sec.tables.append(Table(
        "table3_splitters", "Table 3: random vs even splitters, 48-bit version",
        ["n", "p", "random ms", "even ms", "random/even", "RS3 random ms", "RS3 even ms",
         "sublists", "expected sublists", "mean length", "expected mean", "max length",
         "expected max", "even max", "max random/even", "histogram TV distance"],
        rows, size_range(ns),
        ["Expected values: Reid-Miller's model as algorithms.list_ranking.random_splitter."
         "sublist_stats computes it (p draws with replacement plus the head; geometric gaps; "
         "expected max (n/m) H_m). TV distance: total variation distance between the measured "
         "and expected histograms over the bins [1,2), [2,4), [4,8), ..."]))
    claims_paper = ("random splitters are only marginally slower than perfect even splitters, "
                    "and the sublist lengths follow Reid-Miller's formula")
    crit = ("at the largest n: random time <= 1.15 x even time ('marginally'); and measured "
            "number of sublists and mean length within 5% of the expected values, maximum "
            "length within a factor 2 of the expected maximum, histogram TV distance <= 0.15")
    if top is None:
        sec.claims.append(_missing("table3-random-vs-even", "Table 3", claims_paper, crit))
        return sec
    n, r, e = top
    s = r["stats"]
    ratio = r["time_ms"] / e["time_ms"]
    tv = _tv_distance(s["histogram"])
    fast = ratio <= 1.15
    formula = (abs(s["sublists"] / s["expected_sublists"] - 1) <= 0.05
               and abs(s["mean"] / s["expected_mean"] - 1) <= 0.05
               and 0.5 <= s["max"] / s["expected_max"] <= 2 and tv is not None and tv <= 0.15)
    verdict = "held" if fast and formula else "partly held" if fast or formula else "not held"
    nums = (f"n = {pow2(n)}, p = {s['threads']}: random/even time {ratio:.3f}; sublists "
            f"{s['sublists']} vs {s['expected_sublists']:.1f} expected, mean {s['mean']:.2f} vs "
            f"{s['expected_mean']:.2f}, max {s['max']} vs {s['expected_max']:.1f} (even: max "
            f"{e['stats']['max']}), TV distance {fmt(tv)}")
    sec.claims.append(Claim("table3-random-vs-even", "Table 3", claims_paper, crit, verdict, nums))
    h = s["histogram"]
    hrows = [[f"[{a}, {b})", c, x] for (a, b), c, x in zip(h["bins"], h["counts"], h["expected"] or [])]
    sec.tables.append(Table("table3_histogram", f"Table 3 (detail): sublist lengths at n = {pow2(n)}, "
                            "random splitters, measured vs Reid-Miller's expectation",
                            ["length", "sublists measured", "expected"], hrows, f"n = {pow2(n)}"))
    return sec


def _p_choice(ctx, res) -> Section:
    sec = Section("pchoice", "Choice of p (section 3.2, text)")
    n, cores = ctx.sizes["p_n"], ctx.info["cores"]
    pts = [(p, res.get(sim_point(ctx, "rs64", n, threads=p))) for p in p_values(ctx)]
    pts = [(p, r) for p, r in pts if r is not None]
    rows = [[p, p / cores, r["time_ms"], r["steps"]["RS3"]["time_ms"], r["steps"]["RS4"]["time_ms"]]
            for p, r in pts]
    sec.tables.append(Table("table_p_choice", f"Random splitter (64-bit) time vs p at n = {pow2(n)}",
                            ["p", "p / cores", "time ms", "RS3 ms", "RS4 ms"], rows,
                            f"n = {pow2(n)}, p = " + ", ".join(str(p) for p, _ in pts),
                            [f"cores: {cores} ({ctx.info['sm_count']} SMs)"]))
    paper = "the best p is a small factor times the number of GPU cores"
    crit = "the p with the smallest time lies between 1x and 16x the cores"
    if not pts:
        sec.claims.append(_missing("p-small-factor-of-cores", "Sec. 3.2", paper, crit))
        return sec
    best, rb = min(pts, key=lambda t: t[1]["time_ms"])
    f = best / cores
    sec.claims.append(Claim("p-small-factor-of-cores", "Sec. 3.2 (text)", paper, crit,
                            "held" if 1 <= f <= 16 else "not held",
                            f"n = {pow2(n)}: best p = {best} = {f:.2g} x {cores} cores "
                            f"({rb['time_ms']:.4g} ms); " + ", ".join(
                                f"p={p}: {r['time_ms']:.4g}" for p, r in pts)))
    return sec
