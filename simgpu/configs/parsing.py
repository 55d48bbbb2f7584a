"""From parsed TOML to a checked :class:`GPUConfig`: each key's type and smallest
value, unknown and missing keys and sections, the sections' checks, then the
schema's defaults (moved out of simgpu/configs/__init__.py).
"""
from __future__ import annotations

import dataclasses
import math
import tomllib
import types
import typing
from typing import Any, Mapping

from .gpu_config import GPUConfig
from .sections import (_NONNEGATIVE, _OPTIONAL_SECTIONS, _POSITIVE, _SECTIONS, CacheModel,
                       ConfigError)


def _type_text(tp: Any) -> str:
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if tp is bool:
        return "true or false"
    if typing.get_origin(tp) is tuple:
        return f"a list of {len(typing.get_args(tp))} positive integers"
    return str(tp)


def _coerce(value: Any, tp: Any, minimum: str | None) -> tuple[bool, Any]:
    """Return (ok, converted value) for a TOML value against a field type."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):  # X | None: check as X
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    if tp is bool:
        return isinstance(value, bool), value
    if tp is str:
        return isinstance(value, str) and value.strip() != "", value
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        value = float(value) if ok else value
    elif typing.get_origin(tp) is tuple:
        n = len(typing.get_args(tp))
        ok = (isinstance(value, list) and len(value) == n
              and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value))
        return ok, tuple(value) if ok else value
    else:  # pragma: no cover - only the types above are used
        raise TypeError(tp)
    if ok and minimum == _POSITIVE and value <= 0:
        ok = False
    if ok and minimum == _NONNEGATIVE and value < 0:
        ok = False
    return ok, value


def _parse_section(cls: type, table: Any, section: str, source: str):
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [{section}]: expected a table (a [{section}] section), got {table!r}")
    flds = dataclasses.fields(cls)
    known = [f.name for f in flds]
    unknown = [k for k in table if k not in known]
    if unknown:
        raise ConfigError(
            f"{source}: {section}.{unknown[0]}: unknown key (a typo?); "
            f"[{section}] takes: {', '.join(known)}")
    hints = typing.get_type_hints(cls)
    values = {}
    for f in flds:
        doc, minimum = f.metadata.get("doc", ""), f.metadata.get("min")
        union = typing.get_args(hints[f.name]) if f.metadata.get("optional") else ()
        expected = _type_text(union[0] if union else hints[f.name])
        if minimum == _POSITIVE and expected in ("an integer", "a number"):
            expected = "a positive " + expected.split(" ", 1)[1]
        elif minimum == _NONNEGATIVE:
            expected = "a non-negative " + expected.split(" ", 1)[1]
        if f.name not in table:
            if f.metadata.get("optional"):
                values[f.name] = None
                continue
            raise ConfigError(f"{source}: {section}.{f.name}: missing; expected {expected} ({doc})")
        ok, value = _coerce(table[f.name], hints[f.name], minimum)
        if not ok:
            raise ConfigError(
                f"{source}: {section}.{f.name}: expected {expected} ({doc}), got {table[f.name]!r}")
        values[f.name] = value
    return cls(**values)


def parse_config(data: Mapping[str, Any], source: str = "<config>", key: str = "") -> GPUConfig:
    """Build and validate a GPUConfig from already-parsed TOML data."""
    unknown = [s for s in data if s not in _SECTIONS]
    if unknown:
        raise ConfigError(
            f"{source}: [{unknown[0]}]: unknown section (a typo?); "
            f"a config has: {', '.join('[' + s + ']' for s in _SECTIONS)}")
    parts = {}
    for section, cls in _SECTIONS.items():
        if section not in data and section in _OPTIONAL_SECTIONS:
            continue
        if section not in data:
            raise ConfigError(f"{source}: [{section}]: missing section; expected keys: "
                              f"{', '.join(f.name for f in dataclasses.fields(cls))}")
        parts[section] = _parse_section(cls, data[section], section, source)

    def checker(section: str):
        def err(name: str, problem: str):
            raise ConfigError(f"{source}: {section}.{name}: {problem}")
        return err

    parts["gpu"]._check(checker("gpu"))
    parts["limits"]._check(checker("limits"), parts["gpu"])
    parts["issue"]._check(checker("issue"))
    parts["memory"]._check(checker("memory"))
    parts["cache"]._check(checker("cache"))
    if "tlb" in parts:
        parts["tlb"]._check(checker("tlb"))
    if parts["cache"].l2_halves == 2 and parts["memory"].partitions % 2:
        checker("cache")("l2_halves", f"2 halves need an even number of memory partitions "
                                      f"(memory.partitions = {parts['memory'].partitions})")
    if parts["memory"].partition_half_mask and parts["cache"].l2_halves != 2:
        checker("memory")("partition_half_mask", "chooses an L2 half, and this config's L2 "
                                                 "is one (cache.l2_halves): remove it")
    parts["dram"]._check(checker("dram"), parts["memory"])
    # The coalescing rule follows from the architecture; the key states it for
    # readers, so it must agree rather than silently not matter.
    rule = "sector" if parts["gpu"].arch_number >= 20 else "half-warp"
    if parts["memory"].coalescing != rule:
        checker("memory")("coalescing", f"{parts['gpu'].arch} coalesces by {rule!r}, "
                          f"not {parts['memory'].coalescing!r} (the rule follows from gpu.arch)")
    parts = {section: _with_defaults(part) for section, part in parts.items()}
    return GPUConfig(**parts, key=key, source=source)


def _with_defaults(part):
    """``part`` with each omitted optional key set to its schema default.  The checks
    run before, on what the file gave (None where omitted); an absent cache
    (``present = false``) keeps every key None."""
    if isinstance(part, CacheModel) and not part.present:
        return part
    fill = {f.name: f.default for f in dataclasses.fields(part)
            if f.metadata.get("optional") and f.default is not None and getattr(part, f.name) is None}
    return dataclasses.replace(part, **fill) if fill else part


def _parse_text(text: str, source: str, key: str) -> GPUConfig:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: not valid TOML: {e}") from None
    return parse_config(data, source=source, key=key)
