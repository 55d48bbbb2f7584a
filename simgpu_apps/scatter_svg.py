"""The scatter plot of ``simgpu validate FILE.py --plot``: one device's time against the
other's over all cases, log-log, with the y = x line and the +-15% band, as
Accel-Sim's correlator draws simulated against hardware cycles (accel-sim-framework,
util/plotting/plot-correlation.py: hardware on x, simulator on y). Here x is the
second device (the GPU in ``--devices sim:h100,cuda``), y the first. SVG is written
directly (no dependency); PNG needs matplotlib (the ``plot`` extra)."""
from __future__ import annotations

import math
from xml.sax.saxutils import escape

BAND = 0.15
W, H = 560, 520
LEFT, RIGHT, TOP, BOTTOM = 90, 30, 60, 70


def _range(values):
    lo = math.floor(math.log10(min(values) / (1 + BAND)))
    hi = math.ceil(math.log10(max(values) * (1 + BAND)))
    return lo, max(hi, lo + 1)


def _points(results):
    """[(case, x = device b's time, y = device a's time)] of the cases timed on both."""
    return [(r.name or r.kernel, r.times_ms[1], r.times_ms[0]) for r in results
            if r.times_ms[0] and r.times_ms[1]]


def _tick(k: int) -> str:
    return f"{10.0 ** k:g}"


def write_svg(results, path, title="") -> int:
    """Write the plot to ``path``; returns the number of points drawn."""
    pts = _points(results)
    if not pts:
        raise ValueError("no case has a time on both devices: nothing to plot "
                         "(an untimed engine such as lockstep gives none)")
    a, b = results[0].devices
    lo, hi = _range([v for _, x, y in pts for v in (x, y)])
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def sx(v):
        return LEFT + (math.log10(v) - lo) / (hi - lo) * pw

    def sy(v):
        return TOP + ph - (math.log10(v) - lo) / (hi - lo) * ph

    within = sum(1 for _, x, y in pts if abs(y / x - 1) <= BAND)
    title = title or f"{a} vs {b}: {within} of {len(pts)} cases within 15%"
    e0, e1 = 10.0 ** lo, 10.0 ** hi
    band = [(e0, e0 * (1 + BAND)), (e1, e1 * (1 + BAND)), (e1, e1 * (1 - BAND)), (e0, e0 * (1 - BAND))]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<clipPath id="plotarea"><rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}"/></clipPath>',
           f'<text id="title" x="{W / 2}" y="{TOP / 2}" text-anchor="middle" font-size="14">'
           f'{escape(title)}</text>',
           '<g clip-path="url(#plotarea)">',
           '<polygon id="band15" fill="#9ecae1" fill-opacity="0.45" stroke="none" points="'
           + " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in band) + '"/>',
           f'<line id="identity" x1="{sx(e0):.1f}" y1="{sy(e0):.1f}" x2="{sx(e1):.1f}" '
           f'y2="{sy(e1):.1f}" stroke="black" stroke-dasharray="5,4"/>', '</g>',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="black"/>']
    for k in range(lo, hi + 1):
        x, y = sx(10.0 ** k), sy(10.0 ** k)
        out += [f'<line x1="{x:.1f}" y1="{TOP + ph}" x2="{x:.1f}" y2="{TOP + ph + 5}" stroke="black"/>',
                f'<text x="{x:.1f}" y="{TOP + ph + 18}" text-anchor="middle">{_tick(k)}</text>',
                f'<line x1="{LEFT - 5}" y1="{y:.1f}" x2="{LEFT}" y2="{y:.1f}" stroke="black"/>',
                f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{_tick(k)}</text>']
    out += [f'<text id="xlabel" x="{LEFT + pw / 2}" y="{H - 25}" text-anchor="middle">'
            f'{escape(b)} time (ms, log)</text>',
            f'<text id="ylabel" transform="translate(22,{TOP + ph / 2}) rotate(-90)" '
            f'text-anchor="middle">{escape(a)} time (ms, log)</text>',
            f'<g id="legend" transform="translate({LEFT + 12},{TOP + 12})">'
            '<rect width="14" height="10" fill="#9ecae1" fill-opacity="0.45"/>'
            '<text x="20" y="10">within 15% of y = x</text>'
            '<line x1="0" y1="24" x2="14" y2="24" stroke="black" stroke-dasharray="5,4"/>'
            '<text x="20" y="28">y = x</text></g>',
            '<g id="points">']
    for name, x, y in pts:
        colour = "#08519c" if abs(y / x - 1) <= BAND else "#cb181d"
        out.append(f'<circle class="case" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="5" fill="{colour}">'
                   f'<title>{escape(name)}: {y:.6g} ms vs {x:.6g} ms ({y / x:.2f}x)</title></circle>')
    out += ['</g>', '</svg>']
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return len(pts)


def check_png_possible():
    """A clear error, before any work, where a PNG is asked for without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ValueError("--plot FILE.png needs matplotlib (pip install 'simgpu[plot]'); "
                         "--plot FILE.svg needs nothing") from None


def write_png(results, path) -> int:
    check_png_possible()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pts = _points(results)
    if not pts:
        raise ValueError("no case has a time on both devices: nothing to plot")
    a, b = results[0].devices
    lo, hi = _range([v for _, x, y in pts for v in (x, y)])
    e = [10.0 ** lo, 10.0 ** hi]
    fig, ax = plt.subplots(figsize=(5.6, 5.2))
    ax.fill_between(e, [v * (1 - BAND) for v in e], [v * (1 + BAND) for v in e],
                    color="#9ecae1", alpha=0.45, label="within 15% of y = x")
    ax.plot(e, e, "k--", label="y = x")
    ax.scatter([x for _, x, _ in pts], [y for _, _, y in pts], s=25,
               c=["#08519c" if abs(y / x - 1) <= BAND else "#cb181d" for _, x, y in pts])
    ax.set(xscale="log", yscale="log", xlim=e, ylim=e, xlabel=f"{b} time (ms, log)",
           ylabel=f"{a} time (ms, log)")
    within = sum(1 for _, x, y in pts if abs(y / x - 1) <= BAND)
    ax.set_title(f"{within} of {len(pts)} cases within 15%")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return len(pts)
