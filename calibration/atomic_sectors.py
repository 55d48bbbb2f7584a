"""How the H100 counts the sectors of a warp's atomic (reduction) request, lane pattern
by lane pattern: the rule the simulator's count must follow.

The held-out histogram (validation/h100_heldout) is the one kernel whose atomic sector
count differs from the model's: ncu counts 22.6 sectors per request, the model 20.4,
which is exactly the number of distinct 32-byte sectors its lanes touch. This probe
launches one warp per lane pattern (``atomicAdd(&a[idx[lane]], 1)``, result unused: a
RED) under ncu and reads ``l1tex__t_sectors_pipe_lsu_mem_global_op_red`` per launch,
for hand-made patterns (all lanes on one word, k lanes per word, one sector, many) and
for the first warps of the held-out histogram's keys. The report sets each launch's
count beside candidate rules computed from its lanes' addresses, and says which rule
matches every launch. It also keeps the SASS of the project's rendered
``histogram_atomic`` (nvcc -cubin, cuobjdump -sass): what instruction the count is of.

    python -m calibration.atomic_sectors --gpu OUT       # GPU, CuPy, ncu, nvcc
    python -m calibration.atomic_sectors --report OUT [--md F.md]
"""
from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np

from simgpu.lang import Array, atomic_add, blockDim, blockIdx, i32, kernel, threadIdx
from simgpu_apps import table_out

from . import kernel_counters, probe_cli

WORD = 4                       # int32 counters
SECTOR = 32
HISTOGRAM_WARPS = 192          # warps of the held-out histogram's keys, one launch each
HELDOUT_SEED = 20261125       # validation.heldout.SEED
METRICS = [
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    "lts__t_requests_srcunit_tex_op_red.sum",
    "lts__t_sectors_srcunit_tex_op_red.sum",
    "gpu__time_duration.sum",
]
SOURCE = r"""
extern "C" __global__ void red_lanes(int *a, const int *idx) {
    atomicAdd(&a[idx[threadIdx.x]], 1);
}
"""


def patterns() -> list:
    """[(name, 32 word indices)]: the hand-made patterns, then the histogram's warps."""
    lane = np.arange(32)
    hand = [
        ("all lanes one word", np.zeros(32, int)),
        ("32 words, 4 sectors (coalesced)", lane),
        ("32 words, one per sector", 8 * lane),
        ("2 lanes a word, 16 words in 2 sectors", lane // 2),
        ("4 lanes a word, 8 words in 1 sector", lane // 4),
        ("4 lanes a word, 8 words in 1 sector, interleaved", lane % 8),
        ("2 lanes a word, one word per sector, 16 sectors", 8 * (lane // 2)),
        ("4 lanes a word, one word per sector, 8 sectors", 8 * (lane // 4)),
        ("2 words a sector, one lane each, 16 sectors", 8 * (lane // 2) + lane % 2),
        ("3 lanes a word (11 words)", lane // 3),
        ("16 lanes one word, 16 lanes 16 words", np.where(lane < 16, 0, lane)),
        ("lane 0 alone + 31 on one word", np.where(lane == 0, 8, 0)),
        ("32 words of one line, lanes reversed", 31 - lane),
    ]
    # the lane order within a line (the histogram's lanes come in random order)
    rng = np.random.default_rng(1)
    for k in (8, 12, 16, 24, 32):
        words = np.concatenate([rng.permutation(32)[:k], 32 * np.arange(1, 33 - k)])
        hand.append((f"{k} words of one line in random lane order, the rest one per line",
                     words))
    hand.append(("8 words of one sector in random lane order, the rest one per line",
                 np.concatenate([rng.permutation(8), 32 * np.arange(1, 25)])))
    return hand + [(f"histogram warp {w}", k) for w, k in enumerate(histogram_warps())]


def histogram_warps(count: int = HISTOGRAM_WARPS) -> list:
    """The first ``count`` warps' bins of validation.heldout's histogram (its seed and n)."""
    # (validation.heldout's generator for the histogram, salt 8; calibration does not
    # import validation: tests/test_layers.py)
    keys = np.random.default_rng([HELDOUT_SEED, 8]).integers(0, 2**31, 4194304,
                                                             dtype=np.int32)
    bins = (keys[:32 * count] & 255).astype(int)
    return list(bins.reshape(count, 32))


@kernel
def one_counter(counter: Array[i32], n: i32):
    # every lane adds to word 0: nvcc may aggregate the warp's adds (the calibration's
    # same-address case), which would make the hardware see one lane
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        atomic_add(counter, 0, 1)


@kernel
def block_sum(counter: Array[i32], vals: Array[i32], n: i32):
    # a block-uniform index, a value that differs by lane (cc_edges_count's shape)
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        atomic_add(counter, blockIdx.x, vals[i])


@kernel
def histogram_atomic(keys: Array[i32], hist: Array[i32], n: i32):
    # validation.h100_kernels.histogram_atomic, line for line (256 bins)
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        atomic_add(hist, keys[i] & 255, 1)


# --- candidate rules: sectors of one request from its 32 lanes' word indices ----------

def distinct_sectors(words) -> int:
    return len({w * WORD // SECTOR for w in words})


def max_same_word_per_sector(words) -> int:
    """Each sector once per round, a round taking at most one lane of each word."""
    per: dict = {}
    for w in words:
        per.setdefault(w * WORD // SECTOR, []).append(w)
    return sum(max(ws.count(x) for x in set(ws)) for ws in per.values())


def distinct_words(words) -> int:
    return len(set(words))


RULES = {"distinct sectors (the model)": distinct_sectors,
         "rounds of one lane per word, sectors per round": max_same_word_per_sector,
         "distinct words": distinct_words}


# --- the GPU side ---------------------------------------------------------------------

def child(out: pathlib.Path) -> None:
    """One warp per pattern, each its own launch (ncu reads each launch's counters)."""
    import cupy as cp
    kern = cp.RawKernel(SOURCE, "red_lanes")
    a = cp.zeros(4096, dtype=cp.int32)
    names = []
    for name, words in patterns():
        idx = cp.asarray(np.asarray(words, dtype=np.int32))
        kern((1,), (32,), (a, idx))
        names.append(name)
    # the project's one_counter through its cuda device: one warp, then 1024 warps
    import simgpu
    dev = simgpu.get_device("cuda")
    counter = dev.zeros(1, np.int32)
    for threads in (32, 32768):
        dev.launch(one_counter, threads // 32, 32, counter, threads)
        names.append(f"one_counter, {threads // 32} warps")
    vals = dev.to_device(np.arange(1, 32769, dtype=np.int32))
    sums = dev.zeros(1024, np.int32)
    for threads in (32, 32768):
        dev.launch(block_sum, threads // 32, 32, sums, vals, threads)
        names.append(f"block_sum, {threads // 32} warps")
    cp.cuda.runtime.deviceSynchronize()
    (out / "launches.json").write_text(json.dumps(names))


def sass(out: pathlib.Path) -> None:
    """The project's rendered histogram_atomic and one_counter, compiled for sm_90,
    disassembled."""
    from cuda_backend.render import render
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    for k in (histogram_atomic, one_counter, block_sum):
        name = k.ir.name
        src = out / f"{name}.cu"
        src.write_text(render(k))
        cubin = out / f"{name}.cubin"
        subprocess.run([nvcc, "-arch=sm_90", "-cubin", "-o", str(cubin), str(src)],
                       check=True)
        dump = subprocess.run([shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump",
                               "-sass", str(cubin)], capture_output=True, text=True, check=True)
        (out / f"{name}.sass").write_text(dump.stdout)
        cubin.unlink()


def gpu(out: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    sass(out)
    kernel_counters.under_ncu(out, METRICS, ["-m", "calibration.atomic_sectors", "--child",
                                             str(out)])


# --- the report -----------------------------------------------------------------------

def rows(out: pathlib.Path) -> list:
    """[(pattern, words, {metric: value})], launch by launch."""
    from simgpu_apps.gpu_tools.ncu_csv import parse_csv
    names = json.loads((out / "launches.json").read_text())
    launches = parse_csv((out / "ncu.csv").read_text())
    if len(launches) != len(names):
        raise SystemExit(f"{out}: ncu has {len(launches)} launches, the child made "
                         f"{len(names)}")
    words = dict(patterns())
    return [(name, words.get(name), {k: float(v) for k, v in values.items()})
            for name, (_, values) in zip(names, launches)]


def report(out: pathlib.Path) -> str:
    table_out.need(out, "launches.json", "ncu.csv", "gpu.json")
    meta = json.loads((out / "gpu.json").read_text())
    data = rows(out)
    sectors = METRICS[1]
    matches = {r: 0 for r in RULES}
    lines = [f"Atomic (RED) sectors per warp request: {meta['device']}, ncu, one warp per "
             f"launch, `python -m calibration.atomic_sectors`, {meta['date']}.", "",
             "| pattern | L1 requests | L1 sectors | L2 requests | L2 sectors | "
             + " | ".join(RULES) + " |", "|---|" + "---:|" * (4 + len(RULES))]
    shown = 0
    counters = [(name, v) for name, words, v in data if words is None]
    data = [row for row in data if row[1] is not None]
    for name, words, v in data:
        got = v.get(sectors, float("nan"))
        pred = {r: f(list(words)) for r, f in RULES.items()}
        for r, p in pred.items():
            matches[r] += p == got
        if not name.startswith("histogram") or shown < 16:
            shown += name.startswith("histogram")
            lines.append(f"| {name} | {v.get(METRICS[0], 0):.0f} | {got:.0f} | "
                         f"{v.get(METRICS[2], 0):.0f} | {v.get(METRICS[3], 0):.0f} | "
                         + " | ".join(str(pred[r]) for r in RULES) + " |")
    if counters:
        lines += ["", "The project's `one_counter` (every lane adds 1 to word 0) and `block_sum` "
                  "(every lane of a block adds its own value to word blockIdx.x); SASS beside "
                  "the data:", "", "| launch | L1 requests | L1 sectors | L2 requests | "
                  "L2 sectors |", "|---|---:|---:|---:|---:|"]
        lines += [f"| {name} | " + " | ".join(f"{v.get(m, 0):.0f}" for m in METRICS[:4]) + " |"
                  for name, v in counters]
    hist = [(w, v.get(sectors, 0)) for n, w, v in data if n.startswith("histogram")]
    lines += ["", f"({len(hist) - min(16, len(hist))} more histogram warps in ncu.csv.)", "",
              "Launches each rule predicts exactly, of " + str(len(data)) + ": "
              + ", ".join(f"{r} {k}" for r, k in matches.items()) + "."]
    if hist:
        total = sum(s for _, s in hist)
        lines.append(f"Histogram warps: {total / len(hist):.2f} sectors per request on the "
                     f"GPU; " + ", ".join(f"{r} {sum(f(list(w)) for w, _ in hist) / len(hist):.2f}"
                                          for r, f in RULES.items()) + ".")
    return "\n".join(lines)


def passes_by_conflict(words, conflict) -> tuple:
    """(L1 sectors, L2 requests) if each 128-B line's lanes, in lane order, join the first
    pass of that line holding no lane they conflict with (``conflict(a, b)`` on the two
    lanes' word offsets in the line); each pass one L2 request of its distinct sectors.
    With ``conflict = a == b`` it is the round rule."""
    per_line: dict = {}
    for w in words:
        per_line.setdefault(w * WORD // 128, []).append(w % (128 // WORD))
    sectors = requests = 0
    for offsets in per_line.values():
        passes: list = []
        for o in offsets:
            for p in passes:
                if not any(conflict(o, q) for q in p):
                    p.append(o)
                    break
            else:
                passes.append([o])
        requests += len(passes)
        sectors += sum(len({q * WORD // SECTOR for q in p}) for p in passes)
    return sectors, requests


def conflict_search(out: pathlib.Path) -> str:
    """Lane conflicts beyond one word tried on a run's launches: offsets whose difference
    or XOR is d (d = 1..31) conflict too; how many launches each gets exactly right."""
    data = [(list(w), v) for _, w, v in rows(out) if w is not None]

    def score(conflict):
        got = [passes_by_conflict(w, conflict) for w, _ in data]
        sectors = sum(g[0] == v[METRICS[1]] for g, (_, v) in zip(got, data))
        both = sum(g == (v[METRICS[1]], v[METRICS[2]]) for g, (_, v) in zip(got, data))
        return sectors, both
    rules = [("one word (the round rule)", lambda a, b: a == b)]
    for d in range(1, 32):
        rules.append((f"one word or offsets {d} apart",
                      lambda a, b, d=d: a == b or abs(a - b) == d))
        rules.append((f"one word or offsets XOR {d}", lambda a, b, d=d: a == b or a ^ b == d))
    scored = sorted(((score(f), name) for name, f in rules), reverse=True)
    lines = [f"Conflict rules on the {len(data)} launches of `{out}` (best 6 by L1 sectors):", "",
             "| rule | L1 sectors right | L1 sectors and L2 requests right |", "|---|---:|---:|"]
    lines += [f"| {name} | {s} | {b} |" for (s, b), name in scored[:6]]
    return "\n".join(lines)


def repeats(out: pathlib.Path, others: list) -> str:
    """Whether other --gpu runs (folders with launches.json and ncu.csv) counted every
    launch as the run in ``out`` did: is the count a function of the addresses alone?"""
    base = rows(out)
    lines = [f"Other runs against `{out}`, launch by launch (its four counters, not the time):",
             "", "| run | launches | all four counters equal | histogram warps' mean L1 sectors |",
             "|---|---:|---:|---:|"]
    for folder, data in [(out, base)] + [(f, rows(f)) for f in others]:
        if [name for name, _, _ in data] != [name for name, _, _ in base]:
            raise SystemExit(f"{folder}: not the same launches as {out}")
        same = sum(all(a[2].get(m) == b[2].get(m) for m in METRICS[:4])
                   for a, b in zip(base, data))
        hist = [v[METRICS[1]] for name, _, v in data if name.startswith("histogram")]
        mean = f"{sum(hist) / len(hist):.3f}" if hist else "-"
        lines.append(f"| {folder} | {len(data)} | {same} | {mean} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    return probe_cli.probe_main(
        __doc__, argv,
        gpu=probe_cli.action("run the probe under ncu, files to here", lambda a: gpu(a.gpu)),
        child=probe_cli.action(probe_cli.HIDDEN, lambda a: child(a.child)),
        report=probe_cli.table("folder of a --gpu run", lambda a: report(a.report)),
        repeats=probe_cli.table("with --base: folders of more --gpu runs, compared launch "
                                "by launch", lambda a: repeats(a.base, a.repeats),
                                nargs="+", type=pathlib.Path),
        base=probe_cli.setting("with --repeats: the run to compare with", type=pathlib.Path),
        search=probe_cli.table("folder of a --gpu run: lane-conflict rules tried on it",
                               lambda a: conflict_search(a.search)),
        md=probe_cli.setting("with --report: also write the table here"))


if __name__ == "__main__":
    sys.exit(main())
