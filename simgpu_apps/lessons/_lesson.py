"""What the three coalescing lessons share: options, devices, sums of report
fields, tables, and pictures (matplotlib, optional).

The lessons (each ``python -m simgpu_apps.lessons.<name> --help``):

  striding          striding vs partitioning loops (the paper's section 2.5)
  packing           48- vs 64-bit packing of the random splitter (Fig. 3 right)
  splitter_kernels  RS1..RS5 of the random splitter, RS3 vs RS5 (Table 2)

Every number they print comes from the LaunchReports of real simulated
launches; nothing is looked up.
"""
from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import numpy as np

PLOT_MISSING = ("picture skipped: matplotlib is not installed "
                "(pip install 'simgpu[plot]'); the table above is the lesson's data")
KINDS = ("loads", "stores", "atomics")


def parser(prog: str, doc: str) -> argparse.ArgumentParser:
    """The options every lesson has: --device, --out, --no-plot."""
    p = argparse.ArgumentParser(prog=prog, description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="sim:gtx260",
                   help="a simulated GPU: sim:gtx260 (default, the paper's CC 1.3 card), "
                   "sim:h100, sim:h200")
    p.add_argument("--out", default=".", metavar="DIR",
                   help="folder for the PNG picture (default: the current folder)")
    p.add_argument("--no-plot", action="store_true", help="print the numbers only")
    return p


def check_device(p: argparse.ArgumentParser, name: str) -> str:
    """The config key of a simulated device, or a one-line usage error (exit 2)."""
    import simgpu
    if not str(name).startswith("sim:"):
        p.error(f"the lessons count transactions, so they run on a simulated device "
                f"(sim:...), not {name}")
    try:
        return simgpu.get_device(name).config.key
    except (ValueError, OSError) as exc:
        p.error(str(exc))


def fresh_device(name: str, engine: str):
    """A new device per measurement, so that allocation addresses (hence memory
    partitions, DRAM rows) depend on that measurement alone: the numbers are the
    same in any order, in any process."""
    import simgpu
    dev = simgpu.get_device(name)
    dev.default_engine = engine
    return dev


def traffic(reports) -> dict:
    """Report fields summed over launches and over loads, stores and atomics:
    instructions (warp level), accesses (lane level), transactions, bytes
    moved, bytes requested, simulated time (ms)."""
    reports = list(reports)
    out = dict(instructions=0, accesses=0, transactions=0, bytes=0, bytes_requested=0,
               time_ms=sum(r.time_ms or 0.0 for r in reports), launches=len(reports))
    for r in reports:
        for kind in KINDS:
            c = getattr(r, kind)
            out["instructions"] += c.instructions
            out["accesses"] += c.lanes
            out["transactions"] += c.transactions
            out["bytes"] += c.bytes
            out["bytes_requested"] += c.bytes_requested
    out["efficiency"] = out["bytes_requested"] / out["bytes"] if out["bytes"] else 1.0
    return out


def by_step(launches, steps) -> dict:
    """{step: traffic} over the launches whose report.extra["step"] is that step."""
    return {s: traffic(r for r in launches if r.extra.get("step") == s) for s in steps}


def cell(v) -> str:
    """How every lesson prints a number (the tests format report values the same way)."""
    if isinstance(v, (bool, str)) or v is None:
        return "-" if v is None else str(v)
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    return f"{v:.4g}"


def table(headers, rows) -> str:
    """A plain-text table: numbers right-aligned, text (and the first column) left-aligned."""
    cells = [[cell(v) for v in row] for row in rows]
    width = [max([len(str(h))] + [len(r[k]) for r in cells]) for k, h in enumerate(headers)]
    left = [k == 0 or all(isinstance(row[k], str) for row in rows) for k in range(len(headers))]
    fmt = lambda row: "  ".join(v.ljust(w) if lt else v.rjust(w)
                                for v, w, lt in zip(row, width, left)).rstrip()
    return "\n".join([fmt(headers), fmt(["-" * w for w in width])] + [fmt(r) for r in cells])


def lesson_text(doc: str) -> str:
    """A lesson module's docstring up to its usage lines: what the student should see."""
    text = doc.split("\n    python -m", 1)[0].rstrip()
    return text + "\n" + "=" * 78


def have_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def figure(ncols: int, nrows: int = 1, size=(5.0, 4.0)):
    """A matplotlib figure (Agg backend) and its axes, flattened."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows),
                             squeeze=False)
    return fig, list(axes.flat)


def save(fig, out: str | Path, name: str) -> Path:
    import matplotlib.pyplot as plt
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def draw_warp(ax, addresses, word_size: int, arch: str, title: str) -> None:
    """One warp instruction as simgpu.mem.explain.plot draws it, into ``ax``: a dot
    per lane at its byte address, a shaded box per transaction (per half-warp on
    CC 1.x, per warp on 2.0 and later)."""
    import matplotlib.pyplot as plt
    from simgpu.mem.coalesce import transactions
    addresses = np.asarray(addresses, dtype=np.int64)
    span = 16 if int(str(arch).rpartition("_")[2]) < 20 else len(addresses)   # half-warps on 1.x
    colors = plt.get_cmap("tab10")
    count = 0
    for g in range(0, len(addresses), span):
        mask = np.zeros(len(addresses), bool)
        mask[g:g + span] = True
        for a, s in transactions(addresses, word_size, arch, mask):
            ax.add_patch(plt.Rectangle((a, g - 0.5), s, min(span, len(addresses) - g),
                                       alpha=0.25, color=colors(count % 10)))
            count += 1
    ax.scatter(addresses, np.arange(len(addresses)), s=10, color="black", zorder=3,
               label="word a lane wants")
    ax.set_xlabel("byte address")
    ax.set_ylabel("lane")
    ax.set_title(f"{title}\n{count} transactions ({arch})", fontsize=10)
    ax.autoscale_view()
    ax.legend(loc="lower right", fontsize=8)


def bars(ax, labels, groups: dict, ylabel: str, title: str, log: bool = False) -> None:
    """Grouped bars: groups = {series name: [value per label]}."""
    x = np.arange(len(labels))
    w = 0.8 / max(len(groups), 1)
    for k, (name, values) in enumerate(groups.items()):
        ax.bar(x + (k - (len(groups) - 1) / 2) * w, values, w, label=name)
    ax.set_xticks(x, labels)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if log:
        ax.set_yscale("log")
    if len(groups) > 1:
        ax.legend(fontsize=8)
