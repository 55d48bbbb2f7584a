"""Probe the two halves of a Hopper L2: which SMs share a half, and what a hit in the
far half costs.  Needs a GPU and CuPy: ``python -m calibration.l2_halves --out F.md``.

Hopper's (and Ampere's) L2 is two partitions joined by a crossbar; each caches the
data that the SMs beside it read.  This probe shows it with one thread chasing a
random cycle of nodes through the L2 only (``ld.global.cg``, no L1), each load timed
with clock64():

* **self**: SM j warms the nodes, then SM j chases them: every load is a hit in
  SM j's own half;
* **after SM 0**: SM 0 warms them, then SM j chases.  If SM j shares SM 0's half
  this is the same as *self*; if not, a node's load hits SM j's half only when the
  node's home is there, and otherwise crosses to the far half (or comes from DRAM).

Between cases the L2 is flushed by writing and reading a 256 MiB buffer.  Two
launches per case: the warming one and the timed one, each run by the first block
that lands on the chosen SM (``%smid``), all others exiting at once.  The kernel
is raw CUDA because ``%smid`` is no part of simgpu's kernel language: this measures
the hardware the model is calibrated against, not a kernel of the project.
"""
from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import subprocess

import numpy as np

SOURCE = r"""
extern "C" __global__ void chase(const int* __restrict__ nxt, int steps, int target,
                                 int* claim, long long* lat, int* sink) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (smid != (unsigned)target || threadIdx.x != 0) return;
    if (atomicCAS(claim, 0, 1) != 0) return;         // the first block on that SM only
    __shared__ int seen[2048];
    __shared__ long long took[2048];
    int j = 0;
    for (int k = 0; k < steps; k++) {
        long long t0 = clock64();
        j = __ldcg(nxt + j);
        seen[k & 2047] = j;                           // uses j: the clock below waits for it
        long long t1 = clock64();
        took[k & 2047] = t1 - t0;
    }
    if (lat != nullptr)
        for (int k = 0; k < steps && k < 2048; k++) lat[k] = took[k];
    sink[0] = j + seen[(steps - 1) & 2047];
}
"""


class Chaser:
    """The chase kernel on the GPU: ``run(sm)`` has SM ``sm`` chase the cycle (timed, or
    only warming the L2), ``flush()`` empties the L2."""

    def __init__(self, nodes: int, steps: int):
        import cupy as cp
        self.cp, self.steps = cp, steps
        self.fn = cp.RawModule(code=SOURCE, options=("-std=c++17",)).get_function("chase")
        self.sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
        order = np.random.default_rng(0).permutation(nodes).astype(np.int32)
        nxt = np.empty(nodes, np.int32)
        nxt[order] = np.roll(order, -1)
        self.nxt = cp.asarray(nxt)
        self.claim, self.sink = cp.zeros(1, cp.int32), cp.zeros(1, cp.int32)
        self.lat = cp.zeros(steps, cp.int64)
        self.flush_buf = cp.zeros(64 << 20, cp.int32)     # 256 MiB, four times the L2

    def run(self, target: int, record: bool):
        cp = self.cp
        self.claim.fill(0)
        self.fn((8 * self.sms,), (32,), (self.nxt, np.int32(self.steps), np.int32(target),
                                         self.claim, self.lat if record else np.intp(0),
                                         self.sink))
        cp.cuda.runtime.deviceSynchronize()
        if int(self.claim.get()[0]) != 1:
            raise RuntimeError(f"no block ran on SM {target}")
        return cp.asnumpy(self.lat).copy() if record else None

    def flush(self):
        self.flush_buf.fill(1)
        int(self.flush_buf.sum())


def far_share(after_sm0, own_median) -> float:
    """The share of an SM's loads, after SM 0 read the nodes, over its own near-hit
    latency + 60 cycles: 0 in SM 0's half, about 0.5 in the other (the far-homed half)."""
    return float(np.mean(np.asarray(after_sm0) > own_median + 60))


def sm_halves(nodes: int = 1 << 20, steps: int = 256) -> tuple[list, list]:
    """(SMs sharing SM 0's half of the L2, the others), measured on this GPU: a chip's
    SMs fall in the halves as its floorsweeping left them, so another H100 may differ."""
    c = Chaser(nodes, steps)
    same, other = [], []
    for j in range(c.sms):
        c.flush(); c.run(j, False); own = c.run(j, True)
        c.flush(); c.run(0, False); cross = c.run(j, True)
        (same if far_share(cross, np.median(own)) < 0.25 else other).append(j)
    return same, other


def main(argv=None) -> int:
    import cupy as cp

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1 << 22, help="nodes in the cycle (int32 each)")
    ap.add_argument("--steps", type=int, default=2048, help="dependent loads per chase (at most 2048)")
    ap.add_argument("--out", type=pathlib.Path, default=pathlib.Path("l2-halves.md"))
    args = ap.parse_args(argv)

    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    chaser = Chaser(args.nodes, args.steps)
    sms, run, flushed = chaser.sms, chaser.run, chaser.flush

    rows = []
    for j in range(sms):
        flushed(); run(j, False); own = run(j, True)          # warmed by SM j itself
        flushed(); run(0, False); cross = run(j, True)        # warmed by SM 0
        flushed(); cold = run(j, True)                        # nothing warmed: DRAM
        rows.append({"sm": j, "self": own.tolist(), "after_sm0": cross.tolist(),
                     "cold": cold.tolist()})
        print(f"SM {j:3d}: self {np.median(own):6.0f}  after SM 0 {np.median(cross):6.0f} "
              f"(mean {cross.mean():6.0f})  cold {np.median(cold):6.0f} cycles", flush=True)

    self_med = np.array([np.median(r["self"]) for r in rows])
    near_level = np.median(self_med)
    shares = np.array([far_share(r["after_sm0"], med) for r, med in zip(rows, self_med)])
    same_half = shares < 0.25
    far_sms = [r for r, s in zip(rows, same_half) if not s]
    far_loads = np.concatenate([r["after_sm0"] for r in far_sms]) if far_sms else np.array([])
    cold = np.concatenate([r["cold"] for r in rows])
    hist_edges = list(range(200, 1400, 20))
    hist = np.histogram(far_loads, bins=hist_edges)[0].tolist() if far_loads.size else []
    cold_hist = np.histogram(cold, bins=hist_edges)[0].tolist()
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    summary = {
        "device": name, "smi": smi, "date": datetime.date.today().isoformat(),
        "nodes": args.nodes, "steps": args.steps,
        "self_median_cycles": float(near_level),
        "same_half_as_sm0": [int(r["sm"]) for r, s in zip(rows, same_half) if s],
        "other_half": [int(r["sm"]) for r in far_sms],
        "other_half_median": float(np.median(far_loads)) if far_loads.size else None,
        "other_half_histogram": {"edges": hist_edges, "counts": hist},
        "cold_median_cycles": float(np.median(cold)),
        "cold_histogram": cold_hist,
    }
    args.out.with_suffix(".json").write_text(json.dumps({"summary": summary, "rows": rows}))
    lines = [f"L2 halves probe: `python -m calibration.l2_halves`, {name}, {summary['date']} "
             f"({smi}); {args.nodes} nodes ({4 * args.nodes >> 20} MiB), {args.steps} "
             "dependent `ld.global.cg` loads per chase, clock64() cycles per load "
             "(+ a shared-memory store).", "",
             "| SM | self median | after SM 0: median | mean | loads over self + 60 | cold median |",
             "|---:|---:|---:|---:|---:|---:|"]
    for r, med, share in zip(rows, self_med, shares):
        c = np.array(r["after_sm0"])
        lines.append(f"| {r['sm']} | {med:.0f} | {np.median(c):.0f} | {c.mean():.0f} | "
                     f"{share:.2f} | {np.median(r['cold']):.0f} |")
    lines += ["", "```", json.dumps(summary, indent=1), "```"]
    args.out.write_text("\n".join(lines) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
