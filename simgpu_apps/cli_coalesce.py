"""``simgpu coalesce``: how one warp's addresses become memory transactions, for a
pattern of the user's own or for the paper's striding-vs-partitioning example
(add_coalesce declares its arguments, cmd_coalesce runs it; simgpu_apps/cli.py lists it with
the other subcommands)."""
from __future__ import annotations

import json

import numpy as np

from simgpu_apps.cli_checks import UserError, help_formatter, sim_device


def add_coalesce(sub):
    p = sub.add_parser("coalesce", help="show how a warp's addresses become memory transactions",
                       formatter_class=help_formatter, description="""\
Show, lane by lane, which memory transactions one warp instruction becomes.
Either describe an access pattern (stride, offset, word size, architecture),
or run the paper's striding-vs-partitioning example on a simulated GPU and
look at real instructions of the launch.

examples:
  simgpu coalesce --stride 1                      # the ideal case on CC 1.3
  simgpu coalesce --stride 1 --offset 1           # misaligned: 64 B + 32 B
  simgpu coalesce --stride 2 --arch sm_90         # 32-byte sectors on Hopper
  simgpu coalesce --stride 1 --offset 1 --arch sm_11,sm_13,sm_90   # three rules compared
  simgpu coalesce --stride 1 --offset 1 --steps   # the rule, step by step
  simgpu coalesce --example striding              # section 2.5 of the paper
  simgpu coalesce --example striding --chart      # plus a memory chart per launch
  simgpu coalesce --example striding --device sim:h100 --plot out.png""")
    p.add_argument("--stride", type=int, default=None,
                   help="elements between neighbouring lanes (default 1)")
    p.add_argument("--offset", type=int, default=None, help="element index of lane 0 (default 0)")
    p.add_argument("--word-size", type=int, default=None, choices=(1, 2, 4, 8, 16),
                   help="bytes per word (default 4)")
    p.add_argument("--arch", default=None, help="sm_11, sm_13, sm_20, sm_90, ... (default: the "
                   "device's); several, comma-separated, compare them: --arch sm_11,sm_13,sm_90")
    p.add_argument("--lanes", type=int, default=None, help="active lanes of the warp (default 32)")
    p.add_argument("--steps", action="store_true",
                   help="tell the coalescing rule step by step for this warp")
    p.add_argument("--example", choices=("striding",), help="run a ready example kernel pair")
    p.add_argument("--chart", action="store_true",
                   help="with --example: a memory chart per launch (requests, L1, L2, DRAM)")
    p.add_argument("--device", default="sim:gtx260")
    p.add_argument("-n", type=int, default=1 << 16, help="elements for --example")
    p.add_argument("--plot", metavar="PNG", help="also draw the picture (needs matplotlib)")
    p.add_argument("--json", action="store_true")


def cmd_coalesce(args):
    from simgpu.mem.explain import access_pattern, compare, explain, plot
    from simgpu.mem.explain_steps import steps
    dev = sim_device(args.device)
    if args.example:
        return _coalesce_example(args, dev)
    if args.chart:
        raise UserError("--chart draws the launches of --example; add --example striding")
    stride = 1 if args.stride is None else args.stride
    offset = 0 if args.offset is None else args.offset
    word_size = 4 if args.word_size is None else args.word_size
    lanes = 32 if args.lanes is None else args.lanes
    archs = [a.strip() for a in (args.arch or dev.arch).split(",") if a.strip()]
    if not 1 <= lanes <= 32:
        raise UserError(f"--lanes must be 1..32, not {lanes}")
    addr = access_pattern(stride, offset, word_size, lanes)
    if (addr < 0).any():
        raise UserError("the pattern reaches negative addresses; use a larger --offset")
    if args.json:
        from simgpu.mem.coalesce import transactions
        found = {a: transactions(addr, word_size, a) for a in archs}
        out = {"arch": archs[0], "addresses": addr.tolist(), "transactions": found[archs[0]]}
        if len(archs) > 1:
            out["by_arch"] = found
        print(json.dumps(out))
        return
    if len(archs) > 1:
        print(compare(addr, word_size, archs,
                      f"stride {stride}, offset {offset}, {word_size}-byte words, {len(addr)} lanes"))
        print()
    for arch in archs:
        title = f"stride {stride}, offset {offset}, {word_size}-byte words, {arch}"
        print(explain(addr, word_size, arch, title=title))
        if args.steps:
            print()
            print(steps(addr, word_size, arch))
        if len(archs) > 1:
            print()
    if args.plot:
        for arch in archs:
            path = args.plot if len(archs) == 1 else args.plot.replace(".png", f"_{arch}.png")
            plot(addr, word_size, arch, path, f"stride {stride}, offset {offset}, {arch}")
            print(f"picture written to {path}")


def _times(a: float, b: float) -> str:
    """'2.3x slower' / '1.4x faster' / 'about as fast': a's time against b's."""
    r = a / b
    if r >= 1.05:
        return f"{r:.1f}x slower than"
    if r <= 1 / 1.05:
        return f"{1 / r:.1f}x faster than"
    return "about as fast as"


def _coalesce_example(args, dev):
    from simgpu_apps.lessons import coalescing as ex
    from simgpu.mem.explain import explain, plot
    given = [f"--{k.replace('_', '-')}" for k in ("stride", "offset", "word_size", "lanes")
             if getattr(args, k) is not None] + (["--steps"] if args.steps else [])
    if given:
        raise UserError(f"{', '.join(given)}: options of a pattern of your own, which "
                        "--example does not use (its kernels make their own addresses); drop "
                        "--example to see your pattern")
    arch = dev.arch
    if args.arch and args.arch != dev.arch:
        raise UserError(f"--example runs on --device {dev.name} ({dev.arch}), and its numbers are "
                        f"that device's; --arch {args.arch} would draw other rules over them. "
                        "Drop --arch, or compare rules on a pattern: simgpu coalesce --stride 1 "
                        f"--arch {args.arch}")
    n = args.n
    src, dst = dev.to_device(np.arange(n, dtype=np.int32)), dev.zeros(n, np.int32)
    threads = dev.config.gpu.sm_count * 256
    rows = {}
    for kern in (ex.copy_striding, ex.copy_partitioning):
        dev.flush_caches()               # each kernel starts with a cold L2, as under ncu
        rep = dev.launch(kern, threads // 256, 256, src, dst, n, engine="timed")
        if not np.array_equal(dst.to_host(), np.arange(n)):
            raise RuntimeError(f"{kern.name} copied wrong data")      # a simulator bug, loudly
        rows[kern.name] = rep
    if args.json:
        print(json.dumps({k: r.to_dict() for k, r in rows.items()}, indent=2, default=str))
        return
    print(ex.__doc__.strip())
    print()
    for name, rep in rows.items():
        sample = next(s for (line, kind), s in rep.samples.items() if kind == "load")
        print(f"== {name}: line {sample['line']}: {sample['source']}   (first warp's load)")
        print(explain(sample["address"], sample["word_size"], arch, sample["active"]))
        print()
    print(f"{'kernel':20}{'transactions':>14}{'bytes moved':>14}{'efficiency':>12}{'time ms':>12}")
    for name, rep in rows.items():
        c = rep.loads
        c2 = rep.stores
        print(f"{name:20}{c.transactions + c2.transactions:>14,}{c.bytes + c2.bytes:>14,}"
              f"{(c.bytes_requested + c2.bytes_requested) / (c.bytes + c2.bytes):>12.0%}"
              f"{rep.time_ms:>12.4f}")
    s, p = rows["copy_striding"], rows["copy_partitioning"]
    print(f"\npartitioning is {_times(p.time_ms, s.time_ms)} striding on {dev.name} "
          f"({n:,} ints, {threads:,} threads, timed engine)")
    print("note: 'striding' is the paper's name for the grid-stride loop, the coalesced one. "
          "NVIDIA's strideCopy (CUDA C Best Practices Guide) is the opposite: neighbouring lanes "
          "a stride apart; see python -m simgpu_apps.lessons.offset_stride")
    if args.chart:
        from simgpu_apps.lessons.memory_chart import chart
        for rep in rows.values():
            print()
            print(chart(rep))
    if args.plot:
        sample = next(s for (line, kind), s in p.samples.items() if kind == "load")
        plot(sample["address"][sample["active"]], sample["word_size"], arch, args.plot,
             "copy_partitioning: first warp's load")
        print(f"picture written to {args.plot}")
