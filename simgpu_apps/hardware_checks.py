"""Which simulated configs have been held against hardware, when, and with what result:
what ``simgpu devices -v`` prints under each config. Each entry summarizes a page of
docs/ (named in it); update it with that page."""

HARDWARE_CHECKS = {
    "h100": ("checked against an NVIDIA H100 80GB HBM3 (the lent machine): "
             "2026-11-25, python -m simgpu_apps.gpu_tools.validate, sim/GPU kernel time "
             "over 438 launches median 0.97, 345 within 15%, outputs and Nsight Compute counts per "
             "case in docs/validation.md; calibration microbenchmarks 48 of 48 within 15% "
             "of five GPU runs (2026-11-22/23, docs/validation.md 'Calibration')"),
    "gtx260": ("not run on a GTX 260 (none available): held against the paper's published "
               "figures instead (simgpu paper; docs/paper/report.md)"),
    "h200": "not checked against an H200: the H100 model with the H200's published memory",
}


def hardware_check(key: str) -> str:
    return HARDWARE_CHECKS.get(key, "not checked against hardware")
