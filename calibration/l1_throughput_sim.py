"""The model's side of calibration/l1_throughput.py: the probe's loop in the kernel
language (eight independent requests an iteration, written out as the CUDA source's
unrolled loop is), one block of 1,024 threads per SM, and its time on a simulated
device.  The GPU's figure is the SM clock around the loop; the model's is the kernel's
cycles less the config's fixed cost per kernel and less the same kernel with no
iterations (the region's first read, which the GPU's clock leaves out).

    python -m calibration.l1_throughput_sim OUT [JOBS]   # OUT/l1_sim.json; then
    python -m calibration.l1_throughput --report OUT   # beside the GPU's l1.json
"""
from __future__ import annotations

import datetime
import json
import pathlib
import sys

import numpy as np

from calibration.l1_throughput import ITERS, LINES, LS, PATTERNS, THREADS
from simgpu.lang import Array, blockIdx, i32, kernel, threadIdx

MASK = LINES - 1


@kernel
def l1_probe(src: Array[i32], dst: Array[i32], L: i32, pattern: i32, store: i32, iters: i32):
    lane = threadIdx.x % 32
    warp = threadIdx.x // 32
    base = blockIdx.x * LINES * 32
    word = lane
    if pattern == 0:
        word = lane // L
    if pattern == 1:
        word = (lane // L) * L
    mine = lane % L
    acc = 0
    for i in range(threadIdx.x, LINES * 32, THREADS):
        acc += src[base + i]
    for it in range(iters):
        k = it * 8
        i0 = base + ((((warp * 131 + k * 61) & MASK) + mine) & MASK) * 32 + word
        i1 = base + ((((warp * 131 + (k + 1) * 61) & MASK) + mine) & MASK) * 32 + word
        i2 = base + ((((warp * 131 + (k + 2) * 61) & MASK) + mine) & MASK) * 32 + word
        i3 = base + ((((warp * 131 + (k + 3) * 61) & MASK) + mine) & MASK) * 32 + word
        i4 = base + ((((warp * 131 + (k + 4) * 61) & MASK) + mine) & MASK) * 32 + word
        i5 = base + ((((warp * 131 + (k + 5) * 61) & MASK) + mine) & MASK) * 32 + word
        i6 = base + ((((warp * 131 + (k + 6) * 61) & MASK) + mine) & MASK) * 32 + word
        i7 = base + ((((warp * 131 + (k + 7) * 61) & MASK) + mine) & MASK) * 32 + word
        if store == 2:                  # mix_ca: loads and stores alternate
            dst[i1] = lane + it
            dst[i3] = lane + it
            dst[i5] = lane + it
            dst[i7] = lane + it
            acc += src[i0] + src[i2] + src[i4] + src[i6]
        elif store == 1:
            dst[i0] = lane + it
            dst[i1] = lane + it
            dst[i2] = lane + it
            dst[i3] = lane + it
            dst[i4] = lane + it
            dst[i5] = lane + it
            dst[i6] = lane + it
            dst[i7] = lane + it
        else:
            acc += src[i0] + src[i1] + src[i2] + src[i3] + src[i4] + src[i5] + src[i6] + src[i7]
    if acc == 2147483647:
        dst[base] = acc


def run(dev, mode: str, pattern: str, L: int, iters: int = ITERS) -> float:
    """The loop's cycles on ``dev`` (a fresh device), scaled to ITERS iterations: the
    kernel with ``iters`` iterations less the same kernel with none, both on a warm L2."""
    sms = dev.config.gpu.sm_count
    words = sms * LINES * 32
    src = dev.to_device(np.arange(words, dtype=np.int32))
    dst = dev.zeros(words, np.int32)
    args = (L, PATTERNS.index(pattern), {"ca": 0, "st": 1, "mix_ca": 2}[mode])
    dev.cache_control = "none"                  # the L2 warm, as after the GPU's warm-up
    dev.launch(l1_probe, sms, THREADS, src, dst, *args, 0)
    empty = dev.launch(l1_probe, sms, THREADS, src, dst, *args, 0).cycles
    full = dev.launch(l1_probe, sms, THREADS, src, dst, *args, iters).cycles
    return float(full - empty) * ITERS / iters


def _one(config: str, mode: str, pattern: str, L: int) -> dict:
    import simgpu
    dev = simgpu.get_device(config)
    dev.default_engine = "timed-block"
    row = {"mode": mode, "pattern": pattern, "L": L, "cycles": run(dev, mode, pattern, L, iters=4)}
    print(row, flush=True)
    return row


def run_all(out: pathlib.Path, config: str = "sim:h100", jobs: int = 1) -> None:
    """``ca`` loads, stores and the two alternating (the kernel language has one load,
    which goes through the L1 as ld.global.ca does), each shape on a fresh device, 4
    iterations scaled to ITERS, ``jobs`` shapes at a time; OUT/l1_sim.json."""
    shapes = [(config, mode, pattern, L) for mode in ("ca", "st", "mix_ca")
              for pattern in PATTERNS for L in LS]
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(jobs) as pool:
            rows = list(pool.map(_one, *zip(*shapes)))
    else:
        rows = [_one(*shape) for shape in shapes]
    out.mkdir(parents=True, exist_ok=True)
    (out / "l1_sim.json").write_text(json.dumps(
        {"device": config, "date": str(datetime.date.today()), "rows": rows}, indent=1))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: python -m calibration.l1_throughput_sim OUT [JOBS]")
    run_all(pathlib.Path(sys.argv[1]), jobs=int(sys.argv[2]) if len(sys.argv) == 3 else 1)
