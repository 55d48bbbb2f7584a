"""Lesson 1 of the coalescing class: striding vs partitioning (the paper's section 2.5).

p threads copy n 4-byte words.  Two ways to hand out the work:

  striding       thread t copies elements t, t+p, t+2p, ...  At every step the
                 lanes of a warp touch consecutive words: one segment per
                 half-warp on CC 1.3 (4 sectors per warp on newer GPUs).
  partitioning   thread t copies one contiguous chunk of about n/p elements.
                 At every step neighbouring lanes are a whole chunk apart, so
                 a half-warp spreads over many segments: up to one
                 transaction per lane.

Same work, same bytes wanted.  Look at the "transactions" and "bytes moved"
columns, and at how they grow with the chunk (words per thread) for the
partitioning copy; then at the simulated time.  On sim:gtx260 (no data caches)
the extra bytes cost time; try --device sim:h100, whose L1 and L2 caches catch
part of them: the counts stay bad, the time suffers less.

    python -m simgpu_apps.lessons.striding                       # sim:gtx260, n = 2^14, 2^16, 2^18
    python -m simgpu_apps.lessons.striding --device sim:h100 --out pictures/
    python -m simgpu_apps.lessons.striding --sizes 4096 --no-plot

Writes striding_<gpu>.png: the first warp's load of each kernel (a dot per lane,
a box per transaction) and the transactions and times against n.
"""
from __future__ import annotations

import sys

import numpy as np

from simgpu_apps.lessons import _lesson
from simgpu_apps.lessons.coalescing import copy_partitioning, copy_striding

KERNELS = {"striding": copy_striding, "partitioning": copy_partitioning}
ENGINE = "timed"            # the per-warp timed engine, as `simgpu coalesce --example striding`
BLOCK = 256
SIZES = (1 << 14, 1 << 16, 1 << 18)
HEADERS = ("kernel", "n", "words/thread", "transactions", "bytes moved", "bytes wanted",
           "efficiency", "time ms")


def measure(device: str, n: int) -> dict:
    """{"striding": report, "partitioning": report}: one timed launch each, on a fresh
    device, sm_count blocks of 256 threads; the copies are checked."""
    out = {}
    for name, kern in KERNELS.items():
        dev = _lesson.fresh_device(device, ENGINE)
        src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
        blocks = int(dev.config.gpu.sm_count)
        rep = dev.launch(kern, blocks, BLOCK, src, dst, n)
        if not np.array_equal(dst.to_host(), np.arange(n)):
            raise RuntimeError(f"{kern.name} copied wrong data")     # a simulator bug, loudly
        out[name] = rep
    return out


def row(name: str, n: int, rep) -> list:
    t = _lesson.traffic([rep])
    threads = rep.grid[0] * rep.block[0]
    return [name, n, -(-n // threads), t["transactions"], t["bytes"], t["bytes_requested"],
            t["efficiency"], t["time_ms"]]


def first_load(rep) -> dict:
    """The first warp's addresses of the kernel's first load (report.samples)."""
    return next(s for (line, kind), s in sorted(rep.samples.items()) if kind == "load")


def run(device: str = "sim:gtx260", sizes=SIZES, out=".", plot: bool = True,
        stream=None) -> dict:
    """Measure, print the lesson, draw the picture.  Returns {"reports": {n: {kernel:
    report}}, "png": path or None}."""
    stream = stream or sys.stdout
    say = lambda *a: print(*a, file=stream)
    sizes = sorted(set(int(n) for n in sizes))
    reports = {n: measure(device, n) for n in sizes}
    say(_lesson.lesson_text(__doc__))
    some = reports[sizes[0]]["striding"]
    arch = _lesson.fresh_device(device, ENGINE).arch
    say(f"Striding vs partitioning on {device} ({arch}), {some.grid[0] * some.block[0]:,} threads "
        f"({some.grid[0]} blocks of {some.block[0]}), {ENGINE} engine: each kernel copies n "
        "4-byte words")
    say()
    say(_lesson.table(HEADERS, [row(k, n, reps[k]) for n, reps in reports.items() for k in KERNELS]))
    say()
    from simgpu.mem.explain import explain
    big = reports[sizes[-1]]
    for name, rep in big.items():
        s = first_load(rep)
        say(f"{name}, n = {sizes[-1]:,}: the first warp's load, line {s['line']}: {s['source']}")
        say(explain(s["address"], s["word_size"], arch, s["active"]))
        say()
    say("What to see:")
    for n, reps in reports.items():
        a, b = _lesson.traffic([reps["striding"]]), _lesson.traffic([reps["partitioning"]])
        say(f"  n = {n:,}: partitioning made {b['transactions'] / a['transactions']:.2f}x the "
            f"transactions of striding, moved {b['bytes'] / a['bytes']:.2f}x the bytes and took "
            f"{b['time_ms'] / a['time_ms']:.2f}x the time")
    say("  Both kernels want the same bytes; only the order in which the lanes ask for them differs.")

    png = None
    if plot and _lesson.have_matplotlib():
        png = picture(reports, sizes, arch, device, out)
        say(f"picture written to {png}")
    elif plot:
        say(_lesson.PLOT_MISSING)
    return {"reports": reports, "png": png}


def picture(reports, sizes, arch, device, out):
    fig, ax = _lesson.figure(2, 2, size=(6.0, 4.2))
    big = reports[sizes[-1]]
    for a, (name, rep) in zip(ax, big.items()):
        s = first_load(rep)
        _lesson.draw_warp(a, np.asarray(s["address"])[np.asarray(s["active"], bool)],
                          s["word_size"], arch, f"{name} (n = {sizes[-1]:,}): first warp's load")
    for name in KERNELS:
        t = [_lesson.traffic([reports[n][name]]) for n in sizes]
        ax[2].plot(sizes, [x["transactions"] for x in t], "o-", label=name)
        ax[3].plot(sizes, [x["time_ms"] for x in t], "o-", label=name)
    for a, label in ((ax[2], "memory transactions (loads + stores)"), (ax[3], "simulated time (ms)")):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("n (words copied)")
        a.set_ylabel(label)
        a.legend(fontsize=8)
        a.set_title(f"{label} on {device}", fontsize=10)
    return _lesson.save(fig, out, f"striding_{device.split(':', 1)[1].replace('/', '_')}.png")


def main(argv=None) -> int:
    p = _lesson.parser("python -m simgpu_apps.lessons.striding", __doc__)
    p.add_argument("--sizes", "-n", type=int, nargs="+", default=list(SIZES), metavar="N",
                   help="numbers of words to copy (default 16384 65536 262144)")
    args = p.parse_args(argv)
    _lesson.check_device(p, args.device)
    if min(args.sizes) < 1:
        p.error("--sizes must be positive")
    run(args.device, args.sizes, args.out, plot=not args.no_plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
