"""The request path of the compiled memory core: address translation (TLBs, page walks
that read through the DRAM partitions), the SMs' miss entries, one request through
the units, and :func:`serve_instruction` -- one call per warp memory instruction of a
block, the timed engine's ``serve`` loop for a GT200 load or store.

Transcribed from :mod:`~simgpu.mem.tlb` (``TlbLevel``, ``Translator``),
:mod:`~simgpu.mem.mshr`, :class:`~simgpu.mem.memory_system.MemorySystem` (``access``,
``_request``, ``walk_read``) and :func:`simgpu.sim.timed.run_timed`'s ``serve``, over
:class:`~simgpu.mem.fast_layout.FastState`.  A TLB set's LRU order (a dict's order in
the Python unit) is a stamp per entry; a request touching several pages translates
them in the order CPython iterates the set of their numbers (:func:`py_set_order`:
the Python unit iterates a set), checked against the interpreter when the core loads.
"""
from __future__ import annotations

import numpy as np

from .fast_dram import scratch
from .fast_partition import serve_partition
from .fast_jit import njit
from .fast_layout import (
    F_L2_HIT, F_WALK_CYCLES, G_ACCEPTED, G_DRAINED, G_DRAM_WAIT, G_LRU_CLOCK, G_MSHR_WAITS,
    G_MSHR_WAIT_CYCLES, G_WALK_READS, G_WALK_WAIT, G_WALKS, I_MIN_ACCESS, I_MSHR_LIMIT,
    I_N_L1TLB, I_PAGE_SHIFT, I_PD_BASE, I_PDE_SHIFT, I_PT_BASE, I_PTE_BYTES, I_SMS_PER_L1,
    I_TLB, R_KEYS, R_WALK_BANK, R_WALK_IDX, R_WALK_ROW, R_WALK_SIZE, T_HITS, T_LAST, T_MISSES,
)
from .fast_net import locate, uncached

PDE_BYTES = 8          # as simgpu.mem.address_space.PDE_BYTES (checked by fast_state)


# --- CPython's set iteration order (for the pages of one request) -----------------------

@njit
def _set_insert(table, mask, h):
    """Insert h into an open-addressing table as CPython's setobject.c probes (nine
    linear probes, then perturbation); False if it is there already."""
    i = h & mask
    perturb = h
    while True:
        probes = 9 if i + 9 <= mask else 0
        j = i
        while True:
            if table[j] == -1:
                table[j] = h
                return True
            if table[j] == h:
                return False
            if probes == 0:
                break
            probes -= 1
            j += 1
        perturb >>= 5
        i = (i * 5 + 1 + perturb) & mask


@njit
def py_set_order(keys, n):
    """The distinct non-negative ints of keys[0:n] in the order CPython iterates the set
    built by adding them in turn (``{k for k in keys}``)."""
    size = 8
    table = np.full(size, -1, np.int64)
    fill = 0
    for q in range(n):
        if _set_insert(table, size - 1, keys[q]):
            fill += 1
            if fill * 5 >= (size - 1) * 3:       # set_table_resize(used * 4)
                new = 8
                while new <= fill * 4:
                    new <<= 1
                old = table
                table = np.full(new, -1, np.int64)
                for j in range(size):
                    if old[j] != -1:
                        _set_insert(table, new - 1, old[j])
                size = new
    out = np.empty(fill, np.int64)
    k = 0
    for j in range(size):
        if table[j] != -1:
            out[k] = table[j]
            k += 1
    return out


# --- the TLB levels ---------------------------------------------------------------------

@njit
def tlb_find(st, lv, vpn):
    """TlbLevel.find: (hit, when the translation is ready); a hit becomes the MRU."""
    tc = st.tcount
    if vpn == tc[lv, T_LAST]:
        tc[lv, T_HITS] += 1
        return True, st.tlast[lv]
    ways = st.tshape[lv, 1]
    if ways:
        s = vpn % st.tshape[lv, 0]
        for w in range(ways):
            if st.tv[lv, s, w] == vpn:
                st.g[G_LRU_CLOCK] += 1.0
                st.ts[lv, s, w] = np.int64(st.g[G_LRU_CLOCK])
                tc[lv, T_HITS] += 1
                ready = st.tr[lv, s, w]
                tc[lv, T_LAST] = vpn
                st.tlast[lv] = ready
                return True, ready
    tc[lv, T_MISSES] += 1
    return False, 0.0


@njit
def tlb_fill(st, lv, vpn, ready):
    """TlbLevel.fill: enter vpn as its set's MRU, evicting the LRU entry of a full set."""
    ways = st.tshape[lv, 1]
    if not ways:
        return
    s = vpn % st.tshape[lv, 0]
    slot = -1
    used = 0
    for w in range(ways):
        v = st.tv[lv, s, w]
        if v == vpn:
            slot = w
        if v != -1:
            used += 1
    if slot < 0:
        if used >= ways:
            victim = 0
            for w in range(1, ways):
                if st.ts[lv, s, w] < st.ts[lv, s, victim]:
                    victim = w
            if st.tv[lv, s, victim] == st.tcount[lv, T_LAST]:
                st.tcount[lv, T_LAST] = -1
            slot = victim
        else:
            for w in range(ways):
                if st.tv[lv, s, w] == -1:
                    slot = w
                    break
    st.g[G_LRU_CLOCK] += 1.0
    st.tv[lv, s, slot] = vpn
    st.tr[lv, s, slot] = ready
    st.ts[lv, s, slot] = np.int64(st.g[G_LRU_CLOCK])
    st.tcount[lv, T_LAST] = vpn
    st.tlast[lv] = ready


@njit
def walk_read(st, address, t):
    """MemorySystem.walk_read without an L2: a min_access_bytes read at the entry's
    partition; when its data are back at the walker."""
    size = st.pi[I_MIN_ACCESS]
    address -= address % size
    p, b, r = locate(st, address)
    banks, rows = scratch(st, R_WALK_BANK, 1), scratch(st, R_WALK_ROW, 1)
    sizes, idx = scratch(st, R_WALK_SIZE, 1), scratch(st, R_WALK_IDX, 1)
    banks[0], rows[0], sizes[0], idx[0] = b, r, size, 0
    return serve_partition(st, p, banks, rows, sizes, idx, 1, t, False)


@njit
def _walk(st, vpn, t):
    """Translator._walk: a free walker reads the PDE (unless cached), then the PTE."""
    free = st.walkers
    w = 0
    for j in range(1, free.shape[0]):
        if free[j] < free[w]:
            w = j
    start = free[w] if free[w] > t else t
    st.g[G_WALK_WAIT] += start - t
    at = start + st.pf[F_WALK_CYCLES]
    pi = st.pi
    address = vpn << pi[I_PAGE_SHIFT]
    pde_level = pi[I_N_L1TLB] + 1
    directory = address >> pi[I_PDE_SHIFT]
    hit, ready = tlb_find(st, pde_level, directory)
    if not hit:
        at = walk_read(st, pi[I_PD_BASE] + (address >> pi[I_PDE_SHIFT]) * PDE_BYTES, at)
        st.g[G_WALK_READS] += 1.0
        tlb_fill(st, pde_level, directory, at)
    elif ready > at:
        at = ready
    at = walk_read(st, pi[I_PT_BASE] + (address >> pi[I_PAGE_SHIFT]) * pi[I_PTE_BYTES], at)
    st.g[G_WALK_READS] += 1.0
    st.g[G_WALKS] += 1.0
    free[w] = at
    return at


@njit
def _miss(st, vpn, t):
    """Translator._miss: an L1 TLB miss at t: when the L2 TLB or a walk has it."""
    l2 = st.pi[I_N_L1TLB]
    at = t + st.pf[F_L2_HIT]
    hit, ready = tlb_find(st, l2, vpn)
    if hit:
        return ready if ready > at else at
    ready = _walk(st, vpn, at)
    tlb_fill(st, l2, vpn, ready)
    return ready


@njit
def translate(st, addrs, lo, hi, t, sm):
    """Translator.translate of transactions lo..hi-1 issued at t: when translated."""
    shift = st.pi[I_PAGE_SHIFT]
    l1 = sm // st.pi[I_SMS_PER_L1]
    vpn = addrs[lo] >> shift
    one_page = True
    for i in range(lo + 1, hi):
        if addrs[i] >> shift != vpn:
            one_page = False
            break
    if one_page:
        hit, ready = tlb_find(st, l1, vpn)       # (its "last page" test is find's first)
        if not hit:
            ready = _miss(st, vpn, t)
            tlb_fill(st, l1, vpn, ready)
        return ready if ready > t else t
    keys = scratch(st, R_KEYS, hi - lo)
    for i in range(lo, hi):
        keys[i - lo] = addrs[i] >> shift
    done = t
    for vpn in py_set_order(keys, hi - lo):
        hit, ready = tlb_find(st, l1, vpn)
        if not hit:
            ready = _miss(st, vpn, t)
            tlb_fill(st, l1, vpn, ready)
        if ready > done:
            done = ready
    return done


# --- the miss entries -------------------------------------------------------------------

@njit
def mshr_free_at(st, sm, t):
    """Mshr.free_at: entries of sm free at t (releasing those whose data are back)."""
    n = st.mn[sm, 0]
    m = 0
    for j in range(n):
        if st.mh[sm, j, 0] <= t:
            st.mn[sm, 1] -= np.int64(st.mh[sm, j, 1])
        else:
            st.mh[sm, m, 0] = st.mh[sm, j, 0]
            st.mh[sm, m, 1] = st.mh[sm, j, 1]
            m += 1
    st.mn[sm, 0] = m
    return st.pi[I_MSHR_LIMIT] - st.mn[sm, 1]


@njit
def mshr_when_free(st, sm, n):
    """Mshr.when_free: when n entries of sm are free, as booked so far."""
    short = n - (st.pi[I_MSHR_LIMIT] - st.mn[sm, 1])
    k = st.mn[sm, 0]
    order = np.argsort(st.mh[sm, :k, 0], kind="mergesort")
    for j in range(k):
        short -= np.int64(st.mh[sm, order[j], 1])
        if short <= 0:
            return st.mh[sm, order[j], 0]
    raise ValueError("simgpu fast memory core: more miss entries asked than the limit")


@njit
def mshr_hold(st, sm, n, until):
    k = st.mn[sm, 0]
    if k >= st.mh.shape[1]:
        raise RuntimeError("simgpu fast memory core: an SM's miss entries overflowed")
    st.mn[sm, 1] += n
    st.mh[sm, k, 0] = until
    st.mh[sm, k, 1] = n
    st.mn[sm, 0] = k + 1


@njit
def _mshr_admit(st, sm, n, t):
    """Mshr.admit: (how many of n transactions go, when)."""
    free = mshr_free_at(st, sm, t)
    if free <= 0:
        later = st.mh[sm, 0, 0]
        for j in range(1, st.mn[sm, 0]):
            if st.mh[sm, j, 0] < later:
                later = st.mh[sm, j, 0]
        st.g[G_MSHR_WAITS] += n
        st.g[G_MSHR_WAIT_CYCLES] += (later - t) * n
        t = later
        free = mshr_free_at(st, sm, t)
    take = free if free < n else n
    return take, t


# --- a request, a warp's access, an instruction ----------------------------------------

@njit
def request(st, addrs, sizes, lo, hi, t, sm, write):
    """MemorySystem._request without caches: when the data are back; sets
    g[G_ACCEPTED]."""
    translated = translate(st, addrs, lo, hi, t, sm) if st.pi[I_TLB] else t
    st.g[G_DRAM_WAIT] = 0.0
    done, accepted = uncached(st, addrs, sizes, lo, hi, translated, sm, write, t)
    wait = st.g[G_DRAM_WAIT]
    if wait:
        if t + wait > accepted:
            accepted = t + wait
    st.g[G_ACCEPTED] = accepted
    if done > st.g[G_DRAINED]:
        st.g[G_DRAINED] = done
    return done


@njit
def access(st, addrs, sizes, lo, hi, t, sm, write):
    """MemorySystem.access of a load's or store's transactions lo..hi-1 (no L1)."""
    m = hi - lo
    if m == 0:                    # (the engines send none; the Python unit would fail)
        st.g[G_ACCEPTED] = t
        return t
    if st.pi[I_MSHR_LIMIT] == 0 or write:
        return request(st, addrs, sizes, lo, hi, t, sm, write)
    free = mshr_free_at(st, sm, t)
    if free >= m:
        done = request(st, addrs, sizes, lo, hi, t, sm, write)
        mshr_hold(st, sm, m, done)
        return done
    taken, first, done, accepted = 0, lo, t, t
    while taken < m:
        take, at = _mshr_admit(st, sm, m - taken, t)
        taken += take
        end = lo + taken
        back = request(st, addrs, sizes, first, end, at, sm, write)
        mshr_hold(st, sm, take, back)
        if back > done:
            done = back
        if st.g[G_ACCEPTED] > accepted:
            accepted = st.g[G_ACCEPTED]
        first, t = end, at
    st.g[G_ACCEPTED] = accepted
    return done


@njit
def serve_instruction(st, write, addrs, sizes, offs, i, first, back, at, sm, now, slack):
    """The timed engine's ``serve`` for one warp memory instruction of a block (loads and
    stores, GT200): its warps' transactions (warp w: addrs[offs[w]:offs[w+1]]) from warp
    i, transaction ``first`` on.  (0, at, back, -, -, -) when all are booked: ``at`` when
    the pipeline accepted the last, ``back`` when the data are back; (1, at, back, i,
    first, when) to resume from warp i at ``when`` (free miss entries, or the pipeline
    held a request back beyond ``now + slack``)."""
    limit = st.pi[I_MSHR_LIMIT] if not write else 0
    nw = offs.shape[0] - 1
    while i < nw:
        base = offs[i]
        n_w = offs[i + 1] - base
        end = n_w
        if limit and end:
            if mshr_free_at(st, sm, at) < end - first:
                misses = end - first
                need = misses if misses < limit else limit
                if need and mshr_free_at(st, sm, at) < need:
                    when = mshr_when_free(st, sm, need)
                    st.g[G_MSHR_WAITS] += need
                    st.g[G_MSHR_WAIT_CYCLES] += (when - at) * need
                    return 1, at, back, i, first, when
                if need < misses:
                    end = first + need
        done = access(st, addrs, sizes, base + first, base + end, at, sm, write)
        if done > back:
            back = done
        accepted = st.g[G_ACCEPTED]
        if end < n_w:
            first = end
        else:
            i, first = i + 1, 0
        if accepted > at:
            at = accepted
            if i < nw and accepted > now + slack:
                return 1, at, back, i, first, accepted
    return 0, at, back, i, first, 0.0


@njit
def serve_packed(st, write, packed, n, i, first, back, at, sm, now, slack):
    """:func:`serve_instruction` of one array: the addresses (n), the sizes (n), then the
    warps' offsets (one conversion from the engine's lists instead of three)."""
    return serve_instruction(st, write, packed[:n], packed[n:2 * n], packed[2 * n:], i, first,
                             back, at, sm, now, slack)

