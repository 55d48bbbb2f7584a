"""How many L2 slices share a small region's atomics on the H100: a histogram's time
against the size and place of its bins.

The model spreads addresses over the L2 slices in 256-byte pieces, round robin
(``memory.partition_interleave_bytes``; the GPU's hash is unpublished), so a 1 KiB
region is four slices. Atomics are done at their sector's slice, one sector per
``unit_cycles_per_operation`` (1.45 cycles, CAL), so a histogram whose bins all lie in
a few slices runs at a rate set by how many. This probe times (CUDA events, median of
5) ``atomicAdd(&hist[key & (bins - 1)], 1)`` over 2^22 random keys for bins = 16 ..
65,536 (64 B .. 256 KiB of int32 bins), the bins at a 2 MiB-aligned place and at
offsets 256 B .. 3 KiB from it. The rate per slice being fixed, time x slices is
constant: the region's slice count follows from the time, relative to a region large
enough to use every slice.

    python -m calibration.l2_slice_map --gpu OUT      # GPU, CuPy
    python -m calibration.l2_slice_map --report OUT [--md F.md]
"""
from __future__ import annotations

import json
import pathlib
import sys

import numpy as np

from simgpu.configs import load_config
from simgpu_apps import table_out

from . import kernel_counters, probe_cli

N = 1 << 22
BINS = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 65536]
OFFSETS = [0, 256, 512, 1024, 2048, 3072]          # bytes past a 2 MiB boundary
SOURCE = r"""
extern "C" __global__ void hist(const int *keys, int *h, int mask, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&h[keys[i] & mask], 1);
}
"""


def random_keys() -> np.ndarray:
    """The 2^22 keys every histogram of the probe adds up (its GPU run and its report)."""
    return np.random.default_rng(1).integers(0, 2**31, N, dtype=np.int32)


def sectors_per_request(keys: np.ndarray, bins: int) -> float:
    """Sectors per warp request by the round rule (atomic-sectors-h100.md): per sector,
    the most lanes on one word of it."""
    b = (keys & (bins - 1)).reshape(-1, 32).astype(np.int64)
    words = max(bins, 8)
    key = (np.arange(b.shape[0])[:, None] * words + b).ravel()
    word, lanes = np.unique(key, return_counts=True)         # lanes on each (warp, word)
    sector = word // 8                                        # (words is a multiple of 8)
    cut = np.flatnonzero(np.diff(sector)) + 1
    return float(np.maximum.reduceat(lanes, np.r_[0, cut]).sum() / b.shape[0])


def child(out: pathlib.Path) -> None:
    import cupy as cp
    kern = cp.RawKernel(SOURCE, "hist")
    keys_h = random_keys()
    keys = cp.asarray(keys_h)
    raw = cp.zeros((8 << 20) // 4, dtype=cp.int32)
    start = (-raw.data.ptr) % (2 << 20) // 4
    rows = []
    for off in OFFSETS:
        for bins in BINS:
            if off and bins > 1024:
                continue
            h = raw[start + off // 4: start + off // 4 + bins]
            times = []
            for _ in range(6):
                h.fill(0)
                a, b = cp.cuda.Event(), cp.cuda.Event()
                a.record()
                kern(((N + 255) // 256,), (256,), (keys, h, np.int32(bins - 1), np.int32(N)))
                b.record()
                b.synchronize()
                times.append(cp.cuda.get_elapsed_time(a, b))
            ok = bool((cp.asnumpy(h) == np.bincount(keys_h & (bins - 1), minlength=bins)).all())
            rows.append({"offset": off, "bins": bins, "ms": sorted(times[1:])[2], "ok": ok})
            print(rows[-1], flush=True)
    (out / "rows.json").write_text(json.dumps(rows))


def gpu(out: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    kernel_counters.describe_gpu(out)
    child(out)


def report(out: pathlib.Path) -> str:
    table_out.need(out, "rows.json", "gpu.json")
    meta = json.loads((out / "gpu.json").read_text())
    rows = json.loads((out / "rows.json").read_text())
    keys = random_keys()
    spr = {b: sectors_per_request(keys, b) for b in {r["bins"] for r in rows}}
    # a slice does one sector's atomic per unit_cycles_per_operation (h100.toml, CAL)
    cfg = load_config("h100")
    cycles, ghz = cfg.atomics.unit_cycles_per_operation, cfg.gpu.core_clock_mhz / 1e3
    lines = [f"Histogram atomics against the bins' size and place: {meta['device']}, "
             f"CUDA events (median of 5 after one warm-up), 2^22 random keys, "
             f"`python -m calibration.l2_slice_map`, {meta['date']}.", "",
             "| offset B | bins | bytes | sectors per request (round rule) | ms | "
             f"ns per sector | slices at {cycles:g} cycles ({ghz:g} GHz) a sector | result ok |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        sectors = spr[r["bins"]] * N / 32
        per = r["ms"] * 1e6 / sectors
        slices = cycles / ghz / per
        lines.append(f"| {r['offset']} | {r['bins']} | {4 * r['bins']} | {spr[r['bins']]:.2f} | "
                     f"{r['ms']:.3f} | {per:.3f} | {slices:.2f} | {r['ok']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    return probe_cli.probe_main(
        __doc__, argv,
        gpu=probe_cli.action("run the probe, files to here", lambda a: gpu(a.gpu)),
        report=probe_cli.table("folder of a --gpu run", lambda a: report(a.report)),
        md=probe_cli.setting("with --report: also write the table here"))


if __name__ == "__main__":
    sys.exit(main())
