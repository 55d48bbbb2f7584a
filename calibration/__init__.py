"""The probes: one-off measurements of a real GPU (most need CuPy, several Nsight Compute)
that find how the hardware works and set the memory model's parameters; some have a
``--sim`` side that runs the same experiment on the model.  See README.md for what each
measures, the config key it sets and its page.  Run from the repository root as
``python -m calibration.<probe>``."""
