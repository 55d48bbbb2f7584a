"""The compiled trace-block replay's trace log (simgpu.sim.trace_log: LoggedWave records
a wave into arrays, trace_log.take hands them to the compiled loop) against the Python
replay of Wave's per-block queues, the reference: list ranking's reports (cycles, time,
counts, every extra field, the samples) and ranks must be identical on several lists,
both packings and Wylie, recorded before or during the timing, and with the log's
arrays so small that they compact and grow all the time.  Without numba the compiled
loop (and the log) does not run: skipped."""
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("numba")
from simgpu.mem.fast_jit import ENABLED as NUMBA_CORE  # noqa: E402

if not NUMBA_CORE:                  # (SIMGPU_NUMBA=0: the compiled loop never runs)
    pytest.skip("the numba core is off", allow_module_level=True)

import simgpu  # noqa: E402
import simgpu.sim.trace_compiled as trace_compiled  # noqa: E402
import simgpu.sim.trace_log as trace_log  # noqa: E402
import simgpu.sim.trace_replay as trace_replay  # noqa: E402
from simgpu.sim import trace_loop as L  # noqa: E402
from algorithms.list_ranking import rank  # noqa: E402
from tests.sim.test_trace_compiled import full  # noqa: E402


def random_list(n: int, seed: int) -> np.ndarray:
    order = np.random.default_rng(seed).permutation(n)
    succ = np.empty(n, np.int64)
    succ[order[:-1]] = order[1:]
    succ[order[-1]] = order[-1]
    return succ


def both(monkeypatch, succ, method, packing):
    """rank() with the Python replay, then with the compiled loop on the log: (results,
    the waves the log recorded)."""
    logged = []
    init = trace_log.LoggedWave.__init__

    def counted(self, *a, **kw):
        init(self, *a, **kw)
        logged.append(self)

    monkeypatch.setattr(trace_log.LoggedWave, "__init__", counted)
    out = []
    for compiled in (False, True):
        monkeypatch.setattr(trace_compiled, "ENABLED", compiled)
        out.append(rank(succ, device=simgpu.get_device("sim:gtx260"), method=method,
                        packing=packing, launch_options={"engine": "trace-block"}))
        if not compiled:
            assert not logged                  # (the reference records queues)
    return out, logged


def assert_same(a, b):
    np.testing.assert_array_equal(a.ranks, b.ranks)
    assert [full(r) for r in a.launches] == [full(r) for r in b.launches]
    assert [full(r) for r in a.helper_launches] == [full(r) for r in b.helper_launches]


@pytest.mark.parametrize("method,packing", [("random-splitter", 64),
                                            ("random-splitter", 48), ("wylie", 64)])
@pytest.mark.parametrize("n,seed", [(3000, 1), (5111, 7)])
def test_rank_identical(monkeypatch, method, packing, n, seed):
    (a, b), logged = both(monkeypatch, random_list(n, seed), method, packing)
    assert_same(a, b)
    assert logged                              # the compiled runs read the log
    replayed = [r.kernel for r in b.launches if r.extra.get("engine_ran") == "trace-block"]
    assert (("wylie_jump" in replayed) if method == "wylie"
            else f"rs3_walk_{packing}" in replayed)


@pytest.mark.parametrize("method,packing", [("random-splitter", 64),
                                            ("random-splitter", 48), ("wylie", 64)])
def test_rank_identical_with_tiny_log_recorded_during_timing(monkeypatch, method, packing):
    """Rows, wait numbers and the transaction arena start at one place: every append
    compacts what all blocks have taken, or grows; nothing recorded ahead."""
    monkeypatch.setattr(trace_replay, "RECORD_AHEAD_LANES", 0)
    for name in ("ROWS", "DEPS", "ADDRESSES", "CUTS"):
        monkeypatch.setattr(trace_log.WaveLog, name, 1)
    monkeypatch.setattr(trace_compiled, "AHEAD", 3)
    monkeypatch.setattr(trace_compiled, "BATCH", 5)
    (a, b), logged = both(monkeypatch, random_list(2500, 3), method, packing)
    assert_same(a, b)
    assert logged


@pytest.mark.parametrize("method,packing", [("random-splitter", 64),
                                            ("random-splitter", 48), ("wylie", 64)])
@pytest.mark.parametrize("narrow", [40, 200])
def test_rank_identical_when_the_rows_widen_mid_launch(monkeypatch, method, packing, narrow):
    """The rows start as int32 and widen to int64 when a value passes WaveLog.NARROW
    (lowered here so that instruction counts, item numbers and arena places pass it
    mid-launch): the same reports and ranks; no value is cut."""
    monkeypatch.setattr(trace_log.WaveLog, "NARROW", narrow)
    widened = []
    grow = trace_log.WaveLog.grow

    def counted(self, need, extra=0):
        widened.append(need == trace_log.NEED_WIDE)
        grow(self, need, extra)

    monkeypatch.setattr(trace_log.WaveLog, "grow", counted)
    (a, b), logged = both(monkeypatch, random_list(4000, 5), method, packing)
    assert_same(a, b)
    assert any(widened)
    assert {w.log.rows.dtype for w in logged} <= {np.dtype(np.int32), np.dtype(np.int64)}
    assert any(w.log.rows.dtype == np.int64 for w in logged)


def test_the_rows_are_int32_until_a_value_needs_more():
    log = trace_log.WaveLog(2)
    assert log.rows.dtype == np.int32 and log.limit == 2**31 - 1
    issued = np.array([5, 2**31], np.int64)           # block 1 past int32
    log.fence(issued, np.ones(2, dtype=bool))
    assert log.rows.dtype == np.int64
    assert log.rows[1, 0, trace_log.R_K] == 2**31 and log.rows[0, 0, trace_log.R_K] == 5


def test_the_log_drops_what_every_block_has_taken():
    """Rows and transactions that both blocks have taken make room for new ones: the
    arrays keep their small capacities over many instructions, and each block takes
    its own warp's transactions, numbers and waits back in order."""
    log = trace_log.WaveLog.__new__(trace_log.WaveLog)
    for name, size in (("ROWS", 4), ("DEPS", 4), ("ADDRESSES", 8), ("CUTS", 6)):
        setattr(log, name, size)
    log.__init__(2)
    issued = np.zeros(2, np.int64)
    acc = SimpleNamespace(warp=np.array([0, 0, 1, 1], np.int64))   # one warp per block
    ent = np.zeros((1, 8, L.N_E), np.int64)
    offs, txa, txs, deps = (np.zeros((1, 16), np.int64) for _ in range(4))
    cand = np.zeros(24, np.int64)
    mask = np.zeros(2, dtype=bool)
    for step in range(100):
        issued += 3
        addrs = np.arange(4, dtype=np.int64) * 32 + step * 1000
        log.memory(issued, acc, 1, 0, L.FL_LOAD, (addrs, np.full(4, 32, np.int64),
                                                  np.array([0, 2, 4], np.int64)),
                   np.zeros(0, np.int64), 10 * step, mask)
        assert mask.all()
        log.wait(issued, mask[None, :].copy(), np.array([10 * step], np.int64),
                 np.ones(2, dtype=bool))
        for b in (1, 0):
            n, nc = trace_log.take(log.rows, log.head, log.tail, log.dlog, log.taddr,
                                   log.tsize, log.tcut, b, 0, ent, offs, txa, txs, deps, 8,
                                   False, 0, cand)
            assert (n, nc) == (2, 0)
            assert ent[0, 0, L.E_TAG] == L.T_MEMORY and ent[0, 1, L.E_TAG] == L.T_WAIT
            assert ent[0, 0, L.E_K] == ent[0, 1, L.E_K] == issued[b]
            assert ent[0, 0, L.E_READY] == 10 * step + b == deps[0, ent[0, 1, L.E_DEP]]
            o, nw = ent[0, 0, L.E_OFF], ent[0, 0, L.E_NW]
            assert nw == 1
            assert txa[0, offs[0, o]:offs[0, o + 1]].tolist() == addrs[2 * b:2 * b + 2].tolist()
    assert log.rows.shape[1] == 4 and log.taddr.size == 8 and log.dlog.shape[1] == 4
