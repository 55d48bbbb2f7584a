"""GPU descriptions: one TOML data file per GPU, loaded into typed, frozen dataclasses.

The simulator knows nothing about particular GPUs; everything it needs -- SM
count, clocks, occupancy limits, issue rate, memory partitions and DRAM
timing, caches, PCIe, atomics -- comes from a config file. Bundled files live
beside this module (``gtx260``, ``h100``, ``h200``)::

    from simgpu.configs import load_config, available_configs
    cfg = load_config("gtx260")              # a bundled name
    cfg = load_config("~/gpus/mygpu.toml")   # or a path to your own file
    print(cfg.describe())

Adding a GPU means writing one file: copy ``gtx260.toml`` (it is the
commented template), change the figures and give each a comment naming its
source (datasheet, the CUDA programming guide's "Technical Specifications per
Compute Capability" table, a whitepaper, a measurement, or "model assumption:
<why>"). Every key of every section must be present and no other key may
appear, so a typo is an error instead of a silently ignored line. Values are
checked for type and for consistency (``peak_bandwidth_gbps`` must match bus
width x memory clock x data rate within 2 %, ``max_warps_per_sm`` must be
``max_threads_per_sm / warp_size``, and so on); any problem raises
``ConfigError`` naming the file, the ``section.key`` and what was expected.
Put the file beside this module and its stem becomes a bundled name.

Units are in the key names (``_bytes``, ``_mhz``, ``_ns``, ``_us``, ``_gbps``
= 10^9 bytes/s); "cycles" are always cycles of ``gpu.core_clock_mhz``.
"""

from __future__ import annotations

import functools
import os
from importlib import resources
from pathlib import Path

# The schema, the whole config and the parser live in their own modules; every name
# stays importable from simgpu.configs.
from .gpu_config import GPUConfig
from .parsing import (_coerce, _parse_section, _parse_text, _type_text,  # noqa: F401
                      _with_defaults, parse_config)
from .sections import (_NONNEGATIVE, _OPTIONAL_SECTIONS, _POSITIVE, _SECTIONS,  # noqa: F401
                       BANDWIDTH_TOLERANCE, AtomicsModel, CacheModel, ConfigError, DramTiming,
                       GpuInfo, IssueModel, Limits, MemoryModel, PcieModel, TlbModel, _doc, _f,
                       _opt)

__all__ = [
    "ConfigError",
    "GPUConfig",
    "GpuInfo",
    "Limits",
    "IssueModel",
    "MemoryModel",
    "DramTiming",
    "CacheModel",
    "PcieModel",
    "AtomicsModel",
    "TlbModel",
    "load_config",
    "available_configs",
    "parse_config",
    "BANDWIDTH_TOLERANCE",
]


def available_configs() -> list[str]:
    """Names of the bundled configs, e.g. ['gtx260', 'h100', 'h200']."""
    return sorted(p.name[: -len(".toml")] for p in resources.files(__name__).iterdir()
                  if p.name.endswith(".toml"))


@functools.lru_cache(maxsize=None)
def _load_bundled(name: str) -> GPUConfig:
    res = resources.files(__name__).joinpath(name + ".toml")
    return _parse_text(res.read_text(encoding="utf-8"), source=str(res), key=name)


def load_config(name_or_path: str | os.PathLike) -> GPUConfig:
    """Load a bundled config by name ("gtx260"; a "sim:" prefix is accepted)
    or a user's config file by path (anything ending in .toml or naming a file)."""
    if isinstance(name_or_path, os.PathLike):
        return _load_path(Path(name_or_path))
    if not isinstance(name_or_path, str):
        raise ConfigError(f"load_config expects a config name or a path, got {name_or_path!r}")
    text = name_or_path.strip()
    looks_like_path = text.endswith(".toml") or "/" in text or os.sep in text
    if looks_like_path:
        return _load_path(Path(text))
    name = text.lower().removeprefix("sim:")
    if name in available_configs():
        return _load_bundled(name)
    raise ConfigError(
        f"unknown GPU config {name_or_path!r}; available: {', '.join(available_configs())} "
        f"(or give the path of a .toml file; see gtx260.toml for the format)")


def _load_path(path: Path) -> GPUConfig:
    path = path.expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read config file: {e}") from None
    return _parse_text(text, source=str(path), key=path.stem)
