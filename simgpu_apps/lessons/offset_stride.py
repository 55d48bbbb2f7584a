"""Lesson: offsetCopy and strideCopy (the CUDA C Best Practices Guide's classic pair).

Each thread copies one 4-byte word, element xid of idata to odata:

  offsetCopy   xid = blockIdx.x * blockDim.x + threadIdx.x + offset
               a warp still reads 32 consecutive words, shifted by `offset`:
               misaligned, so it straddles segment (or sector) boundaries.
  strideCopy   xid = (blockIdx.x * blockDim.x + threadIdx.x) * stride
               neighbouring lanes are `stride` words apart: the warp's words
               spread over more and more segments as the stride grows.

(NVIDIA's "stride" is this strideCopy; the paper's "striding" loop, lesson
striding, is the opposite: the coalesced grid-stride loop.)

Look at the efficiency (bytes asked for / bytes moved) and at the effective
bandwidth (bytes asked for / simulated time) against the offset and the stride,
on each GPU.  CC 1.3 (sim:gtx260) pays for a misaligned half-warp with a second,
smaller transaction: 57% at offsets 1-7 and 9-15 words, 67% at 8, 100% at 16.
Sector GPUs (sim:h100, sim:h200) move one extra 32-byte sector per warp where the
offset is not a multiple of 8 words: 80%.  Strides
cost far more: on CC 1.3 stride 16 (two lanes per 128-byte segment, neither
segment half unused) moves more than stride 32 (one lane per segment, shrunk
to 32 bytes).  A small launch is bound by latency, not bandwidth: the times
differ less than the bytes moved; try --threads 262144 (slower to simulate).

    python -m simgpu_apps.lessons.offset_stride                 # gtx260, h100, h200
    python -m simgpu_apps.lessons.offset_stride --device sim:h100 --out pictures/
    python -m simgpu_apps.lessons.offset_stride --threads 2048 --no-plot

Writes offset_stride_<gpu>.png per GPU: efficiency and effective bandwidth
against the offset and against the stride.
"""
from __future__ import annotations

import sys

import numpy as np

from simgpu.lang import Array, blockDim, blockIdx, i32, kernel, threadIdx
from simgpu_apps.lessons import _lesson

ENGINE = "timed-block"
BLOCK = 256
THREADS = 1 << 15
OFFSETS = (0, 1, 2, 4, 8, 15, 16, 32)
STRIDES = (1, 2, 4, 8, 16, 32)
DEVICES = ("sim:gtx260", "sim:h100", "sim:h200")
HEADERS = ("kernel", "offset/stride", "transactions", "bytes moved", "bytes wanted",
           "efficiency", "time ms", "GB/s")


@kernel
def offset_copy(odata: Array[i32], idata: Array[i32], offset: i32):
    xid = blockIdx.x * blockDim.x + threadIdx.x + offset
    odata[xid] = idata[xid]


@kernel
def stride_copy(odata: Array[i32], idata: Array[i32], stride: i32):
    xid = (blockIdx.x * blockDim.x + threadIdx.x) * stride
    odata[xid] = idata[xid]


def measure(device: str, kind: str, k: int, threads: int = THREADS):
    """One launch of offset_copy (kind "offset") or stride_copy ("stride") on a fresh
    device; the copy is checked.  Returns the report."""
    dev = _lesson.fresh_device(device, ENGINE)
    size = threads + max(OFFSETS) if kind == "offset" else threads * max(STRIDES)
    src = np.arange(size, dtype=np.int32)
    idata, odata = dev.to_device(src), dev.zeros(size, np.int32)
    kern = offset_copy if kind == "offset" else stride_copy
    rep = dev.launch(kern, threads // BLOCK, BLOCK, odata, idata, k)
    xid = np.arange(threads) + k if kind == "offset" else np.arange(threads) * k
    got = odata.to_host()
    if not np.array_equal(got[xid], src[xid]):
        raise RuntimeError(f"{kern.name} copied wrong data")        # a simulator bug, loudly
    return rep


def row(kind: str, k: int, rep) -> list:
    t = _lesson.traffic([rep])
    gbps = t["bytes_requested"] / (t["time_ms"] * 1e6) if t["time_ms"] else 0.0
    return [f"{kind}Copy", k, t["transactions"], t["bytes"], t["bytes_requested"],
            t["efficiency"], t["time_ms"], gbps]


def run(devices=DEVICES, out=".", plot: bool = True, threads: int = THREADS, stream=None) -> dict:
    """Measure every offset and stride on every device, print, draw.  Returns
    {device: {"offset": {k: report}, "stride": {k: report}}, "png": [paths]}."""
    stream = stream or sys.stdout
    say = lambda *a: print(*a, file=stream)
    say(_lesson.lesson_text(__doc__))
    result, pngs = {}, []
    for device in devices:
        reps = {"offset": {k: measure(device, "offset", k, threads) for k in OFFSETS},
                "stride": {k: measure(device, "stride", k, threads) for k in STRIDES}}
        result[device] = reps
        arch = _lesson.fresh_device(device, ENGINE).arch
        say(f"{device} ({arch}): {threads:,} threads in blocks of {BLOCK}, one word each, "
            f"{ENGINE} engine")
        say(_lesson.table(HEADERS, [row(kind, k, r) for kind in reps
                                    for k, r in reps[kind].items()]))
        say()
        if plot and _lesson.have_matplotlib():
            pngs.append(picture(reps, device, arch, out))
            say(f"picture written to {pngs[-1]}")
            say()
    if plot and not _lesson.have_matplotlib():
        say(_lesson.PLOT_MISSING)
    result["png"] = pngs
    return result


def picture(reps, device, arch, out):
    fig, ax = _lesson.figure(2, 2, size=(5.0, 3.6))
    for col, kind in enumerate(("offset", "stride")):
        ks = list(reps[kind])
        rows = [row(kind, k, reps[kind][k]) for k in ks]
        ax[col].plot(ks, [100 * r[5] for r in rows], "o-")
        ax[col].set_ylabel("efficiency (%)")
        ax[col + 2].plot(ks, [r[7] for r in rows], "o-", color="tab:orange")
        ax[col + 2].set_ylabel("effective bandwidth (GB/s)")
        for a in (ax[col], ax[col + 2]):
            a.set_xlabel(f"{kind} (words)")
            a.set_title(f"{kind}Copy on {device} ({arch})", fontsize=10)
            a.set_ylim(bottom=0)
            if kind == "stride":
                a.set_xscale("log", base=2)
    return _lesson.save(fig, out, f"offset_stride_{device.split(':', 1)[1].replace('/', '_')}.png")


def main(argv=None) -> int:
    p = _lesson.parser("python -m simgpu_apps.lessons.offset_stride", __doc__)
    p.set_defaults(device=None)
    p.add_argument("--threads", type=int, default=THREADS,
                   help=f"threads (one word each; a multiple of {BLOCK}, default {THREADS})")
    args = p.parse_args(argv)
    devices = DEVICES if args.device is None else (args.device,)
    for d in devices:
        _lesson.check_device(p, d)
    if args.threads < BLOCK or args.threads % BLOCK:
        p.error(f"--threads must be a positive multiple of {BLOCK}, not {args.threads}")
    run(devices, args.out, plot=not args.no_plot, threads=args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
