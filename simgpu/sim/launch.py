"""A simulated launch: bind arguments, pick an engine, gather the report."""
from __future__ import annotations

import contextlib
import signal
import threading

import numpy as np

from ..report import LaunchReport
from .engines import run_lockstep, run_warps
from .interpreter import ArrayBinding, Counters
from .checks import LaunchChecker, forget_unset, parse_checks
from .compiler_passes import compiled_form
from .counters import TrafficCounter
from .lanes import Geometry
from .schedule import Schedule

# "timed" runs every warp as its own process; "timed-block" runs the warps of a
# block as one lane group (block-level lockstep) with per-warp memory timing:
# several times faster, and the same counts; times differ by a few percent.
# "trace-block" is timed-block's timing model replaying traces that a lockstep pass
# recorded (simgpu.sim.trace_replay): the same cycles and report, for launches whose
# results cannot depend on the order of the blocks; other launches run on timed-block.
ENGINES = ("lockstep", "warps", "timed", "timed-block", "trace-block")


@contextlib.contextmanager
def interruptible(sched: Schedule):
    """Ctrl-C raises KeyboardInterrupt where the launch is, and also makes every loop of it
    stop at its next turn: the timed engine's simpy processes catch an exception in one
    warp and let the others run on before it surfaces, which would delay it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigint(signum, frame):
        sched.interrupted = True
        sched.max_loop_iterations = 0
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run(device, fn, grid, block, scalars, arrays, engine, schedule, seed,
        max_loop_iterations=None, check=None) -> LaunchReport:
    checks = parse_checks(check)
    fn = compiled_form(fn, device.config.issue)       # as the config's compiler issues it
    sched = Schedule(schedule, seed)
    if max_loop_iterations is not None:
        sched.max_loop_iterations = max_loop_iterations
    if engine is None:
        engine = "warps" if sched.is_random else "lockstep"
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    geom = Geometry(grid, block)
    checker = None
    if checks is not None:
        its = device.config.gpu.arch_number >= 70      # independent thread scheduling
        checker = sched.check = LaunchChecker(checks, geom, arrays, its)
    if checks is None or not checks.uninit:
        forget_unset(arrays)
    bindings = {name: ArrayBinding(name, a._data, a.base, "global", a.size)
                for name, a in arrays.items()}
    atomics = device.config.atomics

    def make_counters():
        return Counters(), TrafficCounter(device.arch, atomics.compiler_aggregates_uniform,
                                          atomics.same_address_lanes_merged)

    counters, traffic = make_counters()
    report = LaunchReport(kernel=fn.name, device=device.name, grid=grid, block=block,
                          engine=engine, schedule=schedule, seed=seed)
    with np.errstate(all="ignore"), interruptible(sched):   # wrap-around is the semantics
        if engine == "lockstep":
            run_lockstep(fn, geom, scalars, bindings, sched, counters, traffic)
        elif engine == "warps":
            run_warps(fn, geom, scalars, bindings, sched, counters, traffic)
        elif engine == "trace-block":
            from .trace_replay import run_trace_block
            counters, traffic = run_trace_block(device, fn, geom, scalars, bindings, sched, checks,
                                                counters, traffic, report, make_counters)
        else:
            from .timed import run_timed
            run_timed(device.config, fn, geom, scalars, bindings, sched, counters, traffic, report,
                      granularity="block" if engine == "timed-block" else "warp", l2=device.l2,
                      tlbs=getattr(device, "tlbs", None))
    report.warp_instructions = counters.warp_instructions
    report.thread_instructions = counters.thread_instructions
    report.branches = counters.branches
    report.divergent_branches = counters.divergent_branches
    report.loads, report.stores, report.atomics = (traffic.totals[k] for k in ("load", "store", "atomic"))
    report.shared_loads, report.shared_stores = traffic.shared["load"], traffic.shared["store"]
    report.shared_atomics = traffic.shared["atomic"]
    report.by_line = traffic.by_line
    report.samples = traffic.samples
    if checker is not None:
        checker.finish(report)          # report.races; raises RaceError for real races
    return report
