"""simgpu's applications: the top layer, above ``algorithms``.

- ``simgpu_apps.cli``: the ``simgpu`` command;
- ``simgpu_apps.experiments``: the paper's experiments (``simgpu paper``);
- ``simgpu_apps.lessons``: the coalescing lessons (``python -m simgpu_apps.lessons.striding``);
- ``simgpu_apps.gpu_tools``: the sim-vs-GPU tools (``validate``, ``calibrate``);
- ``simgpu_apps.table_out``: how the benchmark and probe scripts print and save a table.

Applications may import anything below them (the core ``simgpu``, the backends,
``algorithms``); nothing below imports them (tests/test_layers.py checks it).
"""
