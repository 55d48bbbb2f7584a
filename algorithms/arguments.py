"""The checks of the algorithms' common arguments, made before any work.

list_ranking.rank and connected_components.label take a device, a thread count, a
block size, a seed and launch options; each is checked here, so that a wrong one is
an :class:`~simgpu.ArgumentError` (a ``ValueError``; :class:`~simgpu.LaunchError`
for launch options) that names the argument, before anything is copied or launched.
"""
from __future__ import annotations

import numpy as np

import simgpu
from simgpu.lang.errors import ArgumentError

SEED_MAX = 2**64 - 1


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def check_device(device) -> "simgpu.Device":
    """A Device, or the one a name such as "sim:gtx260" opens."""
    if isinstance(device, simgpu.Device):
        return device
    return simgpu.get_device(device)      # ArgumentError for a bad name or a non-string


def check_threads(function: str, threads, device=None):
    """None, or a positive int that one launch on ``device`` can hold."""
    if threads is None:
        return None
    if not _is_int(threads) or threads < 1:
        raise ArgumentError(f"{function}: threads must be a positive integer, not {threads!r}")
    if device is not None:
        lim = device.limits
        top = int(lim.max_grid_dim[0]) * int(lim.max_threads_per_block)
        if threads > top:
            raise ArgumentError(f"{function}: threads={int(threads):,} is more than one launch "
                                f"on {device.name} can run ({top:,}: grid x block limits)")
    return int(threads)


def check_block(function: str, block, device) -> int:
    """Threads per block: a multiple of 32 (whole warps) within the device's limit."""
    top = int(device.limits.max_threads_per_block)
    if not _is_int(block) or not 32 <= block <= top or block % 32:
        raise ArgumentError(f"{function}: block must be a multiple of 32 between 32 and "
                            f"{top} ({device.name}'s limit), not {block!r}")
    return int(block)


def check_seed(function: str, seed) -> int:
    if not _is_int(seed) or not 0 <= seed <= SEED_MAX:
        raise ArgumentError(f"{function}: seed must be an integer in [0, 2^64), not {seed!r}")
    return int(seed)


def check_launch_options(device, launch_options) -> dict:
    """A copy of ``launch_options`` once the device accepts every key and value."""
    return device.check_launch_options(launch_options)
