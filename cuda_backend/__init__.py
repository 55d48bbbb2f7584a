"""The CUDA backend: kernels rendered to CUDA C (render), compiled (NVRTC through
CuPy; nvcc for PTX) and launched on a real NVIDIA GPU (device).

Importing it registers the "cuda" device with simgpu's registry; ``get_device("cuda")``
imports it by that name (the "<prefix>_backend" convention, simgpu/device.py).
"""
from . import device  # noqa: F401  (registers "cuda")
