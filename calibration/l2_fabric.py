"""What crosses between the two halves of the H100's L2, and how fast: each half's SMs
read or write on their own, or together, with the data placed in the near or the far
half.  Needs a GPU and CuPy, and calibration/l2_halves.py's JSON from the same GPU
(which SMs sit beside which half).

One kernel, launched as one full wave (8 blocks of 256 threads on every SM); a block
looks up its SM's half (``%smid``) and does that half's part: nothing, a streaming
read of a buffer, a write of one, or a copy, 16 B per thread and step over a buffer's
4 KiB chunks (chunk ``w + k W`` for the half's ``W`` blocks).  Each block stamps the
global timer when it starts and ends; a half's time is its blocks' first start to
last end.  Between cases the L2 is flushed (a 256 MiB buffer written and read) and
the buffers put where the case wants them by a preparing launch:

* read **near**: the half's own SMs read the buffer first (every sector then in their
  half); read **far**: the other half's SMs read it first (a sector whose home is the
  reader's half is there too, the other half of the sectors only in the far half);
* each half alone, then both at once, the other half doing nothing, reading its own
  near buffer, or writing (its stores, half of them homed in the first half's side,
  cross the way the far data comes back).

The kernel is raw CUDA (``%smid``, the global timer): it measures the hardware the
model is calibrated against, not a kernel of the project.

    python -m calibration.l2_halves --out OUT/l2-halves.md       # the SMs' halves
    python -m calibration.l2_fabric --child OUT --groups OUT/l2-halves.json
    python -m calibration.l2_fabric --report OUT [--md F.md]
    python -m calibration.l2_fabric --sim [DEVICE] [--mib 8] [--md F.md]   # the model's side
"""
from __future__ import annotations

import datetime
import json
import pathlib
import sys

import numpy as np

from calibration import l2_chunks, probe_cli  # (l2_chunks: aligned buffers, the SM halves)
from calibration.l2_fabric_cases import CASES, COPY, MIB, REPEATS, SLOTS, launches
from simgpu_apps import table_out

SOURCE = r"""
__device__ __forceinline__ unsigned long long gtime() {
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory"); return t;
}
// mode: 0 nothing, 1 read src, 2 write dst, 3 copy src -> dst; per half (index 0, 1)
extern "C" __global__ void __launch_bounds__(256, 8)
halves(const int4* src0, int4* dst0, int mode0, const int4* src1, int4* dst1, int mode1,
       int chunks, const int* __restrict__ half_of_sm, int* ticket,
       unsigned long long* span, int* sink) {
    unsigned smid; asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    const int h = half_of_sm[smid];
    const int mode = h ? mode1 : mode0;
    __shared__ int worker;
    if (threadIdx.x == 0) worker = mode ? atomicAdd(ticket + h, 1) : -1;
    __syncthreads();
    if (worker < 0) return;
    const int4* src = h ? src1 : src0;
    int4* dst = h ? dst1 : dst0;
    const int workers = ticket[2 + h];             // the half's blocks, counted beforehand
    const unsigned long long t0 = gtime();
    int acc = 0;
    for (int c = worker; c < chunks; c += workers) {
        const size_t i = (size_t)c * 256 + threadIdx.x;
        if (mode == 1) { int4 v = __ldcg(src + i); acc ^= v.x ^ v.y ^ v.z ^ v.w; }
        else if (mode == 2) dst[i] = make_int4(c, threadIdx.x, 0, 1);
        else dst[i] = __ldcg(src + i);
    }
    if (acc == 0x7fffffff) sink[0] = acc;          // keeps the reads
    __syncthreads();
    if (threadIdx.x == 0) {
        span[3 * blockIdx.x] = t0;
        span[3 * blockIdx.x + 1] = gtime();
        span[3 * blockIdx.x + 2] = h + 1;
    }
}
"""
def child(out: pathlib.Path, groups: pathlib.Path, mib: int = MIB) -> None:
    import cupy as cp
    fn = cp.RawModule(code=SOURCE, options=("-std=c++17",)).get_function("halves")
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    halves = l2_chunks.sm_halves(groups)
    half_of_sm = cp.asarray(np.array([halves[s] for s in range(sms)], np.int32))
    per_half = [sum(1 for s in range(sms) if halves[s] == h) * SLOTS for h in (0, 1)]
    bufs = {b: l2_chunks.aligned(cp, mib << 20) for b in "XYZ"}   # int32, on 2 MiB pages
    for b in bufs.values():
        b.fill(1)
    chunks = (mib << 20) // 4096
    flush = cp.zeros(64 << 20, cp.int32)
    ticket = cp.zeros(4, cp.int32)
    span = cp.zeros(3 * sms * SLOTS, cp.uint64)
    sink = cp.zeros(1, cp.int32)

    def launch(modes):
        """modes: [(mode, src, dst)] for half 0 and half 1 -> (start, end, half) per block."""
        ticket.fill(0)
        ticket[2:] = cp.asarray(np.array(per_half, np.int32))
        span.fill(0)
        (m0, s0, d0), (m1, s1, d1) = modes
        fn((sms * SLOTS,), (256,), (bufs[s0], bufs[d0], np.int32(m0), bufs[s1], bufs[d1], np.int32(m1),
                                     np.int32(chunks), half_of_sm, ticket, span, sink))
        cp.cuda.Device().synchronize()
        got = ticket[:2].get().tolist()
        want = [per_half[0] if m0 else 0, per_half[1] if m1 else 0]
        if got != want:
            raise RuntimeError(f"blocks per half {got}, expected {want}: the blocks did not "
                               f"land {SLOTS} to an SM")
        st = span.get().reshape(-1, 3)
        return st[st[:, 2] > 0]

    rows = []
    for name, mine, other, prep in CASES:
        for g in (0, 1):
            preps, measured = launches(mine, other, prep, g)
            for r in range(REPEATS):
                flush.fill(1)
                int(flush.sum())                         # the L2 holds the flush buffer
                for modes in preps:
                    launch(modes)
                st = launch(measured)
                rows.append({"case": name, "g": g, "repeat": r,
                             "blocks": st.astype(np.int64).tolist()})
    (out / "fabric.json").write_text(json.dumps({"per_half": per_half, "mib": mib, "rows": rows}))


def report(out: pathlib.Path) -> str:
    table_out.need(out, "fabric.json")
    data = json.loads((out / "fabric.json").read_text())
    mib = data["mib"]
    lines = [f"Script: `calibration/l2_fabric.py`, {datetime.date.today()}. Buffers of {mib} MiB; "
             "a half's time: its blocks' first start to last end (global timer), median of "
             f"{REPEATS}; GB/s: the bytes the half's SMs read or wrote over that time.", "",
             "| case | g | g's us | g's GB/s | the other half's us | the other half's GB/s |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, mine, other, _ in CASES:
        for g in (0, 1):
            sel = [np.array(x["blocks"]) for x in data["rows"] if x["case"] == name and x["g"] == g]
            cells = []
            for h, what in ((g, mine), (1 - g, other)):
                if what is None:
                    cells += ["-", "-"]
                    continue
                us = np.median([(b[b[:, 2] == h + 1, 1].max() - b[b[:, 2] == h + 1, 0].min()) / 1e3
                                for b in sel])
                moved = (2 if what[0] == COPY else 1) * (mib << 20)
                cells += [f"{us:.2f}", f"{moved / us / 1e3:.0f}"]
            lines.append(f"| {name} | {g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sim(mib: int, device: str, md: str | None) -> None:
    """The model's counterpart (it prints as it goes); its text also to MD when given."""
    from calibration import l2_fabric_sim  # the model's side: needs simgpu (and simpy)
    text = l2_fabric_sim.simulate(mib, device)
    if md:
        pathlib.Path(md).write_text(text + "\n")


def main(argv=None) -> int:
    return probe_cli.probe_main(
        __doc__, argv, help_file=sys.stderr,
        child=probe_cli.action("run the launches; fabric.json to this folder",
                               lambda a: child(a.child, a.groups, a.mib), mkdir=True),
        groups=probe_cli.setting("with --child: calibration/l2_halves.py's JSON from the same GPU",
                                 type=pathlib.Path, default=l2_chunks.GROUPS),
        mib=probe_cli.setting("with --child: MiB per buffer", type=int, default=MIB),
        report=probe_cli.table("folder of a --child run: print the table", lambda a: report(a.report)),
        md=probe_cli.setting("with --report or --sim: also write the text here"),
        sim=probe_cli.action("run the model's counterpart (default sim:h100) and print it",
                             lambda a: sim(a.mib, a.sim, a.md),
                             type=str, nargs="?", const="sim:h100", metavar="DEVICE"))


if __name__ == "__main__":
    raise SystemExit(main())
