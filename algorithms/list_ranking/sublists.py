"""Statistics of the random splitter's sublists (lengths, histogram) beside the values
Reid-Miller's analysis expects for them; used by the device method (random_splitter.py,
on first use of its stats) and the host one (cpu.py)."""
from __future__ import annotations

import math

import numpy as np


def harmonic(m: float) -> float:
    """H_m for real m >= 1 (exact sum for small m, the asymptotic series beyond)."""
    if m < 50:
        k = int(round(m))
        return sum(1.0 / j for j in range(1, max(k, 1) + 1))
    return math.log(m) + 0.5772156649015329 + 1 / (2 * m) - 1 / (12 * m * m)


def sublist_stats(lengths: np.ndarray, n: int, p_rand: int, heads: int, splitters: str,
                  p: int) -> dict:
    """Sublist lengths (mean, max, histogram) beside the values expected for them.

    Random splitters (Reid-Miller): p draws with replacement over n nodes plus
    the heads give m = h + (n - h)(1 - (1 - 1/n)^p) distinct splitters on
    average; the sublists (gaps between consecutive splitters) are then close
    to geometric with mean n/m, so a length falls in [a, b) with probability
    (1 - m/n)^(a-1) - (1 - m/n)^(b-1), and the longest of the m is expected to
    be about (n/m) H_m ~ (n/m) ln m.  Even splitters: every sublist has the
    spacing ceil(n/p) except the last of each list.
    Histogram bins are [1, 2), [2, 4), [4, 8), ...
    """
    used = lengths[lengths > 0]
    out = {"splitters": splitters, "heads": int(heads), "sublists": int(len(used)),
           "collisions": int(len(lengths) - len(used)),
           "mean": float(used.mean()) if len(used) else 0.0,
           "max": int(used.max()) if len(used) else 0}
    top = max(int(used.max()).bit_length() if len(used) else 1, 1)
    edges = [1 << j for j in range(top + 1)]
    counts = np.bincount(np.log2(used).astype(np.int64) if len(used) else np.zeros(0, np.int64),
                         minlength=top)[:top]
    hist = {"bins": [(edges[j], edges[j + 1]) for j in range(top)],
            "counts": [int(c) for c in counts]}
    if splitters == "random" and n:
        m = heads + (n - heads) * (1.0 - (1.0 - 1.0 / n) ** p_rand)
        q = min(1.0, m / n)
        out["expected_sublists"] = m
        out["expected_mean"] = n / m
        out["expected_max"] = (n / m) * harmonic(m)
        hist["expected"] = [m * ((1 - q) ** (a - 1) - (1 - q) ** (b - 1))
                            for a, b in hist["bins"]]
    elif n:
        spacing = max(1, -(-n // max(p, 1)))
        out["expected_sublists"] = len(used)
        out["expected_mean"] = n / max(len(used), 1)
        out["expected_max"] = min(spacing, n)
        hist["expected"] = None
    out["histogram"] = hist
    return out
