"""The simulator as a device backend: ``sim:<config>`` (a bundled name such as
``sim:gtx260`` / ``sim:h100``, or a path to a .toml), registered with the core's
device registry as the prefix "sim"."""
from __future__ import annotations

import mmap
import sys
import weakref

import numpy as np

from ..device import Device, DeviceArray, register_device
from ..mem.address_space import AddressSpace
from ..mem.tlb import TlbState
from ..report import CopyReport, LaunchReport


class SimDevice(Device):
    """A simulated GPU described by a config file (``sim:gtx260``, ``sim:h100``, ...)."""

    def __init__(self, config, name: str):
        self.config = config
        self.name = name
        # Global memory as the driver lays it out: capacity, page-aligned large arrays,
        # the page tables at the top (simgpu.mem.address_space). Arrays are freed when
        # the last reference to them goes, as CuPy frees its arrays.
        self.memory = AddressSpace(config, name)
        # The TLBs' contents, kept from one launch to the next (simgpu.mem.tlb)
        self.tlbs = TlbState(config) if config.tlb is not None else None
        # The engine used where a launch names none (DEFAULT_ENGINE, or warps for random
        # schedules); set it to "lockstep" for fast untimed runs of whole algorithms.
        self.default_engine: str | None = None
        # Every host<->device copy, timed over the config's PCIe link (CopyReport).
        self.copies: list[CopyReport] = []
        self.cache_control = "none"
        self.flush_caches()

    CACHE_CONTROLS = ("none", "all")
    is_simulated = True

    @property
    def cache_control(self) -> str:
        """What happens to the L2 between launches, named as Nsight Compute's option:
        "none" keeps its contents from one launch to the next (as back-to-back kernels
        on the GPU see them); "all" starts every launch with an empty L2 (what ``ncu
        --cache-control all``, its default, does before each kernel it profiles), so a
        simulated time compares like with like against a time ncu measured."""
        return self._cache_control

    @cache_control.setter
    def cache_control(self, value: str) -> None:
        if value not in self.CACHE_CONTROLS:
            raise ValueError(f"cache_control must be one of {self.CACHE_CONTROLS} "
                             f"(as ncu's --cache-control), not {value!r}")
        self._cache_control = value

    def flush_caches(self) -> None:
        """Start the L2 empty (clean): what Nsight Compute's ``--cache-control all``
        does before each kernel. Its contents are otherwise kept across launches."""
        self.l2 = None
        if self.config.cache.present:
            from ..mem.caches import L2
            self.l2 = L2.for_config(self.config.cache)

    @property
    def limits(self):
        return self.config.limits

    @property
    def arch(self) -> str:
        return self.config.gpu.arch

    @property
    def gpu_name(self) -> str:
        return self.config.gpu.name

    @property
    def sm_count(self) -> int:
        return int(self.config.gpu.sm_count)

    @property
    def max_threads_per_sm(self) -> int:
        return int(self.config.limits.max_threads_per_sm)

    @property
    def copy_time_ms(self) -> float:
        """Simulated time of all host<->device copies so far (clear ``copies`` to restart)."""
        return sum(c.time_ms for c in self.copies)

    def copy_time(self, nbytes: int) -> float:
        """Milliseconds one copy of ``nbytes`` takes over PCIe: the per-copy latency plus
        the bytes at the link's bandwidth (the config's pinned-memory figures)."""
        pcie = self.config.pcie
        return pcie.latency_us / 1e3 + nbytes / (pcie.bandwidth_gbps * 1e6)

    def _record_copy(self, direction: str, arr: DeviceArray, nbytes: int) -> None:
        self.copies.append(CopyReport(direction, nbytes, self.copy_time(nbytes), repr(arr)))

    def _allocate(self, host):
        # The device's memory first: a refused allocation copies nothing (no host memory
        # is taken for space the device does not have) and records no copy.
        base = self.memory.allocate(host.nbytes, _describe(host.size, host.dtype, host.shape))
        try:
            data = host.copy()
        except MemoryError:                    # the host's memory, not the device's
            self.memory.release(base, host.nbytes)
            raise
        arr = self._array(data, base)
        self._record_copy("host_to_device", arr, host.nbytes)
        return arr

    def _allocate_zeros(self, n, dtype):
        nbytes = n * np.dtype(dtype).itemsize
        base = self.memory.allocate(nbytes, _describe(n, dtype, (n,)))
        try:
            data = _zeros(n, dtype)
        except MemoryError:                    # the host's memory, not the device's
            self.memory.release(base, nbytes)
            raise
        return self._array(data, base)

    def _array(self, data, base):
        arr = DeviceArray(self, data, base)
        weakref.finalize(arr, self.memory.release, base, data.nbytes)
        if self.tlbs is not None:
            self.tlbs.mapped(base, data.nbytes)
        return arr

    def empty(self, n, dtype):
        """Zeros, as every simulator array starts; under ``check="uninit"`` a read of a
        word nothing wrote yet is an error (``_unset``: True until a checked launch
        tracks its words)."""
        arr = self.zeros(n, dtype)
        arr._unset = True
        return arr

    def _to_host(self, arr):
        self._record_copy("device_to_host", arr, arr.nbytes)
        return arr._data.copy()

    def _copy_from(self, arr, host):
        arr._data[...] = host
        arr._unset = None                  # every word written by the host
        self._record_copy("host_to_device", arr, arr.nbytes)

    def _device_copy(self, dst, src):
        dst._data[...] = src._data
        # the copy has written what the source had written: its unset words stay unset
        unset = getattr(src, "_unset", None)
        dst._unset = unset.copy() if hasattr(unset, "copy") else unset

    # The engine of a launch that names none (and sets no default_engine): a timed one,
    # so that a report has a time unless the user asks for an untimed engine.
    DEFAULT_ENGINE = "timed-block"

    LAUNCH_OPTIONS = ("engine", "schedule", "seed", "max_loop_iterations", "check")

    def check_launch_options(self, options) -> dict:
        options = super().check_launch_options(options)
        check_launch_options(options.get("engine"), options.get("schedule", "fixed"),
                             options.get("seed", 0), options.get("max_loop_iterations"),
                             options.get("check"))
        return options

    def launch(self, kernel, grid, block, *args, engine: str | None = None,
               schedule: str = "fixed", seed: int = 0,
               max_loop_iterations: int | None = None, check=None) -> LaunchReport:
        """Run ``kernel`` on the simulator.

        ``engine``: "timed-block" (the default for the fixed schedule: simulated
        time, each block's warps in lockstep), "timed" (simulated time, every warp
        a process), "trace-block" (timed-block's model replaying a lockstep pass's
        traces: the same report; launches whose results could depend on the order of
        the blocks run on timed-block, see report.extra["engine_ran"]),
        "lockstep" (fast, untimed: exact counts, no time) or "warps"
        (untimed, per-warp interleaving; default for ``schedule="random"``).
        ``device.default_engine`` replaces the default for fixed schedules.
        ``schedule``: "fixed" or "random" (with ``seed``, an integer >= 0).
        ``max_loop_iterations``: how many times one loop may run before the launch
        stops with KernelTimeoutError (default 2^20).
        ``check``: "races", "uninit", "races,uninit" or a ``Checks`` (simgpu.sim.checks):
        the race detector and the uninitialized-read check (docs/race-detector.md).
        Every argument is checked before anything runs: a refused launch
        (LaunchError) changes no data.
        """
        from . import launch as sim_launch
        check_launch_options(engine, schedule, seed, max_loop_iterations, check)
        fn, grid, block, scalars, arrays = self.check_launch(kernel, grid, block, args)
        if engine is None and schedule == "fixed":
            engine = self.default_engine or self.DEFAULT_ENGINE
        if self.cache_control == "all":
            self.flush_caches()
        try:
            return sim_launch.run(self, fn, grid, block, scalars, arrays, engine, schedule, seed,
                                  max_loop_iterations, check)
        except BaseException:
            # An error or Ctrl-C mid-launch: the L2 may hold a half-booked state; start the
            # next launch from an empty one (the arrays keep what the kernel wrote, as on a GPU).
            self.flush_caches()
            raise

    def __repr__(self):
        return f"<SimDevice {self.name}: {self.config.gpu.name}, {self.arch}>"


def check_launch_options(engine, schedule, seed, max_loop_iterations, check=None) -> None:
    """The simulator's launch options, checked before anything runs (LaunchError)."""
    from ..device import _is_int
    from ..lang.errors import LaunchError
    from .checks import parse_checks
    from .launch import ENGINES
    from .schedule import SCHEDULES
    if engine is not None and engine not in ENGINES:
        raise LaunchError(f"engine must be one of {', '.join(ENGINES)} (or None), not {engine!r}")
    if schedule not in SCHEDULES:
        raise LaunchError(f"schedule must be one of {', '.join(SCHEDULES)}, not {schedule!r}")
    if not _is_int(seed) or seed < 0:
        raise LaunchError(f"seed must be an integer >= 0, not {seed!r}")
    if max_loop_iterations is not None and (not _is_int(max_loop_iterations)
                                            or max_loop_iterations < 1):
        raise LaunchError(f"max_loop_iterations must be an integer >= 1, not "
                          f"{max_loop_iterations!r}")
    try:
        parse_checks(check)
    except ValueError as e:
        raise LaunchError(str(e)) from None


#: Zeroed arrays this large are mapped lazily (see _zeros).
LAZY_ZEROS_BYTES = 64 << 20
_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)      # Linux's value (Python < 3.12)


def _zeros(n: int, dtype) -> np.ndarray:
    """A zeroed host array for a device array of ``n`` elements.  A large one is an
    anonymous private mapping without swap reservation: the OS gives a page memory only
    when it is written, so a sparse use of a large device array (a pointer chase over
    gigabytes) costs the host what it touches, and a footprint larger than the host's
    memory can still be simulated.  Elsewhere (or if the mapping fails) np.zeros."""
    dtype = np.dtype(dtype)
    nbytes = n * dtype.itemsize
    if nbytes >= LAZY_ZEROS_BYTES and sys.platform.startswith("linux"):
        try:
            m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE)
        except (OSError, ValueError):
            pass
        else:
            return np.frombuffer(m, dtype=dtype)
    return np.zeros(n, dtype=dtype)


def _describe(n: int, dtype, shape) -> str:
    return f"an array of {n:,} x {np.dtype(dtype)} (shape {tuple(shape)})"


def open_sim_device(spec: str | None) -> SimDevice:
    """The factory behind ``get_device("sim:<spec>")``."""
    if not spec:
        raise ValueError("name the simulated GPU: 'sim:<config>' (e.g. sim:gtx260, sim:h100, "
                         "sim:h200, or sim:path/to/gpu.toml)")
    from ..configs import load_config
    return SimDevice(load_config(spec), f"sim:{spec}")


register_device("sim", open_sim_device)
