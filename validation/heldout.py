"""The H100 held-out set: cases with fixed seeds and sizes, each with a numpy reference.

A case's ``run(dev)`` launches its kernels on any device (the simulator or 'cuda') and
returns ``(outputs, reports)``: the output arrays read back, and one LaunchReport per
launch (a setup launch, such as the chase's chain_link, is reported and compared like
the others). ``reference()`` computes the same outputs with numpy alone.
``cases("full")`` are the sizes measured on the H100; ``cases("test")`` the same
kernels at sizes the tests run in a second.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import h100_kernels as K

SEED = 20261125          # every input of the set is drawn from this seed
BLOCK = 256


@dataclass(frozen=True)
class Case:
    name: str
    kernel: str                      # the kernel the case is about
    run: object                      # (device) -> (dict of outputs, [LaunchReport])
    reference: object                # () -> dict of outputs (numpy)
    what: str = ""


def _rng(salt: int):
    return np.random.default_rng([SEED, salt])


def _blocks(n, block=BLOCK):
    return -(-n // block)


# --- streaming, strided --------------------------------------------------------------

def _copy(n):
    src = _rng(1).random(n, dtype=np.float32)

    def run(dev):
        s, d = dev.to_device(src), dev.zeros(n, np.float32)
        rep = dev.launch(K.copy_f32, _blocks(n), BLOCK, s, d, n)
        return {"dst": d.to_host()}, [rep]
    return Case(f"copy_f32 n={n}", "copy_f32", run, lambda: {"dst": src.copy()},
                "one f32 per thread, read + write streams")


def _triad(n):
    rng = _rng(2)
    b, c = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    s = np.float32(1.75)

    def run(dev):
        a, bd, cd = dev.zeros(n, np.float32), dev.to_device(b), dev.to_device(c)
        rep = dev.launch(K.triad_f32, _blocks(n), BLOCK, a, bd, cd, float(s), n)
        return {"a": a.to_host()}, [rep]
    return Case(f"triad_f32 n={n}", "triad_f32", run, lambda: {"a": b + s * c},
                "STREAM triad a = b + s*c, two reads and one write")


def _scale(n):
    x = _rng(3).integers(-2**40, 2**40, n, dtype=np.int64)

    def run(dev):
        xd, y = dev.to_device(x), dev.zeros(n, np.int64)
        rep = dev.launch(K.scale_i64, _blocks(n), BLOCK, xd, y, 3, n)
        return {"y": y.to_host()}, [rep]
    return Case(f"scale_i64 n={n}", "scale_i64", run, lambda: {"y": 3 * x},
                "8-byte words, y = 3x")


def _strided(n, stride):
    src = _rng(4).integers(-2**31, 2**31, n * stride, dtype=np.int32)

    def run(dev):
        s, d = dev.to_device(src), dev.zeros(n, np.int32)
        rep = dev.launch(K.strided_read, _blocks(n), BLOCK, s, d, stride, n)
        return {"dst": d.to_host()}, [rep]
    return Case(f"strided_read stride={stride} n={n}", "strided_read", run,
                lambda: {"dst": src[::stride].copy()}, f"dst[i] = src[{stride} i]")


# --- transposes, reductions, histogram ------------------------------------------------

def _transpose(kernel, side):
    src = _rng(5).integers(-2**31, 2**31, side * side, dtype=np.int32)

    def run(dev):
        s, d = dev.to_device(src), dev.zeros(side * side, np.int32)
        rep = dev.launch(kernel, (side // K.TILE, side // K.TILE), (K.TILE, K.TILE_ROWS),
                         s, d, side, side)
        return {"dst": d.to_host()}, [rep]
    name = kernel.ir.name
    return Case(f"{name} {side}x{side}", name, run,
                lambda: {"dst": src.reshape(side, side).T.ravel().copy()},
                "int32, 32x32 tiles, blocks of 32x8 threads")


def _reduce_shared(n):
    a = _rng(6).integers(-2**31, 2**31, n, dtype=np.int32)
    per = 2 * K.REDUCE_BLOCK
    blocks = _blocks(n, per)

    def run(dev):
        ad, part = dev.to_device(a), dev.zeros(blocks, np.int64)
        rep = dev.launch(K.reduce_shared, blocks, K.REDUCE_BLOCK, ad, part, n)
        return {"partial": part.to_host()}, [rep]

    def ref():
        padded = np.zeros(blocks * per, np.int64)
        padded[:n] = a
        return {"partial": padded.reshape(blocks, per).sum(axis=1)}
    return Case(f"reduce_shared n={n}", "reduce_shared", run, ref,
                "block sums: a tree in shared memory")


def _reduce_warp(n, grid):
    a = _rng(7).integers(-2**31, 2**31, n, dtype=np.int32)

    def run(dev):
        ad, tot = dev.to_device(a), dev.zeros(1, np.int64)
        rep = dev.launch(K.reduce_warp_atomic, grid, BLOCK, ad, tot, n)
        return {"total": tot.to_host()}, [rep]
    return Case(f"reduce_warp_atomic n={n}", "reduce_warp_atomic", run,
                lambda: {"total": np.array([a.astype(np.int64).sum()])},
                "grid-stride sums, warp shuffles, one global atomic per warp")


def _histogram(n):
    keys = _rng(8).integers(0, 2**31, n, dtype=np.int32)

    def run(dev):
        kd, h = dev.to_device(keys), dev.zeros(K.BINS, np.int32)
        rep = dev.launch(K.histogram_atomic, _blocks(n), BLOCK, kd, h, n)
        return {"hist": h.to_host()}, [rep]
    return Case(f"histogram_atomic n={n}", "histogram_atomic", run,
                lambda: {"hist": np.bincount(keys & (K.BINS - 1), minlength=K.BINS)
                         .astype(np.int32)},
                f"global atomics into {K.BINS} bins (result unused: reductions)")


# --- stencils ----------------------------------------------------------------------------

def _stencil_1d(n):
    src = _rng(9).integers(-2**20, 2**20, n, dtype=np.int32)

    def run(dev):
        s, d = dev.to_device(src), dev.zeros(n, np.int32)
        rep = dev.launch(K.stencil_1d, _blocks(n), BLOCK, s, d, n)
        return {"dst": d.to_host()}, [rep]

    def ref():
        out = src.copy()
        out[2:-2] = src[:-4] + src[1:-3] + src[2:-2] + src[3:-1] + src[4:]
        return {"dst": out}
    return Case(f"stencil_1d n={n}", "stencil_1d", run, ref, "5-point sum, int32")


def _stencil_2d(side):
    src = _rng(10).random(side * side, dtype=np.float32)

    def run(dev):
        s, d = dev.to_device(src), dev.zeros(side * side, np.float32)
        rep = dev.launch(K.stencil_2d, (side // 32, side // 8), (32, 8), s, d, side, side)
        return {"dst": d.to_host()}, [rep]

    def ref():
        g = src.reshape(side, side)
        out = g.copy()
        q = np.float32(0.25)
        out[1:-1, 1:-1] = q * (((g[1:-1, :-2] + g[1:-1, 2:]) + g[:-2, 1:-1]) + g[2:, 1:-1])
        return {"dst": out.ravel()}
    return Case(f"stencil_2d {side}x{side}", "stencil_2d", run, ref,
                "5-point Jacobi, float32, blocks of 32x8")


# --- sparse and irregular ------------------------------------------------------------------

def _random_csr(rng, rows, cols, max_len):
    lengths = rng.integers(0, max_len + 1, rows)
    row_ptr = np.zeros(rows + 1, np.int32)
    np.cumsum(lengths, out=row_ptr[1:])
    col = rng.integers(0, cols, int(row_ptr[-1]), dtype=np.int32)
    return row_ptr, col


def _spmv(rows):
    rng = _rng(11)
    row_ptr, col = _random_csr(rng, rows, rows, 15)
    val = rng.random(len(col), dtype=np.float32)
    x = rng.random(rows, dtype=np.float32)

    def run(dev):
        args = [dev.to_device(v) for v in (row_ptr, col, val, x)]
        y = dev.zeros(rows, np.float32)
        rep = dev.launch(K.spmv_csr, _blocks(rows), BLOCK, *args, y, rows)
        return {"y": y.to_host()}, [rep]

    def ref():
        # the kernel's order: acc += val*x, one product after the other, in float32
        prod = val * x[col]
        lengths = np.diff(row_ptr)
        acc = np.zeros(rows, np.float32)
        for j in range(int(lengths.max(initial=0))):
            r = np.nonzero(lengths > j)[0]
            acc[r] += prod[row_ptr[r] + j]
        return {"y": acc}
    return Case(f"spmv_csr rows={rows}", "spmv_csr", run, ref,
                "scalar CSR, one thread per row, 0-15 random columns per row")


def _bfs(nv, nf):
    rng = _rng(12)
    row_ptr, col = _random_csr(rng, nv, nv, 15)
    frontier = rng.choice(nv, nf, replace=False).astype(np.int32)
    visited = (rng.random(nv) < 0.3).astype(np.int32)
    visited[frontier] = 1

    def run(dev):
        args = [dev.to_device(v) for v in (frontier, row_ptr, col, visited)]
        flag = dev.zeros(nv, np.int32)
        rep = dev.launch(K.bfs_expand, _blocks(nf), BLOCK, *args, flag, nf)
        return {"next_flag": flag.to_host()}, [rep]

    def ref():
        flag = np.zeros(nv, np.int32)
        for v in frontier:
            nb = col[row_ptr[v]:row_ptr[v + 1]]
            flag[nb[visited[nb] == 0]] = 1
        return {"next_flag": flag}
    return Case(f"bfs_expand nv={nv} frontier={nf}", "bfs_expand", run, ref,
                "one top-down frontier step on a random graph (0-15 neighbours)")


def _chase(footprint, steps):
    n = footprint // 8
    rng = _rng(13)
    draw = rng.integers(0, n, 2 * steps + 64)
    _, first = np.unique(draw, return_index=True)
    pos = draw[np.sort(first)][:steps].astype(np.int64)      # distinct, in drawn order

    def run(dev):
        nxt = dev.zeros(n, np.int64)
        p = dev.to_device(pos)
        setup = dev.launch(K.chain_link, _blocks(steps), BLOCK, nxt, p, steps)
        out = dev.to_device(np.array([pos[0], 0], np.int64))
        rep = dev.launch(K.chase_i64, 1, 1, nxt, out, steps)
        return {"out": out.to_host()}, [setup, rep]
    label = f"{footprint >> 30} GiB" if footprint >= 1 << 30 else f"{footprint >> 20} MiB" \
        if footprint >= 1 << 20 else f"{footprint >> 10} KiB"
    return Case(f"chase_i64 {label} steps={steps}", "chase_i64", run,
                lambda: {"out": np.array([pos[0], pos.sum()], np.int64)},
                f"one thread, {steps} dependent loads at random over {label}")


def _gather_scatter(n):
    rng = _rng(14)
    src = rng.integers(-2**20, 2**20, n, dtype=np.int32)
    a, b = (rng.integers(0, n, n, dtype=np.int32) for _ in range(2))
    perm = rng.permutation(n).astype(np.int32)

    def run(dev):
        args = [dev.to_device(v) for v in (src, a, b, perm)]
        dst = dev.zeros(n, np.int32)
        rep = dev.launch(K.gather_scatter, _blocks(n), BLOCK, *args, dst, n)
        return {"dst": dst.to_host()}, [rep]

    def ref():
        dst = np.zeros(n, np.int32)
        dst[perm] = src[a] + src[b]
        return {"dst": dst}
    return Case(f"gather_scatter n={n}", "gather_scatter", run, ref,
                "dst[perm[i]] = src[a[i]] + src[b[i]], uniform random indices")


# --- the set ----------------------------------------------------------------------------------

FULL_CHASE = (1 << 20, 32 << 20, 1 << 30, 8 << 30, 40 << 30)   # 1 MiB ... 40 GiB


def cases(scale: str = "full") -> list:
    """The held-out cases: "full" (the sizes measured on the H100) or "test" (tiny)."""
    if scale not in ("full", "test"):
        raise ValueError(f"scale must be 'full' or 'test', not {scale!r}")
    full = scale == "full"
    n = 1 << 22 if full else 1 << 12
    side = 2048 if full else 64
    out = [_copy(n), _triad(n), _scale(n // 2)]
    out += [_strided(n // 4, s) for s in (2, 8, 32)]
    out += [_transpose(K.transpose_naive, side), _transpose(K.transpose_tiled, side)]
    out += [_reduce_shared(n), _reduce_warp(n, 1056 if full else 4), _histogram(n)]
    out += [_stencil_1d(n), _stencil_2d(side)]
    out += [_spmv(1 << 18 if full else 1 << 10), _bfs(1 << 20 if full else 1 << 11,
                                                      1 << 14 if full else 1 << 6)]
    footprints = FULL_CHASE if full else (1 << 16, 1 << 20)
    out += [_chase(f, 2048 if full else 64) for f in footprints]
    out += [_gather_scatter(n)]
    return out
