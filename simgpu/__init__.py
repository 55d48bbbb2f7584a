"""simgpu: a GPU model you can read.

Kernels written once in a typed subset of Python (``simgpu.lang``) run on a
simulated GPU (``sim:gtx260``, ``sim:h100``, ...) that counts and times every
memory access, or on a real one (``cuda``) through the CUDA backend.
"""
from .device import (DEFAULT_DEVICE, Device, DeviceArray, DeviceMemoryError, get_device,
                     is_device_array, register_device)
from .sim.device import SimDevice   # the simulator registers the "sim" device
from .report import AccessCounts, LaunchReport
from .lang.errors import (ArgumentError, InputFileError, KernelError, KernelTimeoutError,
                          LaunchError, SimgpuError)
from .sim.checks import Checks, UninitializedRead   # launch(..., check=...)
from .sim.racecheck import RaceError

__version__ = "0.1.0"
__all__ = ["get_device", "Device", "DeviceArray", "SimDevice", "LaunchReport", "AccessCounts",
           "DEFAULT_DEVICE", "register_device", "DeviceMemoryError",
           "Checks", "RaceError", "UninitializedRead", "is_device_array"]
__all__ += ["SimgpuError", "ArgumentError", "InputFileError", "LaunchError", "KernelError",
            "KernelTimeoutError"]
