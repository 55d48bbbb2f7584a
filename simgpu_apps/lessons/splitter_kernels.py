"""Lesson 3 of the coalescing class: RS3 vs RS5, the walk and the final pass.

The random splitter ranks a list with five kernels (the paper's section 3):

  RS1  mark every node unowned                   (striding over the nodes)
  RS2  choose p random splitters                 (one node per thread)
  RS3  walk: each thread follows succ from its splitter, stamping owner and
       local rank on every node until it meets the next splitter
  RS4  rank the short list of splitters          (one block, pointer jumping)
  RS5  final rank of every node = its splitter's rank - its local rank
                                                 (striding over the nodes)

RS3 and RS5 both touch every node once: O(n) work each.  But in RS3 the 32
lanes of a warp are at 32 random places of the list, so each access is its
own transaction; in RS5 the lanes read and write consecutive nodes, and a
half-warp's (warp's) words share a few segments.  The paper's Table 2 (GTX
260, n = 1M..64M) shows RS3 taking more than 10x the time of RS5.  Look at
"accesses per node" (a small constant for both) against "transactions per
access" (about 1 where the lanes are scattered), then at the time; the per-line tables show which source lines make
the transactions (a gather like sp_rank[owner] in RS5 is scattered too).

    python -m simgpu_apps.lessons.splitter_kernels              # sim:gtx260, n = 2^16, 64-bit
    python -m simgpu_apps.lessons.splitter_kernels --device sim:h100 --packing 48
    python -m simgpu_apps.lessons.splitter_kernels -n 4096 --no-plot

Writes splitter_kernels_<gpu>.png: time, transactions and transactions per
access of each step.
"""
from __future__ import annotations

import sys

from simgpu_apps.lessons import _lesson
from simgpu_apps.lessons.packing import ENGINE, INPUT_SEED, STEPS, measure

N = 1 << 16
HEADERS = ("step", "launches", "accesses", "per node", "transactions", "per access",
           "bytes moved", "efficiency", "time ms", "% time")
LINE_HEADERS = ("line", "kind", "accesses", "transactions", "per access", "source")


def step_rows(launches, n: int) -> list:
    steps = _lesson.by_step(launches, STEPS)
    total = sum(s["time_ms"] for s in steps.values()) or 1.0
    return [[s, t["launches"], t["accesses"], t["accesses"] / n, t["transactions"],
             t["transactions"] / t["accesses"] if t["accesses"] else 0.0, t["bytes"],
             t["efficiency"], t["time_ms"], 100 * t["time_ms"] / total]
            for s, t in steps.items()]


def line_rows(launches, step: str) -> list:
    """Per source line ("file.py:line") of a step's kernels (report.by_line), most
    transactions first; the source text from report.samples where the line number
    names one line (samples are keyed by line number, not file)."""
    rows = []
    for rep in launches:
        if rep.extra.get("step") != step:
            continue
        number = lambda where: str(where).rpartition(":")[2]
        numbers = [number(w) for w in rep.by_line]
        for where, counts in rep.by_line.items():
            n = number(where)
            for kind, c in counts.items():
                sample = (rep.samples.get((int(n), kind.rstrip("s")), {})
                          if n.isdigit() and numbers.count(n) == 1 else {})
                rows.append([str(where), kind, c.lanes, c.transactions,
                             c.transactions / c.lanes if c.lanes else 0.0,
                             sample.get("source", "")[:64]])
    return sorted(rows, key=lambda r: -r[3])


def run(device: str = "sim:gtx260", n: int = N, packing: int = 64, out=".", plot: bool = True,
        seed: int = INPUT_SEED, stream=None) -> dict:
    """Measure, print the lesson, draw the picture.  Returns {"result": RankResult,
    "png": path or None}."""
    stream = stream or sys.stdout
    say = lambda *a: print(*a, file=stream)
    r = measure(device, n, packing, seed)
    say(_lesson.lesson_text(__doc__))
    say(f"Random splitter, {packing}-bit packing, on {device}, {ENGINE} engine: a random list of "
        f"n = {n:,} nodes (seed {seed}), p = {int(r.stats['threads']):,} splitters")
    say()
    rows = step_rows(r.launches, n)
    say(_lesson.table(HEADERS, rows))
    say()
    for step in ("RS3", "RS5"):
        say(f"{step}, by source line:")
        say(_lesson.table(LINE_HEADERS, line_rows(r.launches, step)))
        say()
    t = {row[0]: row for row in rows}
    rs3, rs5 = t["RS3"], t["RS5"]
    say("What this run shows:")
    say(f"  RS3 took {rs3[8] / rs5[8]:.1f}x the time of RS5 and made "
        f"{rs3[4] / rs5[4]:.1f}x its transactions, for {rs3[2] / rs5[2]:.2f}x its accesses")
    say(f"  per access: RS3 {rs3[5]:.3f} transactions, RS5 {rs5[5]:.3f} "
        f"({rs3[5] / rs5[5]:.1f}x); bytes moved per byte wanted: RS3 {1 / rs3[7]:.1f}, "
        f"RS5 {1 / rs5[7]:.1f}")
    say(f"  RS3 is {rs3[9]:.0f}% of the kernel time, RS5 {rs5[9]:.0f}% (the paper: RS3 > 10x RS5 "
        f"at n >= 1M on the GTX 260; this is n = {n:,})")

    png = None
    if plot and _lesson.have_matplotlib():
        png = picture(rows, device, n, packing, out)
        say(f"picture written to {png}")
    elif plot:
        say(_lesson.PLOT_MISSING)
    return {"result": r, "png": png}


def picture(rows, device, n, packing, out):
    fig, ax = _lesson.figure(3, size=(4.6, 4.2))
    steps = [row[0] for row in rows]
    _lesson.bars(ax[0], steps, {"time": [row[8] for row in rows]}, "simulated time (ms)",
                 f"time per step ({device})")
    _lesson.bars(ax[1], steps, {"transactions": [row[4] for row in rows]},
                 "memory transactions", f"transactions per step (n = {n:,})")
    _lesson.bars(ax[2], steps, {"per access": [row[5] for row in rows]},
                 "transactions per access", f"coalescing: transactions per access ({packing}-bit)")
    ax[2].axhline(1.0, color="grey", linestyle="--", linewidth=1)
    ax[2].set_ylim(0, max(1.25, 1.1 * max(row[5] for row in rows)))
    ax[2].text(0.02, 1.02, "one transaction per access: nothing coalesced", fontsize=8,
               va="bottom", transform=ax[2].get_yaxis_transform())
    colors = {"RS3": "tab:red", "RS5": "tab:green"}      # the pair of the lesson
    for a in ax:
        for patch, name in zip(a.patches, steps):
            patch.set_facecolor(colors.get(name, "tab:gray"))
    return _lesson.save(fig, out, f"splitter_kernels_{device.split(':', 1)[1].replace('/', '_')}.png")


def main(argv=None) -> int:
    p = _lesson.parser("python -m simgpu_apps.lessons.splitter_kernels", __doc__)
    p.add_argument("-n", type=int, default=N, help=f"list size (default {N})")
    p.add_argument("--packing", type=int, default=64, choices=(64, 48))
    p.add_argument("--seed", type=int, default=INPUT_SEED, help="seed of the random list")
    args = p.parse_args(argv)
    _lesson.check_device(p, args.device)
    if args.n < 2:
        p.error("-n must be at least 2")
    run(args.device, args.n, args.packing, args.out, plot=not args.no_plot, seed=args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
