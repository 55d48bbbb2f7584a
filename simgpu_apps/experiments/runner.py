"""The sweep runner of ``simgpu paper``: points, the on-disk cache, executors, progress.

A *point* is one measurement: an experiment name, its parameters, the device
it runs on, and its kind:

  "sim"   a simulated (or CUDA) measurement.  On a simulated device its result
          depends only on the point and the code, so it may run in any process,
          in any order: ``run_points`` hands these to the executor.
  "wall"  a wall-clock measurement of host code (the CPU baselines).  These run
          one after the other in the calling process, after the "sim" points,
          so that they do not compete with simulator processes for the cores.

``run_points(points, executor)`` takes any executor with ``submit(fn, *args)``
returning futures with ``.result()``: a ``concurrent.futures.ProcessPoolExecutor``
(``simgpu paper --jobs N``) or a ``dask.distributed.Client`` (``simgpu paper
--scheduler ADDRESS``: ``connect_dask`` connects one and checks that its workers
run the same simgpu source).  ``executor=None`` runs everything inline.  The
points come back to this process, which alone writes the cache, so the workers
of a cluster need no shared disk.

The cache: one JSON file per point, ``<out>/cache/<experiment>/<key>.json``,
where the key is a hash of (experiment, parameters, device, version).  The
version is ``EXPERIMENT_VERSION`` plus a fingerprint derived from the sources
that produce the numbers (fingerprint.py: the compute functions and everything
they use and import, the device configs), so editing any of them recomputes
instead of reusing a stale number.  A point whose computation fails is reported, not cached.
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import importlib
import json
import os
import platform
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

EXPERIMENT_VERSION = "1"

# experiment name -> "module:function"; the function takes (params: dict, device: str)
# and returns a JSON-able dict.
COMPUTE = {
    "lr_sim": "simgpu_apps.experiments.list_ranking:compute_sim",
    "lr_wall": "simgpu_apps.experiments.list_ranking:compute_wall",
    "cc_sim": "simgpu_apps.experiments.connected_components:compute_sim",
    "cc_wall": "simgpu_apps.experiments.connected_components:compute_wall",
}



@dataclass(frozen=True)
class Point:
    experiment: str
    params: tuple                      # sorted (name, value) pairs, JSON-able values
    device: str
    kind: str = "sim"
    cost: float = field(default=1.0, compare=False)   # estimated seconds (for ETA and order)
    memory: float = field(default=0.0, compare=False)  # estimated peak host bytes (costs.py)

    @classmethod
    def make(cls, experiment: str, device: str, kind: str = "sim", cost: float = 1.0,
             memory: float = 0.0, **params):
        if experiment not in COMPUTE:
            raise ValueError(f"unknown experiment {experiment!r}")
        return cls(experiment, tuple(sorted(params.items())), device, kind, float(cost),
                   float(memory))

    @property
    def p(self) -> dict:
        return dict(self.params)

    def ident(self, version: str) -> dict:
        return {"experiment": self.experiment, "params": self.p, "device": self.device,
                "kind": self.kind, "version": version}

    def key(self, version: str) -> str:
        text = json.dumps(self.ident(version), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def label(self) -> str:
        return self.experiment + " " + " ".join(f"{k}={v}" for k, v in self.params)


def code_version(cuda: bool = False) -> str:
    """EXPERIMENT_VERSION and a fingerprint of the code the numbers depend on,
    derived from the sources (fingerprint.py): the compute functions named in
    COMPUTE and what they use, every project module imported from there on, the
    device configs beside them, and the CUDA backend for a real GPU."""
    from .fingerprint import fingerprint
    entries: dict = {}
    for spec in COMPUTE.values():
        module, name = spec.split(":")
        entries.setdefault(module, []).append(name)
    return f"{EXPERIMENT_VERSION}-{fingerprint(entries, ('cuda_backend',) if cuda else ())}"


def host_id() -> str:
    """The 'device' of wall-clock points: this machine."""
    return f"host:{platform.node() or 'unknown'}:{platform.machine()}"


class Cache:
    """``<dir>/<experiment>/<key>.json`` per point (written atomically)."""

    def __init__(self, directory, version: str):
        self.dir = Path(directory)
        self.version = version
        self.hits = 0
        self.misses = 0

    def path(self, point: Point) -> Path:
        return self.dir / point.experiment / f"{point.key(self.version)}.json"

    def get(self, point: Point):
        f = self.path(point)
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            self.misses += 1
            return None
        if data.get("point") != point.ident(self.version):      # a hash collision: recompute
            self.misses += 1
            return None
        self.hits += 1
        return data["result"]

    def put(self, point: Point, result: dict, seconds: float) -> None:
        f = self.path(point)
        f.parent.mkdir(parents=True, exist_ok=True)
        data = {"point": point.ident(self.version), "result": result,
                "seconds": round(seconds, 3),
                "computed": time.strftime("%Y-%m-%dT%H:%M:%S")}
        tmp = f.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, f)


def compute_point(point: Point) -> dict:
    """Run one point (in whatever process the executor chose).  Never raises:
    returns {"ok": True, "result": ..., "seconds": ...} or {"ok": False, "error": ...}."""
    t0 = time.perf_counter()
    try:
        module, name = COMPUTE[point.experiment].split(":")
        fn = getattr(importlib.import_module(module), name)
        result = fn(point.p, point.device)
        return {"ok": True, "result": result, "seconds": time.perf_counter() - t0}
    except Exception as exc:          # reported per point; the sweep goes on
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" ({tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}{where}",
                "seconds": time.perf_counter() - t0}


class Progress:
    """tqdm when it can be imported, else one text line on stderr."""

    def __init__(self, total: int, total_cost: float, desc: str = "simgpu paper",
                 stream=None, enabled: bool = True):
        self.total, self.total_cost = total, max(total_cost, 1e-9)
        self.done = self.cached = self.failed = 0
        self.done_cost = 0.0
        self.desc = desc
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.t0 = time.perf_counter()
        self._bar = None
        self._last_print = 0.0
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        if self.enabled:
            try:
                from tqdm import tqdm
                self._bar = tqdm(total=total, desc=desc, unit="pt", file=self.stream)
            except ImportError:
                pass

    def update(self, point: Point, cached: bool = False, failed: bool = False) -> None:
        self.done += 1
        self.cached += cached
        self.failed += failed
        self.done_cost += 0.0 if cached else point.cost
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_postfix(cached=self.cached, failed=self.failed, refresh=False)
            self._bar.update(1)
            return
        now = time.perf_counter()
        final = self.done == self.total
        if not final and now - self._last_print < (0.5 if self._tty else 15.0):
            return
        self._last_print = now
        self.stream.write(("\r" if self._tty else "") + self.line() + ("\n" if final or not self._tty else ""))
        self.stream.flush()

    def line(self) -> str:
        elapsed = time.perf_counter() - self.t0
        text = f"{self.desc}: {self.done}/{self.total} points"
        if self.cached:
            text += f" ({self.cached} cached)"
        if self.failed:
            text += f" ({self.failed} FAILED)"
        text += f", {fmt_seconds(elapsed)} elapsed"
        if 0 < self.done_cost and self.done < self.total:
            rest = self.total_cost - self.done_cost
            text += f", ~{fmt_seconds(max(rest, 0) * elapsed / self.done_cost)} left"
        return text + "   "

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def fmt_seconds(s: float) -> str:
    s = int(round(s))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def run_points(points, executor=None, cache: Cache | None = None, progress: Progress | None = None,
               errors: dict | None = None) -> dict:
    """Compute every point (reusing the cache); returns {point: result dict}.

    executor: anything with ``submit(fn, *args) -> future`` and ``future.result()``
    (ProcessPoolExecutor, a Dask Client), or None to run inline.  "wall" points
    always run inline, after the others.  Points that fail are left out of the
    returned dict; their error messages go to ``errors`` ({point: message}).
    """
    seen, todo, results = set(), [], {}
    for p in points:
        if p in seen:
            continue
        seen.add(p)
        hit = cache.get(p) if cache is not None else None
        if hit is not None:
            results[p] = hit
            if progress:
                progress.update(p, cached=True)
        else:
            todo.append(p)

    def finish(p, out):
        if out["ok"]:
            results[p] = out["result"]
            if cache is not None:
                cache.put(p, out["result"], out["seconds"])
        elif errors is not None:
            errors[p] = out["error"]
        if progress:
            progress.update(p, failed=not out["ok"])

    sim = [p for p in todo if p.kind != "wall"]
    wall = [p for p in todo if p.kind == "wall"]
    if executor is None:
        for p in sim:
            finish(p, compute_point(p))
    else:
        # costliest first, so that a pool does not end on one long straggler
        order = sorted(sim, key=lambda p: -p.cost)
        futures = {executor.submit(compute_point, p): p for p in order}
        for fut in _as_completed(list(futures)):   # cache each point as soon as it is done
            try:
                out = fut.result()
            except Exception as exc:     # the executor failed (a worker died, ...), not the point
                first = (str(exc).strip().splitlines() or [""])[0]
                out = {"ok": False, "error": f"{type(exc).__name__} from the executor: {first}"}
            finish(futures[fut], out)
    for p in wall:
        finish(p, compute_point(p))
    return results


def _as_completed(futures: list):
    """The futures in the order they finish: concurrent.futures' or Dask's
    ``as_completed``; other executors' futures in submission order."""
    if all(isinstance(f, cf.Future) for f in futures):
        return cf.as_completed(futures)
    if futures and type(futures[0]).__module__.startswith("distributed"):
        from distributed import as_completed
        return as_completed(futures)
    return iter(futures)


DASK_MISSING = ("--scheduler needs dask.distributed, which is not installed: "
                "pip install 'simgpu[dask]'")


def connect_dask(address: str, version: str, timeout: float | None = None):
    """A ``dask.distributed.Client`` connected to the scheduler at ``address``
    (``tcp://host:8786``), checked before any point is sent: it has at least one
    worker, and the scheduler and every worker import simgpu and compute the same
    code version as this process (so that their numbers may go into this cache).
    The scheduler needs simgpu too: Dask unpickles the submitted tasks (the points)
    there.  So the scheduler and each worker must have simgpu installed (the same
    source: ``pip install -e .`` of the same commit); nothing is uploaded.  Raises
    ValueError with one line on any failure.
    timeout (seconds) to connect and to wait for a worker: by default Dask's own
    setting ``distributed.comm.timeouts.connect`` (30 s unless configured)."""
    try:
        import dask.config
        from dask.utils import parse_timedelta
        from distributed import Client
    except ImportError:
        raise ValueError(DASK_MISSING) from None
    if timeout is None:
        timeout = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s")
    try:
        client = Client(address, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ValueError(f"cannot reach the Dask scheduler at {address}: "
                         f"{type(exc).__name__}: {exc}") from None
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, OSError):
            raise ValueError(f"the Dask scheduler at {address} has no workers "
                             f"(waited {timeout:g} s)") from None
        versions = {}
        for where, call in (("scheduler", client.run_on_scheduler), ("workers", client.run)):
            try:
                got = call(code_version)
            except Exception as exc:            # raised over there: usually no simgpu there
                msg = str(exc).replace("\n", " ")
                raise ValueError(f"the Dask {where} at {address} cannot run simgpu "
                                 f"({type(exc).__name__}: {msg}); install simgpu on the "
                                 "scheduler and every worker (pip install -e . of the same "
                                 "source)") from None
            versions.update(got if where == "workers" else {"the scheduler": got})
        wrong = {w: v for w, v in versions.items() if v != version}
        if wrong:
            w, v = next(iter(wrong.items()))
            raise ValueError(f"{len(wrong)} of {len(versions)} Dask processes (scheduler and "
                             f"workers) run other simgpu sources than this machine (e.g. {w}: "
                             f"code version {v}, here {version}); install the same source on "
                             "the scheduler and every worker")
    except BaseException:
        client.close()
        raise
    return client


def dask_threads(client) -> int:
    """The worker threads of a Dask cluster (points it runs at once)."""
    return max(1, sum(client.nthreads().values()))
