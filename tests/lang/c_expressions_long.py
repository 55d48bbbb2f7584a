"""Random typed integer expressions against the C compiler, at scale (issue 21 item 4).

The differential harness of tests/lang/test_c_semantics.py (its expression generator,
its kernel and C programs, its type predictions), run on far more expressions than the
default suite does: each batch holds BATCH expressions over 1 to 4 variables of random
integer types, evaluated on ROWS input rows (special values and random ones) by the
simulator (lockstep and warps engines alternately) and by a C program (gcc -O0 -fwrapv,
C's usual arithmetic conversions; the prelude's MIN/MAX/ABS are CUDA's). Every result
type (kernel IR, C) and every value must agree.

    python3 -m tests.lang.c_expressions_long --expressions 100000     # prints a table

It is not in the default test suite (its name does not start with test_): minutes, not seconds.
"""
from __future__ import annotations

import argparse
import datetime
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from . import test_c_semantics as H

ROWS = 24


@st.composite
def big_batches(draw, size: int):
    nvars = draw(st.integers(1, 4))
    vt = draw(st.lists(st.sampled_from(H.INT_NAMES), min_size=nvars, max_size=nvars))
    es = draw(st.lists(H.exprs(nvars, 4), min_size=size, max_size=size))
    seed = draw(st.integers(0, 2**32 - 1))
    engine = draw(st.sampled_from(["lockstep", "warps"]))
    return vt, es, seed, engine


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--expressions", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=50, help="expressions per kernel / C program")
    ap.add_argument("--seed", type=int, default=0, help="hypothesis seed (one per process "
                    "when several share the work)")
    args = ap.parse_args(argv)
    if H.CC is None:
        raise SystemExit("no C compiler ('cc') on PATH")
    dev = H._make_device()
    batches = -(-args.expressions // args.batch)
    stats = {"expressions": 0, "values": 0, "mismatches": 0, "batches": 0}
    found = []
    work = Path(tempfile.mkdtemp(prefix="cexpr_"))
    t0 = time.time()

    @seed(args.seed)
    @settings(max_examples=batches, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(batch=big_batches(args.batch))
    def run(batch):
        vt, es, seed, engine = batch
        workdir = work / f"b{stats['batches']}"
        workdir.mkdir()
        stats["batches"] += 1
        inputs = H.input_rows(vt, seed, ROWS)
        py = [H.py_src(e, vt) for e in es]
        cs = [H.c_src(e, vt) for e in es]
        ir_types, sim_vals, _ = H.sim_eval(dev, workdir, vt, inputs, py, engine)
        c_types, c_vals, _ = H.c_eval(H.CC, workdir, vt, inputs, cs)
        for k, e in enumerate(es):
            stats["expressions"] += 1
            stats["values"] += ROWS
            bad = (ir_types[k] != H.ktype(e, vt) or c_types[k] != H.ctype(e, vt).name
                   or H.c_view(ir_types[k]) != c_types[k] or sim_vals[k] != c_vals[k])
            if bad:
                stats["mismatches"] += 1
                if len(found) < 10:
                    found.append(f"{py[k]}  |  {cs[k]}  ({vt}, engine {engine})")
        if stats["batches"] % 25 == 0:
            print(f"  {stats['expressions']:,} expressions, {stats['mismatches']} mismatches, "
                  f"{time.time() - t0:.0f} s", flush=True)

    run()
    print(f"\ntests/lang/c_expressions_long.py --seed {args.seed}, {datetime.date.today()}, "
          f"cc = {H.CC}")
    print("| expressions | values (x rows) | batches | mismatches | seconds |")
    print("|---:|---:|---:|---:|---:|")
    print(f"| {stats['expressions']:,} | {stats['values']:,} | {stats['batches']} | "
          f"{stats['mismatches']} | {time.time() - t0:.0f} |")
    for f in found:
        print("mismatch:", f)
    return stats


if __name__ == "__main__":
    main()
