"""Locating the crossing and the inflections of Fig. 3 right from the data.

crossing(xs, a, b)
    the sizes where curve a stops being below curve b (or the reverse): the
    sign changes of a - b between neighbouring sizes, each placed by linear
    interpolation.
hinge(xs, ys)
    the inflection of one time curve, as the paper means it: the size past
    which the time grows faster with n (the curve bends upward; time per
    element starts to rise).  Every inner size x_k is tried as the knee of the
    continuous two-piece line y = a + b x + c max(0, x - x_k) (least squares);
    the knee is the x_k of least squared error.  It counts as an inflection
    when the slope after it is at least ``min_ratio`` times the slope before it
    and the two-piece line leaves at most ``max_sse_share`` of the straight
    line's squared error (the bend explains the data, not noise).
"""
from __future__ import annotations

import numpy as np


def crossing(xs, a, b) -> list:
    """[(x, direction)]: x interpolated where a - b changes sign; direction
    "a above b after" or "a below b after"."""
    out = []
    d = [p - q for p, q in zip(a, b)]
    for i in range(len(xs) - 1):
        if d[i] == 0:
            continue
        if d[i] * d[i + 1] < 0:
            x = xs[i] + (xs[i + 1] - xs[i]) * d[i] / (d[i] - d[i + 1])
            out.append((float(x), "a above b after" if d[i + 1] > 0 else "a below b after"))
        elif d[i + 1] == 0 and i + 2 < len(xs) and d[i] * d[i + 2] < 0:
            out.append((float(xs[i + 1]), "a above b after" if d[i + 2] > 0 else "a below b after"))
    return out


def _lstsq(cols, y):
    A = np.stack(cols, axis=1)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    r = y - A @ coef
    return coef, float(r @ r)


def hinge(xs, ys, min_ratio: float = 1.10, max_sse_share: float = 0.5) -> dict:
    """The best knee of ys(xs) (needs >= 5 points): {"knee", "slope_before",
    "slope_after", "ratio", "sse_share", "inflection": bool}; {} if too few points."""
    x = np.asarray(xs, float)
    y = np.asarray(ys, float)
    if len(x) < 5:
        return {}
    ones = np.ones_like(x)
    _, sse_line = _lstsq([ones, x], y)
    best = None
    for k in range(2, len(x) - 2):          # at least 3 points on each piece (the knee shared)
        coef, sse = _lstsq([ones, x, np.maximum(0.0, x - x[k])], y)
        if best is None or sse < best[1]:
            best = (k, sse, coef)
    k, sse, (a, b, c) = best
    ratio = (b + c) / b if b > 0 else float("inf") if b + c > 0 else 0.0
    share = sse / sse_line if sse_line > 0 else 1.0
    return {"knee": float(x[k]), "slope_before": float(b), "slope_after": float(b + c),
            "ratio": float(ratio), "sse_share": float(share),
            "inflection": bool(ratio >= min_ratio and share <= max_sse_share and c > 0)}
