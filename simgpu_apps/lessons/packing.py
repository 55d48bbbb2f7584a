"""Lesson 2 of the coalescing class: 48- vs 64-bit packing in the random splitter.

The random splitter (Reid-Miller; the paper's section 3) keeps, for every node,
the splitter that owns it and its local rank in that splitter's sublist.  Two
layouts (algorithms.list_ranking.rank(..., packing=48 or 64)):

  64-bit   owner and local rank packed in one 8-byte word: the pair is
           read with one access and written with one access.
  48-bit   a 2-byte owner array and a 4-byte rank array: two accesses where
           the 64-bit version makes one (and at most 16,384 splitters, for
           16-bit owners), but 6 bytes per node instead of 8.

Where a warp's lanes touch scattered nodes (the walk, RS3), every access costs
at least one whole segment (32 bytes) whatever its word size, so two small
accesses cost about twice the transactions of one large one.  Where the lanes
touch consecutive nodes (RS1, RS5), accesses coalesce and what counts is the
bytes moved, where the smaller layout can win.  The paper (Fig. 3 right, on a
GTX 260) found the 64-bit version faster up to about 52-54M nodes and the
48-bit one faster beyond.  Compare the "accesses", "transactions" and "time"
columns of the two versions, size by size and step by step; the last lines
say what this run shows, computed from its reports.

    python -m simgpu_apps.lessons.packing                      # sim:gtx260, n = 2^12, 2^14, 2^16
    python -m simgpu_apps.lessons.packing --device sim:h100 --out pictures/
    python -m simgpu_apps.lessons.packing --sizes 4096 --no-plot

Writes packing_<gpu>.png: total time against n for both versions, and the
transactions and time of each step (RS1..RS5) at the largest n.
"""
from __future__ import annotations

import sys

from simgpu_apps.lessons import _lesson

ENGINE = "timed-block"      # the engine of `simgpu paper`'s list-ranking points
STEPS = ("RS1", "RS2", "RS3", "RS4", "RS5")
PACKINGS = (64, 48)
SIZES = (1 << 12, 1 << 14, 1 << 16)
INPUT_SEED = 1              # generators.random_list(n, seed), as in `simgpu paper`
HEADERS = ("n", "bits", "p", "memory instr.", "accesses", "transactions", "bytes moved", "time ms")
STEP_HEADERS = ("step", "bits", "accesses", "transactions", "bytes moved", "time ms")


def measure(device: str, n: int, packing: int, seed: int = INPUT_SEED):
    """One ranking of a random list of n nodes (fresh device); checks the ranks."""
    import numpy as np
    from algorithms import generators, list_ranking
    from algorithms.list_ranking.sequential import rank_sequential
    succ = generators.random_list(n, seed)
    r = list_ranking.rank(succ, method="random-splitter", packing=packing,
                          device=_lesson.fresh_device(device, ENGINE))
    if not np.array_equal(r.ranks, rank_sequential(np.asarray(succ, dtype=np.int64))):
        raise RuntimeError(f"wrong ranks (n={n}, packing={packing})")
    return r


def run(device: str = "sim:gtx260", sizes=SIZES, out=".", plot: bool = True, seed: int = INPUT_SEED,
        stream=None) -> dict:
    """Measure, print the lesson, draw the picture.  Returns {"results": {(n, bits):
    RankResult}, "png": path or None}."""
    stream = stream or sys.stdout
    say = lambda *a: print(*a, file=stream)
    sizes = sorted(set(int(n) for n in sizes))
    results = {(n, b): measure(device, n, b, seed) for n in sizes for b in PACKINGS}
    say(_lesson.lesson_text(__doc__))
    say(f"48- vs 64-bit packing of the random splitter on {device}, {ENGINE} engine, random "
        f"lists (seed {seed}); every column summed over the kernels RS1..RS5")
    say()
    rows = []
    for (n, b), r in results.items():
        t = _lesson.traffic(r.launches)
        rows.append([n, b, int(r.stats["threads"]), t["instructions"], t["accesses"],
                     t["transactions"], t["bytes"], t["time_ms"]])
    say(_lesson.table(HEADERS, rows))
    say()
    top = sizes[-1]
    steps = {b: _lesson.by_step(results[(top, b)].launches, STEPS) for b in PACKINGS}
    say(f"Per step at n = {top:,}:")
    say(_lesson.table(STEP_HEADERS, [[s, b, steps[b][s]["accesses"], steps[b][s]["transactions"],
                                      steps[b][s]["bytes"], steps[b][s]["time_ms"]]
                                     for s in STEPS for b in PACKINGS]))
    say()
    say("What this run shows (48-bit / 64-bit):")
    for n in sizes:
        t64, t48 = (_lesson.traffic(results[(n, b)].launches) for b in (64, 48))
        faster = "64-bit" if t64["time_ms"] < t48["time_ms"] else "48-bit"
        say(f"  n = {n:,}: accesses {t48['accesses'] / t64['accesses']:.2f}x, transactions "
            f"{t48['transactions'] / t64['transactions']:.2f}x, bytes moved "
            f"{t48['bytes'] / t64['bytes']:.2f}x, time {t48['time_ms'] / t64['time_ms']:.2f}x: "
            f"the {faster} version is faster")
    for s in ("RS3", "RS5"):
        say(f"  {s} at n = {top:,}: " + "; ".join(
            f"{b}-bit {steps[b][s]['accesses'] / top:.2f} accesses per node, "
            f"{steps[b][s]['transactions'] / steps[b][s]['accesses']:.3f} transactions per access"
            for b in PACKINGS))
    say(f"  The paper's crossing (48-bit faster beyond ~52M nodes) is far above n = {top:,}: "
        "look at the trend of the time ratio with n.")

    png = None
    if plot and _lesson.have_matplotlib():
        png = picture(results, sizes, steps, device, out)
        say(f"picture written to {png}")
    elif plot:
        say(_lesson.PLOT_MISSING)
    return {"results": results, "png": png}


def picture(results, sizes, steps, device, out):
    fig, ax = _lesson.figure(3, size=(5.0, 4.2))
    for b in PACKINGS:
        ax[0].plot(sizes, [_lesson.traffic(results[(n, b)].launches)["time_ms"] for n in sizes],
                   "o-", label=f"{b}-bit")
    ax[0].set_xscale("log", base=2)
    ax[0].set_yscale("log")
    ax[0].set_xlabel("list size n")
    ax[0].set_ylabel("simulated time (ms), RS1..RS5")
    ax[0].set_title(f"random splitter on {device}", fontsize=10)
    ax[0].legend(fontsize=8)
    top = sizes[-1]
    _lesson.bars(ax[1], STEPS, {f"{b}-bit": [steps[b][s]["transactions"] for s in STEPS]
                                for b in PACKINGS},
                 "memory transactions", f"transactions per step, n = {top:,}")
    _lesson.bars(ax[2], STEPS, {f"{b}-bit": [steps[b][s]["time_ms"] for s in STEPS]
                                for b in PACKINGS},
                 "simulated time (ms)", f"time per step, n = {top:,}")
    return _lesson.save(fig, out, f"packing_{device.split(':', 1)[1].replace('/', '_')}.png")


def main(argv=None) -> int:
    p = _lesson.parser("python -m simgpu_apps.lessons.packing", __doc__)
    p.add_argument("--sizes", "-n", type=int, nargs="+", default=list(SIZES), metavar="N",
                   help="list sizes (default 4096 16384 65536)")
    p.add_argument("--seed", type=int, default=INPUT_SEED, help="seed of the random lists")
    args = p.parse_args(argv)
    _lesson.check_device(p, args.device)
    if min(args.sizes) < 2:
        p.error("--sizes must be at least 2")
    run(args.device, args.sizes, args.out, plot=not args.no_plot, seed=args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
