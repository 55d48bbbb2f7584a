"""Checking modes of a simulated launch: ``launch(..., check="races")``,
``check="uninit"``, both (``check="races,uninit"``), or a :class:`Checks`.

Off by default: a launch without ``check`` builds no checker, and the
interpreter's hooks are one ``is not None`` test per memory instruction and
barrier.  With a check on, one :class:`LaunchChecker` sees every load, store,
atomic, ``syncthreads()`` and ``syncwarp()`` of the launch, on every engine:
the launch hands it to each executor with the schedule (the one object every
engine already passes to every executor).

* ``"uninit"``: a read of a shared-memory word or of an ``empty()`` array's
  word that nothing wrote yet is an error at the user's line, naming block,
  thread, array and index (:class:`UninitializedRead`).
* ``"races"``: the race detector of :mod:`simgpu.sim.racecheck`; at the end of
  the launch, every conflicting pair it found is in ``report.races`` and a
  :class:`RaceError` lists those that are not benign or allowed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..lang.errors import KernelRuntimeError
from .racecheck import RaceDetector, describe_thread, thread_ids

CHECKS = ("races", "uninit")


class UninitializedRead(KernelRuntimeError):
    """A read of memory that no thread (nor the host) has written."""


@dataclass(frozen=True)
class Checks:
    """What a checked launch looks for.

    ``allow``: array name -> why its races are intended (e.g. ``{"D": "pointer
    jumping: any value read is an ancestor"}``); races on those arrays are kept in
    ``report.races``, marked allowed, and do not raise.  ``raise_on_race=False``
    only fills ``report.races``."""

    races: bool = False
    uninit: bool = False
    allow: dict = field(default_factory=dict)
    raise_on_race: bool = True

    def __post_init__(self):
        if not isinstance(self.allow, dict) or not all(isinstance(k, str) for k in self.allow):
            raise ValueError("Checks(allow=...) takes a dict of array name -> reason, "
                             f"not {self.allow!r}")


def parse_checks(check) -> Checks | None:
    """``check`` as given to ``launch()`` -> a :class:`Checks`, or None for no checks."""
    if check is None or check is False or check == "":
        return None
    if isinstance(check, Checks):
        return check if (check.races or check.uninit) else None
    if isinstance(check, str):
        names = [c.strip() for c in check.split(",") if c.strip()]
    elif isinstance(check, (list, tuple, set, frozenset)) and all(isinstance(c, str) for c in check):
        names = list(check)
    else:
        raise ValueError(f"check must be a string such as 'races', 'uninit' or 'races,uninit', "
                         f"a list of them, or a Checks(...); not {check!r}")
    bad = [c for c in names if c not in CHECKS]
    if bad:
        raise ValueError(f"unknown check {bad[0]!r}: the simulator checks {', '.join(CHECKS)} "
                         "(e.g. check='races,uninit')")
    return Checks(races="races" in names, uninit="uninit" in names)


def forget_unset(arrays: dict) -> None:
    """A launch without the uninit check does not track writes: the ``empty()`` arrays
    it gets count as written from then on (no false errors later; a missed one at most)."""
    for a in arrays.values():
        if getattr(a, "_unset", None) is not None:
            a._unset = None


class Uninit:
    """Which words were written: per block for shared arrays (all start unwritten),
    per ``empty()`` device array across launches (``DeviceArray._unset``)."""

    def __init__(self, geom, arrays: dict):
        self.geom = geom
        self.shared: dict = {}              # name -> written mask, blocks x size
        self.unset: dict = {}               # base -> (DeviceArray, its unset mask)
        for a in arrays.values():
            mask = getattr(a, "_unset", None)
            if mask is True:                # nothing written yet: the mask is made here
                mask = a._unset = np.ones(a.size, dtype=bool)
            if mask is not None:
                self.unset[a.base] = mask

    def mask(self, b):
        """(mask, True if it flags *written* words) of binding ``b``, or None."""
        if b.space == "shared":
            m = self.shared.get(b.name)
            if m is None:
                m = self.shared[b.name] = np.zeros(self.geom.blocks * b.size, dtype=bool)
            return m, True
        m = self.unset.get(b.base)
        return (m, False) if m is not None else None

    def read(self, ex, node, b, idx, flat, what="read"):
        found = self.mask(b)
        if found is None:
            return
        m, is_written = found
        bad = ~m[flat] if is_written else m[flat]
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            index = int(flat[k]) % b.size if b.space == "shared" else int(flat[k])
            where = "shared array" if b.space == "shared" else "array"
            hint = ("write it first: CUDA does not clear shared memory (a kernel that needs "
                    "zeros stores them, then syncthreads())" if b.space == "shared" else
                    "write it first, or allocate it with zeros()/to_device() instead of empty()")
            raise UninitializedRead(
                f"{what} of uninitialized memory: {where} '{b.name}' index {index} was never "
                "written", node.loc, hint,
                f"in {describe_thread(self.geom, int(thread_ids(ex.group, idx[k:k + 1])[0]))}"
                + (f" (and {int(bad.sum()) - 1} more lanes)" if bad.sum() > 1 else ""))

    def write(self, b, flat):
        found = self.mask(b)
        if found is not None:
            m, is_written = found
            m[flat] = is_written


class LaunchChecker:
    """The checks of one launch; the interpreter calls it at every memory instruction
    and barrier (``Executor.check``)."""

    def __init__(self, checks: Checks, geom, arrays: dict, its: bool):
        self.checks = checks
        self.geom = geom
        self.uninit = Uninit(geom, arrays) if checks.uninit else None
        self.races = RaceDetector(geom, its, checks.allow) if checks.races else None

    def flat(self, ex, b, idx, pos):
        """Launch-wide element numbers: shared arrays get a row per block of the launch."""
        if b.space != "shared":
            return pos
        g = ex.group
        return pos + (g.block_lin[idx] - g.block_row[idx]) * b.size

    def load(self, ex, node, b, idx, pos):
        flat = self.flat(ex, b, idx, pos)
        if self.uninit is not None:
            self.uninit.read(ex, node, b, idx, flat)
        if self.races is not None:
            self.races.access("read", node, b, ex.group, idx, flat)

    def store(self, ex, node, b, idx, pos, value):
        flat = self.flat(ex, b, idx, pos)
        if self.uninit is not None:
            self.uninit.write(b, flat)
        if self.races is not None:
            self.races.access("write", node, b, ex.group, idx, flat, value)

    def atomic(self, ex, node, b, idx, pos):
        flat = self.flat(ex, b, idx, pos)
        if self.uninit is not None:          # an atomic reads the old value
            self.uninit.read(ex, node, b, idx, flat, what="atomic read")
            self.uninit.write(b, flat)
        if self.races is not None:
            self.races.access("atomic", node, b, ex.group, idx, flat)

    def syncthreads(self, g, idx):
        if self.races is not None:
            self.races.syncthreads(g, idx)

    def syncwarp(self, g, idx):
        if self.races is not None:
            self.races.syncwarp(g, idx)

    def finish(self, report):
        if self.races is not None:
            self.races.finish(report, self.checks.raise_on_race)
