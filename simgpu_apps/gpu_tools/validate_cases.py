"""The built-in validation's cases: the project's algorithms and lessons on realistic
inputs, each a function ``run(device, seed) -> (outputs, [LaunchReport])``.

Used by ``simgpu_apps.gpu_tools.validate`` (which runs them on the GPU under Nsight
Compute and on sim:h100) and by calibration/kernel_counters.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Case:
    name: str
    run: object                      # (device, seed) -> (dict of outputs, [LaunchReport])
    schedule_dependent_counts: bool = False   # counts may differ with the winner of races
    why: str = ""



# --- the cases ------------------------------------------------------------------------

def _copy_case(kernel_name, stride=None, n=1 << 18):
    def run(dev, seed):
        from simgpu_apps.lessons import coalescing as ex
        rng = np.random.default_rng(seed)
        src = dev.to_device(rng.integers(-2**31, 2**31, n, dtype=np.int32))
        dst = dev.zeros(n, np.int32)
        kern = getattr(ex, kernel_name)
        args = (src, dst, stride, n) if stride is not None else (src, dst, n)
        rep = dev.launch(kern, 264, 256, *args)
        return {"dst": dst.to_host()}, [rep]
    return run


def _rank_case(method, n, **kw):
    def run(dev, seed):
        from algorithms import generators, list_ranking
        succ = generators.random_list(n, seed)
        r = list_ranking.rank(succ, method=method, device=dev, seed=seed, **kw)
        return {"ranks": r.ranks}, r.launches
    return run


def _cc_case(family, n, dtype=np.int64, **kw):
    def run(dev, seed):
        from algorithms import connected_components, generators
        nv, edges = getattr(generators, family)(n, seed=seed, **kw)
        edges = edges.astype(dtype)          # int32 ids take the cc_edges_*_i32 kernels
        c = connected_components.label(nv, edges, method="shiloach-vishkin", device=dev, seed=seed)
        return {"labels": c.labels}, c.launches
    return run


def _fused_step1_case(n):
    """One launch of the WRONG fused step 1 (sv1_shortcut_mark_fused) on a forest of
    trees of depth <= 2: there every vertex's grandparent is its root whatever the
    order, so the result and the counts are schedule-free and the kernel's rendering
    and counts can be checked like any other (the race needs deeper trees)."""
    def run(dev, seed):
        from algorithms.connected_components import kernels as K
        rng = np.random.default_rng(seed)
        order = rng.permutation(n)
        roots, middle, leaves = np.split(order, [n // 64, n // 8])
        D = np.empty(n, dtype=np.int32)
        D[roots] = roots
        D[middle] = roots[rng.integers(0, len(roots), len(middle))]
        D[leaves] = middle[rng.integers(0, len(middle), len(leaves))]
        Dd, Qd = dev.to_device(D), dev.zeros(n, np.int32)
        rep = dev.launch(K.sv1_shortcut_mark_fused, 264, 256, Dd, Qd, 1, n)
        return {"D": Dd.to_host(), "Q": Qd.to_host()}, [rep]
    return run


def cases(quick: bool = False) -> list:
    n = 1 << 14 if quick else 1 << 18
    small = 1 << 14 if quick else 1 << 16      # multi-round algorithms: the simulator's time
    out = [
        Case("copy_striding", _copy_case("copy_striding", n=n)),
        Case("copy_partitioning", _copy_case("copy_partitioning", n=n)),
        Case("copy_with_stride 2", _copy_case("copy_with_stride", 2, n=n)),
        Case("copy_with_stride 32", _copy_case("copy_with_stride", 32, n=n)),
        Case("wylie", _rank_case("wylie", small)),
        Case("wylie-single-block", _rank_case("wylie-single-block", 4096)),
        Case("random-splitter 64 even", _rank_case("random-splitter", n, splitters="even")),
        Case("random-splitter 48 even", _rank_case("random-splitter", n, splitters="even",
                                                   packing=48)),
        Case("random-splitter 64 random", _rank_case("random-splitter", n),
             schedule_dependent_counts=True,
             why="two threads drawing one splitter race for it; the winner, and so which "
                 "warp walks that sublist, may differ"),
        Case("random-splitter 64 random, one-block RS4", _rank_case("random-splitter", small),
             schedule_dependent_counts=True,
             why="as random-splitter 64 random; with fewer than 16,384 sublists RS4 is the "
                 "one-block rs4_rank_splitters"),
    ]
    try:
        from algorithms import connected_components  # noqa: F401
        out += [
            Case("shiloach-vishkin uniform", _cc_case("uniform_random_graph", small // 4, m=small),
                 schedule_dependent_counts=True,
                 why="hooking resolves concurrent writes arbitrarily: rounds and counts depend "
                     "on the winners; labels do not"),
            Case("shiloach-vishkin uniform int32", _cc_case("uniform_random_graph", small // 4,
                                                            dtype=np.int32, m=small),
                 schedule_dependent_counts=True,
                 why="as shiloach-vishkin uniform; int32 edges take the cc_edges_*_i32 kernels"),
            Case("sv1 fused, depth-2 forest", _fused_step1_case(n)),
        ]
    except ImportError:
        pass
    return out


def project_kernels() -> dict:
    """Every @kernel object in simgpu_apps.lessons and algorithms (name -> module)."""
    import importlib
    import pkgutil

    import algorithms
    from simgpu_apps import lessons as examples
    from simgpu.lang import Kernel
    found = {}
    for pkg in (examples, algorithms):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            mod = importlib.import_module(info.name)
            for obj in vars(mod).values():
                if isinstance(obj, Kernel):
                    found[obj.ir.name] = info.name
    return found
