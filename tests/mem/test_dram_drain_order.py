"""The write queue's drain order (SubChannel._drain, one pass) against the rule as its
docstring states it, written here the plain way: the writes to open rows first (queue
order), then the oldest remaining write and every queued write to its row, and so on,
until k are sent; the rest stay queued in their order."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from simgpu.configs import load_config
from simgpu.mem.native_load import source_module

# the source module even where simgpu.native compiled it (a compiled class's methods
# cannot be replaced, as this test replaces _access)
_dram_timing = source_module("simgpu.mem.dram_timing")
SubChannel, Timing = _dram_timing.SubChannel, _dram_timing.Timing


def reference(pending: list, open_row: list, k: int) -> tuple[list, list]:
    """(the writes sent, in order; the writes left), by repeated scans of the queue."""
    sent = [w for w in pending if open_row[w[1]] == w[2]][:k]
    rest = [w for w in pending if not any(w is s for s in sent)]
    while len(sent) < k and rest:
        bank, row = rest[0][1], rest[0][2]
        same = [w for w in rest if (w[1], w[2]) == (bank, row)][:k - len(sent)]
        sent += same
        rest = [w for w in rest if not any(w is s for s in same)]
    return sent, rest


writes = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(1, 2)),
                  min_size=1, max_size=24)


@settings(max_examples=60, deadline=None)
@given(writes, st.lists(st.integers(-2, 2), min_size=4, max_size=4), st.data())
def test_drain_sends_writes_in_the_documented_order(queued, rows, data):
    cfg = load_config("gtx260")
    sc = SubChannel(Timing(cfg), 4)
    sc.open_row = list(rows)
    sc.pending = [(float(i), bank, row, bursts) for i, (bank, row, bursts) in enumerate(queued)]
    # (k = 1 takes the oldest write without a scan: the callers ask for one write only
    # when one is queued, unless a config's drain watermarks are one apart)
    k = data.draw(st.integers(min(2, len(queued)), len(queued)), label="k")
    expect_sent, expect_left = reference(list(sc.pending), list(rows), k)
    sent = []
    sc._access = lambda bank, row, bursts, t, write: (sent.append((bank, row, bursts)),
                                                       (t, t + 1.0))[1]
    sc._drain(k, 0.0)
    assert sent == [(w[1], w[2], w[3]) for w in expect_sent]
    assert sc.pending == expect_left
