"""Which simulated configs have been held against hardware, when, and with what result:
what ``simgpu devices -v`` prints under each config. Each entry summarizes a page of
docs/ (named in it); update it with that page."""

HARDWARE_CHECKS = {
    "h100": ("checked against an NVIDIA H100 80GB HBM3 (the lent machine): "
             "2026-11-26, python -m simgpu_apps.gpu_tools.validate, sim/GPU kernel time "
             "over 303 launches median 0.93, 209 within 15% (on the 294 launches the "
             "2026-11-25 run also has: 211 within 15% against 203 then), outputs and Nsight "
             "Compute counts per case in docs/validation.md; the held-out set of 15 kernels "
             "(never tuned on): 10 of 20 within 15%, geometric-mean error 1.26x "
             "(validation/h100_heldout/timing-core-2026-11-26.md); calibration microbenchmarks "
             "48 of 48 within 15% of five GPU runs on the model of 2026-11-23, not rerun since "
             "the timing-core mechanisms (docs/validation.md 'Calibration'; a warm 16 MiB "
             "copy takes 97 us in the model now, 55 us then: docs/memory-model.md "
             "'Validation')"),
    "gtx260": ("not run on a GTX 260 (none available): held against the paper's published "
               "figures instead (simgpu paper; docs/paper/report.md)"),
    "gtx280": ("no GTX 280 available: held against the published GT200 figures found "
               "(Best Practices Guide: 4 of 4 within 15%, 2026-11-26, python -m "
               "validation.gt200_run; validation/gt200/timing-core-2026-11-26.md)"),
    "h200": "not checked against an H200: the H100 model with the H200's published memory",
}


def hardware_check(key: str) -> str:
    return HARDWARE_CHECKS.get(key, "not checked against hardware")
