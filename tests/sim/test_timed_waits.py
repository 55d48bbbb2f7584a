"""The timed engine's waits booked as queue entries on the compiled core
(simgpu.sim.timed_waits, timed.FAST_WAITS) against the engine's own loop (the reference):
the same cycles, times, counts, report fields and labels, bit for bit, on the
connected-components kernels on sim:gtx260 (scattered loads that wait for miss entries
and the pipeline's slack many times per instruction; the helpers' atomics hand the
launch to the Python units mid-way)."""
import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from algorithms.connected_components import label  # noqa: E402
from simgpu_apps.experiments.connected_components import build_graph  # noqa: E402
from simgpu.sim import timed, timed_waits  # noqa: E402


def run(n, edges, fast_waits, monkeypatch, method="shiloach-vishkin", engine="timed-block"):
    """(every launch's report as a dict, the labels, how many instructions waited in the
    WaitQueue)."""
    monkeypatch.setattr(timed, "FAST_WAITS", fast_waits)
    booked = [0]
    real = timed_waits.WaitQueue.wait

    def wait(self, *args):
        booked[0] += 1
        return real(self, *args)

    monkeypatch.setattr(timed_waits.WaitQueue, "wait", wait)
    r = label(n, edges, method=method, device="sim:gtx260",
              launch_options={"engine": engine})
    return [x.to_dict() for x in r.launches], r.labels.tolist(), booked[0]


def same(n, edges, monkeypatch, **kw):
    slow, slow_labels, none = run(n, edges, False, monkeypatch, **kw)
    fast, fast_labels, booked = run(n, edges, True, monkeypatch, **kw)
    assert none == 0
    assert fast_labels == slow_labels
    assert len(fast) == len(slow)
    for a, b in zip(slow, fast):
        assert a == b
    return booked


@pytest.mark.parametrize("graph,small", [("trees", False), ("lists", False), ("trees", True)])
def test_cc_the_same_with_waits_as_queue_entries(graph, small, monkeypatch):
    """Large enough that the SV kernels' loads wait (for miss entries and the slack).
    ``small``: the queue starts with one slot and an 8-number arena (grown, compacted)."""
    if small:
        real_init = timed_waits.WaitQueue.__init__

        def init(self, env, memory, slack):
            real_init(self, env, memory, slack, slots=1)
            self.arena = np.zeros(8, np.int64)

        monkeypatch.setattr(timed_waits.WaitQueue, "__init__", init)
    m = 1 << 13
    arg = {"trees": 2, "lists": 1}[graph]
    n, edges = build_graph(graph, m, arg, 1, 4)
    assert same(n, edges, monkeypatch) > 1000      # many instructions waited


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(n=st.integers(2, 3000), density=st.floats(0.2, 3.0), seed=st.integers(0, 2**16),
       method=st.sampled_from(["shiloach-vishkin", "union-find"]),
       engine=st.sampled_from(["timed-block", "timed"]))
def test_random_graphs_the_same(n, density, seed, method, engine, monkeypatch):
    m = max(1, int(n * density))
    edges = np.random.default_rng(seed).integers(0, n, size=(m, 2))
    same(n, edges, monkeypatch, method=method, engine=engine)
