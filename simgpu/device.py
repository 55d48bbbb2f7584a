"""The device interface every backend implements, and the simulator's device.

    dev = simgpu.get_device("sim:gtx260")          # or "sim:h100", "cuda", "cuda:1"
    a = dev.to_device(np.arange(n, dtype=np.int32))
    out = dev.empty(n, np.int32)
    rep = dev.launch(kern, grid, block, a, out, n)   # -> LaunchReport
    out.to_host()

Launches are checked against the kernel's signature and the GPU's limits
before anything runs, so a refused launch changes no data.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from .ir.types import ArrayType, ScalarType, from_dtype
from .lang import Kernel
from .lang.errors import LaunchError
from .report import CopyReport, LaunchReport

ALIGNMENT = 256           # cudaMalloc returns 256-byte aligned pointers


class DeviceArray:
    """An array in a device's global memory."""

    def __init__(self, device: "Device", data, base: int = 0):
        self.device = device
        self._data = data         # numpy array (simulator) or CuPy array (GPU)
        self.base = base          # byte address of element 0

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self._data.dtype)

    @property
    def size(self) -> int:
        return int(self._data.size)

    @property
    def shape(self) -> tuple:
        return tuple(self._data.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        return self.size

    def to_host(self) -> np.ndarray:
        """A host copy of the contents."""
        return self.device._to_host(self)

    def copy_from(self, host) -> None:
        """Overwrite the contents from a host array of the same size and dtype."""
        host = np.ascontiguousarray(host, dtype=self.dtype)
        if host.size != self.size:
            raise ValueError(f"copy_from: {host.size} elements into an array of {self.size}")
        self.device._copy_from(self, host.ravel())

    def __repr__(self) -> str:
        return f"DeviceArray({self.size} x {self.dtype}, on {self.device.name}, at {self.base:#x})"


class Device(ABC):
    """What an algorithm may use: arrays in, kernels launched, reports out."""

    name: str = "device"

    def to_device(self, host) -> DeviceArray:
        host = np.ascontiguousarray(host)
        if host.ndim != 1:
            raise ValueError(f"device arrays are one-dimensional; got shape {host.shape} "
                             "(flatten it with .ravel())")
        from_dtype(host.dtype)           # refuses dtypes the kernel language lacks
        return self._allocate(host)

    def empty(self, n: int, dtype) -> DeviceArray:
        return self.zeros(n, dtype)

    def zeros(self, n: int, dtype) -> DeviceArray:
        if int(n) < 0:
            raise ValueError(f"array length must be >= 0, not {n}")
        from_dtype(dtype)
        return self._allocate_zeros(int(n), np.dtype(dtype))

    def _allocate_zeros(self, n: int, dtype) -> DeviceArray:
        return self._allocate(np.zeros(n, dtype=dtype))

    def full(self, n: int, value, dtype) -> DeviceArray:
        return self.to_device(np.full(int(n), value, dtype=dtype))

    @abstractmethod
    def _allocate(self, host: np.ndarray) -> DeviceArray:
        """A new device array holding a copy of ``host`` (which the caller may reuse)."""

    @abstractmethod
    def _to_host(self, arr: DeviceArray) -> np.ndarray: ...

    @abstractmethod
    def _copy_from(self, arr: DeviceArray, host: np.ndarray) -> None: ...

    @abstractmethod
    def launch(self, kernel: Kernel, grid, block, *args, **options) -> LaunchReport: ...

    @property
    @abstractmethod
    def limits(self):
        """The GPU's launch limits (max threads per block, block and grid dims, ...)."""

    def synchronize(self) -> None:
        """Wait for launched work (the simulator is always synchronous)."""

    # --- launch checks shared by every device -------------------------------

    def check_launch(self, kernel, grid, block, args):
        """Normalize and check a launch; returns (ir, grid, block, scalars, arrays)."""
        if not isinstance(kernel, Kernel):
            raise LaunchError(f"launch() takes a @kernel, not {type(kernel).__name__}")
        fn = kernel.ir
        grid = _dim3(grid, "grid")
        block = _dim3(block, "block")
        lim = self.limits
        threads = block[0] * block[1] * block[2]
        if threads > lim.max_threads_per_block:
            raise LaunchError(f"block {block} has {threads} threads; {self.name} allows at most "
                              f"{lim.max_threads_per_block} per block")
        for axis, (v, top) in enumerate(zip(block, lim.max_block_dim)):
            if v > top:
                raise LaunchError(f"block dimension {'xyz'[axis]} = {v} exceeds {self.name}'s "
                                  f"limit of {top}")
        for axis, (v, top) in enumerate(zip(grid, lim.max_grid_dim)):
            if v > top:
                raise LaunchError(f"grid dimension {'xyz'[axis]} = {v} exceeds {self.name}'s "
                                  f"limit of {top}")
        shared = sum(t.size * t.elem.itemsize for _, t in fn.shared)
        if shared > lim.shared_memory_per_block_bytes:
            raise LaunchError(f"kernel '{fn.name}' declares {shared} bytes of shared memory; "
                              f"{self.name} allows {lim.shared_memory_per_block_bytes} per block")
        if len(args) != len(fn.params):
            names = ", ".join(p.name for p in fn.params)
            raise LaunchError(f"kernel '{fn.name}' takes {len(fn.params)} arguments ({names}), "
                              f"{len(args)} given")
        scalars, arrays = {}, {}
        for p, a in zip(fn.params, args):
            if isinstance(p.type, ArrayType):
                arrays[p.name] = self._check_array_arg(fn, p, a)
            else:
                scalars[p.name] = _check_scalar_arg(fn, p, a)
        return fn, grid, block, scalars, arrays

    def _check_array_arg(self, fn, p, a) -> DeviceArray:
        if not isinstance(a, DeviceArray):
            hint = " (copy it first: dev.to_device(x))" if isinstance(a, np.ndarray) else ""
            raise LaunchError(f"argument '{p.name}' of '{fn.name}' must be a device array of "
                              f"{p.type.elem}, not {type(a).__name__}{hint}")
        if a.device is not self:
            raise LaunchError(f"argument '{p.name}' lives on {a.device.name}, not on {self.name}")
        if a.dtype != p.type.elem.dtype:
            raise LaunchError(f"argument '{p.name}' of '{fn.name}' is Array[{p.type.elem}] but "
                              f"the array holds {a.dtype} (Array[{from_dtype(a.dtype)}])")
        return a


def _dim3(v, what) -> tuple:
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    try:
        v = tuple(int(x) for x in v)
    except TypeError:
        raise LaunchError(f"{what} must be an int or a tuple of up to 3 ints, not {v!r}") from None
    if not 1 <= len(v) <= 3 or any(x < 1 for x in v):
        raise LaunchError(f"{what} must have 1 to 3 dimensions, each >= 1; got {v}")
    return v + (1,) * (3 - len(v))


def _check_scalar_arg(fn, p, a):
    t: ScalarType = p.type
    if isinstance(a, DeviceArray) or isinstance(a, np.ndarray) and a.ndim > 0:
        raise LaunchError(f"argument '{p.name}' of '{fn.name}' is a scalar {t}, not an array")
    if isinstance(a, (np.generic,)):
        a = a.item()
    if t.is_float:
        if not isinstance(a, (int, float)) or isinstance(a, bool):
            raise LaunchError(f"argument '{p.name}' of '{fn.name}' must be a number ({t})")
        return a
    if t.is_bool:
        if not isinstance(a, (bool, int)) or a not in (0, 1):
            raise LaunchError(f"argument '{p.name}' of '{fn.name}' must be a bool")
        return bool(a)
    if not isinstance(a, int):
        raise LaunchError(f"argument '{p.name}' of '{fn.name}' must be an integer ({t}), "
                          f"not {type(a).__name__}")
    if not t.fits(a):
        raise LaunchError(f"argument '{p.name}' = {a} does not fit {t} "
                          f"({t.min}..{t.max}) of kernel '{fn.name}'")
    return a


class SimDevice(Device):
    """A simulated GPU described by a config file (``sim:gtx260``, ``sim:h100``, ...)."""

    def __init__(self, config, name: str):
        self.config = config
        self.name = name
        self._next = ALIGNMENT
        # The engine used where a launch names none (lockstep, or warps for random
        # schedules); set it to "timed" or "timed-block" to time whole algorithms.
        self.default_engine: str | None = None
        # Every host<->device copy, timed over the config's PCIe link (CopyReport).
        self.copies: list[CopyReport] = []
        self.cache_control = "none"
        self.flush_caches()

    CACHE_CONTROLS = ("none", "all")

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
            from .mem.caches import L2
            self.l2 = L2.for_config(self.config.cache)

    @property
    def limits(self):
        return self.config.limits

    @property
    def arch(self) -> str:
        return self.config.gpu.arch

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
        arr = self._allocate_fresh(host.copy())
        self._record_copy("host_to_device", arr, host.nbytes)
        return arr

    def _allocate_zeros(self, n, dtype):
        return self._allocate_fresh(np.zeros(n, dtype=dtype))

    def _allocate_fresh(self, data):
        base = self._next
        self._next += -(-max(data.nbytes, 1) // ALIGNMENT) * ALIGNMENT
        return DeviceArray(self, data, base)

    def _to_host(self, arr):
        self._record_copy("device_to_host", arr, arr.nbytes)
        return arr._data.copy()

    def _copy_from(self, arr, host):
        arr._data[...] = host
        self._record_copy("host_to_device", arr, arr.nbytes)

    def launch(self, kernel, grid, block, *args, engine: str | None = None,
               schedule: str = "fixed", seed: int = 0) -> LaunchReport:
        """Run ``kernel`` on the simulator.

        ``engine``: "lockstep" (default for the fixed schedule), "warps"
        (per-warp interleaving; default for ``schedule="random"``), "timed"
        (simulated time, every warp a process) or "timed-block" (simulated
        time, each block's warps in lockstep: faster).
        ``schedule``: "fixed" or "random" (with ``seed``).
        """
        from .sim import launch as sim_launch
        fn, grid, block, scalars, arrays = self.check_launch(kernel, grid, block, args)
        if engine is None and schedule == "fixed":
            engine = self.default_engine
        if self.cache_control == "all":
            self.flush_caches()
        return sim_launch.run(self, fn, grid, block, scalars, arrays, engine, schedule, seed)

    def __repr__(self):
        return f"<SimDevice {self.name}: {self.config.gpu.name}, {self.arch}>"


DEFAULT_DEVICE = "sim:gtx260"


def get_device(name: str = DEFAULT_DEVICE) -> Device:
    """``"sim:<config>"`` (a bundled name or a .toml path), ``"cuda"`` or ``"cuda:N"``."""
    if isinstance(name, Device):
        return name
    if not isinstance(name, str):
        raise ValueError(f"device name must be a string such as 'sim:gtx260', not {name!r}")
    if name.startswith("sim:"):
        from .configs import load_config
        return SimDevice(load_config(name[4:]), name)
    if name == "cuda" or name.startswith("cuda:"):
        try:
            from cuda_backend.device import CudaDevice
        except ImportError as exc:   # the backend itself ships with simgpu; CuPy may not
            raise RuntimeError(f"the CUDA backend could not be loaded: {exc}") from None
        return CudaDevice(int(name[5:]) if ":" in name else 0)
    raise ValueError(f"unknown device {name!r}: use 'sim:<config>' (e.g. sim:gtx260, sim:h100, "
                     "sim:h200, or sim:path/to/gpu.toml) or 'cuda' / 'cuda:N'")
