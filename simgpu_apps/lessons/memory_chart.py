"""A memory chart per launch, in the style of Nsight Compute's: what the lanes asked
for, the requests and transactions (sectors) it became, the L1 and L2 hit rates,
and the bytes DRAM moved.

    from simgpu_apps.lessons.memory_chart import chart, plot_chart
    print(chart(report))                 # text; every number is a report field
    plot_chart(report, "chart.png")      # the same as a picture (needs matplotlib)

Or ``simgpu coalesce --example striding --chart``.  The cache figures exist only
for a launch of a timed engine on a config with caches (``report.extra``); the
chart says so where they are missing instead of inventing them.
"""
from __future__ import annotations

KINDS = (("loads", "load"), ("stores", "store"), ("atomics", "atomic"))


def chart_rows(rep) -> list:
    """(stage, figure, note) rows from the report, top (lanes) to bottom (DRAM)."""
    counts = [(name, rep.counts(kind)) for name, kind in KINDS]
    asked = sum(c.bytes_requested for _, c in counts)
    moved = sum(c.bytes for _, c in counts)
    requests = sum(c.requests for _, c in counts)
    txns = sum(c.transactions for _, c in counts)
    per = "  ".join(f"{n} {c.requests:,}" for n, c in counts if c.requests)
    rows = [("lanes ask for", f"{asked:,} B", f"{sum(c.lanes for _, c in counts):,} lane accesses"),
            ("requests", f"{requests:,}", per or "no global memory instructions"),
            ("transactions", f"{txns:,}", f"{moved:,} B moved, "
             f"{asked / moved:.0%} of it asked for" if moved else "none")]
    if rep.shared_loads or rep.shared_stores or rep.shared_atomics:
        rows.append(("shared memory", f"{rep.shared_loads + rep.shared_stores + rep.shared_atomics:,}",
                     f"loads {rep.shared_loads:,}  stores {rep.shared_stores:,}  "
                     f"atomics {rep.shared_atomics:,} (warp instructions)"))
    x = rep.extra
    if "l1_hit_rate" in x:
        rows.append(("L1", f"{x['l1_hit_rate']:.1%} hit", "of the L1 lookups"))
    else:
        rows.append(("L1", "-", "no L1 figures (a timed engine on a config with an L1 has them)"))
    if "l2_hit_rate" in x:
        note = f"{x['l2_writebacks']:,} write-backs" if "l2_writebacks" in x else ""
        rows.append(("L2", f"{x['l2_hit_rate']:.1%} hit", note))
    else:
        rows.append(("L2", "-", "no L2 figures (timed engines only; the GTX 260 has no L2)"))
    if "dram_bytes" in x:
        note = f"{x['achieved_gbps']:.1f} GB/s achieved" if "achieved_gbps" in x else ""
        if "row_hit_rate" in x:
            note += f", {x['row_hit_rate']:.1%} DRAM row hits"
        rows.append(("DRAM", f"{x['dram_bytes']:,} B", note.strip(", ")))
    else:
        rows.append(("DRAM", "-", "no DRAM figures (timed engines only)"))
    return rows


def chart(rep) -> str:
    head = (f"memory chart: {rep.kernel} on {rep.device}, {rep.engine} engine"
            + (f", {rep.time_ms:.4f} ms" if rep.time_ms is not None else ""))
    rows = chart_rows(rep)
    width = max(len(f) for _, f, _ in rows)
    out = [head]
    for k, (stage, figure, note) in enumerate(rows):
        out.append(f"  {stage:14} {figure:>{width}}   {note}".rstrip())
        if k < len(rows) - 1:
            out.append(f"  {'':14} {'|':>{width}}")
    return "\n".join(out)


def plot_chart(rep, path: str) -> None:
    """The chart as boxes and arrows, top to bottom (needs matplotlib)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = chart_rows(rep)
    fig, ax = plt.subplots(figsize=(6.5, 0.85 * len(rows) + 0.6))
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.5, len(rows) - 0.3)
    ax.axis("off")
    for k, (stage, figure, note) in enumerate(rows):
        y = len(rows) - 1 - k
        ax.add_patch(plt.Rectangle((0.2, y - 0.3), 3.2, 0.6, color="#cfe2f3", ec="#3d85c6"))
        ax.text(0.35, y, stage, va="center", fontsize=9, weight="bold")
        ax.text(3.25, y, figure, va="center", ha="right", fontsize=9)
        ax.text(3.7, y, note, va="center", fontsize=7.5, wrap=True)
        if k < len(rows) - 1:
            ax.annotate("", (1.8, y - 0.7), (1.8, y - 0.3),
                        arrowprops=dict(arrowstyle="->", color="#3d85c6"))
    ax.set_title(f"{rep.kernel} on {rep.device} ({rep.engine})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
