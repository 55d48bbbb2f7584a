"""A bundled GPU config with some keys left out, written to a file: how the scripts that
run the model with a mechanism switched off (a key left out reads as its default) make
their config (calibration/cold_dram_cases.py, validation/builtin_sim_side.py)."""
from __future__ import annotations

import pathlib
import re

import simgpu

H100 = pathlib.Path(simgpu.__file__).parent / "configs" / "h100.toml"


def h100_without(keys: list, folder: pathlib.Path) -> str:
    """The path of a copy of h100.toml, written in ``folder``, without the lines of
    ``keys``; each must be there once, else SystemExit names it."""
    text = H100.read_text()
    for key in keys:
        text, n = re.subn(rf"(?m)^{re.escape(key)}\s*=\s*[^#\n]*", "", text)
        if n != 1:
            raise SystemExit(f"h100.toml has {n} lines for {key!r}, expected one: name a key "
                             f"of {H100}")
    path = pathlib.Path(folder) / "h100-without.toml"
    path.write_text(text)
    return str(path)
