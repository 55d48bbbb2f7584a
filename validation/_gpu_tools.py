"""The project's Nsight Compute helpers, wherever they live: issue 22 moves
cuda_backend/{validate,ncu_csv}.py to simgpu_apps/gpu_tools/. Once that move is on
main, the fallback below can go."""
try:
    from simgpu_apps.gpu_tools import validate as builtin   # noqa: F401  (after the move)
except ImportError:
    from cuda_backend import validate as builtin             # noqa: F401  (before it)
