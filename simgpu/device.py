"""The device interface every backend implements, and the registry of backends.

    dev = simgpu.get_device("sim:gtx260")          # or "sim:h100", "cuda", "cuda:1"
    a = dev.to_device(np.arange(n, dtype=np.int32))
    out = dev.empty(n, np.int32)
    rep = dev.launch(kern, grid, block, a, out, n)   # -> LaunchReport
    out.to_host()

Launches are checked against the kernel's signature and the GPU's limits
before anything runs, so a refused launch changes no data.  An array that does
not fit in the device's memory raises :class:`DeviceMemoryError` (a
``MemoryError``) and allocates nothing.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from .ir.types import ArrayType, ScalarType, from_dtype
from .lang import Kernel
from .lang.errors import ArgumentError, LaunchError
from .mem.address_space import ALIGNMENT, DeviceMemoryError  # noqa: F401  (part of the API)
from .report import LaunchReport


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
        """Overwrite the contents from a host array of the same size and dtype (or one
        that converts without loss: ints into a wider int or a float array)."""
        src = np.asarray(host)
        if not _converts_exactly(src, self.dtype):
            raise ArgumentError(f"copy_from: the {src.dtype} values do not convert without loss "
                                f"into this {self.dtype} array; convert them first "
                                f"(host.astype(np.{self.dtype}))")
        if src.size != self.size:
            raise ArgumentError(f"copy_from: {src.size} elements into an array of {self.size}")
        host = np.ascontiguousarray(src, dtype=self.dtype)
        self.device._copy_from(self, host.ravel())

    def view(self, dtype) -> "DeviceArray":
        """The same memory read as another dtype of the same item size (no copy)."""
        dtype = np.dtype(dtype)
        if dtype.itemsize != self.dtype.itemsize:
            raise ValueError(f"view: {dtype} has {dtype.itemsize}-byte items, the array "
                             f"{self.dtype.itemsize}-byte ones")
        from_dtype(dtype)
        return DeviceArray(self.device, self._data.view(dtype), self.base)

    @property
    def __cuda_array_interface__(self):
        # On a real GPU the array is CUDA memory that CuPy, Numba, PyTorch ... can use
        # without a copy; a simulated device's array is host memory and has none.
        try:
            return self._data.__cuda_array_interface__
        except AttributeError:
            raise AttributeError(f"{self.device.name}'s arrays are not CUDA memory "
                                 "(copy it to the host with .to_host())") from None

    def __repr__(self) -> str:
        return f"DeviceArray({self.size} x {self.dtype}, on {self.device.name}, at {self.base:#x})"


def is_device_array(obj) -> bool:
    """A DeviceArray of any device, or an array in CUDA memory (CuPy, Numba, PyTorch,
    anything with ``__cuda_array_interface__``)."""
    return isinstance(obj, DeviceArray) or hasattr(type(obj), "__cuda_array_interface__") \
        and hasattr(obj, "__cuda_array_interface__")


class Device(ABC):
    """What an algorithm may use: arrays in, kernels launched, reports out."""

    name: str = "device"

    # Capabilities, which callers read instead of probing for a backend's attributes.
    # is_simulated: the simulator's results (counts, modelled times; an engine to
    # choose with ``default_engine``), else a real GPU's (measured times, no counts).
    # Every device also tells ``gpu_name``, ``arch``, ``sm_count`` and
    # ``max_threads_per_sm``.
    is_simulated: bool = False

    def to_device(self, host) -> DeviceArray:
        host = np.ascontiguousarray(host)
        if host.ndim != 1:
            raise ArgumentError(f"device arrays are one-dimensional; got shape {host.shape} "
                                "(flatten it with .ravel())")
        _check_dtype(host.dtype)         # refuses dtypes the kernel language lacks
        return self._allocate(host)

    def empty(self, n: int, dtype) -> DeviceArray:
        return self.zeros(n, dtype)

    def uninitialized(self, n: int, dtype) -> DeviceArray:
        """empty(n, dtype) for an array whose every element the caller's kernels write
        before any read of it (the simulator's check="uninit" shows that): a real GPU may
        then leave it unzeroed (cuda_backend: no memset, which costs GPU time beside the
        kernels: ~0.09 ms for 256 MB on an H100); the simulator gives empty()'s array."""
        n = _check_length(n)
        return self._allocate_uninitialized(n, _check_dtype(dtype))

    def _allocate_uninitialized(self, n: int, dtype) -> DeviceArray:
        return self.empty(n, dtype)

    def uninitialized_arrays(self, *specs) -> list:
        """uninitialized(n, dtype) for each ``(n, dtype)`` in ``specs``; a real GPU makes
        them in one allocation (cuda_backend), since the host's cost of each allocation
        is time a GPU idles when the host is behind it.  The simulator makes each apart,
        so that check="uninit" watches each as its own array."""
        checked = [(_check_length(n), _check_dtype(dtype)) for n, dtype in specs]
        return self._allocate_uninitialized_together(checked)

    def _allocate_uninitialized_together(self, specs) -> list:
        return [self._allocate_uninitialized(n, dtype) for n, dtype in specs]

    def zeros(self, n: int, dtype) -> DeviceArray:
        n = _check_length(n)
        return self._allocate_zeros(n, _check_dtype(dtype))

    def _allocate_zeros(self, n: int, dtype) -> DeviceArray:
        return self._allocate(np.zeros(n, dtype=dtype))

    def full(self, n: int, value, dtype) -> DeviceArray:
        n, dtype = _check_length(n), _check_dtype(dtype)
        if not isinstance(value, (int, float, np.number)) or isinstance(value, (bool, np.bool_)) \
                and dtype.kind != "b" or dtype.kind in "iu" and not float(value).is_integer() \
                or dtype.kind in "iu" and not np.iinfo(dtype).min <= value <= np.iinfo(dtype).max:
            raise ArgumentError(f"full: the value {value!r} is not a {dtype} "
                                f"(range and kind of the array's dtype)")
        return self.to_device(np.full(n, value, dtype=dtype))

    def as_device_array(self, obj, ravel: bool = False) -> DeviceArray | None:
        """``obj``'s memory as a one-dimensional DeviceArray of this device (``ravel``:
        a multi-dimensional one flattened), without a copy, or None when ``obj`` is not device memory (a host array: the caller copies
        it with ``to_device``).  A DeviceArray of another device, or CUDA memory on a
        device that cannot read it, is a ValueError."""
        if isinstance(obj, DeviceArray):
            if obj.device is not self:
                raise ValueError(f"the array lives on {obj.device.name}, not on {self.name}: "
                                 f"run on device={obj.device.name!r}, or copy it over with "
                                 "to_host() first")
            arr = obj
        elif is_device_array(obj):
            arr = self._adopt(obj)
        else:
            return None
        if ravel and len(arr.shape) > 1:          # C-contiguous (see _adopt): a view
            arr = DeviceArray(self, arr._data.reshape(-1), arr.base)
        if len(arr.shape) != 1:
            raise ValueError(f"device arrays are one-dimensional here; got shape {arr.shape} "
                             "(flatten it on the device first)")
        return arr

    def _adopt(self, obj) -> DeviceArray:
        raise ValueError(f"{self.name} cannot read CUDA memory ({type(obj).__name__} has "
                         "__cuda_array_interface__): run on device='cuda', or pass a host "
                         "(numpy) array")

    def export(self, arr: DeviceArray, like):
        """``arr`` in the form the caller passed its input as: a DeviceArray for a
        DeviceArray, else the backend's own array type (CuPy on a GPU) for CUDA
        memory, or a numpy copy for a host array."""
        if isinstance(like, DeviceArray):
            return arr
        if is_device_array(like):
            return self._export(arr)
        return arr.to_host()

    def _export(self, arr: DeviceArray):
        return arr

    def copy(self, arr: DeviceArray) -> DeviceArray:
        """A new device array with ``arr``'s contents, copied on the device."""
        out = self.uninitialized(arr.size, arr.dtype)    # the copy writes every element
        self._device_copy(out, arr)
        return out

    def _device_copy(self, dst: DeviceArray, src: DeviceArray) -> None:
        dst._data[...] = src._data

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

    # Keyword options of launch() beyond grid, block and the kernel's arguments. A real
    # GPU accepts the simulator's (and ignores them), so algorithm code runs on either.
    LAUNCH_OPTIONS = ("engine", "schedule", "seed", "max_loop_iterations", "sync")

    def check_launch_options(self, options) -> dict:
        """``options`` (a dict of launch keywords, e.g. an algorithm's launch_options)
        checked before any work: a copy, or LaunchError naming the bad key or value."""
        if options is None:
            return {}
        if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
            raise LaunchError(f"launch options are a dict such as dict(engine='lockstep'), "
                              f"not {options!r}")
        unknown = sorted(set(options) - set(self.LAUNCH_OPTIONS))
        if unknown:
            raise LaunchError(f"unknown launch option(s) {', '.join(map(repr, unknown))} for "
                              f"{self.name}: it takes {', '.join(self.LAUNCH_OPTIONS)}")
        return dict(options)

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


def _is_int(x) -> bool:
    """An integer, and not a bool (True would silently mean 1)."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _dim3(v, what) -> tuple:
    if _is_int(v):
        v = (int(v),)
    if not isinstance(v, (tuple, list)) or not all(_is_int(x) for x in v):
        raise LaunchError(f"{what} must be an int or a tuple of up to 3 ints, such as 4 or "
                          f"(4, 2), not {v!r}")
    v = tuple(int(x) for x in v)
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


def _check_length(n) -> int:
    if not _is_int(n) or n < 0:
        raise ArgumentError(f"an array length is an integer >= 0, not {n!r}")
    return int(n)


def _check_dtype(dtype) -> np.dtype:
    """The numpy dtype of an element type the kernel language has, else ArgumentError."""
    try:
        dt = np.dtype(dtype.dtype if isinstance(dtype, ScalarType) else dtype)
        from_dtype(dt)
    except (TypeError, ValueError, KeyError):
        raise ArgumentError(f"{dtype!r} is not an element type of device arrays: use int8..int64, "
                            "uint8..uint64, float32, float64 or bool (or simgpu.lang's i32, ...)"
                            ) from None
    return dt


def _converts_exactly(src: np.ndarray, dtype: np.dtype) -> bool:
    """``src`` (numbers) converts to ``dtype`` and back to the same values."""
    if src.dtype.kind not in "biuf":
        return False
    if np.can_cast(src.dtype, dtype, "safe"):
        return True
    with np.errstate(all="ignore"):
        back = src.astype(dtype).astype(src.dtype)
    return bool(np.array_equal(back, src, equal_nan=src.dtype.kind == "f"))


DEFAULT_DEVICE = "sim:gtx260"


# --- the device registry --------------------------------------------------------------
# A backend registers a name prefix with a factory; the core imports no backend.
# The simulator (simgpu.sim.device) registers "sim" when simgpu is imported. Any
# other prefix is looked up the first time it is asked for by importing the package
# named "<prefix>_backend" (so "cuda" finds cuda_backend, which registers itself on
# import). A naming convention rather than entry points: entry points exist only in an
# installed copy's metadata, while this project also runs from source checkouts put on
# PYTHONPATH (the GPU machine, worktrees), where a convention works the same.

_FACTORIES: dict = {}


def register_device(prefix: str, factory) -> None:
    """Make ``get_device("<prefix>")`` and ``get_device("<prefix>:<spec>")`` call
    ``factory(spec)`` (``spec`` is None for the bare prefix) for a new Device."""
    if not prefix.isidentifier():
        raise ValueError(f"a device prefix is a name such as 'sim' or 'cuda', not {prefix!r}")
    _FACTORIES[prefix] = factory


def registered_devices() -> tuple:
    """The prefixes registered so far."""
    return tuple(sorted(_FACTORIES))


def _factory(prefix: str):
    if prefix not in _FACTORIES and prefix.isidentifier():
        import importlib
        module = f"{prefix}_backend"
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:            # the backend is there; something it needs is not
                raise RuntimeError(f"the {prefix!r} device's backend ({module}) could not be "
                                   f"loaded: {exc}") from None
    return _FACTORIES.get(prefix)


def get_device(name: str = DEFAULT_DEVICE) -> Device:
    """``"sim:<config>"`` (a bundled name or a .toml path), ``"cuda"`` or ``"cuda:N"``,
    or ``"<prefix>[:<spec>]"`` of any registered backend."""
    if isinstance(name, Device):
        return name
    if not isinstance(name, str):
        raise ArgumentError(f"device name must be a string such as 'sim:gtx260', not {name!r}")
    prefix, colon, spec = name.partition(":")
    factory = _factory(prefix)
    if factory is None:
        raise ArgumentError(f"unknown device {name!r}: use 'sim:<config>' (e.g. sim:gtx260, sim:h100, "
                         "sim:h200, or sim:path/to/gpu.toml) or 'cuda' / 'cuda:N'")
    return factory(spec if colon else None)


def __getattr__(name):
    # SimDevice lived here before the simulator became a backend (simgpu.sim.device).
    if name == "SimDevice":
        from .sim.device import SimDevice
        return SimDevice
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
