"""The compiled memory core (simgpu.mem.fast_memory, numba) against the Python units it
transcribes: random streams of warp requests (addresses, sizes, kinds, SMs, issue
times) through both, on several GT200 configs (a tiny-queue one included), must give
the same ready time and acceptance for every request, and the same state in every
unit afterwards (DRAM banks, bus, queues, interconnect ports, TLBs, walkers, miss
entries), the same drain and the same report."""
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from simgpu.configs import load_config  # noqa: E402
from simgpu.mem import fast_memory  # noqa: E402
from simgpu.mem.memory_system import MemorySystem  # noqa: E402
from simgpu.mem.tlb import TlbState  # noqa: E402


def _replace(cfg, **sections):
    return dataclasses.replace(cfg, **{name: dataclasses.replace(getattr(cfg, name), **kw)
                                       for name, kw in sections.items()})


GTX260 = load_config("gtx260")
CONFIGS = {
    "gtx260": GTX260,
    "gtx280": load_config("gtx280"),
    # every queue and table tiny: reads and writes wait for places, drains are short,
    # the interconnect holds requests back, miss entries run out, TLBs thrash, one
    # walker; and a partition skip bit (the address map's other branch)
    "tiny": _replace(GTX260,
                     dram=dict(read_queue_depth=2, write_queue_depth=4, write_drain_high=3,
                               write_drain_low=1, trefi=300),
                     memory=dict(interconnect_queue_packets=1, partition_skip_bit=10),
                     issue=dict(max_outstanding_misses_per_sm=4),
                     tlb=dict(l1_entries=2, l1_ways=2, l2_entries=4, l2_ways=2, walkers=1)),
}


def unit_state(ms) -> dict:
    """Everything the Python units hold that later bookings or the report read."""
    subs = [s for p in ms.dram.parts for s in p.subs]
    out = {"accepted": ms.accepted, "drained": ms._drained, "wait": ms.dram.wait,
           "held": ms.net.held, "flits": ms.net.flits_sent,
           "parts": [(p.transactions, p.bytes, p.writebacks) for p in ms.dram.parts]}
    for i, s in enumerate(subs):
        out[f"sub{i}"] = (s.open_row, s.act_at, s.col_ok, s.pre_ok, s.acts, s.act_groups,
                          s.bus_start, s.bus_end, s.bus_write, s.tail, sorted(s.reads),
                          sorted(s.writes), s.pending, s.busy, s.row_hits, s.activations,
                          s.row_conflicts, s.stall, s.refreshes, s.samples, s.queued_total,
                          s.queued_max, s.refreshed, s.next_refresh, s.drain_due)
    ports = [*ms.net.sm_out, *ms.net.part_in, *ms.net.part_out, *ms.net.sm_in]
    out["ports"] = [({k: v for k, v in p.used.items() if v}, p.waited, p.max_wait)
                    for p in ports]
    tr = ms.translator
    out["tlb"] = [([list(line.items()) for line in lv.lines], lv.hits, lv.misses, lv.last,
                   lv.last_ready) for lv in tr.state.levels()]
    out["walkers"] = (tr.walker_free, tr.walks, tr.walk_reads, tr.walk_wait)
    out["mshr"] = ([sorted(map(tuple, h)) for h in ms.mshr.held], ms.mshr.in_use,
                   ms.mshr.waits, ms.mshr.wait_cycles)
    return out


def replay(cfg, requests, fast):
    ms = MemorySystem(cfg, None, TlbState(cfg))
    if fast:
        assert ms.use_fast(), fast_memory.supported(ms)
    times = []
    for kind, addresses, sizes, t, sm in requests:
        times.append((ms.access(kind, addresses, sizes, t, sm), ms.accepted))
    ms.fast_off()
    state = unit_state(ms)
    drained = ms.drained
    return times, state, drained, ms.summary(drained)


@st.composite
def streams(draw):
    cfg_name = draw(st.sampled_from(sorted(CONFIGS)))
    cfg = CONFIGS[cfg_name]
    # a few hot regions (rows, pages and partitions shared) and far ones (TLB misses)
    bases = draw(st.lists(st.integers(0, (cfg.memory.global_memory_bytes >> 5) - 4096),
                          min_size=1, max_size=4))
    n = draw(st.integers(1, 60))
    t = 0.0
    requests = []
    for _ in range(n):
        t += draw(st.sampled_from([0.0, 0.5, 4.0, 37.25, 300.0, 5000.0]))
        k = draw(st.integers(1, 16))
        base = draw(st.sampled_from(bases)) << 5
        # (GT200: 256-B chunks over 7 partitions, 4-KB rows of 8 banks per partition: 7 x
        # 256 is the next chunk of one partition, x 16 the next bank, x 128 its next row)
        offsets = draw(st.lists(st.sampled_from([0, 32, 64, 256, 1792, 4096, 28672, 229376,
                                                 458752, 1 << 19, 3 << 20]),
                                min_size=k, max_size=k))
        sizes = draw(st.lists(st.sampled_from([32, 64, 128]), min_size=k, max_size=k))
        kind = draw(st.sampled_from(["load", "load", "store"]))
        sm = draw(st.integers(0, cfg.gpu.sm_count - 1))
        requests.append((kind, [base + o for o in offsets], sizes, t, sm))
    return cfg_name, requests


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams())
def test_random_streams_match_the_python_units(case):
    cfg_name, requests = case
    cfg = CONFIGS[cfg_name]
    slow = replay(cfg, requests, False)
    fast = replay(cfg, requests, True)
    assert fast[0] == slow[0]                   # every ready time and acceptance
    assert fast[1] == slow[1]                   # every unit's state
    assert fast[2] == slow[2] and fast[3] == slow[3]


def test_a_long_stream_with_back_pressure_matches():
    """Many SMs' requests in one partition's rows at once: full read queues, write
    drains, interconnect holds and miss-entry waits all happen (checked), and agree."""
    rng = np.random.default_rng(5)
    cfg = CONFIGS["tiny"]
    requests = []
    for i in range(1500):
        base = int(rng.integers(0, 1 << 14)) * 2048
        k = int(rng.integers(1, 12))
        addresses = [base + 256 * 7 * int(j) for j in rng.integers(0, 64, k)]
        requests.append(("store" if i % 4 == 0 else "load", addresses, [32] * k,
                         float(i // 3), int(rng.integers(0, 27))))
    slow = replay(cfg, requests, False)
    fast = replay(cfg, requests, True)
    s = slow[3]
    assert s["queue_full_stall_cycles"] > 0 and s["interconnect_held"] > 0
    assert s["mshr_waits"] > 0 and s["tlb_walks"] > 0
    assert fast[0] == slow[0] and fast[1] == slow[1] and fast[3] == slow[3]


def test_pages_are_translated_in_the_python_units_order():
    """A request over several pages translates them in CPython's set order, as the
    Python unit iterates them (the order decides walks and LRU)."""
    from simgpu.mem.fast_path import py_set_order
    rng = np.random.default_rng(2)
    for _ in range(300):
        keys = rng.integers(0, int(rng.choice([8, 50, 5000, 1 << 40])), int(rng.integers(1, 64)))
        assert py_set_order(keys, len(keys)).tolist() == list({int(k) for k in keys})


def test_configs_the_core_does_not_cover_stay_on_the_python_units():
    assert fast_memory.supported(MemorySystem(GTX260, None, TlbState(GTX260))) is None
    h100 = load_config("h100")
    assert "L2" in fast_memory.supported(MemorySystem(h100, None, TlbState(h100)))
    frfcfs = _replace(GTX260, dram=dict(read_scheduling="fr-fcfs"))
    assert "arrival" in fast_memory.supported(MemorySystem(frfcfs, None, TlbState(frfcfs)))


def test_the_cache_stamp_covers_the_compiled_replay_loop():
    """numba keys a function's cached code by its own file: the core's stamp (fast_jit)
    must cover every module whose compiled code holds the core's functions, the
    trace-block replay loop (simgpu/sim/trace_loop.py) included, or an edit to one
    would load stale machine code."""
    import hashlib
    from pathlib import Path

    from simgpu.mem import fast_jit
    mem = Path(fast_jit.__file__).parent
    files = [(mem / f"{name}.py").resolve() for name in fast_jit.CORE_MODULES]
    assert (mem.parent / "sim" / "trace_loop.py").resolve() in files
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    assert fast_jit._core_stamp()[1] == h.hexdigest()


def test_the_state_keeps_its_unowned_arrays_alive_and_shares_them():
    """The compiled state's fields own nothing (fast_jit.unowned, to spare the core's
    atomic reference counts): the state must keep the arrays alive by itself, with no
    other reference to them, and write into the same memory the Python side reads.
    Its requests, made after the arrays' only other owner is gone and the allocator has
    been churned, must still time like the Python unit's."""
    import gc

    from simgpu.mem import fast_path
    from simgpu.mem.fast_layout import G_ACCEPTED, new_state
    from simgpu.mem.fast_state import take
    cfg = CONFIGS["tiny"]
    rng = np.random.default_rng(11)
    requests = [("load", [int(b) * 2048 + 256 * 7 * j for j in range(4)], [32] * 4,
                 float(i * 3), int(rng.integers(0, 27)))
                for i, b in enumerate(rng.integers(0, 1 << 14, 40))]
    state = new_state(take(MemorySystem(cfg, None, TlbState(cfg))))   # the only owner
    gc.collect()
    churn = [np.full(4096, -7.0) for _ in range(64)]      # reuse any memory freed
    got = []
    for kind, addresses, sizes, t, sm in requests:
        a = np.asarray(addresses, np.int64)
        done = fast_path.access(state, a, np.asarray(sizes, np.int64), 0, len(a), t, sm,
                                kind == "store")
        got.append((done, float(state.arrays.g[G_ACCEPTED])))   # the same memory
    del churn
    want = replay(cfg, requests, False)[0]
    assert got == want
