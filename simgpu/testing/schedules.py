"""Run one kernel under many legal schedules and compare every run with a reference.

A schedule is the launch options that fix what CUDA leaves open (which warp runs
next, which lane wins a store, the order of colliding atomics): a dict such as
``{"engine": "warps", "schedule": "random", "seed": 7}`` passed to
``device.launch(..., **options)``.  :data:`FIXED` is the plain schedule (lockstep,
lanes in order), the one a failing example should shrink toward.
"""
from __future__ import annotations

import numpy as np

FIXED = {"engine": "lockstep", "schedule": "fixed", "seed": 0}


class ScheduleMismatch(AssertionError):
    """A run of the kernel disagreed with the reference (names the schedule to replay)."""


def schedule_options(engines=("lockstep", "warps"), seeds=range(10)) -> list:
    """:data:`FIXED` first, then every engine with a random schedule of every seed."""
    out = [dict(FIXED)]
    for engine in engines:
        out += [{"engine": engine, "schedule": "random", "seed": int(s)} for s in seeds]
    return out


def check_schedules(kernel, grid, block, *args, reference, outputs=None, device="sim:gtx260",
                    schedules=None, engines=("lockstep", "warps"), seeds=range(10),
                    rtol=0.0, **launch_options) -> list:
    """Launch ``kernel`` once per schedule on fresh copies of ``args`` and compare.

    ``args`` are what the kernel takes, with host numpy arrays where it takes
    arrays (each run gets its own device copies).  ``reference(*args)`` is called
    once on host copies of the same arguments and must update the output arrays in
    place, as the kernel does.  ``outputs`` names the array parameters to compare
    (default: every array).  ``schedules`` is a list of launch-option dicts
    (default :func:`schedule_options` of ``engines`` and ``seeds``); float arrays
    compare with ``rtol``.  Extra keyword arguments go to every launch
    (``check="races"``, ...).

    Raises :class:`ScheduleMismatch` naming the schedule, the array, the first
    differing index and both values; returns the launch reports otherwise.
    """
    import simgpu
    dev = simgpu.get_device(device)
    fn = kernel.ir                                   # compile first: errors at their line
    names = [p.name for p in fn.params]
    if len(args) != len(names):
        raise TypeError(f"kernel '{fn.name}' takes {len(names)} arguments ({', '.join(names)}), "
                        f"{len(args)} given")
    is_array = [isinstance(a, np.ndarray) for a in args]
    array_names = [n for n, arr in zip(names, is_array) if arr]
    outputs = list(array_names if outputs is None else outputs)
    unknown = [o for o in outputs if o not in array_names]
    if unknown:
        raise ValueError(f"outputs {unknown} are not array arguments of '{fn.name}' "
                         f"(its arrays: {array_names})")
    expected = [np.array(a, copy=True) if arr else a for a, arr in zip(args, is_array)]
    reference(*expected)
    want = {n: expected[names.index(n)] for n in outputs}
    reports = []
    for options in (schedule_options(engines, seeds) if schedules is None else schedules):
        dev_args = [dev.to_device(a) if arr else a for a, arr in zip(args, is_array)]
        reports.append(dev.launch(kernel, grid, block, *dev_args, **options, **launch_options))
        for n in outputs:
            got = dev_args[names.index(n)].to_host()
            _compare(fn.name, n, got, want[n], options, rtol)
    return reports


def _compare(kernel, name, got, want, options, rtol):
    if got.dtype.kind == "f":
        same = np.isclose(got, want, rtol=rtol, atol=0.0, equal_nan=True)
    else:
        same = got == want
    if same.all():
        return
    bad = np.flatnonzero(~same)
    i = int(bad[0])
    shown = ", ".join(f"{k}={v!r}" for k, v in options.items())
    raise ScheduleMismatch(
        f"kernel '{kernel}', schedule ({shown}): '{name}' differs from the reference at "
        f"{len(bad)} of {len(want)} elements; first at index {i}: got {got[i].item()!r}, "
        f"expected {want[i].item()!r}. Replay with device.launch(..., {shown})")
