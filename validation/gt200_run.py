"""Run the published GT200 experiments on sim:gtx280 and hold them against the figures.

    python -m validation.gt200_run [--quick] [--markdown FILE]

Reads validation/gt200/published.toml, runs the kernels of validation.gt200_kernels
on sim:gtx280 (the timed-block engine) and prints:

1. published figure, simulated figure, ratio, within 15% (yes/no), for every figure
   with a value and an experiment ("unverified" figures are shown, marked, and not
   counted; figures of other cards are listed without a comparison);
2. the simulated curves (offsetCopy and strideCopy bandwidth and transactions per
   half-warp, the transpose kernels' effective bandwidths, the pointer chase's cycles
   per load against footprint) with their knee positions;
3. the figures that were not found, so that nobody reads a gap as a pass.
"""
from __future__ import annotations

import argparse
import math
import pathlib
import tomllib

import numpy as np

from . import gt200_kernels as K

HERE = pathlib.Path(__file__).resolve().parent
PUBLISHED = HERE / "gt200" / "published.toml"
STATUSES = ("found", "unverified", "not_found")
REQUIRED = ("id", "source", "citation", "card", "measured", "unit", "status", "reading")
TOLERANCE = 0.15


def load_figures(path=PUBLISHED) -> list:
    """The [[figure]] entries, checked: every required field present and non-empty, a
    known status, a value exactly where the status says one was found."""
    figures = tomllib.loads(pathlib.Path(path).read_text())["figure"]
    seen = set()
    for f in figures:
        missing = [k for k in REQUIRED if not str(f.get(k, "")).strip()]
        if missing:
            raise ValueError(f"{path}: figure {f.get('id', '?')} lacks {', '.join(missing)}")
        if f["status"] not in STATUSES:
            raise ValueError(f"{path}: figure {f['id']}: status {f['status']!r} is not one of {STATUSES}")
        if (f["status"] == "not_found") == ("value" in f):
            raise ValueError(f"{path}: figure {f['id']}: a value is given exactly when the "
                             f"status is found or unverified")
        if f["id"] in seen:
            raise ValueError(f"{path}: figure id {f['id']} appears twice")
        seen.add(f["id"])
    return figures


# --- the experiments on the simulator -------------------------------------------------------

def sim_device():
    import simgpu
    dev = simgpu.get_device("sim:gtx280")
    dev.default_engine = "timed-block"
    return dev


def _kernel_ms(dev, rep):
    return rep.cycles / (dev.config.gpu.core_clock_mhz * 1e3)


def offset_curve(n: int, offsets) -> list:
    """offsetCopy over n floats per offset: effective GB/s and load transactions per half-warp."""
    rows = []
    for off in offsets:
        dev = sim_device()
        src = dev.to_device(np.arange(n + 32, dtype=np.float32))
        dst = dev.zeros(n + 32, np.float32)
        rep = dev.launch(K.offset_copy, n // 256, 256, dst, src, off)
        ms = _kernel_ms(dev, rep)
        rows.append({"x": off, "gbps": 2 * 4 * n / (ms * 1e6),
                     "tx_per_halfwarp": rep.loads.transactions / (n / 16)})
    return rows


def stride_curve(n: int, strides) -> list:
    rows = []
    for s in strides:
        dev = sim_device()
        src = dev.zeros(n * s, np.float32)
        dst = dev.zeros(n * s, np.float32)
        rep = dev.launch(K.stride_copy, n // 256, 256, dst, src, s)
        ms = _kernel_ms(dev, rep)
        rows.append({"x": s, "gbps": 2 * 4 * n / (ms * 1e6),
                     "tx_per_halfwarp": rep.loads.transactions / (n / 16)})
    return rows


TRANSPOSES = ("copy", "copy_shared", "transpose_naive", "transpose_coalesced",
              "transpose_no_bank_conflicts", "transpose_diagonal")


def transpose_table(side: int) -> list:
    rows = []
    host = np.arange(side * side, dtype=np.float32)
    for name in TRANSPOSES:
        dev = sim_device()
        src, dst = dev.to_device(host), dev.zeros(side * side, np.float32)
        rep = dev.launch(getattr(K, name), (side // K.TILE, side // K.TILE),
                         (K.TILE, K.BLOCK_ROWS), dst, src, side, side)
        out = dst.to_host().reshape(side, side)
        want = host.reshape(side, side) if name.startswith("copy") else host.reshape(side, side).T
        rows.append({"x": name, "gbps": 2 * 4 * side * side / (_kernel_ms(dev, rep) * 1e6),
                     "correct": bool(np.array_equal(out, want))})
    return rows


def chase_curve(footprints, stride: int, steps: int) -> list:
    """Cycles per load of a one-thread chase over ``footprint`` bytes, ``stride`` bytes
    apart (the chain wraps around)."""
    rows = []
    for fp in footprints:
        dev = sim_device()
        n = fp // 4
        hops = max(1, fp // stride)
        nxt = np.zeros(n, np.int32)
        at = (np.arange(hops, dtype=np.int64) * (stride // 4)) % n
        nxt[at] = np.roll(at, -1)
        d, out = dev.to_device(nxt), dev.zeros(1, np.int32)
        rep = dev.launch(K.chase_stride, 1, 1, d, out, steps)
        rows.append({"x": fp, "cycles_per_load": rep.cycles / steps})
    return rows


def knees(rows: list, key: str, rel: float = 0.10) -> list:
    """The x of every point whose ``key`` differs from the previous point's by more than
    ``rel`` (relative): where a curve steps."""
    return [b["x"] for a, b in zip(rows, rows[1:])
            if a[key] and abs(b[key] / a[key] - 1) > rel]


def first_at(rows: list, key: str, value: float):
    """The first x where ``key`` reaches ``value`` (None if it never does)."""
    return next((r["x"] for r in rows if r[key] >= value - 1e-9), None)


# --- the comparison -----------------------------------------------------------------------------

def compare_row(fig: dict, simulated) -> dict:
    """published, simulated, ratio, within 15% for one figure. A [min, max] published
    value is a range: within means the simulated [min, max] lies inside it."""
    pub = fig["value"]
    if isinstance(pub, list):
        lo, hi = simulated
        return {"id": fig["id"], "published": f"{pub[0]}-{pub[1]}", "simulated": f"{lo:g}-{hi:g}",
                "ratio": None, "within": pub[0] <= lo and hi <= pub[1], "status": fig["status"]}
    ratio = simulated / pub
    return {"id": fig["id"], "published": f"{pub:g}", "simulated": f"{simulated:.4g}",
            "ratio": ratio, "within": abs(ratio - 1) <= TOLERANCE, "status": fig["status"]}


def simulated_value(fig: dict, results: dict):
    """The simulator's counterpart of a figure from the experiments' results (None: no
    counterpart on this card's config)."""
    exp = fig.get("experiment")
    if exp is None or "GTX 280" not in fig["card"]:
        return None
    if exp == "config_peak_bandwidth":
        from simgpu.configs import load_config
        return load_config("gtx280").memory.computed_bandwidth_gbps
    if fig["id"] == "bpg_offsetcopy_cc13_transactions":
        tx = [r["tx_per_halfwarp"] for r in results["offset"] if r["x"] > 0]
        return (min(tx), max(tx))
    if fig["id"] == "bpg_stridecopy_stride2_transactions":
        return next(r["tx_per_halfwarp"] for r in results["stride"] if r["x"] == fig["stride"])
    if fig["id"] == "bpg_stridecopy_saturation":
        return results["stride"][-1]["tx_per_halfwarp"]
    if fig["id"] == "wong_global_load_latency":
        return results["chase"][0]["cycles_per_load"]
    return None


def run_experiments(quick: bool = False) -> dict:
    n = 1 << 14 if quick else 1 << 18
    mib = 1 << 20
    footprints = [mib << k for k in range(0, 4 if quick else 10)]   # 1 MiB .. 512 MiB
    return {
        "offset": offset_curve(n, range(0, 33)),
        "stride": stride_curve(n, range(1, 33)),
        "transpose": transpose_table(256 if quick else 2048),
        "chase": chase_curve(footprints, 4096, 64 if quick else 256),
        "chase_512k": chase_curve(footprints, 512 << 10, 64 if quick else 256),
        "sizes": {"copy_n": n, "transpose_side": 256 if quick else 2048},
    }


def _fmt_bytes(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def report(figures: list, results: dict) -> str:
    out = ["## Published figures against sim:gtx280", "",
           "| figure | status | card | unit | published | simulated | ratio | within 15% |",
           "|---|---|---|---|---:|---:|---:|---|"]
    counted = within = 0
    for f in figures:
        if f["status"] == "not_found":
            continue
        sim = simulated_value(f, results)
        if sim is None:
            out.append(f"| {f['id']} | {f['status']} | {f['card']} | {f['unit']} | {f['value']} "
                       "| - | - | not compared (no config of this card) |")
            continue
        r = compare_row(f, sim)
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
        verdict = "yes" if r["within"] else "no"
        if f["status"] == "found":
            counted += 1
            within += r["within"]
        else:
            verdict += " (unverified: not counted)"
        out.append(f"| {f['id']} | {f['status']} | {f['card']} | {f['unit']} | {r['published']} "
                   f"| {r['simulated']} | {ratio} | {verdict} |")
    out += ["", f"{within} of {counted} found figures within 15% (or inside their published range)."]
    sizes = results["sizes"]
    out += ["", "## Simulated curves (sim:gtx280, timed-block engine)", "",
            f"offsetCopy and strideCopy: {sizes['copy_n']:,} threads of 256 per block; effective "
            "bandwidth = (bytes read + written) / kernel time (cycles at the shader clock).", "",
            "| offset | GB/s | load transactions per half-warp |", "|---:|---:|---:|"]
    out += [f"| {r['x']} | {r['gbps']:.1f} | {r['tx_per_halfwarp']:.2f} |" for r in results["offset"]]
    out += ["", f"offsetCopy knees (bandwidth steps > 10%): {knees(results['offset'], 'gbps')}", "",
            "| stride | GB/s | load transactions per half-warp |", "|---:|---:|---:|"]
    out += [f"| {r['x']} | {r['gbps']:.1f} | {r['tx_per_halfwarp']:.2f} |" for r in results["stride"]]
    out += ["", f"strideCopy knees (bandwidth steps > 10%): {knees(results['stride'], 'gbps')}; "
            f"16 transactions per half-warp first at stride "
            f"{first_at(results['stride'], 'tx_per_halfwarp', 16)}", "",
            f"Transposes of a {sizes['transpose_side']}x{sizes['transpose_side']} float matrix, "
            f"{K.TILE}x{K.TILE} tiles, blocks of {K.TILE}x{K.BLOCK_ROWS} threads:", "",
            "| kernel | GB/s | output correct |", "|---|---:|---|"]
    out += [f"| {r['x']} | {r['gbps']:.1f} | {'yes' if r['correct'] else 'NO'} |"
            for r in results["transpose"]]
    gb = {r["x"]: r["gbps"] for r in results["transpose"]}
    out += ["", f"partition camping (diagonal / no-bank-conflict transpose): "
            f"{gb['transpose_diagonal'] / gb['transpose_no_bank_conflicts']:.2f}x", ""]
    for key, stride in (("chase", "4 KiB"), ("chase_512k", "512 KiB")):
        out += [f"Pointer chase, one thread, stride {stride}:", "",
                "| footprint | cycles per load |", "|---:|---:|"]
        out += [f"| {_fmt_bytes(r['x'])} | {r['cycles_per_load']:.0f} |" for r in results[key]]
        out += ["", f"knees (steps > 10%): {[_fmt_bytes(x) for x in knees(results[key], 'cycles_per_load')]}", ""]
    out += ["## Not found in the stored sources (no value invented)", ""]
    out += [f"- {f['id']}: {f['measured']} ({f['citation']})" for f in figures
            if f["status"] == "not_found"]
    return "\n".join(out) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m validation.gt200_run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    p.add_argument("--markdown", help="also write the report to this file")
    args = p.parse_args(argv)
    text = report(load_figures(), run_experiments(args.quick))
    print(text)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
