"""The kernel language: a small typed subset of Python with C/CUDA semantics.

    from simgpu.lang import kernel, Array, i32, threadIdx, blockIdx, blockDim

    @kernel
    def double(a: Array[i32], out: Array[i32], n: i32):
        i = blockIdx.x * blockDim.x + threadIdx.x
        if i < n:
            out[i] = a[i] * 2

A kernel is compiled to IR the first time a device needs it (``k.ir``);
errors point at the offending line with a caret.
"""
from __future__ import annotations

from ..ir.types import (Array, ArrayType, ScalarType, boolean, f32, f64, i8, i16, i32,
                        i64, u8, u16, u32, u64)
from .errors import (ArgumentError, InputFileError, KernelError, KernelRuntimeError,
                     KernelSyntaxError, KernelTimeoutError, KernelTypeError, LaunchError,
                     SimgpuError)
from .frontend import FunctionBuilder


class _Compiled:
    """A Python function written in the kernel language, with its IR built on demand."""

    is_kernel = False

    def __init__(self, pyfunc):
        self.pyfunc = pyfunc
        self.__name__ = pyfunc.__name__
        self.__qualname__ = pyfunc.__qualname__
        self.__doc__ = pyfunc.__doc__
        self.__module__ = pyfunc.__module__
        self.__wrapped__ = pyfunc
        self._ir = None

    def build(self, compiling: tuple = ()):
        if self._ir is None:
            self._ir = FunctionBuilder(self.pyfunc, self.is_kernel, compiling).build()
        return self._ir

    @property
    def ir(self):
        """The typed IR (``simgpu.ir.nodes.Function``), built and checked on first use."""
        return self.build()

    @property
    def name(self) -> str:
        return self.pyfunc.__name__


class Kernel(_Compiled):
    """A ``@kernel``: launched on a device with ``device.launch(k, grid, block, *args)``."""

    is_kernel = True
    __simgpu_kernel__ = True

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel '{self.name}' runs on a device: "
                        f"simgpu.get_device().launch({self.name}, grid, block, *args)")

    def __repr__(self):
        return f"<kernel {self.__qualname__}>"


class DeviceFunction(_Compiled):
    """A ``@device_function``: called from kernels; inlined by the simulator."""

    def __simgpu_device_function__(self):
        return self.ir

    def __call__(self, *args, **kwargs):
        raise TypeError(f"device function '{self.name}' can only be called inside a kernel")

    def __repr__(self):
        return f"<device function {self.__qualname__}>"


def kernel(fn) -> Kernel:
    """Mark ``fn`` as a GPU kernel written in the kernel language."""
    _check_decorated(fn, "@kernel")
    return Kernel(fn)


def device_function(fn) -> DeviceFunction:
    """Mark ``fn`` as a function that kernels can call (``__device__`` in CUDA C)."""
    _check_decorated(fn, "@device_function")
    return DeviceFunction(fn)


def _check_decorated(fn, decorator: str) -> None:
    """A plain function whose source the front end can read, else KernelSyntaxError."""
    import inspect
    if not inspect.isfunction(fn):
        what = "a class" if inspect.isclass(fn) else f"a {type(fn).__name__}"
        raise KernelSyntaxError(f"{decorator} decorates a plain 'def' function, not {what} "
                                f"({getattr(fn, '__qualname__', repr(fn))})")
    try:
        inspect.getsourcelines(fn)
    except (OSError, TypeError):
        raise KernelSyntaxError(
            f"{decorator}: the source of '{fn.__qualname__}' cannot be read (defined by exec(), "
            "eval() or typed at an interactive prompt?); the kernel language compiles a "
            "function's source", hint="define the kernel in a .py file (or a notebook cell) "
            "and import it") from None


# --- names the kernel language gives a meaning to ---------------------------
# On the host they are placeholders: the front end reads the kernel's source,
# so these objects only need to exist for imports and linters.

class _Dim3Placeholder:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, field):
        raise RuntimeError(f"{self._name}.{field} only has a value inside a kernel")

    def __repr__(self):
        return self._name


threadIdx = _Dim3Placeholder("threadIdx")
blockIdx = _Dim3Placeholder("blockIdx")
blockDim = _Dim3Placeholder("blockDim")
gridDim = _Dim3Placeholder("gridDim")
warp_size = 32


def _intrinsic(name):
    def stub(*args):
        raise RuntimeError(f"{name}() can only be called inside a kernel")
    stub.__name__ = name
    return stub


syncthreads = _intrinsic("syncthreads")
shared_array = _intrinsic("shared_array")
atomic_add = _intrinsic("atomic_add")
atomic_sub = _intrinsic("atomic_sub")
atomic_min = _intrinsic("atomic_min")
atomic_max = _intrinsic("atomic_max")
atomic_exch = _intrinsic("atomic_exch")
atomic_cas = _intrinsic("atomic_cas")
atomic_and_ = _intrinsic("atomic_and_")
atomic_or_ = _intrinsic("atomic_or_")
atomic_xor = _intrinsic("atomic_xor")
# warp-level intrinsics (simgpu.lang.warp); FULL_MASK names all 32 lanes
shfl_sync = _intrinsic("shfl_sync")
shfl_up_sync = _intrinsic("shfl_up_sync")
shfl_down_sync = _intrinsic("shfl_down_sync")
shfl_xor_sync = _intrinsic("shfl_xor_sync")
ballot_sync = _intrinsic("ballot_sync")
any_sync = _intrinsic("any_sync")
all_sync = _intrinsic("all_sync")
activemask = _intrinsic("activemask")
syncwarp = _intrinsic("syncwarp")
FULL_MASK = 0xFFFFFFFF

__all__ = [
    "kernel", "device_function", "Kernel", "DeviceFunction",
    "Array", "ArrayType", "ScalarType",
    "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "boolean",
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warp_size",
    "syncthreads", "shared_array", "atomic_add", "atomic_sub", "atomic_min", "atomic_max",
    "atomic_exch", "atomic_cas", "atomic_and_", "atomic_or_", "atomic_xor",
    "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "ballot_sync", "any_sync",
    "all_sync", "activemask", "syncwarp", "FULL_MASK",
    "KernelError", "KernelSyntaxError", "KernelTypeError", "KernelRuntimeError", "LaunchError",
    "KernelTimeoutError", "ArgumentError", "InputFileError", "SimgpuError",
]
