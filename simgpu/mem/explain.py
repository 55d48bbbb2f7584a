"""The teaching view of coalescing: which lanes' words became which transactions.

    >>> print(explain(4 * np.arange(32), 4, "sm_13"))      # doctest: +SKIP

Each 128-byte segment a warp touches is drawn as one row of 4-byte cells:
a character names the lane that wants that word (``0``-``9``, then ``a``-``v``
for lanes 10-31: a base-32 digit, so lanes 0 and 16 differ), ``-`` is a byte
the transaction moves that no lane wanted, blank is not moved.  On CC 1.x each
half-warp is shown on its own (the hardware coalesces half-warps); on CC 2.0
and later the whole warp, in 32-byte sectors.

"Bytes wanted" counts each distinct word once: lanes that read one word share
it (a broadcast), so the efficiency never passes 100%.
"""
from __future__ import annotations

import numpy as np

from .coalesce import parse_arch, transactions

CELL = 4            # bytes per drawn cell
ROW = 128           # bytes per drawn row
LANE_DIGITS = "0123456789abcdefghijklmnopqrstuv"     # lane k -> one character


def access_pattern(stride: int, offset: int = 0, word_size: int = 4, lanes: int = 32,
                   base: int = 0) -> np.ndarray:
    """Byte addresses of ``lanes`` threads reading element ``offset + stride * lane``."""
    return base + (offset + stride * np.arange(lanes, dtype=np.int64)) * word_size


def explain(addresses, word_size: int, arch: str, active=None, title: str = "") -> str:
    addresses = np.asarray(addresses, dtype=np.int64)
    active = np.ones(len(addresses), bool) if active is None else np.asarray(active, bool)
    cc = parse_arch(arch)
    groups = [(f"half-warp {h} (lanes {16 * h}-{16 * h + 15})", range(16 * h, min(16 * h + 16, len(addresses))))
              for h in range((len(addresses) + 15) // 16)] if cc < 20 else \
        [(f"warp (lanes 0-{len(addresses) - 1})", range(len(addresses)))]
    out = [title] if title else []
    total = moved = 0
    for name, lanes in groups:
        mask = np.zeros(len(addresses), bool)
        mask[list(lanes)] = True
        mask &= active
        if not mask.any():
            continue
        txns = transactions(addresses, word_size, arch, mask)
        total += len(txns)
        moved += sum(s for _, s in txns)
        sizes = ", ".join(f"{s} B" for _, s in txns[:8]) + (" ..." if len(txns) > 8 else "")
        out.append(f"{name}: {len(txns)} transaction{'s' * (len(txns) != 1)} ({sizes})")
        out.extend(_rows(addresses, mask, word_size, txns))
    wanted, shared = wanted_bytes(addresses, active, word_size)
    note = f"; {shared} lanes read a word another lane reads too" if shared else ""
    out.append(f"total: {total} transactions, {moved} bytes moved for {wanted} bytes wanted "
               f"({wanted / moved:.0%} efficiency{note})" if moved else "total: no active lanes")
    return "\n".join(out)


def wanted_bytes(addresses, active, word_size: int) -> tuple[int, int]:
    """(distinct bytes the active lanes want, lanes whose word another lane also wants)."""
    a = np.asarray(addresses, dtype=np.int64)[np.asarray(active, bool)]
    distinct = np.unique(a).size
    return distinct * word_size, int(a.size - distinct)


def compare(addresses, word_size: int, archs, title: str = "") -> str:
    """One warp's pattern under several architectures' rules: a row per arch."""
    addresses = np.asarray(addresses, dtype=np.int64)
    wanted, _ = wanted_bytes(addresses, np.ones(len(addresses), bool), word_size)
    lines = [f"{title + ': ' if title else ''}{wanted} bytes wanted",
             f"{'arch':8}{'rule':40}{'transactions':>13}{'bytes moved':>13}{'efficiency':>12}"]
    for arch in archs:
        t = transactions(addresses, word_size, arch)
        moved = sum(s for _, s in t)
        cc = parse_arch(arch)
        rule = ("CC 1.0/1.1: half-warps, all or nothing" if cc < 12 else
                "CC 1.2/1.3: half-warps, segments" if cc < 20 else "CC 2.0+: warp, 32 B sectors")
        lines.append(f"{arch:8}{rule:40}{len(t):>13}{moved:>13}{wanted / moved:>12.0%}")
    return "\n".join(lines)


def _rows(addresses, mask, word_size, txns, max_rows: int = 12):
    wanted: dict = {}
    for lane in np.flatnonzero(mask):
        a = int(addresses[lane])
        for byte in range(a, a + word_size, CELL if word_size >= CELL else word_size):
            wanted.setdefault(byte // CELL, LANE_DIGITS[lane % 32])
    moved = set()
    for a, s in txns:
        moved.update(range(a // CELL, (a + s) // CELL))
    rows = sorted({c * CELL // ROW for c in moved | set(wanted)})
    lines = []
    for r in rows[:max_rows]:
        cells = "".join(wanted.get(c, "-" if c in moved else " ")
                        for c in range(r * ROW // CELL, (r + 1) * ROW // CELL))
        lines.append(f"  {r * ROW:#08x} |{cells}|")
    if len(rows) > max_rows:
        lines.append(f"  ... {len(rows) - max_rows} more segments")
    return lines


def plot(addresses, word_size: int, arch: str, path: str, title: str = "") -> None:
    """The same picture as :func:`explain`, as a PNG (needs the ``plot`` extra)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    addresses = np.asarray(addresses, dtype=np.int64)
    cc = parse_arch(arch)
    fig, ax = plt.subplots(figsize=(9, 4))
    span = 16 if cc < 20 else len(addresses)
    colors = plt.get_cmap("tab10")
    for g in range(0, len(addresses), span):
        mask = np.zeros(len(addresses), bool)
        mask[g:g + span] = True
        for k, (a, s) in enumerate(transactions(addresses, word_size, arch, mask)):
            ax.add_patch(plt.Rectangle((a, g - 0.5), s, span, alpha=0.25, color=colors(k % 10)))
    ax.scatter(addresses, np.arange(len(addresses)), s=12, color="black", zorder=3,
               label="word wanted by lane")
    ax.set_xlabel("byte address")
    ax.set_ylabel("lane")
    ax.set_title(title or f"{arch}: {word_size}-byte words")
    ax.autoscale_view()
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
