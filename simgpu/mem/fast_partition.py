"""A DRAM partition of the compiled memory core: :mod:`~simgpu.mem.dram`'s ``Dram.serve``
(a batch of transactions arriving together, in FR-FCFS order) and ``Dram.drain``, over
:class:`~simgpu.mem.fast_layout.FastState`, with :mod:`~simgpu.mem.fast_dram`'s
sub-channel (one per partition, as GDDR3 has)."""
from __future__ import annotations

from .fast_dram import scratch, sub_flush, sub_read, sub_write
from .fast_jit import njit
from .fast_layout import G_DRAM_WAIT, I_BURST_BYTES, P_BYTES, P_TRANSACTIONS, R_SP_HIT, R_SP_ORDER


@njit
def serve_partition(st, p, banks, rows, sizes, idx, m, arrive, write):
    """Dram.serve of the m transactions idx[0:m] (bank, row, size) arriving together at
    partition p (one sub-channel, as GDDR3): when the last is done there."""
    part = st.part
    burst = st.pi[I_BURST_BYTES]
    part[p, P_TRANSACTIONS] += m
    if m == 1:
        i = idx[0]
        part[p, P_BYTES] += sizes[i]
        if write:
            end, w = sub_write(st, p, banks[i], rows[i], -(-sizes[i] // burst), arrive)
        else:
            end, w = sub_read(st, p, banks[i], rows[i], -(-sizes[i] // burst), arrive)
        if w > st.g[G_DRAM_WAIT]:
            st.g[G_DRAM_WAIT] = w
        return end
    order = scratch(st, R_SP_ORDER, m)
    same = True
    for j in range(1, m):
        if banks[idx[j]] != banks[idx[0]] or rows[idx[j]] != rows[idx[0]]:
            same = False
            break
    if same:
        for j in range(m):
            order[j] = idx[j]
    else:
        # FR-FCFS (dram._fr_fcfs): open-row hits first, then the rest grouped by
        # (bank, row) in order of each group's first arrival
        hit = scratch(st, R_SP_HIT, m)
        k = 0
        for j in range(m):
            i = idx[j]
            hit[j] = st.orow[p, banks[i]] == rows[i]
            if hit[j]:
                order[k] = i
                k += 1
        for j in range(m):
            if hit[j]:
                continue
            i = idx[j]
            leader = True
            for q in range(j):
                if not hit[q] and banks[idx[q]] == banks[i] and rows[idx[q]] == rows[i]:
                    leader = False
                    break
            if not leader:
                continue
            for q in range(j, m):
                if not hit[q] and banks[idx[q]] == banks[i] and rows[idx[q]] == rows[i]:
                    order[k] = idx[q]
                    k += 1
    last = arrive
    moved = 0
    wait = 0.0
    for j in range(m):
        i = order[j]
        moved += sizes[i]
        if write:
            end, w = sub_write(st, p, banks[i], rows[i], -(-sizes[i] // burst), arrive)
        else:
            end, w = sub_read(st, p, banks[i], rows[i], -(-sizes[i] // burst), arrive)
        if w > wait:
            wait = w
        if end > last:
            last = end
    if wait > st.g[G_DRAM_WAIT]:
        st.g[G_DRAM_WAIT] = wait
    part[p, P_BYTES] += moved
    return last


@njit
def drain_all(st):
    """Dram.drain: flush every sub-channel's write queue; when the last data are done."""
    end = 0.0
    for s in range(st.sf.shape[0]):
        e = sub_flush(st, s)
        if e > end:
            end = e
    return end
