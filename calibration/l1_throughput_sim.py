"""The model's side of calibration/l1_throughput.py: the probe's loop in the kernel
language (eight independent requests an iteration, written out as the CUDA source's
unrolled loop is), one block of 1,024 threads per SM, and its time on a simulated
device.  The GPU's figure is the SM clock around the loop; the model's is the kernel's
cycles less the config's fixed cost per kernel and less the same kernel with no
iterations (the region's first read, which the GPU's clock leaves out)."""
from __future__ import annotations

import numpy as np

from calibration.l1_throughput import ITERS, LINES, PATTERNS, THREADS
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
        if store == 1:
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
    args = (L, PATTERNS.index(pattern), int(mode == "st"))
    dev.cache_control = "none"                  # the L2 warm, as after the GPU's warm-up
    dev.launch(l1_probe, sms, THREADS, src, dst, *args, 0)
    empty = dev.launch(l1_probe, sms, THREADS, src, dst, *args, 0).cycles
    full = dev.launch(l1_probe, sms, THREADS, src, dst, *args, iters).cycles
    return float(full - empty) * ITERS / iters
