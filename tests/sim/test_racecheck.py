"""The race detector (check="races"): known racy kernels are reported with both lines,
the threads, the array and the index; race-free kernels are not; the rules follow
the architecture (lanes of a warp race on sm_70+ without syncwarp(), not before)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import simgpu
from algorithms.connected_components import kernels as CC
from simgpu.lang import (Array, atomic_add, blockDim, blockIdx, i32, kernel, shared_array,
                         syncthreads, syncwarp, threadIdx)
from simgpu.sim.checks import Checks
from simgpu.sim.racecheck import RaceError

ENGINES = ["lockstep", "warps", "timed", "timed-block"]
CONFIGS = ["sim:gtx260", "sim:h100"]


def races_of(dev, kern, grid, block, *args, **opts):
    rep = dev.launch(kern, grid, block, *args, check=Checks(races=True, raise_on_race=False),
                     **opts)
    return rep.races


def real(races):
    return [r for r in races if r.benign is None]


def lines(race):
    return race.first.node.loc.line, race.second.node.loc.line


def source(race):
    """The two lines' code, without comments."""
    return tuple(a.node.loc.source.split("#")[0].strip() for a in (race.first, race.second))


# --- Shiloach-Vishkin step 1: fused (wrong) vs two kernels -----------------------------

def forest(n, seed):
    rng = np.random.default_rng(seed)
    d = np.arange(n, dtype=np.int32)
    d[1:] = [rng.integers(0, i) for i in range(1, n)]   # parent below: a forest with depth
    return d


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("engine", ENGINES)
def test_fused_step_one_is_reported(config, engine):
    dev = simgpu.get_device(config)
    n = 96
    D, Q = dev.to_device(forest(n, 1)), dev.zeros(n, np.int32)
    with pytest.raises(RaceError) as info:
        dev.launch(CC.sv1_shortcut_mark_fused, 2, 32, D, Q, 1, n, engine=engine, check="races")
    msg = str(info.value)
    # the marking read races with other threads' shortcut writes: the bug the paper warns of
    assert "dd = D[d]" in msg and "D[i] = d" in msg and "on array 'D'" in msg
    assert "block (" in msg and "thread (" in msg and "^^^^" in msg
    pairs = {source(r) for r in info.value.races}
    assert ("D[i] = d", "dd = D[d]") in pairs or ("dd = D[d]", "D[i] = d") in pairs


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("engine", ENGINES)
def test_two_kernel_step_one_is_not_reported(config, engine):
    dev = simgpu.get_device(config)
    n = 96
    D, Q = dev.to_device(forest(n, 1)), dev.zeros(n, np.int32)
    ra = dev.launch(CC.sv1a_shortcut, 2, 32, D, n, engine=engine, check="races").races
    rb = dev.launch(CC.sv1b_mark, 2, 32, D, Q, 1, n, engine=engine, check="races").races
    # SV1a's pointer jumping is a race the kernel declares at its line; SV1b only
    # writes the same round number from many threads.  Neither raises.
    assert ra and all(r.benign.startswith("annotated: pointer jumping") for r in ra)
    assert {source(r) for r in ra} == {("D[i] = D[D[i]]", "D[i] = D[D[i]]")}
    assert all(r.benign == "same value" and r.kind == "write-write" for r in rb)
    assert not any(r.array == "D" for r in rb)          # D is only read in SV1b


def test_whole_algorithms_raise_no_race():
    """Every kernel of Shiloach-Vishkin and of both list-ranking methods, checked for
    races and uninitialized reads: only benign (same value, annotated) races remain."""
    from algorithms import list_ranking
    from algorithms.connected_components.shiloach_vishkin import shiloach_vishkin
    from algorithms.generators import random_list
    dev = simgpu.get_device("sim:h100")
    checked = set()
    launch = dev.launch

    def checked_launch(k, *a, **o):
        checked.add(k.ir.name)
        return launch(k, *a, check="races,uninit", **o)
    dev.launch = checked_launch
    rng = np.random.default_rng(0)
    labels, *_ = shiloach_vishkin(200, rng.integers(0, 200, (300, 2)), dev, threads=128)
    for kw in (dict(method="wylie"), dict(packing=48), dict(walk="paper"), dict()):
        list_ranking.rank(random_list(500, 2), device=dev, threads=128, **kw)
    assert {"sv1a_shortcut", "sv2_hook", "sv3_hook_stagnant", "cc_edges_pack_i64",
            "cc_label_offsets", "rs2_choose_64", "rs2_choose_48", "rs3_walk_64p",
            "wylie_jump"} <= checked


# --- warps: a reduction tail with and without syncwarp() -----------------------------

@kernel
def tail_without_syncwarp(x: Array[i32], out: Array[i32]):
    s = shared_array(i32, 64)
    t = threadIdx.x
    s[t] = x[t]
    syncthreads()
    if t < 32:
        off = 32
        while off > 0:
            s[t] += s[t + off]          # lane t reads what lane t + off wrote: same warp
            off //= 2
    if t == 0:
        out[0] = s[0]


@kernel
def tail_with_syncwarp(x: Array[i32], out: Array[i32]):
    s = shared_array(i32, 64)
    t = threadIdx.x
    s[t] = x[t]
    syncthreads()
    if t < 32:
        v = s[t]
        off = 32
        while off > 0:
            v += s[t + off]
            syncwarp()
            s[t] = v
            syncwarp()
            off //= 2
    if t == 0:
        out[0] = s[0]


@pytest.mark.parametrize("engine", ENGINES)
def test_reduction_tail_races_on_sm70_only(engine):
    x = np.arange(64, dtype=np.int32)
    for config, racy in (("sim:h100", True), ("sim:gtx260", False)):
        dev = simgpu.get_device(config)
        out = dev.zeros(1, np.int32)
        races = races_of(dev, tail_without_syncwarp, 1, 64, dev.to_device(x), out, engine=engine)
        assert out.to_host()[0] == x.sum()          # the simulator's answer is right anyway
        if racy:
            assert real(races) and all("same warp: no syncwarp()" in r.why for r in races)
            assert all(r.space == "shared" and r.array == "s" for r in races)
            assert {"s[t] += s[t + off]"} == {s for r in races for s in source(r)}
        else:
            assert races == []
        out = dev.zeros(1, np.int32)
        assert races_of(dev, tail_with_syncwarp, 1, 64, dev.to_device(x), out, engine=engine) == []
        assert out.to_host()[0] == x.sum()


# --- blocks: a missing syncthreads() ----------------------------------------------------

@kernel
def block_reduce(x: Array[i32], out: Array[i32], barrier: i32):
    s = shared_array(i32, 128)
    t = threadIdx.x
    s[t] = x[blockIdx.x * blockDim.x + t]
    if barrier != 0:
        syncthreads()
    off = blockDim.x // 2
    while off > 0:
        if t < off:
            s[t] += s[t + off]
        syncthreads()
        off //= 2
    if t == 0:
        out[blockIdx.x] = s[0]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("engine", ENGINES)
def test_missing_syncthreads_in_a_shared_reduction(config, engine):
    dev = simgpu.get_device(config)
    x = dev.to_device(np.arange(256, dtype=np.int32))
    with pytest.raises(RaceError) as info:
        dev.launch(block_reduce, 2, 128, x, dev.zeros(2, np.int32), 0, engine=engine,
                   check="races")
    r = info.value.races[0]
    assert r.space == "shared" and r.array == "s" and "different warps" in r.why
    assert set(source(r)) == {"s[t] = x[blockIdx.x * blockDim.x + t]", "s[t] += s[t + off]"}
    assert 64 <= r.index < 128          # written by warps 2, 3 and read by warps 0, 1
    out = dev.zeros(2, np.int32)
    assert dev.launch(block_reduce, 2, 128, x, out, 1, engine=engine, check="races").races == []
    assert list(out.to_host()) == [sum(range(128)), sum(range(128, 256))]


# --- global memory, atomics, one instruction --------------------------------------------

@kernel
def neighbour(a: Array[i32], out: Array[i32], n: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    a[i] = i
    out[i] = a[(i + 1) % n]


@kernel
def histogram(keys: Array[i32], bins: Array[i32], peek: Array[i32], plain: i32):
    i = blockIdx.x * blockDim.x + threadIdx.x
    atomic_add(bins, keys[i], 1)
    peek[i] = bins[0]                      # a plain read of an atomically updated word
    if plain != 0 and i == 5:
        bins[1] = 7                        # a plain store into the atomics' word: a race


@kernel
def one_word(out: Array[i32], same: i32):
    out[0] = 1 if same != 0 else threadIdx.x


@pytest.mark.parametrize("engine", ENGINES)
def test_global_races_across_blocks_and_warps(engine):
    dev = simgpu.get_device("sim:gtx260")
    a, out = dev.zeros(64, np.int32), dev.zeros(64, np.int32)
    races = real(races_of(dev, neighbour, 2, 32, a, out, 64, engine=engine))
    whys = {r.why.split(":")[0] for r in races}
    assert "different blocks" in whys                  # thread 31 reads a[32]: block 1
    assert all(r.space == "global" and r.array == "a" for r in races)
    r = races[0]
    assert r.address == a.base + 4 * r.index


@pytest.mark.parametrize("engine", ENGINES)
def test_atomics_do_not_race_but_a_plain_store_does(engine):
    dev = simgpu.get_device("sim:h100")
    keys = dev.to_device(np.arange(64, dtype=np.int32) % 3)
    races = races_of(dev, histogram, 2, 32, keys, dev.zeros(3, np.int32),
                     dev.zeros(64, np.int32), 0, engine=engine)
    assert races and all(r.benign == "a plain read of a word that atomics update" for r in races)
    races = real(races_of(dev, histogram, 2, 32, keys, dev.zeros(3, np.int32),
                          dev.zeros(64, np.int32), 1, engine=engine))
    assert races and {r.kind for r in races} <= {"write-atomic", "atomic-write"}
    assert all(r.index == 1 and "bins[1] = 7" in source(r) for r in races)


@pytest.mark.parametrize("config", CONFIGS)
def test_one_store_instruction_to_one_word(config):
    """CUDA: one unspecified lane's write lands.  A write-write race on every config;
    benign where every lane writes the same value."""
    dev = simgpu.get_device(config)
    races = races_of(dev, one_word, 1, 32, dev.zeros(1, np.int32), 0)
    assert len(races) == 1 and races[0].benign is None and races[0].count == 31
    assert "in one store instruction" in races[0].why
    races = races_of(dev, one_word, 1, 32, dev.zeros(1, np.int32), 1)
    assert len(races) == 1 and races[0].benign == "same value"


def test_allow_list_and_report_format():
    dev = simgpu.get_device("sim:h100")
    a, out = dev.zeros(64, np.int32), dev.zeros(64, np.int32)
    rep = dev.launch(neighbour, 2, 32, a, out, 64, check=Checks(races=True, allow={"a": "demo"}))
    assert rep.races and all(r.benign == "allowed: demo" for r in rep.races)
    text = rep.races[0].format()
    assert "[benign: allowed: demo]" in text and "test_racecheck.py:" in text
    assert rep.to_dict()["races"] == [r.format() for r in rep.races]
    # off by default: nothing is looked for, nothing is reported
    assert dev.launch(neighbour, 2, 32, a, out, 64).races == []


@pytest.mark.parametrize("bad", ["race", "races,bounds", 3, ["races", 1]])
def test_a_bad_check_is_refused_before_the_launch(bad):
    dev = simgpu.get_device("sim:h100")
    a = dev.zeros(64, np.int32)
    with pytest.raises(ValueError, match="check"):
        dev.launch(neighbour, 2, 32, a, dev.zeros(64, np.int32), 64, check=bad)
    assert not a.to_host().any()


# --- properties: reported exactly when the accesses conflict -----------------------------

@kernel
def scatter(src: Array[i32], where: Array[i32], dst: Array[i32]):
    t = blockIdx.x * blockDim.x + threadIdx.x
    dst[where[t]] = src[t]


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_scatter_races_exactly_when_two_threads_write_one_word_differently(data):
    n = data.draw(st.sampled_from([32, 64, 96]))
    where = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=n, max_size=n)), np.int32)
    src = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int32)
    engine = data.draw(st.sampled_from(ENGINES))
    dev = simgpu.get_device(data.draw(st.sampled_from(CONFIGS)))
    races = races_of(dev, scatter, n // 32, 32, dev.to_device(src), dev.to_device(where),
                     dev.zeros(n, np.int32), engine=engine)
    differ = any(len(set(src[where == w])) > 1 for w in np.unique(where))
    same_only = any((where == w).sum() > 1 and len(set(src[where == w])) == 1
                    for w in np.unique(where))
    repeated = any(np.unique(src[where == w]).size < (where == w).sum() for w in np.unique(where))
    assert bool(real(races)) == differ
    benign = any(r.benign == "same value" for r in races)
    assert (not same_only or benign) and (not benign or repeated)
    assert all(r.kind == "write-write" and r.array == "dst" for r in races)


@kernel
def exchange(w: Array[i32], r: Array[i32], out: Array[i32], barrier: i32):
    s = shared_array(i32, 128)
    t = threadIdx.x
    s[w[t]] = t
    if barrier != 0:
        syncthreads()
    out[t] = s[r[t]]


@pytest.mark.parametrize("barrier", [False, True])
@pytest.mark.parametrize("config", CONFIGS)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_shared_exchange_races_exactly_when_the_model_says(config, barrier, data):
    """Thread t writes s[w[t]] (w a permutation), then reads s[r[t]].  With the barrier:
    never a race.  Without: a race iff some t reads a word another thread wrote, and
    that thread is in another warp, or in t's warp on sm_70+ (no syncwarp())."""
    n = data.draw(st.sampled_from([32, 64, 128]))
    w = np.array(data.draw(st.permutations(range(n))), np.int32)
    r = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=n, max_size=n)), np.int32)
    engine = data.draw(st.sampled_from(ENGINES))
    dev = simgpu.get_device(config)
    races = races_of(dev, exchange, 1, n, dev.to_device(w), dev.to_device(r),
                     dev.zeros(n, np.int32), int(barrier), engine=engine,
                     **({"schedule": "random", "seed": 3} if engine == "warps" else {}))
    writer = np.argsort(w)[r]               # who wrote the word thread t reads
    t = np.arange(n)
    its = config == "sim:h100"
    expect = not barrier and bool(((writer != t) & ((writer // 32 != t // 32) | its)).any())
    assert bool(races) == expect
    assert all(r_.benign is None and r_.array == "s" for r_ in races)


@pytest.mark.parametrize("config", CONFIGS)
def test_the_render_differential_kernels_are_clean(config):
    """The kernels the CUDA backend is held against the GPU with (tests/cuda): no race,
    no uninitialized read, not even a benign one."""
    from ..cuda.test_render import _differential_cases
    dev = simgpu.get_device(config)
    names = set()
    for kern, grid, block, args in _differential_cases():
        dev_args = [dev.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        rep = dev.launch(kern, grid, block, *dev_args, check="races,uninit")
        assert rep.races == [], kern.name
        names.add(kern.name)
    assert {"block_sum", "fresh_loads", "warp_intrinsics", "atomics_i32"} <= names


@kernel
def two_reads_one_write(a: Array[i32], out: Array[i32]):
    i = blockIdx.x * blockDim.x + threadIdx.x
    x = a[0]
    y = a[0] + 1
    if i == 0:
        a[0] = x + y
    out[i] = x + y


@pytest.mark.parametrize("engine", ENGINES)
def test_every_pair_of_racing_lines_is_reported(engine):
    """Both reads race with the write: each line pair is reported, though the second
    read's lanes came later than the first's."""
    dev = simgpu.get_device("sim:gtx260")
    races = races_of(dev, two_reads_one_write, 2, 64, dev.zeros(1, np.int32),
                     dev.zeros(128, np.int32), engine=engine)
    pairs = {tuple(sorted(source(r))) for r in races}
    assert pairs == {("a[0] = x + y", "x = a[0]"), ("a[0] = x + y", "y = a[0] + 1")}
    assert all(r.benign is None for r in races)
