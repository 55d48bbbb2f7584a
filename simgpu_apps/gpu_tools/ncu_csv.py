"""Nsight Compute's ``--csv`` output, read once for both scripts that run it
(``validate`` for counters, ``calibrate`` for times)."""
from __future__ import annotations

import csv
import io


def parse_csv(text: str) -> list:
    """[(kernel name, {metric name: value text without thousands separators})], one
    per profiled launch, in launch order. Raises ValueError without ncu's header."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    at = next((i for i, r in enumerate(rows) if r[:2] == ["ID", "Process ID"]), None)
    if at is None:
        raise ValueError("no ncu CSV header ('ID', 'Process ID', ...) in the ncu output")
    header = rows[at]
    col = {k: header.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Value")}
    by_id: dict = {}
    for r in rows[at + 1:]:
        if len(r) != len(header) or r[0] == "ID":
            continue
        _, metrics = by_id.setdefault(int(r[col["ID"]]), (r[col["Kernel Name"]], {}))
        metrics[r[col["Metric Name"]]] = r[col["Metric Value"]].replace(",", "")
    return [by_id[k] for k in sorted(by_id)]
