"""Run by tests/sim/test_timed.py in a child process (so that a hang is a failure, not a
stuck suite): a STREAM triad on sim:h100 with 8 miss entries per SM, whose warps wait
for entries while other warps' far loads (data from the other L2 half) are booked on
the link. Before commit 01bf2d0 a warp could take another's crossings as its own and
then poll, at one cycle forever, for a booking later than its data."""
import dataclasses

import numpy as np

import simgpu
from simgpu.lang import Array, blockDim, blockIdx, f32, i32, kernel, threadIdx
from simgpu.sim.device import SimDevice


@kernel
def triad(a: Array[f32], b: Array[f32], c: Array[f32], s: f32, n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        a[i] = b[i] + s * c[i]


def main() -> None:
    n = 4096
    cfg = simgpu.get_device("sim:h100").config
    cfg = dataclasses.replace(cfg, issue=dataclasses.replace(
        cfg.issue, max_outstanding_misses_per_sm=8))
    dev = SimDevice(cfg, "h100-mshr8")
    dev.cache_control = "all"
    rng = np.random.default_rng(2)
    b, c = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    a = dev.zeros(n, np.float32)
    rep = dev.launch(triad, n // 256, 256, a, dev.to_device(b), dev.to_device(c), 1.75, n,
                     engine="timed-block")
    assert np.array_equal(a.to_host(), b + np.float32(1.75) * c)
    print("cycles", rep.cycles)


if __name__ == "__main__":
    main()
