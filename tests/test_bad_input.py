"""Bad input through the public API: each case ends in a documented exception (the
SimgpuError family, or DeviceMemoryError) whose message says what was wrong, and a
refused call changes nothing (issue 21, item 3)."""
import gzip

import numpy as np
import pytest

import simgpu
from algorithms import connected_components as cc
from algorithms import list_ranking as lr
from algorithms.generators import read_edges, read_succ
from simgpu.lang import Array, i32, kernel, threadIdx
from simgpu.lang.errors import (ArgumentError, InputFileError, KernelSyntaxError,
                                KernelTypeError, LaunchError, SimgpuError)
from simgpu.mem.coalesce import transactions


@kernel
def fill(a: Array[i32], v: i32):
    a[threadIdx.x] = v


@pytest.fixture
def sim():
    return simgpu.get_device("sim:gtx260")


LAUNCH_CASES = [
    (dict(grid=2.5), "grid must be an int"), (dict(grid="4"), "grid must be an int"),
    (dict(grid=True), "grid must be an int"), (dict(grid=(1, 2.0)), "grid must be an int"),
    (dict(grid=0), "each >= 1"), (dict(grid=(1, 1, 1, 1)), "1 to 3 dimensions"),
    (dict(block="32"), "block must be an int"), (dict(block=[32, True]), "block must be an int"),
    (dict(block=2048), "at most 512"), (dict(seed=-1), "seed must be an integer >= 0"),
    (dict(seed=1.5), "seed must be"), (dict(seed="a"), "seed must be"),
    (dict(seed=True), "seed must be"), (dict(engine="fast"), "engine must be one of"),
    (dict(schedule="rnd"), "schedule must be one of"),
    (dict(max_loop_iterations=0), "max_loop_iterations must be"),
    (dict(max_loop_iterations=2.0), "max_loop_iterations must be"),
    (dict(value=2**40), "does not fit i32"), (dict(value=1.5), "must be an integer"),
    (dict(value="3"), "must be an integer"),
]


@pytest.mark.parametrize("bad,match", LAUNCH_CASES, ids=[str(c[0]) for c in LAUNCH_CASES])
def test_a_bad_launch_is_refused_before_the_kernel_runs(sim, bad, match):
    a = sim.zeros(32, np.int32)
    kw = dict(grid=1, block=32, value=7)
    kw.update(bad)
    opts = {k: v for k, v in kw.items() if k not in ("grid", "block", "value")}
    with pytest.raises(LaunchError, match=match):
        sim.launch(fill, kw["grid"], kw["block"], a, kw["value"], **opts)
    assert not a.to_host().any()                     # nothing ran


ARRAY_CASES = [
    (lambda d: d.zeros(2.5, np.int32), "array length is an integer"),
    (lambda d: d.zeros(-1, np.int32), "array length is an integer"),
    (lambda d: d.zeros(True, np.int32), "array length is an integer"),
    (lambda d: d.zeros("3", np.int32), "array length is an integer"),
    (lambda d: d.zeros(3, "int128"), "not an element type"),
    (lambda d: d.zeros(3, object), "not an element type"),
    (lambda d: d.zeros(3, "complex64"), "not an element type"),
    (lambda d: d.empty(3, "U3"), "not an element type"),
    (lambda d: d.to_device(np.zeros((2, 2), np.int32)), "one-dimensional"),
    (lambda d: d.to_device(np.array(["a"])), "not an element type"),
    (lambda d: d.full(3, 1.5, np.int32), "not a int32"),
    (lambda d: d.full(3, 300, np.int8), "not a int8"),
    (lambda d: d.full(2.0, 1, np.int32), "array length is an integer"),
]


@pytest.mark.parametrize("make,match", ARRAY_CASES)
def test_bad_device_arrays_are_refused(sim, make, match):
    before = sim.memory.arrays, sim.memory.in_use, len(sim.copies)
    with pytest.raises(ArgumentError, match=match):
        make(sim)
    assert (sim.memory.arrays, sim.memory.in_use, len(sim.copies)) == before   # nothing allocated


@pytest.mark.parametrize("host", [np.array([1.5, 2, 3]), np.array([2**40, 1, 1]),
                                  np.array([-1, 0, 1]).astype(np.int64) - 2**40,
                                  np.array(["a", "b", "c"]), np.array([1, 2])])
def test_copy_from_refuses_lossy_or_wrong_sizes_and_keeps_the_contents(sim, host):
    a = sim.to_device(np.array([4, 5, 6], np.int32))
    with pytest.raises(ArgumentError):
        a.copy_from(host)
    assert a.to_host().tolist() == [4, 5, 6]


def test_copy_from_takes_what_converts_exactly(sim):
    a = sim.zeros(3, np.int32)
    a.copy_from(np.array([1.0, 2.0, -3.0]))          # whole floats
    a.copy_from([7, 8, 9])                           # a list (int64 values that fit)
    assert a.to_host().tolist() == [7, 8, 9]


SUCC = np.array([1, 2, 3, 3])
ALGO_CASES = [
    dict(threads=2.5), dict(threads="8"), dict(threads=True), dict(threads=0),
    dict(threads=2**31), dict(seed=1.5), dict(seed=-1), dict(seed="3"),
    dict(launch_options=[1]), dict(launch_options=dict(engin="x")),
    dict(launch_options=dict(engine="x")), dict(launch_options=dict(seed=-2)),
    dict(launch_options={1: 2}), dict(device=3), dict(device="nope"),
]


@pytest.mark.parametrize("kw", ALGO_CASES + [dict(block=0), dict(block=-5), dict(block=100),
                                             dict(block=1024), dict(workers=0)], ids=str)
def test_rank_checks_every_argument(kw):
    with pytest.raises(ArgumentError):
        lr.rank(SUCC, **kw)


@pytest.mark.parametrize("kw", ALGO_CASES, ids=str)
def test_label_checks_every_argument(kw):
    with pytest.raises(ArgumentError):
        cc.label(3, [[0, 1]], **kw)


def test_a_refused_algorithm_call_launches_nothing():
    dev = simgpu.get_device("sim:gtx260")
    with pytest.raises(LaunchError):
        lr.rank(SUCC, method="wylie", device=dev, launch_options=dict(engine="x"))
    assert dev.copies == [] and dev.memory.arrays == 0


# --- readers ----------------------------------------------------------------------------

def _files(tmp_path):
    (tmp_path / "dir").mkdir()
    np.save(tmp_path / "a.npy", np.array([1, 2, 2]))
    (tmp_path / "a.npy").rename(tmp_path / "A.NPY")
    (tmp_path / "edges.txt").write_text("0 1\n1 2\n")
    (tmp_path / "edges_gz").write_bytes(gzip.compress(b"0 1\n1 2\n"))
    (tmp_path / "graph.txt").write_text("%%MatrixMarket matrix coordinate pattern symmetric\n"
                                        "3 3 2\n2 1\n3 2\n")
    (tmp_path / "garbage").write_bytes(bytes(range(256)))
    (tmp_path / "latin1.txt").write_bytes(b"0 1\n\xe9\xe9\n")
    (tmp_path / "huge.txt").write_text("0 99999999999999999999999\n")
    (tmp_path / "big.txt").write_text("0 9999999999\n")
    (tmp_path / "text.npy").write_text("0 1\n")
    (tmp_path / "text.mtx").write_text("0 1\n")
    (tmp_path / "bad.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    return tmp_path


def test_readers_find_the_format_by_content(tmp_path):
    p = _files(tmp_path)
    assert read_succ(p / "A.NPY").tolist() == [1, 2, 2]              # .NPY in capitals
    assert read_edges(p / "edges_gz")[1].tolist() == [[0, 1], [1, 2]]  # gzip without .gz
    n, edges = read_edges(p / "graph.txt")                            # Matrix Market as .txt
    assert n == 3 and sorted(map(tuple, edges.tolist())) == [(1, 0), (2, 1)]


@pytest.mark.parametrize("name,reader,match", [
    ("dir", read_edges, "is a directory"), ("dir", read_succ, "is a directory"),
    ("missing", read_edges, "no such file"), ("garbage", read_edges, "binary data"),
    ("garbage", read_succ, "binary data"), ("latin1.txt", read_edges, "not UTF-8"),
    ("huge.txt", read_edges, ":1: id 9+ does not fit a 64-bit integer"),
    ("huge.txt", read_succ, ":1: id 9+ does not fit"),
    ("big.txt", read_edges, r"n=10000000000 must be in \[0, 2147483647\]"), ("text.npy", read_succ, "not a readable .npy"),
    ("text.mtx", read_edges, "not a readable Matrix Market"), ("bad.gz", read_edges, "gzip"),
    ("graph.txt", read_succ, "holds a graph"), ("A.NPY", read_edges, r"shape \(m, 2\)"),
])
def test_readers_refuse_clearly(tmp_path, name, reader, match):
    p = _files(tmp_path)
    with pytest.raises(InputFileError, match=match):
        reader(p / name)


def test_readers_refuse_a_non_path():
    with pytest.raises(ArgumentError, match="file name"):
        read_edges(42)


def test_coalescing_helpers_check_their_arguments():
    for args in [(["x"], 4, "sm_13"), ([1.5], 4, "sm_13"), ([0], 3, "sm_13"), ([0], 4, "sm13"),
                 (list(range(33)), 4, "sm_13"), (5, 4, "sm_13"), ([2], 4, "sm_13"),
                 ([-4], 4, "sm_90")]:
        with pytest.raises(ArgumentError):
            transactions(*args)


# --- the kernel language ---------------------------------------------------------------

def _compile(tmp_path, src):
    path = tmp_path / "k.py"
    path.write_text("from simgpu.lang import *\n" + src)
    ns = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    import linecache
    linecache.checkcache(str(path))
    return [v for v in ns.values() if isinstance(v, simgpu.lang.Kernel)][-1]


@pytest.mark.parametrize("body,line,match", [
    ("    range = 3\n    a[0] = range\n", 4, "'range' is a built-in"),
    ("    for min in range(3):\n        a[0] = min\n", 4, "'min' is a built-in"),
    ("    max: i32 = 2\n", 4, "'max' is a built-in"),
    ("    abs = 1\n", 4, "'abs' is a built-in"),
    ("    atomic_add = 1\n", 4, "'atomic_add' is a built-in"),
    ("    shfl_sync = 1\n", 4, "'shfl_sync' is a built-in"),
    ("    syncthreads = 1\n", 4, "'syncthreads' is a built-in"),
    ("    range = shared_array(i32, 4)\n", 4, "'range' is a built-in"),
])
def test_shadowing_a_builtin_is_an_error_at_the_users_line(tmp_path, body, line, match):
    k = _compile(tmp_path, "@kernel\ndef k(a: Array[i32]):\n" + body)
    with pytest.raises(KernelSyntaxError, match=match) as info:
        k.ir
    assert info.value.loc.line == line and "^" in str(info.value)


def test_a_parameter_named_like_a_builtin_is_refused(tmp_path):
    k = _compile(tmp_path, "@kernel\ndef k(a: Array[i32], min: i32):\n    a[0] = min\n")
    with pytest.raises(KernelSyntaxError, match="parameter 'min' would hide"):
        k.ir


def test_shared_array_with_a_negative_size_says_so(tmp_path):
    k = _compile(tmp_path, "@kernel\ndef k(a: Array[i32]):\n    s = shared_array(i32, -4)\n"
                           "    a[0] = 1\n")
    with pytest.raises(KernelTypeError, match="positive integer constant, not -4"):
        k.ir


def test_kernel_on_an_execd_function_or_a_class_is_a_clear_error():
    ns = {}
    exec("def f(a):\n    pass\n", ns)
    with pytest.raises(KernelSyntaxError, match="source of 'f' cannot be read"):
        kernel(ns["f"])

    class C:
        pass
    with pytest.raises(KernelSyntaxError, match="not a class"):
        kernel(C)
    with pytest.raises(KernelSyntaxError, match="plain 'def' function"):
        kernel(len)


def test_every_documented_error_is_a_simgpu_error():
    for cls in (ArgumentError, InputFileError, LaunchError, KernelSyntaxError,
                simgpu.KernelTimeoutError):
        assert issubclass(cls, SimgpuError)
    assert issubclass(ArgumentError, ValueError) and issubclass(InputFileError, ValueError)
