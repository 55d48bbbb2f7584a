"""Compute chosen points of a ``simgpu paper`` plan into that run's cache, many at once: the
same points, keys and cache a later ``simgpu paper --size SIZE --out OUT`` reads (it then
computes only what is missing), for spreading a long sweep over machines or sessions.

    PYTHONPATH=. python3 benchmarks/paper_points.py OUT --size paper --only cc \\
        --where m=8000000 --where graph=lists,trees --where arg=1,2 --jobs 2

--slice A:B keeps points A to B-1 of what is left, costliest first (for splitting a sweep
between machines).  --where KEY=V1,V2 keeps the points whose parameter KEY is one of the values (compared as
text); repeat it to narrow further.  --list prints the chosen points and stops.
Each point is written to OUT/cache as it ends (a run stopped early keeps what it finished).
"""
import argparse
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
import sys
import time

from simgpu_apps.experiments import EXPERIMENTS, SIZES, Ctx, device_info
from simgpu_apps.experiments.runner import Cache, code_version, compute_point, host_id


def chosen(points, where) -> list:
    out = []
    for p in points:
        if all(str(p.p.get(k)) in vals for k, vals in where):
            out.append(p)
    return out


def part(text: str) -> slice:
    """--slice A:B as a slice (A or B may be empty)."""
    a, colon, b = text.partition(":")
    try:
        if not colon:
            raise ValueError
        return slice(int(a) if a else None, int(b) if b else None)
    except ValueError:
        sys.exit(f"--slice {text!r}: give A:B, two point indices (either may be empty), "
                 "e.g. 0:16 or 16:")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--size", default="paper", choices=sorted(SIZES))
    ap.add_argument("--device", default="sim:gtx260")
    ap.add_argument("--only", default="lr,cc", help="lr, cc or both")
    ap.add_argument("--where", action="append", default=[], metavar="KEY=V1,V2")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--slice", default=":", metavar="A:B",
                    help="keep points A..B-1 of the costliest-first order (split a sweep)")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)
    where = []
    for w in args.where:
        if "=" not in w:
            sys.exit(f"--where {w!r}: give KEY=VALUE[,VALUE...]")
        k, v = w.split("=", 1)
        where.append((k, set(v.split(","))))
    info = device_info(args.device)
    if info["real"]:
        sys.exit("this script runs simulated points (a real GPU's points share one card)")
    ctx = Ctx(device=args.device, count_device=args.device, host=host_id(), info=info,
              sizes=dict(SIZES[args.size]), size_name=args.size)
    plan = list(dict.fromkeys(p for k in args.only.split(",") for p in EXPERIMENTS[k].plan(ctx)))
    cache = Cache(f"{args.out}/cache", code_version())
    todo = [p for p in chosen(plan, where) if p.kind == "sim" and not cache.path(p).exists()]
    todo.sort(key=lambda p: -p.cost)                      # costliest first
    todo = todo[part(args.slice)]
    print(f"{len(todo)} point(s) to compute into {args.out}/cache (version {cache.version}), "
          f"estimated {sum(p.cost for p in todo) / 60:.0f} CPU minutes", flush=True)
    for p in todo:
        print(f"  {p.experiment} {p.p}  ~{p.cost:.0f} s", flush=True)
    if args.list or not todo:
        return
    t0 = time.time()
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(compute_point, p): p for p in todo}
        for f in as_completed(futures):                  # (written as each ends)
            p, out = futures[f], f.result()
            if out["ok"]:
                cache.put(p, out["result"], out["seconds"])
            print(f"{'done' if out['ok'] else 'FAILED'} {p.experiment} {p.p} in "
                  f"{out['seconds']:.0f} s{'' if out['ok'] else ': ' + out['error']} "
                  f"({time.time() - t0:.0f} s since start)", flush=True)


if __name__ == "__main__":
    main()
