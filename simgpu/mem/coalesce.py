"""Memory coalescing: the memory transactions that one warp instruction becomes.

Pure functions of (addresses, word size, architecture); numpy only. The
simulator calls :func:`coalesce_batch` on its hot path; :func:`transactions`
is the readable one-warp reference that the tests hold the batch form against.

Rules, by compute capability (``arch`` is ``"sm_NN"``, CC = N.N):

* **CC 1.0 / 1.1** -- CUDA C Programming Guide 2.x/3.x, section G.3.2.1. Each
  half-warp (lanes 0-15, 16-31) is handled alone. It coalesces only if the
  words are 4, 8 or 16 bytes and every active thread k (k = lane mod 16)
  accesses word k of a segment aligned to 16 * word_size; inactive threads are
  allowed. Then it is one 64 B transaction (4-byte words), one 128 B
  (8-byte) or two 128 B (16-byte). Otherwise -- including every 1- and 2-byte
  access -- "a separate memory transaction is issued for each thread": we
  issue, per active thread, the smallest legal transaction that covers its
  word, which is always the aligned 32 B segment holding it (32 B is the
  smallest transaction of these GPUs, and a naturally aligned word of <= 16
  bytes never crosses a 32 B boundary). The guide's example figure (G-1 in
  3.x) likewise counts uncoalesced CC 1.0/1.1 accesses as 32 B transactions.
* **CC 1.2 / 1.3** -- same guide, section G.3.2.2 (also Dehne & Yogaratnam,
  section 2.5 and Table 1). Per half-warp: take the lowest-numbered active
  thread not yet serviced; its segment is 32 B (1-byte words), 64 B (2-byte)
  or 128 B (4-, 8-, 16-byte); gather every active thread whose word lies in
  that segment; shrink 128 -> 64 B if only one half is used, then 64 -> 32 B
  likewise; issue; repeat until all active threads are serviced.
* **CC 2.0 and newer** -- one request per warp instruction; the transactions
  are the distinct aligned 32-byte sectors touched by the active lanes,
  in ascending address order. (Fermi/Kepler L1-cached loads moved 128 B
  lines; we model the 32 B L2 granularity for all of them.) On sm_70+ the
  count equals Nsight Compute's ``l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum``
  per request (measured on an H100: int32 stride 1/2/32 -> 4/8/32 sectors).

Addresses must be naturally aligned (address % word_size == 0), as the
hardware requires; a misaligned active lane is a ValueError.

:func:`coalesce_batch` applies the same rules to many warps at once with
sorts and reductions on packed int64 keys (about 1-3 ms for 30,000 lanes);
the tests check that it equals :func:`transactions` warp by warp.
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass

import numpy as np

from ..lang.errors import ArgumentError
# the per-warp rules, in a module of their own (simgpu.native compiles it)
from .warp_coalesce import (HALF_WARP, SECTOR_BYTES, WARP_SIZE, _segment_size_1x, _shrink,
                            warp_transactions)

__all__ = ["Batch", "coalesce_batch", "transactions", "warp_transactions", "parse_arch",
           "WARP_SIZE", "SECTOR_BYTES"]

WORD_SIZES = (1, 2, 4, 8, 16)

_ARCH_RE = re.compile(r"sm_(\d{2,3})")


def parse_arch(arch) -> int:
    """'sm_13' -> 13 (major*10 + minor). Anything but 'sm_NN'/'sm_NNN' is refused."""
    m = _ARCH_RE.fullmatch(arch) if isinstance(arch, str) else None
    if m is None or int(m.group(1)) < 10:
        raise ArgumentError(
            f"arch must be a string 'sm_NN' naming a compute capability N.N "
            f"(e.g. 'sm_11', 'sm_13', 'sm_20', 'sm_90'), got {arch!r}")
    return int(m.group(1))


def _check_word_size(word_size) -> int:
    if isinstance(word_size, bool) or not isinstance(word_size, (int, np.integer)) \
            or word_size not in WORD_SIZES:
        raise ArgumentError(f"word_size must be one of {WORD_SIZES} bytes, got {word_size!r}")
    return int(word_size)


def _misaligned(where: str, address: int, word_size: int) -> ValueError:
    return ArgumentError(
        f"{where}: address {address} ({address:#x}) is not aligned to the "
        f"{word_size}-byte word (GPUs require natural alignment: address % {word_size} == 0)")


# --------------------------------------------------------------------------
# One warp: the reference, written as the guide states the rules.
# --------------------------------------------------------------------------

def transactions(addresses, word_size, arch, active=None) -> list[tuple[int, int]]:
    """The memory transactions ``(address, size_bytes)`` of one warp instruction.

    ``addresses[k]`` is the byte address of lane k (at most 32 lanes);
    ``active[k]`` (default: all true) says whether lane k takes part --
    inactive lanes never count, not even their alignment. Transactions are
    returned in issue order: half-warp 0 then 1 on CC 1.x, in the order the
    guide's algorithm issues them; ascending sector address on CC 2.0+.
    """
    cc = parse_arch(arch)
    ws = _check_word_size(word_size)
    try:
        addrs = [operator.index(a) for a in addresses]
    except TypeError:
        raise ArgumentError(f"addresses must be integers (byte addresses of the lanes), not "
                            f"{addresses!r}"[:200]) from None
    n = len(addrs)
    if n > WARP_SIZE:
        raise ArgumentError(f"a warp has at most {WARP_SIZE} lanes, got {n} addresses")
    act = [True] * n if active is None else [bool(a) for a in active]
    if len(act) != n:
        raise ArgumentError(f"active has {len(act)} entries for {n} addresses")
    for k in range(n):
        if act[k] and (addrs[k] < 0 or addrs[k] % ws):
            if addrs[k] < 0:
                raise ArgumentError(f"lane {k}: negative address {addrs[k]}")
            raise _misaligned(f"lane {k}", addrs[k], ws)

    lanes = [k for k in range(n) if act[k]]
    _, out_a, out_s = warp_transactions([addrs[k] for k in lanes], lanes, ws, cc)
    return list(zip(out_a, out_s))


# --------------------------------------------------------------------------
# Many warps at once: the vectorized form for the simulator.
# --------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Batch:
    """The transactions of one instruction executed by many warps.

    ``txn_warp[i]``, ``txn_address[i]``, ``txn_size[i]`` describe transaction i
    (int64 arrays; ``txn_warp`` holds the caller's warp numbers; warps in
    input order, each warp's transactions in issue order). ``requests`` is
    the number of requests: one per warp with an active lane on CC 2.0+, but
    on CC 1.x a request is per *half-warp*, so it counts the distinct
    (warp, half-warp) pairs that have an active lane.
    """
    txn_warp: np.ndarray
    txn_address: np.ndarray
    txn_size: np.ndarray
    requests: int

    @property
    def transactions(self) -> int:
        return int(self.txn_size.size)

    @property
    def bytes(self) -> int:
        return int(self.txn_size.sum())


def _freeze(*arrays):
    for a in arrays:
        a.setflags(write=False)
    return arrays


def _compact(values: np.ndarray, bits: int):
    """Shrink non-negative integers to fit in ``bits`` bits for packing into a
    sort key: subtract the minimum if that is enough, else rank them (a sort,
    only for address ranges beyond 2**50 or so). Returns (small, unpack)."""
    lo = int(values.min())
    if (int(values.max()) - lo).bit_length() <= bits:
        return values - lo, lambda small: small + lo
    uniq, rank = np.unique(values, return_inverse=True)
    return rank.reshape(-1), lambda small: uniq[small]


def _run_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Where each run of equal values begins in a sorted array."""
    return np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))


def coalesce_batch(warp, lane, addresses, word_size, arch) -> Batch:
    """Coalesce the active lanes of many warps executing the same instruction.

    ``warp`` (non-decreasing ints), ``lane`` (0..31) and ``addresses`` (byte
    addresses) list the active lanes, one entry each, in any lane order. The
    result agrees with calling :func:`transactions` warp by warp: the same
    transactions per warp, in the same order. No Python loop over warps:
    sorts and reductions on packed integer keys.
    """
    cc = parse_arch(arch)
    ws = _check_word_size(word_size)
    warp = np.asarray(warp, dtype=np.int64).ravel()
    lane = np.asarray(lane, dtype=np.int64).ravel()
    addr = np.asarray(addresses, dtype=np.int64).ravel()
    if not (warp.size == lane.size == addr.size):
        raise ArgumentError(f"warp, lane and addresses differ in length: "
                         f"{warp.size}, {lane.size}, {addr.size}")
    if warp.size == 0:
        return Batch(*_freeze(*(np.zeros(0, dtype=np.int64) for _ in range(3))), requests=0)
    step = warp[1:] != warp[:-1]
    if np.any(warp[1:] < warp[:-1]):
        raise ArgumentError("warp must be non-decreasing")
    if lane.min() < 0 or lane.max() >= WARP_SIZE:
        raise ArgumentError(f"lane must lie in 0..{WARP_SIZE - 1}")
    # Sizes are powers of two and addresses >= 0: masks and shifts, not % and //
    # (int64 division is among the slowest things numpy does).
    if addr.min() < 0 or (ws > 1 and (addr & (ws - 1)).any()):
        i = int(np.flatnonzero((addr < 0) | (addr & (ws - 1) != 0))[0])
        if addr[i] < 0:
            raise ArgumentError(f"warp {warp[i]} lane {lane[i]}: negative address {addr[i]}")
        raise _misaligned(f"warp {warp[i]} lane {lane[i]}", int(addr[i]), ws)

    # Dense warp index 0..W-1 (warp is sorted); put lanes in (warp, lane) order,
    # which the simulator usually hands us already.
    warp_ids = warp[np.flatnonzero(np.concatenate(([True], step)))]
    wid = np.concatenate(([0], np.cumsum(step)))
    key = (wid << 5) | lane
    if np.any(key[1:] <= key[:-1]):
        order = np.argsort(key)
        lane, addr, key = lane[order], addr[order], key[order]
        dup = np.flatnonzero(key[1:] == key[:-1])
        if dup.size:
            i = int(dup[0]) + 1
            raise ArgumentError(f"warp {warp[i]} lane {lane[i]} appears twice")
        wid = key >> 5                           # warp[i] still names wid[i]: warps kept their order

    if cc >= 20:
        txn_wid, txn_addr, txn_size = _batch_sectors(wid, addr)
        requests = warp_ids.size
    else:
        group = (wid << 1) | (lane >> 4)         # (warp, half-warp), ascending
        gstart = _run_starts(group)
        requests = gstart.size
        rule = _batch_strict if cc < 12 else _batch_relaxed
        txn_wid, txn_addr, txn_size = rule(group, gstart, lane, addr, ws)
    return Batch(*_freeze(warp_ids[txn_wid], txn_addr, txn_size), requests=int(requests))


def _batch_sectors(wid, addr):
    """CC 2.0+: the distinct (warp, sector) pairs, ascending. np.sort of one
    packed int64 key, then dropping repeats, beats np.unique/lexsort on pairs."""
    sector, unpack = _compact(addr >> 5, 62 - int(wid[-1]).bit_length())
    w = int(sector.max()).bit_length()
    key = np.sort((wid << w) | sector)
    key = key[_run_starts(key)]
    return key >> w, unpack(key & ((1 << w) - 1)) << 5, np.full(key.size, SECTOR_BYTES, np.int64)


def _batch_strict(group, gstart, lane, addr, ws):
    """CC 1.0/1.1 for many half-warps: (dense warp, address, size) per transaction."""
    base = addr - (lane & (HALF_WARP - 1)) * ws  # the segment start if thread k reads word k
    bmin = np.minimum.reduceat(base, gstart)
    bmax = np.maximum.reduceat(base, gstart)
    ok = (bmin == bmax) & (bmin & (HALF_WARP * ws - 1) == 0) & (ws >= 4)
    lane_ok = np.repeat(ok, np.diff(np.append(gstart, addr.size)))
    first = np.zeros(addr.size, dtype=bool)
    first[gstart] = True
    # A coalesced half-warp emits its 1 or 2 transactions at its first lane;
    # an uncoalesced one emits one per lane. Repeating lanes keeps issue order.
    n_sub = 2 if ws == 16 else 1
    count = np.where(lane_ok, np.where(first, n_sub, 0), 1)
    idx = np.repeat(np.arange(addr.size), count)
    coalesced = lane_ok[idx]
    size = np.where(coalesced, 64 if ws == 4 else 128, SECTOR_BYTES)
    address = np.where(coalesced, base[idx], (addr[idx] >> 5) << 5)
    if n_sub == 2:                               # second 128 B half of a 16-byte-word pair
        second = np.flatnonzero(coalesced[1:] & (idx[1:] == idx[:-1])) + 1
        address[second] += 128
    return group[idx] >> 1, address, size.astype(np.int64)


def _quarter_tables(seg_size):
    """For each 4-bit mask of the 32 B quarters of a segment that a transaction
    must cover: the (offset, size) that the guide's halving ends at."""
    off = np.zeros(16, dtype=np.int64)
    size = np.zeros(16, dtype=np.int64)
    for m in range(1, 1 << (seg_size // 32)):
        used = [q for q in range(4) if m >> q & 1]
        off[m], size[m] = _shrink(0, seg_size, 32 * used[0], 32 * used[-1] + 32)
    return off, size


_QUARTER_TABLES = {s: _quarter_tables(s) for s in (32, 64, 128)}


def _batch_relaxed(group, gstart, lane, addr, ws):
    """CC 1.2/1.3 for many half-warps: (dense warp, address, size) per transaction.

    The guide's loop issues exactly one transaction per distinct segment that
    a half-warp's active threads touch, in the order of each segment's
    lowest-numbered thread, and its size depends only on which 32 B quarters
    of the segment are used. So: lay the half-warps out as rows of 16 packed
    keys (segment, thread, quarter), sort each row (tiny sorts: fast), find
    the runs of equal segments, OR their quarter masks, and issue the runs in
    the order of their first threads.
    """
    seg_size = _segment_size_1x(ws)
    shift = seg_size.bit_length() - 1
    seg, unpack = _compact(addr >> shift, 56)
    rows = gstart.size
    row = np.repeat(np.arange(rows), np.diff(np.append(gstart, addr.size)))
    col = lane & (HALF_WARP - 1)
    pad = np.iinfo(np.int64).max                 # sorts last, and its own run
    keys = np.full(rows * HALF_WARP, pad, dtype=np.int64)
    quarter = (addr & (seg_size - 1)) >> 5       # which 32 B piece of its segment
    keys[(row << 4) | col] = (seg << 6) | (col << 2) | quarter   # flat: 2-D fancy indexing is slow
    keys = np.sort(keys.reshape(rows, HALF_WARP), axis=1).ravel()
    run = keys >> 6
    new = np.concatenate(([True], run[1:] != run[:-1]))
    new[::HALF_WARP] = True                      # runs never span two half-warps
    starts = np.flatnonzero(new)
    quarters = np.bitwise_or.reduceat(1 << (keys & 3), starts)
    real = keys[starts] != pad
    starts, quarters = starts[real], quarters[real]
    head = keys[starts]                          # the run's lowest thread comes first
    # Issue order: park each run at (row, first thread); read the slots in order.
    slot = np.full(rows * HALF_WARP, -1, dtype=np.int64)
    slot[(starts & ~(HALF_WARP - 1)) | ((head >> 2) & (HALF_WARP - 1))] = np.arange(starts.size)
    issue = slot[slot >= 0]
    head, quarters, txn_row = head[issue], quarters[issue], starts[issue] >> 4
    off, size = _QUARTER_TABLES[seg_size]
    address = (unpack(head >> 6) << shift) + off[quarters]
    return group[gstart[txn_row]] >> 1, address, size[quarters]
