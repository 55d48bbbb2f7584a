"""The device footprint of every point (list ranking and connected components),
and the points the device refused because their arrays do not fit its memory
(simgpu.DeviceMemoryError, raised by the device when it allocates them: a
refused point is reported, never simulated as if it fitted)."""
from __future__ import annotations

from .paper_document import Section, Table, size_range


def _mb(x) -> str:
    return f"{x / 2**20:,.0f} MiB"


def lr_footprints(ctx, res) -> Section:
    """Every list ranking point's device footprint, and the points the device refused."""
    sec = Section("footprint", "Device footprint of every list ranking point")
    rows = []
    for p, r in sorted(res.items(), key=lambda t: (t[0].p.get("n", 0), t[0].label())):
        if p.experiment != "lr_sim":
            continue
        v = p.p["method"] + (f" {p.p['packing']}-bit {p.p['splitters']}"
                             if p.p["method"] == "random-splitter" else "")
        rows.append([p.p["n"], v, p.p.get("threads"), r.get("footprint_bytes"),
                     r.get("allocator_peak_bytes"), r.get("capacity_bytes"),
                     "REFUSED (does not fit)" if r.get("refused") else "fits"])
    cap = next((r.get("capacity_bytes") for r in res.values() if r.get("capacity_bytes")), None)
    sec.text.append(
        "How the paper's 64M-node 64-bit run fits the 896 MB card: the list is a 32-bit "
        "successor array (4n bytes) and the 64-bit version adds one 64-bit word per node with "
        "the owner and the local rank packed (8n bytes); the final ranks are written over the "
        "successor array (the paper: 'calling the aggregation kernel with the succ_d array as "
        "the rank_d parameter'), so no third n-sized array is needed: 12n bytes, 768,000,000 "
        f"at n = 64,000,000 ({_mb(768e6)}), plus the splitter arrays (a few hundred KB). The "
        "48-bit version takes 10n (succ 4n, a 16-bit owner 2n, a 32-bit rank 4n, the ranks "
        "written into the rank array). Wylie's double-buffered 64-bit words take 20n "
        "(succ and two 8n buffers): it fits up to about 46M nodes on this card, and the device "
        "refuses it beyond, as it would refuse it on the paper's card."
        + (f" Capacity of {ctx.device}: {cap:,} bytes ({_mb(cap)})." if cap else ""))
    sec.tables.append(Table("footprint_lr", "Device footprint per list ranking point",
                            ["n", "variant", "threads", "footprint bytes (live arrays, peak)",
                             "allocator peak bytes (pages, page tables)", "capacity bytes",
                             "fits"], rows, size_range([r[0] for r in rows]),
                            ["A refused point is not simulated: the device raised "
                             "simgpu.DeviceMemoryError when its arrays were allocated; its "
                             "footprint is what it had allocated plus the array refused."]))
    refused = [r for r in rows if r[-1] != "fits"]
    if refused:
        sec.text.append("Refused for device capacity: " + "; ".join(
            f"{r[1]} n = {r[0]:,} (needs at least {r[3]:,} bytes)" for r in refused))
    return sec


def cc_footprints(ctx, res) -> Section:
    sec = Section("footprint_cc", "Device footprint of every connected components point")
    rows = []
    for p, r in sorted(res.items(), key=lambda t: (t[0].p.get("m", 0), t[0].label())):
        if p.experiment != "cc_sim":
            continue
        rows.append([p.p["graph"], p.p["arg"], p.p["m"], p.p["blocks"], p.p["engine"],
                     r.get("n"), r.get("footprint_bytes"), r.get("allocator_peak_bytes"),
                     r.get("capacity_bytes"), "REFUSED (does not fit)" if r.get("refused") else "fits"])
    sec.text.append("Shiloach-Vishkin keeps the parent array D and the mark Q (n words each), "
                    "the directed edges (2m pairs of 32-bit vertices) and a flag: about 8n + 16m "
                    "bytes; at m = 8,000,000 that is about 130-200 MB, well inside the 896 MB card.")
    sec.tables.append(Table("footprint_cc", "Device footprint per connected components point",
                            ["graph", "k or d", "m target", "blocks", "engine", "n",
                             "footprint bytes (live arrays, peak)",
                             "allocator peak bytes (pages, page tables)", "capacity bytes", "fits"],
                            rows, size_range([r[2] for r in rows], "m")))
    return sec
