"""Warp intrinsics on the simulator: every engine against a numpy model of PTX's
shfl.sync / vote.sync, and the errors where CUDA leaves the result undefined."""
import numpy as np
import pytest

import simgpu
from simgpu.lang import (FULL_MASK, Array, KernelRuntimeError, KernelSyntaxError, KernelTypeError,
                         i32, kernel, shfl_down_sync, shfl_sync, syncwarp, threadIdx, u32,
                         activemask, ballot_sync)

from ..cuda import kernels_for_render as K

ENGINES = ["lockstep", "warps", "timed", "timed-block"]


def expected_warp_intrinsics(xs, ds, us):
    """The outputs of K.warp_intrinsics, written from the PTX ISA's definitions."""
    w = len(xs)
    out = np.zeros(10 * w, np.int64)
    votes = np.zeros(6 * w, np.uint64)
    dout, uout = np.zeros(w), np.zeros(w, np.uint64)
    for base in range(0, w, 32):
        v, d, u = xs[base:base + 32], ds[base:base + 32], us[base:base + 32]

        def shfl(mode, b, width, vals):
            res = []
            for lane in range(32):
                bval = b & 31
                lo = lane & ~(width - 1)
                hi = lo + width - 1
                j = {"idx": lo | (bval & (width - 1)), "up": lane - bval, "down": lane + bval,
                     "bfly": lane ^ bval}[mode]
                ok = j >= lo if mode == "up" else j <= hi
                res.append(vals[j] if ok else vals[lane])
            return res

        lanes = range(32)
        rows = [[shfl("idx", (l * 7 + 3) % 32, 32, v)[l] for l in lanes],
                [shfl("idx", l + 5, 8, v)[l] for l in lanes],
                shfl("idx", -1, 32, v), shfl("up", 3, 32, v), shfl("up", 2, 4, v),
                shfl("down", 5, 16, v), shfl("down", 33, 32, v), shfl("bfly", 17, 16, v),
                shfl("bfly", 1, 32, [np.int8(x) for x in v])]
        for k, row in enumerate(rows):
            out[10 * base + k: 10 * (base + 32): 10] = row
        dout[base:base + 32] = shfl("bfly", 3, 32, d)
        uout[base:base + 32] = shfl("down", 1, 32, u)
        bits = lambda pred: sum(1 << l for l in lanes if pred[l])
        c_rem = np.fmod(v, 3)
        votes[6 * base: 6 * (base + 32): 6] = bits(v > 0)
        votes[6 * base + 1: 6 * (base + 32): 6] = int((v > 1000).any())
        votes[6 * base + 2: 6 * (base + 32): 6] = int((v > -1000).all())
        votes[6 * base + 3: 6 * (base + 32): 6] = bits(c_rem != 0)
        for l in range(12):
            votes[6 * (base + l) + 4] = bits([np.fmod(v[k], 2) == 0 and k < 12 for k in lanes])
            out[10 * (base + l) + 9] = v[(l + 1) % 12]
            votes[6 * (base + l) + 5] = int((v[:12] < 2000).all())
    return out, dout, uout, votes


@pytest.mark.parametrize("engine", ENGINES)
def test_every_intrinsic_matches_the_ptx_model(engine):
    rng = np.random.default_rng(7)
    w = 128
    xs = rng.integers(-2000, 2000, w, dtype=np.int32)
    ds = rng.standard_normal(w)
    us = rng.integers(0, 2**64 - 1, w, dtype=np.uint64, endpoint=True)
    dev = simgpu.get_device("sim:h100")
    args = [dev.to_device(a) for a in (xs, ds, us)] + [
        dev.zeros(10 * w, np.int32), dev.zeros(w, np.float64), dev.zeros(w, np.uint64),
        dev.zeros(6 * w, np.uint32)]
    dev.launch(K.warp_intrinsics, 2, 64, *args, engine=engine)
    out, dout, uout, votes = expected_warp_intrinsics(xs, ds, us)
    assert np.array_equal(args[3].to_host(), out)
    assert np.array_equal(args[4].to_host(), dout)
    assert np.array_equal(args[5].to_host(), uout)
    assert np.array_equal(args[6].to_host(), votes)


@kernel
def warp_sum(a: Array[i32], out: Array[i32]):
    t = threadIdx.x
    v = a[t]
    offset = 16
    while offset > 0:
        v += shfl_down_sync(FULL_MASK, v, offset)
        offset = offset // 2
    if t % 32 == 0:
        out[t // 32] = v


def test_a_shuffle_reduction_sums_each_warp():
    dev = simgpu.get_device("sim:gtx260")
    a = np.arange(96, dtype=np.int32) * 3 - 50
    out = dev.zeros(3, np.int32)
    dev.launch(warp_sum, 1, 96, dev.to_device(a), out)
    assert out.to_host().tolist() == a.reshape(3, 32).sum(axis=1).tolist()


@kernel
def full_mask_in_a_branch(out: Array[i32]):
    t = threadIdx.x
    if t < 16:
        out[t] = shfl_sync(FULL_MASK, t, 0)


@kernel
def own_bit_missing(out: Array[i32]):
    t = threadIdx.x
    out[t] = shfl_sync(u32(1), t, 0)


@kernel
def reads_a_lane_not_taking_part(out: Array[i32]):
    t = threadIdx.x
    if t < 16:
        out[t] = shfl_sync(activemask(), t, t + 16)


@kernel
def syncwarp_in_a_branch(out: Array[i32]):
    t = threadIdx.x
    if t < 16:
        syncwarp()
    out[t] = i32(ballot_sync(activemask(), t > 3))


@pytest.mark.parametrize("engine", ["lockstep", "warps"])
@pytest.mark.parametrize("kern, block, message", [
    (full_mask_in_a_branch, 32, r"shfl_sync: lanes 16, 17, .* are named in the mask but do not "
                                r"execute this call here"),
    (own_bit_missing, 32, r"the calling lane's own bit is not set in the mask"),
    (reads_a_lane_not_taking_part, 32, r"shfl_sync reads lane 16, which does not take part"),
    (syncwarp_in_a_branch, 32, r"syncwarp: lanes 16, .* do not execute this call here"),
])
def test_undefined_uses_are_errors_at_the_line(engine, kern, block, message):
    dev = simgpu.get_device("sim:h100")
    with pytest.raises(KernelRuntimeError, match=message) as info:
        dev.launch(kern, 1, block, dev.zeros(32, np.int32), engine=engine)
    assert "block (0, 0, 0), thread" in str(info.value)


def test_a_partial_warp_may_use_activemask_and_exited_lanes_do_not_count():
    @kernel
    def partial(out: Array[i32], n: i32):
        t = threadIdx.x
        if t >= n:
            return
        out[t] = i32(ballot_sync(FULL_MASK, t % 2 == 0))
    dev = simgpu.get_device("sim:h100")
    out = dev.zeros(32, np.int32)
    dev.launch(partial, 1, 32, out, 10)
    assert out.to_host()[:10].tolist() == [0x155] * 10
    dev.launch(full_mask_in_a_branch, 1, 8, out)      # lanes past the block's end: not named
    assert out.to_host()[:8].tolist() == [0] * 8


@pytest.mark.parametrize("src, error, message", [
    ("shfl_sync(FULL_MASK, t, 1, 3)", KernelTypeError, "width must be a power of two"),
    ("shfl_sync(FULL_MASK, t)", KernelSyntaxError, "takes 3 or 4 arguments"),
    ("shfl_down_sync(FULL_MASK, t, 1.5)", KernelTypeError, "delta must be an integer"),
    ("ballot_sync(1.0, t > 0)", KernelTypeError, "warp mask must be an integer"),
    ("activemask(1)", KernelSyntaxError, "takes no arguments"),
])
def test_bad_calls_are_refused_at_compile_time(tmp_path, src, error, message):
    path = tmp_path / "bad_warp.py"
    path.write_text("from simgpu.lang import *\n\n@kernel\ndef bad(out: Array[i32]):\n"
                    f"    t = threadIdx.x\n    out[t] = i32({src})\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("bad_warp", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(error, match=message):
        mod.bad.ir
