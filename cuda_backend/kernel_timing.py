"""The kernel's own time on the GPU, apart from the host's launch overhead.

CUDA events recorded around a launch (``start; kernel; end``) time from the moment
the GPU reaches ``start`` to the end of the kernel. When the stream is idle, the GPU
reaches ``start`` at once and then waits for the host to finish the launch call
(CuPy's argument packing and cuLaunchKernel: about 16-20 us on the lent H100 host,
issue 21), so that wait is counted as kernel time. A *gate* removes it, as nvbench's
blocking kernel does (NVIDIA/nvbench, ``blocking_kernel``): a one-thread kernel queued
before ``start`` spins on a word of page-locked host memory until the host has queued
``start``, the kernel and ``end``; only then does the GPU reach ``start``, with the
kernel already waiting behind it. The events then time the kernel's own run, as
Nsight Compute's gpu__time_duration does, and the host's wall time of the launch call
is reported apart, as ``launch_overhead_ms``.

The gate waits for a ticket (``flag[0] >= ticket``), so a gate still queued behind
earlier work passes as soon as its own launch is queued, whatever came after it. It
gives up after GATE_TIMEOUT_CYCLES (tens of ms: the host never takes that long to
queue three calls unless something stops it) and marks ``flag[1]``, so a stalled host
can never hang the GPU, and the report then says the time includes the wait.

Under a tool that serializes launches (Nsight Compute, compute-sanitizer) the gate
would wait out its timeout on every launch, because the tool returns from the gate's
launch only when the gate has finished: there (``CUDA_INJECTION64_PATH`` set, the
injection library every Nsight tool loads) and with ``SIMGPU_CUDA_TIMING=events``,
launches are timed with plain events, as before.
"""
from __future__ import annotations

import os

import numpy as np

GATE_SOURCE = r"""
extern "C" __global__ void simgpu_timing_gate(unsigned long long flag_addr, int ticket,
                                              long long max_cycles) {
    volatile int *flag = (volatile int *)flag_addr;
    long long t0 = clock64();
    while (flag[0] < ticket) {
        if (clock64() - t0 > max_cycles) { flag[1] = 1; return; }
    }
}
"""
GATE_TIMEOUT_CYCLES = 1 << 27          # ~70 ms at the H100's 1.98 GHz boost clock
MODES = ("gated", "events")


def default_mode() -> str:
    """'events' under a profiler or where SIMGPU_CUDA_TIMING=events says so, else 'gated'."""
    asked = os.environ.get("SIMGPU_CUDA_TIMING", "").strip().lower()
    if asked in MODES:
        return asked
    return "events" if os.environ.get("CUDA_INJECTION64_PATH") else "gated"


class Gate:
    """One device's gate: a page-locked int32 pair [ticket released, timed out] and the
    compiled gate kernel. ``hold()`` before recording ``start``, ``release()`` after
    recording ``end``."""

    def __init__(self, cp):
        self.cp = cp
        self._memory = cp.cuda.alloc_pinned_memory(8)
        self.flag = np.ndarray((2,), np.int32, self._memory)   # as cupyx.empty_pinned
        self.flag[:] = 0
        # With unified addressing (every 64-bit CUDA platform), page-locked host memory is
        # mapped into every device at the same address (CUDA Runtime API, "Unified Addressing").
        self.device_ptr = int(self._memory.ptr)
        self.kernel = cp.RawKernel(GATE_SOURCE, "simgpu_timing_gate")
        self.kernel.compile()             # now, not inside a launch: a failure here means no gate
        self.ticket = 0

    def hold(self):
        self.ticket += 1
        self.kernel((1,), (1,), (np.uint64(self.device_ptr), np.int32(self.ticket),
                                 np.int64(GATE_TIMEOUT_CYCLES)))

    def release(self):
        self.flag[0] = self.ticket

    def timed_out(self) -> bool:
        """Whether any gate gave up since the last call (read after a synchronize)."""
        out = bool(self.flag[1])
        self.flag[1] = 0
        return out
