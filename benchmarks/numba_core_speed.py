"""CPU time of list ranking on sim:gtx260 with the memory units from source, compiled
with mypyc, and the compiled memory core (numba), on trace-block and timed-block.

    python benchmarks/numba_core_speed.py [--log2 16 18 20] [--packing 64]
                                          [--engines trace-block timed-block]
                                          [--modes source mypyc numba] [--repeat 1]

Each mode runs in a process of its own (the switches are read at import):
``source``: SIMGPU_NATIVE=0 SIMGPU_NUMBA=0; ``mypyc``: SIMGPU_NUMBA=0 with the
``python -m simgpu.native build`` modules; ``numba``: the compiled memory core
(simgpu.mem.fast_memory), with the mypyc modules for the rest where built.  A process
first ranks a 2^10-node list (imports, numba's cached code) untimed.  Per run: the CPU
ms (time.process_time) of the method's kernels RS1-RS5 together and of RS1, RS3 and
RS5 alone (a random single list, random splitters), the fastest of --repeat; the
simulated ms are printed once per row, after checking that every mode gave the same.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODES = {"source": {"SIMGPU_NATIVE": "0", "SIMGPU_NUMBA": "0"},
         "mypyc": {"SIMGPU_NUMBA": "0"},
         "numba": {"SIMGPU_NUMBA": "1"}}
KERNELS = ("rs1", "rs3", "rs5")


def child(log2: list, packing: int, engines: list, repeat: int) -> dict:
    """This process's runs: {f"{k} {engine}": {"cpu": {...}, "ms": simulated}}."""
    import simgpu
    from simgpu.mem import fast_jit, native_load
    from timed_speed import random_list

    def one(succ, engine):
        dev = simgpu.get_device("sim:gtx260")
        launch, spent = dev.launch, {}

        def timed_launch(kernel, *args, **kwargs):
            t0 = time.process_time()
            rep = launch(kernel, *args, **kwargs)
            spent[id(rep)] = (rep.kernel, time.process_time() - t0)
            return rep

        dev.launch = timed_launch
        from algorithms.list_ranking import rank
        res = rank(succ, device=dev, packing=packing, launch_options={"engine": engine})
        cpu = {"kernels": sum(spent[id(r)][1] for r in res.launches)}
        for name in KERNELS:
            cpu[name] = sum(s for k, s in spent.values() if k.startswith(name))
        return cpu, sum(r.time_ms for r in res.launches), [r.cycles for r in res.launches]

    for engine in engines:                     # warm-up (imports, cached machine code)
        one(random_list(1 << 10), engine)
    out = {"native": native_load.loaded() != [], "numba": fast_jit.ENABLED, "runs": {}}
    for k in log2:
        succ = random_list(1 << k)
        for engine in engines:
            runs = [one(succ, engine) for _ in range(repeat)]
            cpu = {f: min(r[0][f] for r in runs) for f in runs[0][0]}
            out["runs"][f"{k} {engine}"] = {"cpu": cpu, "ms": runs[-1][1], "cycles": runs[-1][2]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", type=int, nargs="+", default=[16, 18, 20])
    ap.add_argument("--packing", type=int, default=64)
    ap.add_argument("--engines", nargs="+", default=["trace-block", "timed-block"])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        json.dump(child(args.log2, args.packing, args.engines, args.repeat), sys.stdout)
        return
    results = {}
    for mode in args.modes:
        env = {**os.environ, **MODES[mode],
               "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "benchmarks")])}
        cmd = [sys.executable, __file__, "--child", "--packing", str(args.packing),
               "--repeat", str(args.repeat), "--log2", *map(str, args.log2),
               "--engines", *args.engines]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"mode {mode} failed:\n{done.stderr[-3000:]}")
        results[mode] = json.loads(done.stdout)
        r = results[mode]
        print(f"# {mode}: mypyc modules {'loaded' if r['native'] else 'not loaded'}, "
              f"numba core {'on' if r['numba'] else 'off'}", flush=True)
    modes = list(results)
    head = " | ".join(f"{m} ms" for m in modes)
    ks = " | ".join(f"{m} {k.upper()} ms" for m in modes for k in KERNELS)
    speed = " | ".join(f"numba vs {m}" for m in modes if m != "numba") if "numba" in modes else ""
    print(f"\n| n | engine | simulated ms | {head} | {speed} | {ks} |")
    print("|---:|---|---:|" + "---:|" * (len(modes) * (1 + len(KERNELS))
                                       + (len(modes) - 1 if "numba" in modes else 0)))
    for k in args.log2:
        for engine in args.engines:
            key = f"{k} {engine}"
            rows = [results[m]["runs"][key] for m in modes]
            if any(r["cycles"] != rows[0]["cycles"] for r in rows):
                raise SystemExit(f"{key}: the modes' simulated cycles differ")
            cells = " | ".join(f"{r['cpu']['kernels'] * 1e3:.0f}" for r in rows)
            kc = " | ".join(f"{r['cpu'][f] * 1e3:.0f}" for r in rows for f in KERNELS)
            sp = ""
            if "numba" in modes:
                fast = results["numba"]["runs"][key]["cpu"]["kernels"]
                sp = " | ".join(f"{results[m]['runs'][key]['cpu']['kernels'] / fast:.2f}x"
                                for m in modes if m != "numba")
            print(f"| 2^{k} | {engine} | {rows[0]['ms']:.4f} | {cells} | {sp} | {kc} |",
                  flush=True)


if __name__ == "__main__":
    main()
