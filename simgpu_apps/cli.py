"""The ``simgpu`` command.

Each subcommand is a pair: ``add_<name>(subparsers)`` declares its arguments
(with examples in its help) and ``cmd_<name>(args)`` runs it; ``simgpu coalesce``'s
pair and its example are in cli_coalesce.py, what both modules use (UserError, the
help formatter, the --device lookup) in cli_checks.py.  Errors a user
can cause (bad arguments, files, kernels) end with one clear line on stderr
and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from simgpu.lang.errors import KernelError, LaunchError, SimgpuError
from simgpu_apps.cli_checks import (UserError, help_formatter, import_user_module, one_line,
                                    user_device)
from simgpu_apps.cli_coalesce import add_coalesce, cmd_coalesce


# --- simgpu devices ------------------------------------------------------------

def add_devices(sub):
    p = sub.add_parser("devices", help="list the simulated GPUs (and the real one, if present)",
                       formatter_class=help_formatter, description="""\
List the GPU configurations the simulator knows.

examples:
  simgpu devices
  simgpu devices --json
  simgpu devices --verbose""")
    p.add_argument("--verbose", "-v", action="store_true", help="print every figure of each config")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def cmd_devices(args):
    from simgpu.configs import available_configs, load_config
    configs = [load_config(name) for name in available_configs()]
    if args.json:
        print(json.dumps([{"device": f"sim:{c.key}", "name": c.gpu.name, "arch": c.gpu.arch,
                           "sms": c.gpu.sm_count, "clock_mhz": c.gpu.core_clock_mhz,
                           "bandwidth_gbps": c.memory.peak_bandwidth_gbps} for c in configs], indent=2))
        return
    for c in configs:
        if args.verbose:
            from simgpu_apps.hardware_checks import hardware_check
            print(c.describe())
            print(f"hardware check: {hardware_check(c.key)}")
            print()
        else:
            print(f"sim:{c.key:10} {c.gpu.name:40} {c.gpu.arch}  {c.gpu.sm_count:4} SMs  "
                  f"{c.memory.peak_bandwidth_gbps:8.1f} GB/s")
    print("cuda       the real GPU through CuPy (needs the 'gpu' extra and an NVIDIA GPU)")


# --- simgpu paper ---------------------------------------------------------------

def add_paper(sub):
    p = sub.add_parser("paper", help="reproduce the paper's figures and tables, with verdicts",
                       formatter_class=help_formatter, description="""\
Run the experiments of Dehne & Yogaratnam's paper (list ranking: Fig. 2,
Fig. 3 left/right, Tables 2 and 3; connected components: Fig. 4, 5, 6 and
Table 4) and write every figure (PNG, needs matplotlib; data as CSV),
every table (Markdown and CSV) and report.md, which puts each result beside
the paper's claim with a verdict computed from the numbers.

Each measurement is cached under OUT/cache/ and reused on the next run (the
cache key includes a hash of the simulator and algorithm sources).  Times on
a simulated device are simulated kernel times; CPU baselines are wall-clock
times on this machine.

Sizes (--size): quick: lists to 2^16 nodes, graphs to 2^14 edges; full (the
default): lists to 2^20, graphs to 2^18; paper: the paper's own sizes, lists
to 64M nodes (every 2M from 40M to 64M on both packings, Fig. 3 right) and
graphs to m = 8M edges (Fig. 4, 6) -- minutes on a real GPU; on one core
of a 2-core 2.5 GHz Xeon VM with the simulator about 44 hours with the numba
core (pip install simgpu[fast]), 77 without.  Before it starts, the run prints its estimate (time, peak host
memory) from per-point cost models.  A point whose arrays do not fit the
device's memory is refused by the device and reported as such.

An interrupted run (Ctrl-C, killed) resumes from OUT/cache when run again.
A finished run's folder is not overwritten without --overwrite.

examples:
  simgpu paper --quick                          # small sizes, a few minutes
  simgpu paper --size paper --device cuda       # the paper's sizes on the real GPU
  simgpu paper --quick --jobs 2 --out out/paper
  simgpu paper --device sim:h100                # full sizes: prints an estimate first
  simgpu paper --device cuda                    # CUDA-event times on the real GPU
  simgpu paper --scheduler tcp://host:8786      # the simulated points on a Dask cluster

--scheduler sends the simulated points to the workers of a running Dask
cluster (pip install 'simgpu[dask]' here, on the scheduler and on the
workers).  The scheduler and every worker must have simgpu installed from
the same source as this machine (it is checked before any point is sent;
nothing is uploaded); they need no shared disk: results come back here,
where the cache, CPU baselines and report are written.""")
    p.add_argument("--quick", action="store_true", help="small sizes (minutes, not hours): "
                   "the same as --size quick")
    p.add_argument("--size", choices=("quick", "full", "paper"), default=None,
                   help="size setting: quick, full (default), paper (the paper's sizes)")
    p.add_argument("--overwrite", action="store_true", help="write into an OUT that holds an "
                   "earlier run's report (its cache is reused)")
    p.add_argument("--beside", default=None, metavar="REPORT",
                   help="an earlier report.md (or its folder): its verdicts go beside this run's")
    p.add_argument("--estimate", action="store_true", help="print the plan's estimate (time, "
                   "peak host memory) and stop")
    p.add_argument("--cached-sim", action="store_true", help="take the simulated points from "
                   "OUT/cache only (computed elsewhere, e.g. by benchmarks/paper_points.py): "
                   "those missing are left out and reported; CPU baselines are measured here")
    p.add_argument("--cpu-repeats", type=int, default=None, metavar="N",
                   help="runs of each CPU baseline (default: the size setting's)")
    p.add_argument("--gpu-repeats", type=int, default=None, metavar="N",
                   help="timed runs of each point on a real GPU (default: the size setting's)")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)   # tests: seconds
    p.add_argument("--device", default="sim:gtx260", help="sim:gtx260 (default), sim:h100, "
                   "sim:h200, cuda")
    p.add_argument("--out", default="out/paper", metavar="DIR", help="output folder "
                   "(default out/paper)")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="parallel worker processes for the sweeps (default 1)")
    p.add_argument("--only", default=None, metavar="LIST",
                   help="comma-separated subset: lr (list ranking), cc (connected components)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the simulated points on the Dask cluster whose scheduler is at "
                   "ADDRESS (e.g. tcp://host:8786); its scheduler and workers must have the "
                   "same simgpu installed; replaces --jobs")
    p.add_argument("--no-progress", action="store_true", help="no progress line")


def cmd_paper(args):
    from simgpu_apps.experiments import run_paper
    if args.jobs < 1:
        raise UserError(f"--jobs must be >= 1, not {args.jobs}")
    if args.quick and args.size not in (None, "quick"):
        raise UserError(f"--quick and --size {args.size} disagree: give one of them")
    size = "tiny" if args.tiny else "quick" if args.quick else args.size or "full"
    only = [x.strip() for x in args.only.split(",") if x.strip()] if args.only else None
    try:
        run_paper(out=args.out, size_name=size, device=args.device, jobs=args.jobs, only=only,
                  progress=not args.no_progress, scheduler=args.scheduler,
                  overwrite=args.overwrite, beside=args.beside, cpu_repeats=args.cpu_repeats,
                  gpu_repeats=args.gpu_repeats, dry_run=args.estimate,
                  cached_sim=args.cached_sim)
    except KeyboardInterrupt:
        return 130


# --- simgpu rank / cc ----------------------------------------------------------------

def _device_options(p):
    p.add_argument("--device", default="sim:gtx260", help="sim:gtx260 (default), sim:h100, cuda, ...")
    p.add_argument("--engine", choices=("lockstep", "timed", "timed-block", "trace-block"), default=None,
                   help="simulator engine (timed engines report times)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", metavar="NPY", help="write the result array (.npy)")
    p.add_argument("--json", action="store_true")


def add_rank(sub):
    p = sub.add_parser("rank", help="rank a list (or forest of lists) on a device",
                       formatter_class=help_formatter, description="""List ranking: each node's distance to the tail of its list.

examples:
  simgpu rank --random 100000                       # random splitter on sim:gtx260
  simgpu rank --random 100000 --method wylie --engine timed-block
  simgpu rank --input succ.npy --device cuda --output ranks.npy
  simgpu rank --random 5000 --json""")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--input", metavar="FILE", help="successor array: .npy or text")
    src.add_argument("--random", type=int, metavar="N", help="a random list of N nodes")
    p.add_argument("--method", default="random-splitter")
    p.add_argument("--packing", type=int, default=64, choices=(48, 64))
    p.add_argument("--splitters", default="random", choices=("random", "even"))
    p.add_argument("--threads", type=int, default=None)
    _device_options(p)


def cmd_rank(args):
    from algorithms import generators, list_ranking
    succ = generators.read_succ(args.input) if args.input else generators.random_list(args.random, args.seed)
    dev = _engine_device(args)
    r = list_ranking.rank(succ, method=args.method, device=dev, threads=args.threads,
                          packing=args.packing, splitters=args.splitters, seed=args.seed)
    _finish(args, r.ranks, r.launches, {"nodes": len(succ), "method": args.method,
                                        "tails": int((r.ranks == 0).sum())})


def add_cc(sub):
    p = sub.add_parser("cc", help="label the connected components of a graph on a device",
                       formatter_class=help_formatter, description="""Connected components (Shiloach-Vishkin): each vertex's label is the smallest
vertex id of its component.

examples:
  simgpu cc --uniform 10000 40000                  # n vertices, m random edges
  simgpu cc --rmat 14 --engine timed-block
  simgpu cc --input graph.mtx --device cuda --output labels.npy""")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--input", metavar="FILE", help="Matrix Market, SNAP edge list or .npy (m, 2)")
    src.add_argument("--uniform", type=int, nargs=2, metavar=("N", "M"))
    src.add_argument("--rmat", type=int, metavar="SCALE", help="R-MAT graph, 2^SCALE vertices, 16 edges each")
    p.add_argument("--method", default="shiloach-vishkin")
    p.add_argument("--threads", type=int, default=None)
    _device_options(p)


def cmd_cc(args):
    from algorithms import connected_components, generators
    if args.input:
        n, edges = generators.read_edges(args.input)
    elif args.uniform:
        n, edges = generators.uniform_random_graph(*args.uniform, seed=args.seed)
    else:
        n, edges = generators.rmat_graph(args.rmat, seed=args.seed)
    r = connected_components.label(n, edges, method=args.method, device=_engine_device(args),
                                   threads=args.threads, seed=args.seed)
    _finish(args, r.labels, r.launches, {"vertices": n, "edges": len(edges), "method": args.method,
                                         "rounds": r.rounds,
                                         "components": int(len(np.unique(r.labels)))})


def _engine_device(args):
    dev = user_device(args.device)
    if args.engine:
        if not dev.is_simulated:
            raise UserError("--engine applies to simulated devices only")
        dev.default_engine = args.engine
    return dev


def _finish(args, result, launches, summary):
    times = [r.time_ms for r in launches if r.time_ms is not None]
    summary.update(device=args.device, launches=len(launches),
                   kernel_ms=round(sum(times), 6) if times else None,
                   load_transactions=sum(r.loads.transactions for r in launches if r.counted),
                   store_transactions=sum(r.stores.transactions for r in launches if r.counted))
    if args.output:
        np.save(args.output, result)
        summary["output"] = args.output
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    for k, v in summary.items():
        print(f"{k:20} {v if v is not None else '- (use a timed engine for times)'}")


# --- simgpu show-cuda / validate ------------------------------------------------------

def add_show_cuda(sub):
    p = sub.add_parser("show-cuda", help="print the CUDA C a kernel renders to",
                       formatter_class=help_formatter, description="""Print the CUDA C of a kernel: module:kernel, as in an import.

examples:
  simgpu show-cuda simgpu_apps.lessons.coalescing:copy_striding
  simgpu show-cuda algorithms.list_ranking.random_splitter:rs3_walk_64""")
    p.add_argument("target", metavar="MODULE:KERNEL")


def cmd_show_cuda(args):
    from simgpu.lang import Kernel
    module, _, name = args.target.partition(":")
    if not name:
        raise UserError(f"write MODULE:KERNEL, e.g. simgpu_apps.lessons.coalescing:copy_striding, "
                        f"not {args.target!r}")
    try:
        obj = getattr(import_user_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"cannot find {args.target}: {exc}") from None
    if not isinstance(obj, Kernel):
        raise UserError(f"{args.target} is not a @kernel")
    from cuda_backend.render import render
    print(render(obj))


def add_validate(sub):
    sub.add_parser("validate", help="hold the simulator against a real GPU (needs CuPy, ncu); "
                   "simgpu validate FILE.py compares your own kernels on two devices",
                   add_help=False, description="Runs python -m simgpu_apps.gpu_tools.validate; "
                   "see its --help. With FILE.py: simgpu_apps.compare (simgpu validate "
                   "FILE.py --help).")


def cmd_validate(args):
    if args.rest and args.rest[0].endswith(".py"):      # a user's file of cases
        from simgpu_apps.validate_file import main as validate_file
        if validate_file(args.rest):
            raise UserError("the two devices' outputs differ (see above)")
        return
    from simgpu_apps.gpu_tools.validate import main as validate_main
    validate_main(args.rest, prog="simgpu validate",
                  epilog="simgpu validate FILE.py compares your own kernels on two devices "
                         "instead (no GPU needed: two simulated configs or engines; "
                         "simgpu validate FILE.py --help, docs/validate-your-kernel.md).")


# --- entry ------------------------------------------------------------------------

COMMANDS = {"devices": (add_devices, cmd_devices), "coalesce": (add_coalesce, cmd_coalesce),
            "paper": (add_paper, cmd_paper), "rank": (add_rank, cmd_rank), "cc": (add_cc, cmd_cc),
            "show-cuda": (add_show_cuda, cmd_show_cuda), "validate": (add_validate, cmd_validate)}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="simgpu", formatter_class=help_formatter,
                                     description="simgpu: a GPU model you can read.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for add, _ in COMMANDS.values():
        add(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "validate":        # only validate passes options through
        parser.parse_args(argv)                     # the usual one-line error, exit 2
    args.rest = rest
    try:
        from simgpu_apps.cli_checks import check_args
        check_args(args, UserError)                 # paths, options: before any work
        code = COMMANDS[args.command][1](args)
    except KernelError as exc:
        print(f"simgpu {args.command}: kernel error:\n{exc}", file=sys.stderr)
        return 2
    except (UserError, ValueError, LaunchError, SimgpuError, OSError, MemoryError) as exc:
        print(f"simgpu {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"simgpu {args.command}: interrupted", file=sys.stderr)
        return 130
    return code if isinstance(code, int) else 0     # simgpu paper: 130 when interrupted


if __name__ == "__main__":
    sys.exit(main())
