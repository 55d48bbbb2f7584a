"""Connected components: a host reference and Shiloach-Vishkin on a device.

    from algorithms import connected_components as cc
    r = cc.label(n, edges, method="shiloach-vishkin", device="sim:gtx260")
    r.labels     # int64: the smallest vertex id of each vertex's component
    r.rounds     # SV rounds (0 for "sequential")
    r.launches   # [LaunchReport], one per kernel launch; .kernel is its name

Methods (METHODS):
    "sequential"        host union-find (sequential.label_sequential)
    "shiloach-vishkin"  kernels SV0, SV1a, SV1b, SV2, SV3, SV4, SV5 of the
                        paper (kernels.py), round loop on the host
                        (shiloach_vishkin.py); see README.md for the design,
                        the read/write counts against Table 4 and the
                        step-1 lesson.
    "union-find"        ECL-CC's design (union_find.py): CSR built on the
                        device, init to the first smaller neighbour, hooks by
                        atomic_cas with intermediate pointer jumping, work
                        split by degree (thread / warp / block per vertex),
                        a final flatten; no round loop, one pass.

Edges may be a host array or device memory (a DeviceArray, a CuPy array,
anything with __cuda_array_interface__; shape (m, 2) or (2m,), int32/int64):
device edges are read in place and the labels come back as a device array of
the same kind (CuPy for CUDA memory); host edges give numpy labels.

Input: n vertices 0..n-1 and an (m, 2) integer array (or list of pairs) of
undirected edges.  Self-loops, duplicate edges and isolated vertices are fine,
and so are n = 0 and n = 1.  A vertex id outside [0, n), a wrong shape or
dtype, or an n that does not fit the int32 index type raise ValueError.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import simgpu

from ..arguments import check_device, check_launch_options, check_seed, check_threads
from .sequential import label_sequential
from . import shiloach_vishkin as _sv
from . import union_find as _uf
from .shiloach_vishkin import ConvergenceError, round_bound

__all__ = ["label", "CCResult", "METHODS", "ConvergenceError", "round_bound"]

METHODS = ("sequential", "shiloach-vishkin", "union-find")


@dataclass
class CCResult:
    labels: np.ndarray                  # int64, smallest vertex id of the component
    rounds: int = 0                     # SV rounds run (the last one changed nothing)
    launches: list = field(default_factory=list)   # LaunchReport per kernel launch
    threads: int = 0                    # p = grid x block used by every launch
    directed_edges: int = 0             # len(E) on the device: 2 x non-loop edges


def label(n, edges, method="shiloach-vishkin", device="sim:gtx260", threads=None, seed=0,
          launch_options=None) -> CCResult:
    """Label the connected components of the graph (n, edges).

    method: "sequential" (host), "shiloach-vishkin" or "union-find" (device kernels).
    device: a device name ("sim:gtx260", "sim:h100", ...) or a Device object.
    threads: p, the total number of threads of every launch (grid x block); at
        most 256 or a multiple of 256.  Default: one per vertex or directed
        edge, whichever is more, capped at 128 blocks of 256.
    seed: base seed of the launches' random schedules (when launch_options asks
        for schedule="random" and gives no seed of its own).
    launch_options: extra keyword arguments for every device.launch, e.g.
        dict(engine="warps", schedule="random", seed=7).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    check_seed("label", seed)
    if method == "sequential":
        if simgpu.is_device_array(edges):      # the host reads a copy; labels stay on the host
            src = edges if isinstance(edges, simgpu.DeviceArray) else \
                simgpu.get_device("cuda").as_device_array(edges, ravel=True)
            edges = src.to_host().reshape(-1, 2)
        return CCResult(labels=label_sequential(n, _as_edges(edges)))
    dev = check_device(device)                 # every argument checked before any work
    check_threads("label", threads, dev)
    launch_options = check_launch_options(dev, launch_options)
    if method == "union-find":
        labels, launches, p, m = _uf.union_find(n, edges, dev, threads=threads, seed=seed,
                                                launch_options=launch_options,
                                                export=lambda a: dev.export(a, edges))
        return CCResult(labels=labels, rounds=0, launches=launches, threads=p,
                        directed_edges=m)
    labels, rounds, launches, p, m = _sv.shiloach_vishkin(
        n, edges, dev, threads=threads, seed=seed, launch_options=launch_options,
        device_out=True)
    return CCResult(labels=dev.export(labels, edges), rounds=rounds, launches=launches,
                    threads=p, directed_edges=m)


def _as_edges(edges):
    arr = np.asarray(edges)
    if arr.size == 0 and arr.ndim <= 2:
        return np.empty((0, 2), dtype=np.int64)
    return arr
