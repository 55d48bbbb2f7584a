"""The real GPU as a simgpu Device: kernels rendered to CUDA C, compiled with NVRTC
through CuPy, launched PyCUDA-style, timed with CUDA events.

CuPy is imported when a ``CudaDevice`` is made, never at import time, so the
rest of simgpu works without it; a missing CuPy or GPU is a clear error.
"""
from __future__ import annotations

import contextlib
import hashlib
import time
from dataclasses import dataclass

import numpy as np

from simgpu.device import Device, DeviceArray, register_device
from simgpu.ir.types import ArrayType
from simgpu.report import LaunchReport
from simgpu.lang.errors import LaunchError


# Host arrays at least this large are page-locked (registered with the driver) for
# the length of a copy, so the DMA engine reads or writes them in place. From
# pageable memory the driver (and CuPy's asarray) stage through a bounce buffer:
# on the lent H100 host 8.6 GB/s to the GPU and 2.7 GB/s back, against about
# 50 GB/s from locked pages (docs/results/gpu-connected-components-h100.md).
# Registering costs about 70 us per MiB, so small copies stay pageable.
PAGE_LOCK_BYTES = 4 << 20


class CudaUnavailable(RuntimeError):
    """No CuPy, no driver, or no GPU: the 'cuda' device cannot be used here."""


@dataclass(frozen=True)
class CudaLimits:
    max_threads_per_block: int
    max_block_dim: tuple
    max_grid_dim: tuple
    shared_memory_per_block_bytes: int


def _matching_config(gpu_name: str, props):
    from dataclasses import replace

    from simgpu.configs import load_config
    for key in ("h200", "h100", "gtx260"):
        if key.upper() in gpu_name.upper().replace(" ", ""):
            cfg = load_config(key)
            return replace(cfg, gpu=replace(cfg.gpu, sm_count=props["multiProcessorCount"]))
    return None


def _import_cupy():
    try:
        import cupy
    except ImportError as exc:
        raise CudaUnavailable(
            f"the 'cuda' device needs CuPy ({exc}); install it with "
            "pip install 'simgpu[gpu]' on a machine with an NVIDIA GPU, "
            "or use a simulated device such as 'sim:h100'") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:   # CuPy raises its own CUDARuntimeError without a driver
        raise CudaUnavailable(f"CuPy found no usable CUDA driver or GPU: {exc}") from None
    if count == 0:
        raise CudaUnavailable("CuPy found no CUDA GPU on this machine")
    return cupy


class CudaDevice(Device):
    """``cuda`` / ``cuda:N``: the N-th GPU of this machine."""

    def __init__(self, index: int = 0):
        cp = self.cp = _import_cupy()
        if not 0 <= index < cp.cuda.runtime.getDeviceCount():
            raise CudaUnavailable(f"there is no GPU cuda:{index} "
                                  f"({cp.cuda.runtime.getDeviceCount()} found)")
        self.index = index
        self.name = f"cuda:{index}"
        props = cp.cuda.runtime.getDeviceProperties(index)
        self.gpu_name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        self.arch = f"sm_{props['major']}{props['minor']}"
        self.sm_count = int(props["multiProcessorCount"])
        self.max_threads_per_sm = int(props["maxThreadsPerMultiProcessor"])
        self._limits = CudaLimits(props["maxThreadsPerBlock"], tuple(props["maxThreadsDim"]),
                                  tuple(props["maxGridSize"]), props["sharedMemPerBlock"])
        self._modules: dict = {}
        self._functions: dict = {}      # id(kernel) -> (kernel, compiled function)
        self._plans: dict = {}          # id(kernel) -> (kernel, IR, argument specs): _remember
        self._pending: list = []        # (report, start event, end event) not yet timed
        # "gated": time_ms is the kernel's own time (cuda_backend.kernel_timing);
        # "events": plain events around the launch, the host's launch call included.
        from .kernel_timing import default_mode
        self.kernel_timing = default_mode()
        self._gate = None
        # The bundled config of this card, where there is one: algorithms read its
        # SM count and per-SM limits to size their launches, as on the simulator.
        self.config = _matching_config(self.gpu_name, props)

    @property
    def limits(self):
        return self._limits

    def _allocate(self, host):
        with self.cp.cuda.Device(self.index):
            arr = self.cp.empty(host.shape, dtype=host.dtype)
            with self._page_locked(host):
                arr.set(host)
        return DeviceArray(self, arr, int(arr.data.ptr))

    def _allocate_zeros(self, n, dtype):
        with self.cp.cuda.Device(self.index):
            arr = self.cp.zeros(n, dtype=dtype)      # on the device: no host array, no copy
        return DeviceArray(self, arr, int(arr.data.ptr))

    def _allocate_uninitialized_together(self, specs):
        # one block of the pool, no memset; each array a view 256-byte aligned in it
        # (cudaMalloc's alignment), which keeps the block alive while any of them lives
        offsets, total = [], 0
        for n, dtype in specs:
            offsets.append(total)
            total += -(-n * dtype.itemsize // 256) * 256
        cp = self.cp
        with cp.cuda.Device(self.index):
            memory = cp.empty(max(total, 1), dtype=cp.uint8).data   # a MemoryPointer
            views = [cp.ndarray((n,), dtype=dtype, memptr=memory + off)
                     for (n, dtype), off in zip(specs, offsets)]
        return [DeviceArray(self, v, int(v.data.ptr)) for v in views]

    def _allocate_uninitialized(self, n, dtype):
        with self.cp.cuda.Device(self.index):
            arr = self.cp.empty(n, dtype=dtype)        # no memset: the caller writes it all
        return DeviceArray(self, arr, int(arr.data.ptr))

    def _adopt(self, obj):
        """CUDA memory (CuPy or anything with __cuda_array_interface__) as a DeviceArray,
        no copy; a non-contiguous one is made contiguous on the device."""
        cp = self.cp
        with cp.cuda.Device(self.index):
            arr = cp.asarray(obj)                 # a view: CuPy reads the interface
            if arr.device.id != self.index:
                raise ValueError(f"the array is on cuda:{arr.device.id}, not on {self.name}")
            if not arr.flags.c_contiguous:
                arr = cp.ascontiguousarray(arr)
        return DeviceArray(self, arr, int(arr.data.ptr))

    def _export(self, arr):
        return arr._data                          # a CuPy array

    def _device_copy(self, dst, src):
        with self.cp.cuda.Device(self.index):
            dst._data[...] = src._data

    def _to_host(self, arr):
        host = np.empty(arr._data.shape, dtype=arr._data.dtype)
        with self.cp.cuda.Device(self.index), self._page_locked(host):
            # the event times of every launch but the last first, while the last may still
            # run: that host time then overlaps the GPU's instead of following the copy
            # (about 1-4 us per launch on the lent H100's host); after the page-locking,
            # which overlaps the kernels only if it comes before any wait for them (a 32 MB
            # array takes ~2 ms to lock: label()'s numpy path, 567399e)
            self._settle(but_last=True)
            arr._data.get(out=host)
        self._settle()
        return host

    def _copy_from(self, arr, host):
        host = np.ascontiguousarray(host)
        with self.cp.cuda.Device(self.index), self._page_locked(host):
            arr._data.set(host)
        self._settle()

    @contextlib.contextmanager
    def _page_locked(self, host: np.ndarray):
        """Lock ``host``'s pages for a copy (see PAGE_LOCK_BYTES); where the driver
        refuses (memory already registered, a read-only mapping, a limit on locked
        memory), the copy goes from pageable memory as before: slower, same result."""
        runtime = self.cp.cuda.runtime
        locked = False
        if host.nbytes >= PAGE_LOCK_BYTES and host.flags.c_contiguous:
            try:
                runtime.hostRegister(host.ctypes.data, host.nbytes, 0)
                locked = True
            except runtime.CUDARuntimeError:
                pass
        try:
            yield
        finally:
            if locked:
                runtime.hostUnregister(host.ctypes.data)

    def synchronize(self):
        with self.cp.cuda.Device(self.index):
            self.cp.cuda.Device(self.index).synchronize()
        self._settle()

    def _settle(self, but_last: bool = False):
        """Fill in the CUDA-event times of the launches made since the last settle (but_last:
        of all but the last, waiting for the one before it to end)."""
        settled = self._pending[:-1] if but_last else self._pending
        if not settled:
            return
        settled[-1][2].synchronize()
        gate_gave_up = self._gate is not None and self._gate.timed_out()
        for report, start, end in settled:
            report.time_ms = self.cp.cuda.get_elapsed_time(start, end)
            if gate_gave_up and report.extra.get("kernel_timing") == "gated":
                report.extra["kernel_timing"] = "gated, but a gate timed out: may include the launch"
        del self._pending[:len(settled)]

    def _timing_gate(self):
        """The gate of cuda_backend.kernel_timing, made at the first gated launch."""
        mode = self.kernel_timing
        if not isinstance(mode, str) or not (mode == "gated" or mode.startswith("events")):
            raise LaunchError(f"kernel_timing must be 'gated' or 'events', not {mode!r}")
        if mode != "gated":
            return None
        if self._gate is None:
            from .kernel_timing import Gate
            try:
                self._gate = Gate(self.cp)
            except Exception as exc:      # no gate here: plain events, and the report says so
                self.kernel_timing = f"events (no gate: {type(exc).__name__}: {exc})"
                return None
        return self._gate

    def function(self, kernel):
        """The compiled CuPy function of ``kernel``, cached by a hash of its CUDA source
        (and by the kernel object, so a launch does not render the kernel again)."""
        hit = self._functions.get(id(kernel))
        if hit is not None and hit[0] is kernel:
            return hit[1]
        from .render import kernel_symbol, render
        source = render(kernel)
        key = hashlib.sha256((self.arch + "\n" + source).encode()).hexdigest()
        if key not in self._modules:
            with self.cp.cuda.Device(self.index):
                module = self.cp.RawModule(code=source, backend="nvrtc",
                                           options=("--std=c++17",))
                self._modules[key] = module.get_function(kernel_symbol(kernel))
        self._functions[id(kernel)] = (kernel, self._modules[key])
        return self._modules[key]

    def launch(self, kernel, grid, block, *args, sync: bool = False, **options) -> LaunchReport:
        """Launch on the GPU; ``time_ms`` is the kernel's own CUDA-event time and
        ``launch_overhead_ms`` the host's wall time of the launch call.

        Launches are asynchronous, as in CUDA: the host returns at once and
        queues the next launch while this one runs.  The events around the
        kernel would still count the host's launch call whenever the stream is
        idle (the GPU reaches the start event, then waits for the kernel), so a
        one-thread gate kernel holds the stream until both events and the kernel
        are queued (``kernel_timing = "gated"``, cuda_backend.kernel_timing;
        ``"events"``: plain events, the launch call included, as under a
        profiler).  ``time_ms`` is filled in at the next synchronization:
        ``to_host``, ``copy_from``, ``synchronize()``, or this launch with ``sync=True``.

        Options meant for the simulator (``engine``, ``schedule``, ``seed``)
        are accepted and ignored, so algorithm code runs unchanged here; a
        ``check`` is refused (the GPU runs none: compute-sanitizer does).
        """
        if options.get("check"):
            raise LaunchError(f"check={options['check']!r} runs on the simulator only (sim:...); "
                              "on the GPU use compute-sanitizer --tool racecheck / initcheck")
        fast = self._checked_fast(kernel, grid, block, args)
        if fast is not None:
            fn, grid, block, argv = fast
        else:
            fn, grid, block, scalars, arrays = self.check_launch(kernel, grid, block, args)
            argv = []
            for p in fn.params:
                if isinstance(p.type, ArrayType):
                    argv.append(arrays[p.name]._data)
                else:
                    argv.append(np.array(scalars[p.name], dtype=p.type.dtype)[()])
            self._remember(kernel, fn)
        func = self.function(kernel)
        cp = self.cp
        with cp.cuda.Device(self.index):
            gate = self._timing_gate()
            if gate is not None and not cp.cuda.get_current_stream().done:
                # Work is still queued ahead: the GPU reaches ``start`` only when that is
                # done, by when the kernel is normally queued behind it, so plain events
                # time the kernel's own run; a gate here would only put a launch and a
                # wait between an algorithm's back-to-back kernels.
                gate = None
            start, end = cp.cuda.Event(), cp.cuda.Event()
            if gate is not None:
                gate.hold()
            start.record()
            t0 = time.perf_counter()
            try:
                func(grid, block, tuple(argv))
            finally:
                overhead_ms = (time.perf_counter() - t0) * 1e3
                end.record()
                if gate is not None:
                    gate.release()
        report = LaunchReport(kernel=fn.name, device=self.name, grid=grid, block=block,
                              engine="cuda", time_ms=None, counted=False,
                              launch_overhead_ms=overhead_ms)
        report.extra["kernel_timing"] = ("gated" if gate is not None else
                                         "events (stream busy)" if self._gate is not None
                                         and self.kernel_timing == "gated" else self.kernel_timing)
        self._pending.append((report, start, end))
        if sync:
            self._settle()
        return report

    # --- the launch checks' fast path -------------------------------------------------
    # check_launch costs the host tens of microseconds per launch on the lent H100's host
    # (per argument: a dtype or range check through several properties; per scalar a 0-d
    # numpy array), time the GPU idles whenever the host is behind it: rank()'s RS2 (14
    # arguments) took 0.067-0.097 ms to issue (gpu_end_to_end.py --timeline, 2026-11-26).
    # After one full check of a kernel, a launch whose every argument is of the plainest
    # accepted kind (a DeviceArray of this device with the parameter's dtype, a Python int
    # in the parameter's integer range) and whose grid and block are ints within the
    # limits passes these few tests instead; anything else, and every refusal, goes
    # through check_launch as before, so the same launches are accepted and refused.

    def _remember(self, kernel, fn):
        """Keep what the fast path needs of a kernel that passed check_launch once."""
        if id(kernel) in self._plans:
            return
        specs = []
        for p in fn.params:
            t = p.type
            if isinstance(t, ArrayType):
                specs.append((True, t.elem.dtype, None, 0, 0))
            elif t.is_int:
                specs.append((False, None, t.dtype.type, t.min, t.max))
            else:
                specs.append((False, None, None, 0, 0))      # float / bool: full check
        self._plans[id(kernel)] = (kernel, fn, tuple(specs))

    def _checked_fast(self, kernel, grid, block, args):
        """(fn, grid, block, argv) where the fast path above applies, else None."""
        plan = self._plans.get(id(kernel))
        if plan is None or plan[0] is not kernel or type(grid) is not int \
                or type(block) is not int or len(args) != len(plan[2]):
            return None
        lim = self._limits
        if not (1 <= block <= lim.max_threads_per_block and block <= lim.max_block_dim[0]
                and 1 <= grid <= lim.max_grid_dim[0]):
            return None
        argv = []
        for (is_array, dtype, scalar, lo, hi), a in zip(plan[2], args):
            if is_array:
                if type(a) is not DeviceArray or a.device is not self or a._data.dtype != dtype:
                    return None
                argv.append(a._data)
            elif scalar is not None and type(a) is int and lo <= a <= hi:
                argv.append(scalar(a))
            else:
                return None
        return plan[1], (grid, 1, 1), (block, 1, 1), argv

    def __repr__(self):
        return f"<CudaDevice {self.name}: {self.gpu_name}, {self.arch}>"


def open_cuda_device(spec: str | None) -> CudaDevice:
    """The factory behind ``get_device("cuda")`` / ``get_device("cuda:N")``."""
    if spec is None:
        return CudaDevice(0)
    if not spec.isdigit():
        raise ValueError(f"'cuda:{spec}': name a GPU by its index, e.g. cuda:0")
    return CudaDevice(int(spec))


register_device("cuda", open_cuda_device)
