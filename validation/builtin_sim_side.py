"""The built-in validation's simulator side against the GPU times a committed page holds.

    python -m validation.builtin_sim_side [--page docs/validation.md] [--config PATH]
                                          [--without KEY ...] [--seeds 0 1 2] [--only TEXT]
                                          [--jobs N] [--markdown FILE] [--engine NAME]

``python -m simgpu_apps.gpu_tools.validate`` needs the GPU for its GPU side; the page it
wrote (docs/validation.md) keeps, launch by launch, Nsight Compute's kernel time. This
runs the same cases on the simulator as that script does (``validate.run_cases`` on
``validate.sim_device()``'s settings: timed-block, an empty L2 at each launch, a fresh
device per case and seed), with the bundled sim:h100, another config (``--config``), or
sim:h100 without some keys (``--without``, e.g. a mechanism's switch), or on another timed
engine (``--engine timed``: every warp its own process; a diagnosis, since the page's
model ran on timed-block), and compares each
launch with the page's GPU kernel time: the page's own launches, paired by kernel and
occurrence (as validate_diff pairs them), so a model change is measured on the GPU figures
of the page without a GPU. It prints per launch the page's sim time, this run's, and
sim / GPU; then within 15% and the geometric-mean error (validate_diff's summary) for
the page's own ratios and this run's, on the same launches (this run's against the page's
GPU times as printed, to 0.1 us: a run of the page's model comes within that rounding of
the page's ratios).
"""
from __future__ import annotations

import argparse
import pathlib
import tempfile

import simgpu
from simgpu_apps.config_variants import h100_without
from simgpu_apps.gpu_tools.validate import occurrences, run_cases
from simgpu_apps.gpu_tools.validate_cases import cases
from simgpu_apps.gpu_tools.validate_diff import summary, time_table


def page_rows(text: str) -> dict:
    """{(case, seed): [(kernel, GPU kernel ms, page's sim / GPU), ...] in launch order} from a
    validation page's "Times" table (rows without both times are left out)."""
    if "\n## Times" not in text:
        raise SystemExit("builtin_sim_side: the page has no '## Times' section: give a page "
                         "written by python -m simgpu_apps.gpu_tools.validate")
    out: dict = {}
    for cells in time_table(text):
        try:
            gpu, ratio = float(cells[6]), float(cells[8])
        except ValueError:               # "-": no time on one side
            continue
        out.setdefault((cells[1], int(cells[2])), []).append((cells[4], gpu, ratio))
    return out


def run_one(config: str, name: str, seed: int, engine: str = "timed-block") -> list:
    """[(kernel, sim kernel ms)] of one case and seed on a fresh device."""
    dev = simgpu.get_device(config)
    dev.default_engine, dev.cache_control = engine, "all"
    case = next(c for c in cases(False) if c.name == name)
    _, launches = run_cases(dev, [case], [seed])[(name, seed)]
    return [(lc.kernel, lc.kernel_ms) for lc in launches]


def compare(page: dict, sims: dict) -> list:
    """Rows (case, seed, kernel, GPU ms, page's sim / GPU, this sim ms) on the launches both
    have."""
    rows = []
    for (name, seed), launches in page.items():
        if (name, seed) not in sims:
            continue
        ours = dict(zip(occurrences([k for k, _ in sims[name, seed]]),
                        (ms for _, ms in sims[name, seed])))
        for key, (kernel, gpu, old) in zip(occurrences([k for k, _, _ in launches]), launches):
            if ours.get(key) is not None:
                rows.append((name, seed, kernel, gpu, old, ours[key]))
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m validation.builtin_sim_side", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--page", default="docs/validation.md")
    p.add_argument("--config", default="sim:h100", help="a device name or a config file")
    p.add_argument("--without", nargs="*", default=[], help="sim:h100 without these keys")
    p.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    p.add_argument("--only", help="only the cases whose name contains this text")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--markdown", help="also write the table and summary to this file")
    p.add_argument("--engine", default="timed-block", choices=("timed-block", "timed"),
                   help="the engine the simulator runs (default: timed-block, as the page)")
    args = p.parse_args(argv)
    page_file = pathlib.Path(args.page)
    if not page_file.is_file():
        raise SystemExit(f"builtin_sim_side: {page_file} is not a file")
    page = {k: v for k, v in page_rows(page_file.read_text()).items()
            if k[1] in args.seeds and (not args.only or args.only in k[0])}
    with tempfile.TemporaryDirectory() as tmp:
        config = args.config
        if args.without:
            config = "sim:" + h100_without(args.without, pathlib.Path(tmp))
        elif not config.startswith("sim:"):
            config = "sim:" + config
        keys = list(page)
        if args.jobs > 1:
            from concurrent.futures import ProcessPoolExecutor
            with ProcessPoolExecutor(args.jobs) as pool:
                results = list(pool.map(run_one, [config] * len(keys), *zip(*keys),
                                        [args.engine] * len(keys)))
        else:
            results = [run_one(config, *k, args.engine) for k in keys]
    rows = compare(page, dict(zip(keys, results)))
    if not rows:
        raise SystemExit("builtin_sim_side: no launch of the page was run (check --only/--seeds)")
    lines = [f"Simulator: {args.config}" + (f" without {', '.join(args.without)}" if args.without
                                            else "") + f", engine {args.engine}"
             + f"; GPU and page times: {args.page}", "",
             "| case | seed | kernel | GPU kernel ms | page's sim / GPU | sim ms | sim / GPU |",
             "|---|---:|---|---:|---:|---:|---:|"]
    lines += [f"| {c} | {s} | {k} | {g:.4f} | {o:.3f} | {n:.6f} | {n / g:.3f} |"
              for c, s, k, g, o, n in rows]
    lines += ["", f"page's own ratios: {summary([o for *_, o, n in rows])}",
              f"this run:          {summary([n / g for *_, g, o, n in rows])}",
              "(this run's ratios use the page's GPU kernel ms, printed to 0.1 us)"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
