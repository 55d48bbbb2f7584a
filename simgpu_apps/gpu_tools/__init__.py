"""The tools that hold the simulator against a real GPU: ``validate`` (the same kernels on
both devices: outputs, counts, times) and ``calibrate`` (microbenchmarks whose GPU figures
set the memory model's parameters), with the Nsight Compute CSV reader they share.

They sit above ``cuda_backend`` (the backend itself: render, device, nvcc) because they
also run the algorithms and the lessons: ``python -m simgpu_apps.gpu_tools.validate``,
``python -m simgpu_apps.gpu_tools.calibrate``."""
