"""Testing GPU code on the simulator: run a kernel under many schedules, compare
with a reference, and (with hypothesis) draw the inputs, shapes and schedules.

    from simgpu.testing import check_schedules, schedule_options
    check_schedules(my_kernel, grid, block, a, out, n, reference=my_reference,
                    outputs=["out"], seeds=range(20))

* :func:`check_schedules` — the plain helper, no extra dependency;
* :mod:`simgpu.testing.strategies` — hypothesis strategies (needs ``hypothesis``:
  ``pip install 'simgpu[test]'``);
* :mod:`simgpu.testing.pytest_plugin` — fixtures and the ``gpu`` marker
  (``pytest_plugins = ["simgpu.testing.pytest_plugin"]`` in a conftest.py).
"""
from .schedules import (FIXED, ScheduleMismatch, check_schedules, schedule_options)

__all__ = ["check_schedules", "schedule_options", "ScheduleMismatch", "FIXED"]
