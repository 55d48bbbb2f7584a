"""Figures of ``simgpu paper`` as PNG files (matplotlib, Agg backend).

matplotlib is optional (the ``plot`` extra).  ``plotter()`` returns None when
it cannot be imported; the run then writes every figure's data as CSV and
says in report.md that the PNGs were skipped.
"""
from __future__ import annotations

import numpy as np


def plotter():
    """draw(figure, path, caption) when matplotlib is importable, else None."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
    except ImportError:
        return None
    return draw


def draw(fig, path, caption: str) -> None:
    import matplotlib.pyplot as plt
    panels = fig.panels
    width = 6.4 * len(panels) if all(p.kind == "line" for p in panels) else 7.5 * len(panels)
    f, axes = plt.subplots(1, len(panels), figsize=(width, 5.2), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        if panel.kind == "bar":
            _bars(ax, panel)
        else:
            _lines(ax, panel)
        ax.set_title(panel.title, fontsize=10)
        ax.set_xlabel(panel.xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.grid(True, which="major", alpha=0.3)
        if any(s.x for s in panel.series):
            ax.legend(fontsize=7, loc="best")
    f.suptitle(fig.title, fontsize=12)
    notes = "; ".join(fig.notes)
    f.text(0.01, 0.01, caption + (f"\n{notes}" if notes else ""), fontsize=6.5, ha="left",
           va="bottom", wrap=True)
    # fixed margins: tight_layout measures every tick label and costs seconds per figure
    bars = any(p.kind == "bar" for p in panels)
    f.subplots_adjust(left=0.08 if len(panels) > 1 else 0.15, right=0.98, top=0.86,
                      bottom=0.3 if bars else 0.23, wspace=0.22)
    f.savefig(path, dpi=100)
    plt.close(f)


def _lines(ax, panel):
    for s in panel.series:
        pts = [(x, y) for x, y in zip(s.x, s.y) if y is not None]
        if not pts:
            continue
        xs, ys = zip(*pts)
        ax.plot(xs, ys, s.style, label=s.label, markersize=4)
    if panel.xlog:
        ax.set_xscale("log", base=2)
    if panel.ylog:
        ax.set_yscale("log")
    if panel.hline is not None:
        ax.axhline(panel.hline, color="grey", lw=0.8)


def _bars(ax, panel):
    cats = list(dict.fromkeys(x for s in panel.series for x in s.x))
    idx = np.arange(len(cats))
    if panel.stacked:
        bottom = np.zeros(len(cats))
        for s in panel.series:
            vals = np.array([dict(zip(s.x, s.y)).get(c) or 0.0 for c in cats])
            ax.bar(idx, vals, 0.7, bottom=bottom, label=s.label)
            bottom += vals
    else:
        k = max(len(panel.series), 1)
        w = 0.8 / k
        for j, s in enumerate(panel.series):
            vals = [dict(zip(s.x, s.y)).get(c) or 0.0 for c in cats]
            ax.bar(idx - 0.4 + w * (j + 0.5), vals, w, label=s.label)
    ax.set_xticks(idx)
    ax.set_xticklabels(cats, rotation=60, ha="right", fontsize=7)
