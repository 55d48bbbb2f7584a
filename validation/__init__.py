"""Held-apart validation: kernel sets the timing model is never tuned on, their
measurements (published GT200 figures, committed H100 runs) and the scripts that
compare the simulator with them. See validation/README.md."""
