"""List ranking: the distance of every node to the tail of its list.

    from algorithms import list_ranking
    r = list_ranking.rank(succ, method="random-splitter", device="sim:gtx260")
    r.ranks          # int64, r.ranks[i] = links from i to the tail of i's list
    r.launches       # [LaunchReport], report.kernel = "rs3_walk_64", report.extra["step"] = "RS3"
    r.stats          # method-specific figures (rounds, sublist lengths, ...)

Input: ``succ[0..n-1]``, a forest of lists; the tail t of each list has
``succ[t] == t``.

Methods (METHODS):
  sequential            host reference (sequential.rank_sequential)
  sequential-compiled   the same walk compiled with numba; listed only when
                        numba can be imported
  wylie                 pointer jumping, one kernel launch per round (wylie.py)
  wylie-single-block    pointer jumping in one block, syncthreads() between rounds
  random-splitter       Reid-Miller's random splitter, kernels RS1..RS5
                        (random_splitter.py); packing=64 or 48,
                        splitters="random" or "even", walk="paper" (the
                        paper's RS3 accesses per node: 64-bit read, 32-bit
                        read, 64-bit write; 48-bit: 16/32-bit reads and
                        writes) or "fused" (64-bit only, the default there:
                        the successor in the packed word, one 64-bit read
                        and write per node)
  cpu-random-splitter   the random splitter on the host, numpy-vectorized
                        per step, its walk split over ``workers`` processes
                        (cpu.py): the paper's multi-core CPU baseline

Input and output.  ``succ`` may be a host array (numpy, a list) or device
memory: a DeviceArray of ``device``, or, on the 'cuda' device, anything with
``__cuda_array_interface__`` (a CuPy array, ...), int32 or int64 (uint32 /
uint64 read as signed: ids >= 2^31 are out of range).  The device methods
return ``ranks`` in the same kind of memory: numpy for a host array (one copy
each way, page-locked on a GPU), a DeviceArray for a DeviceArray, a CuPy array
for other CUDA memory; the caller's device array is never written.  Host
methods read a copy and return numpy.

Validation (device methods: device_input.py, every check a kernel; the host
reads a few counters, never n values).  Always: every successor in [0, n) and
at least one tail (a bad id would make the kernels read outside the arrays).
With validate=True (default) also: no node with two predecessors and no
cycle.  The random splitter's default (fused) walk checks that itself, at no
extra pass: a walk that meets a node already walked, a node no walk reached,
a single list's head without rank n - 1, splitters that do not converge
(random_splitter.py, "Validation in the walk"); the in-degrees come from the
head finding (several lists).  The other device methods check the result: a
consistent ranking (rank[t] == 0 at tails, rank[i] == rank[succ[i]] + 1
elsewhere: one gather pass) exists only without a cycle, and a single list's
head must have rank n - 1.  Only when a check fails does the
host copy succ back and run the sequential diagnosis, which names the
offending node(s) in a ValueError (sequential.validate_succ); so do host
methods, before they start.  An empty list and n = 1 are fine.  The heads
of the lists (random splitter) are found on the device: for one list (one
tail) as the one id no successor names (n(n-1)/2 minus the successors'
sum, a streaming pass), else from in-degrees (atomics) and a block prefix
sum.  With validate=False invalid input is not caught beyond the range
check: pointer jumping that does not converge in log2(n) rounds raises
RuntimeError (Wylie, RS4), and so do the fused walk's checks (complete for a
single list); other damage gives wrong ranks; nothing loops forever.  The one host pass left on a device method is splitters="even" (the
paper's "perfect" splitters need every node's position: a sequential walk of
a host copy).  ``RankResult.helper_launches`` holds these kernels' reports
(report.extra["step"]: "check", "heads", "validate", "output", and "one list?": the
random splitter's fused walk first queues RS2..RS5 for one list before the host reads
the input scan, and these did nothing where succ turned out not to be one list).

Threads.  ``threads`` is the number of GPU threads p.  Random splitter: the
number of random splitters, one per thread (also the threads of RS1, RS2,
RS3 and RS5).  The default is sm_count * max_threads_per_sm / 8 of the device
(3,456 = 16 x 216 cores on the GTX 260: "a small factor times the number of
cores", the paper's advice; on a real GPU at least n / 64, which an H100
needs to hide its walks' latency), at most 16,384 for packing=48, halved while
p log2 p > n so that the work O(n + p log p) stays O(n); never below 32.
Wylie: the striding threads, by default one per node up to the device's
resident threads (sm_count * max_threads_per_sm).  wylie-single-block: the
size of its one block (default: enough warps for n, at most the device's
block limit).  cpu-random-splitter: the number of random splitters (default
max(64, n / 32)).  Blocks have ``block`` threads (256 by default, as the
paper's 64 blocks for 16,384 threads; capped by the device).

``launch_options`` go to every launch, e.g. ``dict(schedule="random", seed=3)``
(per-warp engine, random interleavings and store winners) or
``dict(engine="lockstep", schedule="random", seed=3)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import simgpu

from simgpu.lang.errors import ArgumentError

from ..arguments import check_block, check_device, check_launch_options, check_seed, check_threads
from . import cpu, device_input, random_splitter
from .random_splitter import (MAX_THREADS_48, WALKS, check_48_threads, check_walk,
                              checks_in_walk, run_random_splitter)
from .sequential import rank_sequential, validate_succ
from .wylie import run_wylie, run_wylie_single_block, wylie_words

__all__ = ["rank", "RankResult", "METHODS", "DEVICE_METHODS", "HOST_METHODS"]

DEVICE_METHODS = ("wylie", "wylie-single-block", "random-splitter")
HOST_METHODS = ("sequential", "cpu-random-splitter") + (
    ("sequential-compiled",) if cpu.HAVE_NUMBA else ())
METHODS = ("sequential",) + DEVICE_METHODS + HOST_METHODS[1:]
PACKINGS = (64, 48)
SPLITTERS = ("random", "even")
MAX_N = 2**31 - 1


@dataclass
class RankResult:
    ranks: object              # int64 distance to the tail: numpy, or device memory (above)
    launches: list = field(default_factory=list)   # LaunchReport per kernel launch, in order
    stats: dict = field(default_factory=dict)
    # the launches around the method's kernels (device_input.py: checks, heads, the
    # validation, int64 output), in order; report.extra["step"] says which
    helper_launches: list = field(default_factory=list)

    def kernel_reports(self, name: str) -> list:
        """The launches of one kernel (by report.kernel)."""
        return [r for r in self.launches if r.kernel == name]


class _Context:
    """A device, its launch options and the list of reports of one ranking."""

    def __init__(self, device, block: int, launch_options: dict | None, threads: int | None = None):
        self.device = device if isinstance(device, simgpu.Device) else simgpu.get_device(device)
        self.threads = threads               # the caller's p, if given
        lim = self.device.limits
        self.max_block = int(lim.max_threads_per_block)
        self.block = max(32, min(int(block), self.max_block))
        self.options = dict(launch_options or {})
        self.launches: list = []
        self.helpers: list = []             # device_input's launches (RankResult.helper_launches)

    def config_value(self, section: str, name: str, default):
        cfg = getattr(self.device, "config", None)
        return getattr(getattr(cfg, section, None), name, default)

    def resident_threads(self) -> int:
        sms = int(self.config_value("gpu", "sm_count", 27))
        per_sm = int(self.config_value("limits", "max_threads_per_sm", 1024))
        return sms * per_sm

    def node_threads(self, n: int) -> int:
        """Wylie: one thread per node, at most the resident threads (then striding)."""
        if self.threads is not None:
            return self.threads
        return max(1, min(self.resident_threads(), n))

    def block_threads(self, m: int) -> int:
        """Threads of a single-block kernel over m items: enough warps to cover m, at most
        the device's block limit."""
        return max(32, min(self.max_block, -(-m // 32) * 32))

    def launch(self, kernel, threads: int, *args, step: str, one_block: bool = False):
        if one_block:
            grid, block = 1, threads
        else:
            block = min(self.block, -(-threads // 32) * 32)
            grid = -(-threads // block)
        rep = self.device.launch(kernel, grid, block, *args, **self.options)
        rep.extra["step"] = step
        self.launches.append(rep)
        return rep


def default_threads(device, n: int, packing: int = 64) -> int:
    """The random splitter's default p (see the module docstring); at most 16,384
    for packing=48."""
    ctx = device if isinstance(device, _Context) else _Context(device, 256, None)
    p = max(32, ctx.resident_threads() // 8)
    if not ctx.device.is_simulated:
        # a real GPU hides the walks' dependent reads only with many more walkers: on an
        # H100 n/64 splitters was within 1% of the best p at 2^24 and 2^26 nodes
        # (docs/results/gpu-list-ranking-h100.md); the simulated GPUs keep the paper's p
        p = max(p, n // 64 // 32 * 32)
    if packing == 48:
        p = min(p, MAX_THREADS_48)
    while p > 32 and p * np.log2(p) > n:
        p //= 2
    return max(32, p)


def _as_succ(succ, validate: bool) -> np.ndarray:
    arr = np.asarray(succ)
    if arr.ndim != 1:
        raise ValueError(f"succ must be a 1-D array, got shape {arr.shape}")
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"succ must have an integer dtype, got {arr.dtype}")
    if arr.size > MAX_N:
        raise ValueError(f"n = {arr.size:,} nodes: node ids are int32 on the device "
                         f"(n <= {MAX_N:,})")
    if validate:
        validate_succ(arr)
    return arr.astype(np.int64, copy=False)


def rank(succ, method: str = "random-splitter", device="sim:gtx260", threads: int | None = None,
         packing: int = 64, splitters: str = "random", seed: int = 0, validate: bool = True,
         launch_options: dict | None = None, block: int = 256,
         workers: int | None = None, walk: str | None = None) -> RankResult:
    """Rank the forest of lists ``succ`` with ``method`` (see the module docstring).

    device: a name ("sim:gtx260", "sim:h100", ...) or a Device.  threads:
    GPU threads p (None: the default above).  packing: 64 or 48 (random
    splitter).  splitters: "random" or "even" (random splitter).  seed: KISS
    seed of the random splitters.  validate: check the input first (O(n)).
    launch_options: keyword options of every Device.launch.  block: threads per block.
    workers: processes of cpu-random-splitter (None: every core this process may use).
    walk: the random splitter's memory layout, "paper" or "fused" (packing=64 only);
    None: "fused" for packing=64, "paper" for 48 (see random_splitter.py).
    """
    if method not in METHODS:
        extra = (" ('sequential-compiled' needs numba)"
                 if method == "sequential-compiled" else "")
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}{extra}")
    if packing not in PACKINGS:
        raise ValueError(f"packing must be 64 or 48, not {packing!r}")
    if splitters not in SPLITTERS:
        raise ValueError(f"splitters must be 'random' or 'even', not {splitters!r}")
    check_seed("rank", seed)
    if method in DEVICE_METHODS:              # every argument checked before any work
        device = check_device(device)
        check_threads("rank", threads, device)
        check_block("rank", block, device)
        launch_options = check_launch_options(device, launch_options)
    else:
        check_threads("rank", threads)
    if workers is not None and not (isinstance(workers, (int, np.integer))
                                    and not isinstance(workers, bool) and workers >= 1):
        raise ArgumentError(f"rank: workers must be a positive integer, not {workers!r}")
    if method == "random-splitter":
        walk = check_walk(walk, packing)
    if method == "random-splitter" and packing == 48 and threads is not None:
        check_48_threads(int(threads))
    if method in DEVICE_METHODS:
        ctx = _Context(device, block, launch_options, None if threads is None else int(threads))
        if method == "wylie-single-block" and threads is not None and threads > ctx.max_block:
            raise ValueError(f"wylie-single-block runs one block: threads={threads} exceeds "
                             f"{ctx.device.name}'s {ctx.max_block} threads per block")
        return _rank_on_device(ctx, succ, method, threads, packing, splitters, seed, validate,
                               walk)
    if simgpu.is_device_array(succ):           # a host method: the host reads a copy
        src = succ if isinstance(succ, simgpu.DeviceArray) else \
            simgpu.get_device("cuda").as_device_array(succ)
        succ = src.to_host()
    s = _as_succ(succ, validate)
    n = len(s)

    if method == "sequential":
        return RankResult(rank_sequential(s) if n else np.empty(0, np.int64))
    if method == "sequential-compiled":
        return RankResult(cpu.rank_sequential_compiled(s))
    ranks, stats = cpu.rank_cpu_random_splitter(s, threads, seed, workers=workers)
    return RankResult(ranks, [], stats)


def _rank_on_device(ctx, succ, method, threads, packing, splitters, seed, validate, walk):
    """The device methods: succ as given (host or device memory) in, the ranks out in
    the same kind of memory (device_input.py does the checks on the device)."""
    dev = ctx.device
    if not simgpu.is_device_array(succ):
        arr = np.asarray(succ)
        if arr.ndim != 1:
            raise ValueError(f"succ must be a 1-D array, got shape {arr.shape}")
        if arr.size and arr.dtype.kind not in "iu":
            raise ValueError(f"succ must have an integer dtype, got {arr.dtype}")
        if arr.size > MAX_N:
            raise ValueError(f"n = {arr.size:,} nodes: node ids are int32 on the device "
                             f"(n <= {MAX_N:,})")
        if arr.size == 0:
            return RankResult(np.empty(0, np.int64), [], {})
    src, owned = device_input.to_device_succ(dev, succ)
    n = src.size
    if n > MAX_N:
        raise ValueError(f"n = {n:,} nodes: node ids are int32 on the device (n <= {MAX_N:,})")
    if n == 0:
        return RankResult(dev.export(dev.zeros(0, np.int64), succ), [], {}, [])
    # Wylie's words first: a list that does not fit is refused before any launch
    words = wylie_words(dev, n) if method == "wylie" else None
    need_heads = method == "random-splitter"
    p = None
    early = None
    if method == "random-splitter":
        p = default_threads(ctx, n, packing) if threads is None else int(threads)
        if not (packing == 64 and walk == "paper"):     # (paper: RS1 after the copy below)
            def early(succ32):
                return random_splitter.start(ctx, succ32, n, p=p, packing=packing,
                                             splitters=splitters, walk=walk)
    scanned = None
    if method == "random-splitter" and splitters == "random" and checks_in_walk(packing, walk):
        # one list, guessed: the whole ranking is queued before the host reads a counter
        # (run_random_splitter's scan_stats); only where succ is not one list does the
        # host go on as below, with RS1's words
        scanned = device_input.scan(ctx, src)
        started = random_splitter.start(ctx, scanned[1], n, p=p, packing=packing,
                                        splitters=splitters, walk=walk)
        try:
            out = run_random_splitter(ctx, scanned[1], n, None, 1, p=p, packing=packing,
                                      splitters=splitters, seed=seed, walk=walk,
                                      started=started, scan_stats=scanned[0])
        except RuntimeError:
            if validate:
                device_input.diagnose(src)
            raise
        if out is not None:
            return RankResult(dev.export(out[0], succ), ctx.launches, out[1], ctx.helpers)
        early = lambda succ32: started                          # noqa: E731
    info = device_input.prepare(ctx, src, validate, need_heads, early, scanned)
    succ_d = info.succ32
    if method == "random-splitter" and packing == 64 and walk == "paper" \
            and ((succ_d is src and not owned) or validate):
        succ_d = dev.copy(succ_d)       # RS5 writes the ranks over it: not the caller's array
        # (nor succ that the validation reads after the walk)
    try:
        if method == "wylie":
            ranks, rounds = run_wylie(ctx, succ_d, n, words)
            stats = {"rounds": rounds}
        elif method == "wylie-single-block":
            ranks, rounds = run_wylie_single_block(ctx, succ_d, n)
            stats = {"rounds": rounds}
        else:
            ranks, stats = run_random_splitter(ctx, succ_d, n, info.heads, info.n_heads, p=p,
                                               packing=packing, splitters=splitters, seed=seed,
                                               walk=walk, host_succ=info.succ32.to_host,
                                               head=info.head, started=info.early)
    except RuntimeError:
        if validate:                    # did not converge: a cycle; name its nodes
            device_input.diagnose(src)
        raise
    if validate and not (method == "random-splitter" and checks_in_walk(packing, walk)):
        if ranks.dtype != np.int64:
            ranks = device_input.widen(ctx, ranks)
        device_input.check_ranks(ctx, info, ranks)
    return RankResult(_export_ranks(ctx, ranks, succ), ctx.launches, stats, ctx.helpers)


def _export_ranks(ctx, ranks, like):
    """The ranks as int64, in the form the caller passed succ in.  The paper's walks
    leave 32-bit ranks on the device (over succ, or over the local ranks); for a host
    caller they are copied back as they are and widened on the host, so the device never
    holds 8 bytes per node more than the paper's layout (the 48-bit run at 64M nodes fits
    the 896 MB card by that: 10 bytes per node, not 18).  A device caller gets them
    widened on the device (the "output" helper launch)."""
    dev = ctx.device
    if ranks.dtype == np.int64:
        return dev.export(ranks, like)
    if not simgpu.is_device_array(like):
        return ranks.to_host().astype(np.int64)
    return dev.export(device_input.widen(ctx, ranks), like)
