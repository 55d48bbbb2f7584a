"""The paper's document: what the experiments produce (claims with verdicts, tables,
figures) and the writers: Markdown + CSV tables, CSV figure data, and ``report.md``
(``write_paper_report``).

A verdict is computed by the experiment from its measured numbers with a
criterion stated beside it; this module only writes them down:

  held           the criterion is met
  partly held    a claim with several parts, or a direction without the size
  not held       the criterion is not met at the sizes run
  not tested     the sizes run cannot test it (said why)
  not available  the experiment could not run (missing module, failed points)
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

VERDICTS = ("held", "partly held", "not held", "not tested", "not available")


@dataclass
class Claim:
    id: str                 # stable identifier, e.g. "table2-rs3-vs-rs5"
    source: str             # "Fig. 2", "Table 2", "Sec. 3.2 (text)"
    paper: str              # the claim, as NOTES.md / the paper state it
    criterion: str          # the test applied to our numbers
    verdict: str
    numbers: str            # the measured numbers behind the verdict
    unstable: str = ""      # why the verdict could flip with machine load ("" = stable)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")


@dataclass
class Table:
    name: str               # file stem: <name>.md, <name>.csv
    title: str
    columns: list
    rows: list              # lists of values (numbers, strings, None)
    sizes: str              # the sizes used, in words
    notes: list = field(default_factory=list)


@dataclass
class Series:
    label: str
    x: list
    y: list
    style: str = "-o"


@dataclass
class Panel:
    title: str
    xlabel: str
    ylabel: str
    series: list
    xlog: bool = False
    ylog: bool = False
    kind: str = "line"      # "line" or "bar" (bar: grouped bars, x = categories)
    stacked: bool = False
    hline: float | None = None   # a reference line (e.g. speedup 1)


@dataclass
class Figure:
    name: str               # file stem: <name>.png, <name>.csv (its data)
    title: str
    panels: list
    sizes: str
    notes: list = field(default_factory=list)


@dataclass
class Section:
    key: str                # "fig2", "table4", ...
    title: str
    figures: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    claims: list = field(default_factory=list)
    text: list = field(default_factory=list)      # paragraphs for report.md


# --- formatting ------------------------------------------------------------------

def fmt(v, digits: int = 4) -> str:
    """A cell: ints with separators, floats with `digits` significant digits."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if v == 0:
            return "0"
        if abs(v) >= 10 ** digits or abs(v) < 10 ** -3:
            return f"{v:.{digits - 1}e}"
        return f"{v:.{digits}g}"
    return str(v)


def pow2(n: int) -> str:
    """2^k for exact powers of two, else the number."""
    n = int(n)
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else f"{n:,}"


def size_range(values, name: str = "n") -> str:
    vals = sorted(set(int(v) for v in values))
    if not vals:
        return f"{name}: none"
    if len(vals) <= 3:
        return f"{name} = " + ", ".join(pow2(v) for v in vals)
    return f"{name} = {pow2(vals[0])} .. {pow2(vals[-1])} ({len(vals)} sizes)"


def caption(meta: dict, sizes: str) -> str:
    return (f"device {meta['device']} ({meta['device_desc']}); {meta['date']}; "
            f"script `{meta['script']}`; sizes: {sizes}")


# --- writers ---------------------------------------------------------------------

def table_markdown(t: Table, meta: dict, heading: str = "###") -> str:
    out = [f"{heading} {t.title}", "", f"*{caption(meta, t.sizes)}*", ""]
    out.append("| " + " | ".join(str(c) for c in t.columns) + " |")
    out.append("|" + "---|" * len(t.columns))
    for row in t.rows:
        out.append("| " + " | ".join(fmt(v) for v in row) + " |")
    for note in t.notes:
        out += ["", note]
    return "\n".join(out) + "\n"


def _csv_header(meta: dict, title: str, sizes: str) -> str:
    return (f"# {title}\n# device: {meta['device']} ({meta['device_desc']})\n"
            f"# date: {meta['date']}\n# script: {meta['script']}\n# sizes: {sizes}\n")


def table_csv(t: Table, meta: dict) -> str:
    buf = io.StringIO()
    buf.write(_csv_header(meta, t.title, t.sizes))
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(t.columns)
    for row in t.rows:
        w.writerow(["" if v is None else repr(v) if isinstance(v, float) else v for v in row])
    return buf.getvalue()


def figure_csv(f: Figure, meta: dict) -> str:
    buf = io.StringIO()
    buf.write(_csv_header(meta, f.title, f.sizes))
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["panel", "series", "x", "y"])
    for panel in f.panels:
        for s in panel.series:
            for x, y in zip(s.x, s.y):
                w.writerow([panel.title, s.label, x, "" if y is None else y])
    return buf.getvalue()


def write_outputs(sections, out: Path, meta: dict, plotter=None) -> dict:
    """Write every table (.md, .csv) and figure (.csv data, .png when `plotter`
    is given); returns {"tables": [...], "figures": [...], "pngs": [...]}."""
    written = {"tables": [], "figures": [], "pngs": []}
    names = [t.name for s in sections for t in s.tables] + [f.name for s in sections for f in s.figures]
    if len(names) != len(set(names)):
        raise RuntimeError(f"two outputs share a file name: {sorted(names)}")
    for sec in sections:
        for t in sec.tables:
            (out / f"{t.name}.md").write_text(table_markdown(t, meta, heading="#"))
            (out / f"{t.name}.csv").write_text(table_csv(t, meta))
            written["tables"].append(t.name)
        for f in sec.figures:
            (out / f"{f.name}.csv").write_text(figure_csv(f, meta))
            written["figures"].append(f.name)
            if plotter is not None:
                plotter(f, out / f"{f.name}.png", caption(meta, f.sizes))
                written["pngs"].append(f.name)
    return written


def read_verdicts(report_md) -> dict:
    """{claim id: verdict} from the verdict lines of an earlier report.md."""
    import re
    pat = re.compile(r"^Verdict \[([\w-]+)\]: (" + "|".join(VERDICTS) + r")$", re.M)
    return dict(pat.findall(Path(report_md).read_text()))


def unstable_margin(value: float, spread: float, thresholds) -> str:
    """"" when no threshold lies between ``value`` (from a CPU baseline's fastest
    run) and ``value * (1 + spread)`` (its slowest): else why the verdict is unstable."""
    hi = value * (1 + spread)
    near = [t for t in thresholds if value <= t <= hi or hi <= t <= value]
    if not near:
        return ""
    return (f"{value:.3g} from the fastest CPU run, {hi:.3g} from the slowest (spread "
            f"{spread:.0%}): threshold {', '.join(f'{t:g}' for t in near)} lies between")


def verdict_line(c: Claim) -> str:
    return f"Verdict [{c.id}]: {c.verdict}"


def write_paper_report(sections, out: Path, meta: dict, run_info: dict) -> Path:
    """report.md: a summary of verdicts, then per figure/table the paper's claim,
    the criterion, the verdict and the numbers, with links to the files."""
    claims = [c for s in sections for c in s.claims]
    lines = ["# Dehne & Yogaratnam on simgpu: the paper's figures and tables", "",
             f"- device: **{meta['device']}** ({meta['device_desc']})",
             f"- date: {meta['date']}",
             f"- script: `{meta['script']}` (size setting: {meta['size_name']})",
             f"- host (CPU baselines): {meta['host_desc']}",
             f"- points: {run_info['points']} ({run_info['cached']} from the cache, "
             f"{run_info['computed']} computed, {run_info['failed']} failed); "
             f"run time {run_info['elapsed']}",
             f"- figures: {run_info['figures_note']}", ""]
    if run_info.get("interrupted"):
        lines[-1:-1] = ["- **interrupted**: this report holds the points computed before the "
                        "run was stopped; run the same command again to resume"]
    lines += ["## How to read the times", ""] + [p + "\n" for p in meta["time_notes"]]
    counts = {v: sum(c.verdict == v for c in claims) for v in VERDICTS}
    beside = meta.get("beside") or {}            # {"label": ..., "verdicts": {id: verdict}}
    other = beside.get("verdicts", {})
    head = "| claim | where | verdict |" + (f" {beside['label']} |" if beside else "")
    lines += ["## Summary", "",
              ", ".join(f"{k} {v}" for k, v in counts.items() if v) + "", "",
              head, "|---|---|---|" + ("---|" if beside else "")]
    for c in claims:
        flag = " (unstable)" if c.unstable else ""
        lines.append(f"| [{c.id}](#{c.id}) {c.paper[:90]}{'...' if len(c.paper) > 90 else ''} "
                     f"| {c.source} | **{c.verdict}**{flag} |"
                     + (f" {other.get(c.id, '-')} |" if beside else ""))
    lines.append("")
    if any(c.unstable for c in claims):
        lines += ["(unstable): the verdict's margin lies inside the spread of the CPU "
                  "baseline's repeated runs, so a run on a differently loaded machine could "
                  "give another verdict; the claim's section says which margin.", ""]
    if run_info.get("left_out"):
        lines += ["## Points left out (--cached-sim: not in the cache)", ""]
        lines += [f"- `{label}`" for label in run_info["left_out"]]
        lines.append("")
    if run_info.get("errors"):
        lines += ["## Failed points", ""]
        lines += [f"- `{label}`: {err}" for label, err in run_info["errors"]]
        lines.append("")
    for sec in sections:
        lines += [f"## {sec.title}", ""]
        files = [f"[{t.name}.md]({t.name}.md) / [.csv]({t.name}.csv)" for t in sec.tables]
        for f in sec.figures:
            png = f"[{f.name}.png]({f.name}.png)" if f.name in run_info["pngs"] else f"{f.name}.png (skipped)"
            files.append(f"{png}, data [{f.name}.csv]({f.name}.csv)")
        if files:
            lines += ["Files: " + "; ".join(files), ""]
        lines += [p + "\n" for p in sec.text]
        for c in sec.claims:
            lines += [f'<a id="{c.id}"></a>', f"**{c.source}: {c.paper}**", "",
                      f"- criterion: {c.criterion}",
                      f"- numbers: {c.numbers}", ""]
            if c.unstable:
                lines += [f"- **unstable**: {c.unstable}", ""]
            if c.id in other:
                lines += [f"- {beside['label']}: {other[c.id]}", ""]
            lines += [verdict_line(c), ""]
        for t in sec.tables:
            lines.append(table_markdown(t, meta, heading="###"))
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path
