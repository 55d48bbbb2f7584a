# Where `python -m simgpu.native build` compiled this exact source of the hot memory
# units, their compiled modules are found first (simgpu/mem/native_load.py says how).
from .native_load import install as _install

_install(__path__)
