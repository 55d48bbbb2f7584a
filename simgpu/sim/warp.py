"""The warp-level intrinsics' semantics, as CUDA and PTX define them.

Lanes of one warp are consecutive positions of a :class:`LaneGroup` (lane k of
a warp sits k positions after its lane 0), so a lane's partner is found by
arithmetic on positions.  What CUDA leaves undefined is an error here, at the
user's line, naming the lane:

* a calling lane whose own bit is not in ``mask``, or lanes of one warp passing
  different masks;
* a lane named in ``mask`` that has not exited but does not execute this call
  here (it took another branch: the simulator runs divergent paths one after
  the other, so a call on each side of a branch does not meet);
* a shuffle that reads a lane not taking part.

Shuffles follow PTX ``shfl.sync``: the lane operand counts modulo 32 (its low
five bits), ``width`` cuts the warp into segments, and a source outside the
caller's segment (up, down, xor) gives the caller its own value.
"""
from __future__ import annotations

import numpy as np

from .lanes import WARP_SIZE

FULL = 0xFFFFFFFF


def _segments(g, idx):
    """Start offsets (into ``idx``) of each warp's lanes, and each lane's warp number."""
    w = g.warp[idx]
    starts = np.flatnonzero(np.concatenate(([True], w[1:] != w[:-1])))
    which = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(idx))))
    return starts, which


def _bits(lanes):
    return np.left_shift(np.uint64(1), lanes.astype(np.uint64))


def _or_per_warp(bits, starts):
    return np.bitwise_or.reduceat(bits, starts) if len(bits) else bits


def live_bits(g, idx, starts):
    """Per warp of ``idx``: the bits of its lanes that exist and have not exited."""
    first = idx[starts] - g.lane[idx[starts]]          # group position of each warp's lane 0
    # all 32 lanes of every warp at once (a warps x 32 table): a lane exists where its
    # position is in the group and in the same warp as lane 0, and is live unless exited
    pos = first[:, None] + np.arange(WARP_SIZE)
    ok = pos < g.n
    pos = np.where(ok, pos, 0)
    ok &= (g.warp[pos] == g.warp[first][:, None]) & ~g.exited[pos]
    # the lanes' bits are distinct, so their sum is their OR
    return (ok.astype(np.uint64) << np.arange(WARP_SIZE, dtype=np.uint64)).sum(
        axis=1, dtype=np.uint64)


def active_bits(g, idx):
    """Per lane of ``idx``: the bits of the lanes of its warp that execute with it."""
    starts, which = _segments(g, idx)
    return _or_per_warp(_bits(g.lane[idx]), starts)[which]


def check_mask(ex, node, idx, mask, what):
    """CUDA's rules on ``mask`` for a ``what`` call by lanes ``idx``; returns the
    per-lane bits of the lanes taking part (mask and active)."""
    g = ex.group
    if idx.size == g.n and (mask == FULL).all() and not g.exited.any():
        # Every lane of the group calls it with the full mask and none has exited (the
        # usual warp reduction): every rule holds, and the lanes taking part are each
        # warp's lanes, the same at every such call of the group: worked out once.
        part = g.__dict__.get("_full_mask_part")
        if part is None:
            part = g.__dict__["_full_mask_part"] = _check_mask(ex, node, idx, mask, what)
            part.setflags(write=False)
        return part
    return _check_mask(ex, node, idx, mask, what)


def _check_mask(ex, node, idx, mask, what):
    g = ex.group
    mask = mask.astype(np.uint64)
    lanes = g.lane[idx]
    own = (mask >> lanes.astype(np.uint64)) & np.uint64(1)
    if not own.all():
        bad = idx[own == 0]
        raise ex.fault(node, f"{what}: the calling lane's own bit is not set in the mask", bad,
                       "every lane that calls it must be in its mask (activemask() names the "
                       "lanes that run here)", f", mask {int(mask[own == 0][0]):#010x}")
    starts, which = _segments(g, idx)
    first = mask[starts][which]
    if (mask != first).any():
        bad = idx[mask != first]
        raise ex.fault(node, f"{what}: lanes of one warp pass different masks", bad,
                       "all lanes of a warp that call it must pass the same mask")
    here = _or_per_warp(_bits(lanes), starts)
    live = live_bits(g, idx, starts)
    missing = mask[starts] & live & ~here
    if missing.any():
        k = int(np.flatnonzero(missing)[0])
        names = [b for b in range(WARP_SIZE) if int(missing[k]) >> b & 1]
        shown = ", ".join(map(str, names[:8])) + (", ..." if len(names) > 8 else "")
        raise ex.fault(node, f"{what}: lanes {shown} of this warp are named in the mask but do "
                             "not execute this call here", idx[starts[k]:starts[k] + 1],
                       "pass activemask(), or the mask of the lanes that reach this line; the "
                       "simulator runs the two sides of a branch one after the other, so a call "
                       "on each side does not meet", f", mask {int(mask[starts[k]]):#010x}")
    return here[which]


def shuffle(ex, node, idx, mask, value, lane_arg):
    g = ex.group
    part = check_mask(ex, node, idx, mask, _name(node.op))
    lanes = g.lane[idx]
    width = node.width
    b = lane_arg.astype(np.int64) & 31                 # PTX reads the low five bits
    seg_start = lanes & ~np.int64(width - 1)
    seg_end = seg_start + (width - 1)
    op = node.op
    if op == "shfl_idx":
        src = seg_start | (b & (width - 1))
        ok = np.ones(idx.size, dtype=bool)
    elif op == "shfl_up":
        src = lanes - b
        ok = src >= seg_start
    elif op == "shfl_down":
        src = lanes + b
        ok = src <= seg_end
    else:                                              # shfl_xor
        src = lanes ^ b
        ok = src <= seg_end
    src = np.where(ok, src, lanes)
    takes_part = ((part & mask.astype(np.uint64)) >> src.astype(np.uint64)) & np.uint64(1)
    if not takes_part.all():
        bad = takes_part == 0
        raise ex.fault(node, f"{_name(op)} reads lane {int(src[bad][0])}, which does not take "
                             "part (not in the mask, exited, or past the block's last thread)",
                       idx[bad], "CUDA leaves the result undefined: read only lanes that call "
                                 "it with the same mask")
    full = np.zeros(g.n, dtype=value.dtype)
    full[idx] = value
    return full[idx + (src - lanes)]


def vote(ex, node, idx, mask, pred):
    g = ex.group
    part = check_mask(ex, node, idx, mask, _name(node.op))
    starts, which = _segments(g, idx)
    yes = _or_per_warp(np.where(pred, _bits(g.lane[idx]), np.uint64(0)), starts)[which]
    yes &= mask.astype(np.uint64)
    if node.op == "ballot":
        return yes.astype(np.uint32)
    if node.op == "any":
        return yes != 0
    return yes == (part & mask.astype(np.uint64))


def syncwarp(ex, node, idx, mask):
    check_mask(ex, node, idx, mask, "syncwarp")


def _name(op) -> str:
    return {"shfl_idx": "shfl_sync", "shfl_up": "shfl_up_sync", "shfl_down": "shfl_down_sync",
            "shfl_xor": "shfl_xor_sync", "ballot": "ballot_sync", "any": "any_sync",
            "all": "all_sync"}.get(op, op)
