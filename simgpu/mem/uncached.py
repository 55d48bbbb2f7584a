"""The path of a GPU without caches (GT200): a warp instruction's transactions straight
to the DRAM partitions and back, over the interconnect.

:class:`~simgpu.mem.memory_system.MemorySystem` sends a load's or a store's
:class:`~simgpu.mem.request.Request` here when the config has no L2.  This is the
hot path of the GT200's timed runs (one call per warp instruction), so it books the
interconnect's ports itself (the steps of
:class:`~simgpu.mem.interconnect.Interconnect`, inline) and is one of the modules
:mod:`simgpu.native` can compile; its source is the reference either way.
"""
from __future__ import annotations

from .dram import AddressMap, Dram
from .interconnect import Interconnect

__all__ = ["uncached", "by_partition"]


def by_partition(amap: AddressMap, addresses: list[int],
                 sizes: list[int]) -> dict[int, list[tuple[int, int, int, int]]]:
    """A request's transactions grouped by partition, in issue order: partition ->
    [(bank, row, size, address), ...] (``amap`` locates them, its cache first)."""
    by_part: dict[int, list[tuple[int, int, int, int]]] = {}
    cache, granule = amap.cache, amap.granule
    for a, s in zip(addresses, sizes):
        w = cache.get(a // granule)
        if w is None:
            w = amap.where(a)
        txns = by_part.get(w[0])
        if txns is None:
            by_part[w[0]] = [(w[1], w[2], s, a)]
        else:
            txns.append((w[1], w[2], s, a))
    return by_part


def uncached(amap: AddressMap, dram: Dram, net: Interconnect, req) -> float:
    """When ``req``'s data are back at its SM (a store: when it is acknowledged), its
    transactions served by ``dram``'s partitions (``amap`` locates them) over ``net``.
    Sets ``req.accepted`` later than its issue where a partition's queue was full."""
    # (The locals' types matter only where simgpu.native compiles this module: they let
    # it keep numbers as machine numbers. The source runs the same either way.)
    t: float = req.translated
    addresses: list[int] = req.addresses
    sizes: list[int] = req.sizes
    by_part = by_partition(amap, addresses, sizes)
    done = t
    write: bool = req.kind == "store"
    if not net.modeled:                # a fixed latency each way
        arrive = net.to_partition(t)
        for part, txns in by_part.items():
            finish = net.to_sm(dram.serve(part, txns, arrive, write=write))
            if finish > done:
                done = finish
        return done
    # over the interconnect's ports: the request's packets leave the SM's port as one
    # batch, each partition's reach its port as one; the replies leave each
    # partition's port as one batch and reach the SM's port as one
    header = net.flits(0)
    # one transaction size (the usual case): its packets' flits, else each one's
    s0 = sizes[0]
    same = net.flits(s0) if sizes.count(s0) == len(sizes) else -1
    if same >= 0:
        total = len(sizes) * (same if write else header)
    else:
        total = (sum([net.flits(s) for s in sizes]) if write else header * len(sizes))
    out_flits: dict[int, int] = {}         # each partition's request and reply flits
    back_flits: dict[int, int] = {}
    for part, txns in by_part.items():
        n = len(txns)
        data = n * same if same >= 0 else sum([net.flits(x[2]) for x in txns])
        if write:
            out_flits[part], back_flits[part] = data, header * n
        else:
            out_flits[part], back_flits[part] = header * n, data
    waits = net.requests(req, t, total, out_flits)
    # (Interconnect.leave_partition and reach_sm, inline: this is the hot path of the
    # GT200's loads and stores)
    part_out, half = net.part_out, net.half_trip
    back_total, last, arrive = 0, t, t + half
    for part, txns in by_part.items():
        finish = dram.serve(part, txns, arrive + waits[part], None, True, write)
        finish += part_out[part].book(finish, back_flits[part])
        if finish > last:
            last = finish
        back_total += back_flits[part]
    net.flits_sent += back_total
    done = last + half + net.sm_in[req.sm // net.per_port].book(last, back_total)
    return done if done > t else t
