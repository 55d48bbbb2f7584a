"""What a load waits for while other warps store: across the L2's halves, into the same
sectors, on the same SM.  The costs ``calibration/hook_stores.py`` points at, one at a
time.  Needs a GPU and CuPy: ``python -m calibration.coherence --child OUT``, then
``--report OUT``.

One thread on SM 0 chases a random cycle of 2^14 nodes, timing each dependent load
with clock64() as ``calibration/l2_halves.py`` does.  A node is two words: the even one
holds the next node, the odd one nothing the chase reads, so others can store into
the chase's own sectors without changing its path.  Meanwhile every block on a
*writer* SM works until the chase is done (or a bound is reached):

* through the L2 (``ld.global.cg``, all 2^14 nodes): no writer; the SMs of SM 0's
  half, or of the other half (measured first on the GPU at hand with
  ``calibration/l2_halves.py``'s chase: a chip's SMs fall in the halves as its
  floorsweeping left them), storing random words into another array, or into the
  odd words of the chase's nodes;
* through the L1 (``ld.global.ca``, a cycle of 1,024 of the nodes; its second lap,
  which the first put in the L1): no writer; SM 0's other blocks storing random words
  into another array or into the chase's sectors; every other SM storing into the
  chase's sectors; SM 0's other blocks, one warp each, loading a cold 128-B line and
  storing into it at once (the store meets the line's fill in flight), or into the
  next line;
* a warp's own load with a store into its line between the load and the use
  (``fill_meets_store``), from DRAM and from the L2;
* every SM at once, as in the hooking (``crowd``): a block an SM, its warp 0 chasing
  through the L2 (one lane, or 32 lanes from their own starts, whose load waits for
  the slowest of 32 sectors) while its warp 1 stores 32 random words at a set pace
  into the chase's sectors or another array.

Before each timed launch the chase runs once alone (warm).  The kernel is raw CUDA
(``%smid``, clock64() and the roles are no part of simgpu's kernel language): this
measures the hardware.
"""
from __future__ import annotations

import datetime
import json
import pathlib
import subprocess

import numpy as np

from calibration import l2_halves  # (which SMs share SM 0's half of the L2)
from calibration import probe_cli
from simgpu_apps import table_out
NODES = 1 << 14
STEPS = 2048
SMALL = 1024                  # nodes in the L1 cases' cycle: two laps of it
BIG = 16 << 20                # ints in the other array (64 MiB): cold lines for modes 2, 3
WARM_LINES = 1 << 16          # 8 MiB of lines: in the L2 for fill_meets_store's warm case
FILL_ITERS = 1024
FILL_MODES = ["no store", "store into the line", "store into the next line"]
CROWD_STEPS = 512
# (case, writers on, into the chase's nodes, ns between a writer warp's stores, lanes
# chasing in warp 0: 1, or 32 whose load is done when the slowest lane's is)
CROWD_CASES = [
    (f"{lanes} lane{'s' if lanes > 1 else ''}: "
     + (f"a store every {gap} ns, into {'the chase' if into else 'another array'}" if gap
        else "no writer"), 1 if gap else 0, into, gap, lanes)
    for lanes, gaps in ((1, (2000, 500, 100)), (32, (500,)))
    for gap, into in [(0, 0)] + [(g, i) for g in gaps for i in (1, 0)]]
MAX_ROUNDS = 1 << 16          # a writer stops by itself after this many stores a thread

SOURCE = r"""
extern "C" __global__ void probe(int* nodes, int* other, const int* writer_sm, int mode,
                                 int l1, int start, int steps, int* claim, long long* lat,
                                 long long* stores, volatile int* done, int* sink) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    __shared__ int chaser_block;
    if (smid == 0) {                                  // the first block on SM 0 chases
        if (threadIdx.x == 0) chaser_block = atomicCAS(claim, 0, 1) == 0;
        __syncthreads();
    }
    if (smid == 0 && chaser_block) {
        if (threadIdx.x != 0) return;                 // its thread 0 alone
        __shared__ long long took[2048];
        long long t = clock64();
        while (clock64() - t < 40000) { }             // ~20 us: let the writers start
        int j = start;
        for (int k = 0; k < steps; k++) {
            long long t0 = clock64();
            j = l1 ? __ldca(nodes + 2 * j) : __ldcg(nodes + 2 * j);
            sink[1 + (k & 1)] = j;                     // uses j: the clock waits for it
            took[k & 2047] = clock64() - t0;
        }
        __threadfence();
        *done = 1;
        if (lat != nullptr)
            for (int k = 0; k < steps && k < 2048; k++) lat[k] = took[k];
        sink[0] = j;
        return;
    }
    if (!writer_sm[smid]) return;
    unsigned x = 2654435761u * (blockIdx.x * blockDim.x + threadIdx.x + 1);
    long long n = 0;
    if (mode <= 1) {                                  // random stores, as fast as they go
        int* into = mode == 1 ? nodes : other;
        while (n < MAX_ROUNDS) {
            for (int q = 0; q < 64; q++) {           // 64 stores between looks at the flag
                x ^= x << 13; x ^= x >> 17; x ^= x << 5;   // xorshift
                into[2 * (x % NODES) + 1] = (int)n;   // an odd word: the chase never reads it
            }
            n += 64;
            if (*done) break;
        }
    } else {                                          // one warp a block: a cold line loaded,
        if (threadIdx.x >= 32) return;                // then a store into it (2) or the next (3)
        x = 2654435761u * (blockIdx.x + 1);           // the same line for the whole warp
        int acc = 0;
        while (n < MAX_ROUNDS) {
            for (int q = 0; q < 16; q++) {
                x ^= x << 13; x ^= x >> 17; x ^= x << 5;
                unsigned line = 32u * (x % (BIG / 64));
                acc += __ldca(other + line + threadIdx.x);
                other[line + (mode == 3 ? 32 : 0) + threadIdx.x] = (int)n;
            }
            n += 16;
            if (*done) break;
        }
        sink[3] = acc;
    }
    atomicAdd((unsigned long long*)stores, (unsigned long long)n);
}

// One warp loads random 128-B lines through the L1 (each a miss) and, before it uses
// the data, stores into the same line (mode 1), into the neighbouring line (mode 2) or
// nowhere (mode 0); each iteration timed from the load to the data's use.
extern "C" __global__ void fill_meets_store(int* lines, int count, int mode, int iters,
                                             long long* lat, int* sink) {
    if (blockIdx.x != 0 || threadIdx.x >= 32) return;
    __shared__ int used[32];
    unsigned x = 12345u;
    int acc = 0;
    for (int k = 0; k < iters; k++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        unsigned at = x % count;
        long long t0 = clock64();
        int v = __ldca(lines + 32 * at + threadIdx.x);
        if (mode == 1) lines[32 * at + threadIdx.x] = k;
        else if (mode == 2) lines[32 * (at ^ 1u) + threadIdx.x] = k;
        acc += v;
        used[threadIdx.x] = acc;                      // waits for the load's data
        long long t1 = clock64();
        if (threadIdx.x == 0) lat[k] = t1 - t0;
    }
    sink[0] = acc + used[0];
}

// Every SM at once, as in the hooking: a block an SM, its warp 0 chasing the cycle
// from its own start through the L2 (one thread timing), its warp 1 (if writing)
// storing 32 random odd words every `gap_ns` into the chase's nodes (into == 1) or
// another array (into == 0), until every chase is done.
extern "C" __global__ void crowd(const int* nodes, int* into_nodes, int* other, int into,
                                 int writing, unsigned gap_ns, int lanes, int steps,
                                 long long* lat, int* finished, long long* stores, int* sink) {
    if (threadIdx.x < 32) {                           // warp 0: `lanes` of it chase, each
        if (threadIdx.x >= lanes) return;             // from its own start; the warp's load
        int j = (int)(((blockIdx.x * 32 + threadIdx.x) * 2654435761u) % NODES);
        for (int k = 0; k < steps; k++) {             // is done when all its lanes' are
            long long t0 = clock64();
            j = __ldcg(nodes + 2 * j);
            sink[1 + (k & 1)] = j;
            if (threadIdx.x == 0) lat[(long long)blockIdx.x * steps + k] = clock64() - t0;
        }
        if (threadIdx.x == 0) atomicAdd(finished, 1);
        return;
    }
    if (!writing || threadIdx.x < 32 || threadIdx.x >= 64) return;
    int* dst = into ? into_nodes : other;
    unsigned x = 2654435761u * (blockIdx.x * 64 + threadIdx.x + 1);
    long long n = 0;
    while (n < MAX_ROUNDS && *(volatile int*)finished < (int)gridDim.x) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        dst[2 * (x % NODES) + 1] = (int)n;
        n++;
        if (gap_ns) __nanosleep(gap_ns);
    }
    if (threadIdx.x == 32) atomicAdd((unsigned long long*)stores, (unsigned long long)n);
}
""".replace("MAX_ROUNDS", str(MAX_ROUNDS)).replace("NODES", str(NODES)).replace("BIG", str(BIG))

# (case, writer SMs, what they do (0: random stores into another array, 1: into the
# chase's sectors, 2 and 3: below), whether the chase reads through the L1)
CASES = [("none", None, 0, 0), ("other array, same half", "same", 0, 0),
         ("other array, other half", "other", 0, 0), ("chase's sectors, same half", "same", 1, 0),
         ("chase's sectors, other half", "other", 1, 0),
         ("L1: none", None, 0, 1), ("L1: SM 0's other blocks, other array", "sm0", 0, 1),
         ("L1: SM 0's other blocks, chase's sectors", "sm0", 1, 1),
         ("L1: all other SMs, chase's sectors", "all", 1, 1),
         ("L1: SM 0's other blocks, a warp each: a cold line loaded, a store into it", "sm0", 2, 1),
         ("L1: SM 0's other blocks, a warp each: a cold line loaded, a store into the next", "sm0", 3, 1)]


def child(out: pathlib.Path, repeats: int) -> None:
    import cupy as cp
    fn = cp.RawModule(code=SOURCE, options=("-std=c++17",)).get_function("probe")
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    same, other = l2_halves.sm_halves()       # this GPU's: another H100 may differ
    same = [s for s in same if s != 0]
    print(f"SM 0's half: {len(same) + 1} SMs; the other: {len(other)}", flush=True)
    rng = np.random.default_rng(0)
    order = rng.permutation(NODES).astype(np.int32)
    words = np.zeros(2 * NODES, np.int32)
    words[2 * order] = np.roll(order, -1)
    # the L1 cases: a cycle of SMALL nodes spread over the same array, so the chase's
    # second lap can hit the L1 that its first lap filled
    ring = order[:SMALL]
    small = np.zeros(2 * NODES, np.int32)
    small[2 * ring] = np.roll(ring, -1)
    spare = cp.zeros(BIG, cp.int32)
    claim, done, sink = cp.zeros(1, cp.int32), cp.zeros(1, cp.int32), cp.zeros(4, cp.int32)
    lat, stores = cp.zeros(STEPS, cp.int64), cp.zeros(1, cp.int64)
    flush = cp.zeros(64 << 20, cp.int32)
    nobody = cp.zeros(sms, cp.int32)
    results = []
    for name, half, mode, l1 in CASES:
        role = np.zeros(sms, np.int32)
        if half:
            role[{"same": same, "other": other, "sm0": [0], "all": same + other}[half]] = 1
        role_d = cp.asarray(role)
        nodes = cp.asarray(small if l1 else words)
        start = int(ring[0]) if l1 else 0
        for r in range(repeats):
            flush.fill(1)
            int(flush.sum())
            for timed in (False, True):                # warm: the chase alone, then timed
                claim.fill(0), done.fill(0), stores.fill(0)
                fn((8 * sms,), (256,), (nodes, spare, nobody if not timed else role_d,
                                        np.int32(mode), np.int32(l1), np.int32(start),
                                        np.int32(STEPS),
                                        claim, lat, stores, done, sink))
                cp.cuda.runtime.deviceSynchronize()
            results.append({"case": name, "repeat": r, "writers": int(role.sum()), "l1": l1,
                            "latency": cp.asnumpy(lat).tolist(), "stores": int(stores.get()[0])})
            print(name, r, float(np.median(results[-1]["latency"])), results[-1]["stores"],
                  flush=True)
    module = cp.RawModule(code=SOURCE, options=("-std=c++17",))
    fills = []
    meet = module.get_function("fill_meets_store")
    for state, lines in (("cold (DRAM)", BIG // 32), ("warm (L2)", WARM_LINES)):
        for mode, what in enumerate(FILL_MODES):
            for r in range(repeats):
                flush.fill(1)
                int(flush.sum())
                if state.startswith("warm"):
                    int(spare[:32 * WARM_LINES].sum())       # the lines into the L2
                meet((1,), (32,), (spare, np.int32(lines), np.int32(mode), np.int32(FILL_ITERS),
                                   lat, sink))
                cp.cuda.runtime.deviceSynchronize()
                fills.append({"state": state, "mode": what, "repeat": r,
                              "latency": cp.asnumpy(lat[:FILL_ITERS]).tolist()})
    crowd = module.get_function("crowd")
    crowds = []
    nodes = cp.asarray(words)
    clat = cp.zeros(sms * CROWD_STEPS, cp.int64)
    finished = cp.zeros(1, cp.int32)
    for name, writing, into, gap, lanes in CROWD_CASES:
        for r in range(repeats):
            flush.fill(1)
            int(flush.sum())
            for timed in (False, True):              # warm: the chases alone, then timed
                finished.fill(0), stores.fill(0)
                crowd((sms,), (64,), (nodes, nodes, spare, np.int32(into),
                                      np.int32(writing and timed), np.uint32(gap),
                                      np.int32(lanes), np.int32(CROWD_STEPS), clat, finished,
                                      stores, sink))
                cp.cuda.runtime.deviceSynchronize()
            lat_all = cp.asnumpy(clat).reshape(sms, CROWD_STEPS)
            crowds.append({"case": name, "repeat": r, "stores": int(stores.get()[0]),
                           "latency": lat_all[:, CROWD_STEPS // 2:].ravel().tolist()})
            print(name, r, float(np.median(crowds[-1]["latency"])), crowds[-1]["stores"],
                  flush=True)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    (out / "coherence.json").write_text(json.dumps(
        {"device": smi, "date": datetime.date.today().isoformat(), "results": results,
         "fills": fills, "crowds": crowds, "same_half": [0] + same, "other_half": other}))


def report(out: pathlib.Path) -> str:
    table_out.need(out, "coherence.json")
    data = json.loads((out / "coherence.json").read_text())
    lines = [f"Coherence probe: `python -m calibration.coherence`, {data['device']}, "
             f"{data['date']}; one thread on SM 0 chases {NODES:,} nodes through the L2 "
             f"(`ld.global.cg`, {STEPS} dependent loads, clock64() cycles a load) while the "
             "writer SMs store random words; each repeat after a flush and a warming chase. "
             f"L1 cases: `ld.global.ca`, a cycle of {SMALL:,} of the nodes, its second lap.",
             "", "| case | writer SMs | repeats | load median | mean | p90 | p99 | "
             "stores (millions, per repeat) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, *_ in CASES:
        runs = [r for r in data["results"] if r["case"] == name]
        # the L1 cases: the second lap, whose loads the first lap put in the L1
        lat = np.concatenate([r["latency"][SMALL if r.get("l1") else 0:] for r in runs])
        lines.append(f"| {name} | {runs[0]['writers']} | {len(runs)} | {np.median(lat):.0f} | "
                     f"{lat.mean():.0f} | {np.percentile(lat, 90):.0f} | "
                     f"{np.percentile(lat, 99):.0f} | "
                     f"{np.mean([r['stores'] for r in runs]) / 1e6:.1f} |")
    if data.get("fills"):
        lines += ["", f"One warp, {FILL_ITERS} random 128-B lines loaded through the L1 (each "
                  "a miss), cycles from the load to its data's use, with a store issued in "
                  "between (`fill_meets_store`):", "",
                  "| lines | store between load and use | repeats | median | mean | p90 |",
                  "|---|---|---:|---:|---:|---:|"]
        for state in dict.fromkeys(f["state"] for f in data["fills"]):
            for mode in FILL_MODES:
                runs = [f for f in data["fills"] if f["state"] == state and f["mode"] == mode]
                lat = np.concatenate([f["latency"] for f in runs])
                lines.append(f"| {state} | {mode} | {len(runs)} | {np.median(lat):.0f} | "
                             f"{lat.mean():.0f} | {np.percentile(lat, 90):.0f} |")
    if data.get("crowds"):
        lines += ["", f"Every SM at once: a block an SM, warp 0 chasing the {NODES:,} nodes "
                  f"through the L2 ({CROWD_STEPS} loads, the second half timed; one lane, or "
                  "32 lanes each from its own start, the warp's load done when all are), warp 1 "
                  "storing 32 random odd words at a set pace:", "",
                  "| case | repeats | load median | mean | p90 | p99 | warp stores (thousands) |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for name, *_ in CROWD_CASES:
            runs = [c for c in data["crowds"] if c["case"] == name]
            lat = np.concatenate([c["latency"] for c in runs])
            lines.append(f"| {name} | {len(runs)} | {np.median(lat):.0f} | {lat.mean():.0f} | "
                         f"{np.percentile(lat, 90):.0f} | {np.percentile(lat, 99):.0f} | "
                         f"{np.mean([c['stores'] for c in runs]) / 1e3:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    return probe_cli.probe_main(
        __doc__, argv, usage_error="give --child OUT or --report OUT",
        child=probe_cli.action("run on the GPU, coherence.json here",
                               lambda a: child(a.child, a.repeats), mkdir=True),
        repeats=probe_cli.setting(None, type=int, default=3),
        report=probe_cli.table("folder of a --child run", lambda a: report(a.report)),
        md=probe_cli.setting("with --report: also write the table here"))


if __name__ == "__main__":
    raise SystemExit(main())
