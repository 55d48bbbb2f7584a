"""Hypothesis over every reader (random bytes; truncated and mutated valid files) and
over launch arguments: nothing but the documented exceptions (issue 21 item 3)."""
import gzip
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import simgpu
from algorithms.generators import read_edges, read_succ
from simgpu.lang import Array, i32, kernel, threadIdx

DOCUMENTED = (simgpu.SimgpuError,)


def _npy(arr) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


VALID = [
    b"1 2\n2 3\n0 0\n",
    b"# a list\n1\n2\n2\n",
    b"%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 2\n",
    b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 0.5\n",
    b"%%MatrixMarket matrix array real general\n2 2\n1\n0\n0\n2.5\n",
    _npy(np.array([1, 2, 2])),
    _npy(np.array([[0, 1], [1, 2]])),
    gzip.compress(b"0 1\n1 2\n"),
]


@st.composite
def damaged(draw):
    base = bytearray(draw(st.sampled_from(VALID)))
    how = draw(st.sampled_from(["truncate", "flip", "insert", "random"]))
    if how == "random":
        return draw(st.binary(max_size=200))
    if how == "truncate":
        return bytes(base[:draw(st.integers(0, len(base)))])
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, max(0, len(base) - 1)))
        b = draw(st.integers(0, 255))
        if how == "flip" and base:
            base[i] = b
        else:
            base.insert(i, b)
    return bytes(base)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@example(data=b"\x1f\x8b\x08\x00RW\x07k\x02\xff3P0\xe42T0\xe2\x08\x00j\x1d\xbb\xd7\x08"
              b"\x00\x00\x00", name="f")          # found by this test: zlib.error before the fix
@given(data=damaged(), name=st.sampled_from(["f", "f.txt", "f.npy", "f.NPY", "f.mtx", "f.gz",
                                             "f.mtx.gz"]))
def test_readers_raise_only_documented_errors(tmp_path_factory, data, name):
    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_bytes(data)
    for reader in (read_edges, read_succ):
        try:
            reader(path)
        except DOCUMENTED:
            pass


@kernel
def put(a: Array[i32], v: i32):
    if threadIdx.x < 4:
        a[threadIdx.x] = v


ANY = st.one_of(st.integers(-3, 2**40), st.floats(allow_nan=True), st.booleans(), st.text(max_size=3),
                st.none(), st.tuples(st.integers(-2, 70000), st.integers(-2, 3)),
                st.lists(st.one_of(st.integers(-2, 600), st.floats()), max_size=4))


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(grid=ANY, block=ANY, value=ANY, seed=ANY,
       engine=st.sampled_from([None, "lockstep", "warps", "timed-block", "x", 3]),
       schedule=st.sampled_from(["fixed", "random", "nope", None]))
def test_launch_arguments_raise_only_documented_errors(grid, block, value, seed, engine, schedule):
    dev = simgpu.get_device("sim:gtx260")
    a = dev.zeros(4, np.int32)
    try:
        dev.launch(put, grid, block, a, value, engine=engine, schedule=schedule, seed=seed)
    except DOCUMENTED:
        assert not a.to_host().any()                 # a refused launch changed nothing
