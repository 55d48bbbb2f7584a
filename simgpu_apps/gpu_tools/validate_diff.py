"""Two validation pages' times, compared on the launches both have.

    python -m simgpu_apps.gpu_tools.validate_diff OLD.md NEW.md

A change to an algorithm changes its launches (a kernel gone, one added, fewer
rounds), so two runs' summaries do not compare the same launches. This reads the
"Times" tables of two pages written by ``simgpu_apps.gpu_tools.validate`` and
compares them on the (case, seed, kernel) whose launches both pages have, as many in
each: sim / GPU kernel time within 15%, median, geometric-mean error
exp(mean |ln(sim/GPU)|); then each page on all of its own launches. The pages print
ratios to two decimals, so a launch at the edge (0.846 shows as 0.85) can count
here and not in the page's own summary.
"""
from __future__ import annotations

import argparse
import math
import pathlib
import statistics


def time_table(text: str):
    """The cells of each launch row of a validation page's "## Times" table, in order."""
    section = text.split("\n## Times", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) >= 10 and cells[3].isdigit():
            yield cells


def time_rows(text: str) -> dict:
    """{(case, seed, kernel): [sim / GPU kernel ratio of each launch, in order]}."""
    out: dict = {}
    for cells in time_table(text):
        try:
            ratio = float(cells[8])
        except ValueError:               # "-": no time on one side
            continue
        out.setdefault((cells[1], cells[2], cells[4]), []).append(ratio)
    return out


def summary(ratios: list) -> str:
    within = sum(1 for r in ratios if abs(r - 1) <= 0.15 + 1e-9)   # (0.85 as printed)
    gm = math.exp(statistics.mean(abs(math.log(r)) for r in ratios))
    return (f"{len(ratios)} launches, {within} within 15% ({within / len(ratios):.0%}), "
            f"median {statistics.median(ratios):.2f}, geometric-mean error {gm:.3f}x")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m simgpu_apps.gpu_tools.validate_diff",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("old")
    p.add_argument("new")
    args = p.parse_args(argv)
    pages = []
    for f in (args.old, args.new):
        if not pathlib.Path(f).is_file():
            raise SystemExit(f"validate_diff: {f} is not a file: give two validation pages")
        text = pathlib.Path(f).read_text()
        if "\n## Times" not in text:
            raise SystemExit(f"validate_diff: {f} has no '## Times' section: give two pages "
                             "written by python -m simgpu_apps.gpu_tools.validate")
        pages.append(time_rows(text))
    old, new = pages
    common = [k for k in old if k in new and len(old[k]) == len(new[k])]
    print(f"on the launches both have ({len(common)} case/seed/kernel groups):")
    print(f"  {args.old}: {summary([r for k in common for r in old[k]])}")
    print(f"  {args.new}: {summary([r for k in common for r in new[k]])}")
    print("on all of each page's launches:")
    for name, rows in ((args.old, old), (args.new, new)):
        print(f"  {name}: {summary([r for rs in rows.values() for r in rs])}")


if __name__ == "__main__":
    main()
