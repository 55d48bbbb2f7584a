"""The validation in stages: the GPU's side saved, the simulator's side cached per run.

A whole validation (Nsight Compute, CUDA-event timing, then every case on sim:h100)
can outlast one sitting on a lent GPU machine. So each side can run on its own:

- ``--gpu-only``: Nsight Compute and the timing runs; writes ``ncu.csv``,
  ``manifest.json`` and ``gpu.pkl`` (each run's launches with their event times, and
  a digest of each output array instead of the array, so the file stays small).
- ``--sim-cache DIR``: each (case, seed) the simulator finishes is written to
  ``DIR/<case>--<seed>.pkl`` at once, and one already there is read, not rerun:
  a run cut off at its time limit resumes where it stopped. Each (case, seed) runs on
  a fresh device, so a cached run is the run that would be made now (for the same
  code: the file records the commit, and a stale one is rerun).
- ``--gpu-from DIR``: compare with the GPU side saved by ``--gpu-only``.
"""
from __future__ import annotations

import hashlib
import json
import pathlib
import pickle

import numpy as np


def digest(value) -> str:
    """An output array's identity: dtype, shape and sha256 of its bytes (a digest
    passes through, so saved and fresh outputs compare alike)."""
    if isinstance(value, str):
        return value
    a = np.ascontiguousarray(value)
    return f"{a.dtype.str}{a.shape}:{hashlib.sha256(a.tobytes()).hexdigest()}"


def save_gpu(out: pathlib.Path, results: dict) -> None:
    """run_cases' GPU results (and the "device" name), outputs as digests, to ``out/gpu.pkl``."""
    slim = {key: value if key == "device" else
            ({k: digest(v) for k, v in value[0].items()}, value[1])
            for key, value in results.items()}
    (out / "gpu.pkl").write_bytes(pickle.dumps(slim))


def load_gpu(src: pathlib.Path):
    """(gpu results, ncu.csv text, manifest) saved by a ``--gpu-only`` run in ``src``."""
    missing = [f for f in ("gpu.pkl", "ncu.csv", "manifest.json") if not (src / f).is_file()]
    if missing:
        raise SystemExit(f"--gpu-from {src}: {', '.join(missing)} not found there; "
                         "make them with --gpu-only on the GPU machine")
    return (pickle.loads((src / "gpu.pkl").read_bytes()), (src / "ncu.csv").read_text(),
            json.loads((src / "manifest.json").read_text()))


def _cache_file(cache: pathlib.Path, name: str, seed: int) -> pathlib.Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
    return cache / f"{safe}--{seed}.pkl"


def cached(cache, name, seed, commit):
    """The cached simulator result of (name, seed) for this commit, or None."""
    if cache is None:
        return None
    f = _cache_file(cache, name, seed)
    if not f.is_file():
        return None
    saved_commit, result = pickle.loads(f.read_bytes())
    return result if saved_commit == commit else None


def store(cache, name, seed, commit, result) -> None:
    """Write one finished simulator run (atomically: a run killed mid-write leaves none)."""
    if cache is None:
        return
    cache.mkdir(parents=True, exist_ok=True)
    f = _cache_file(cache, name, seed)
    tmp = f.with_suffix(".tmp")
    outputs, launches = result
    slim = ({k: digest(v) for k, v in outputs.items()}, launches)   # compare needs no more
    tmp.write_bytes(pickle.dumps((commit, slim)))
    tmp.replace(f)
