"""The front end of the warp-level intrinsics (CUDA's ``__shfl_sync`` family,
``__ballot_sync``, ``__any_sync``/``__all_sync``, ``__activemask``, ``__syncwarp``).

    v = shfl_down_sync(FULL_MASK, v, 16)        # the value of lane (lane + 16)
    b = ballot_sync(FULL_MASK, x > 0)            # u32: bit k = lane k's predicate
    syncwarp()                                   # or syncwarp(mask): a statement

Arguments convert as C converts a call's arguments: the mask to ``u32``, a
source lane or lane mask to ``i32``, a delta to ``u32``.  ``width`` (optional,
last) is a compile-time power of two from 1 to 32.  The simulator's semantics
are in :mod:`simgpu.sim.warp`.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.types import boolean, f32, f64, i32, i64, promote, u32, u64
from .ir_helpers import cast, truth

SHUFFLES = {"shfl_sync": "shfl_idx", "shfl_up_sync": "shfl_up", "shfl_down_sync": "shfl_down",
            "shfl_xor_sync": "shfl_xor"}
VOTES = {"ballot_sync": "ballot", "any_sync": "any", "all_sync": "all"}
WARP_INTRINSICS = set(SHUFFLES) | set(VOTES) | {"activemask", "syncwarp"}
SHUFFLE_TYPES = (i32, u32, i64, u64, f32, f64)      # CUDA's overloads of __shfl_sync


def warp_call(b, node, fname) -> ir.Expr:
    """The IR of the call ``node`` of the warp intrinsic ``fname`` (``b``: the
    FunctionBuilder)."""
    loc, args = b.loc(node), node.args
    if fname == "syncwarp":
        raise b.syntax_error(node, "syncwarp() is a statement on its own line")
    if fname == "activemask":
        if args:
            raise b.syntax_error(node, f"activemask() takes no arguments, {len(args)} given")
        return ir.WarpOp(type=u32, loc=loc, op="activemask")
    if fname in VOTES:
        if len(args) != 2:
            raise b.syntax_error(node, f"{fname}(mask, predicate) takes 2 arguments, "
                                       f"{len(args)} given")
        mask = _mask(b, args[0], loc)
        pred = truth(b.expr(args[1]), loc)
        t = u32 if fname == "ballot_sync" else boolean
        return ir.WarpOp(type=t, loc=loc, op=VOTES[fname], mask=mask, value=pred)
    if not 3 <= len(args) <= 4:
        raise b.syntax_error(node, f"{fname}(mask, value, {_third(fname)}[, width]) takes 3 or "
                                   f"4 arguments, {len(args)} given")
    mask = _mask(b, args[0], loc)
    value = b.expr(args[1])
    t = promote(value.type)
    if t not in SHUFFLE_TYPES:                 # pragma: no cover - promote covers the rest
        raise b.type_error(args[1], f"{fname} cannot move a {value.type} value")
    lane = b.expr(args[2])
    if not lane.type.is_int:
        raise b.type_error(args[2], f"{fname}'s {_third(fname)} must be an integer, "
                                    f"not {lane.type}")
    op = SHUFFLES[fname]
    width = 32
    if len(args) == 4:
        width = b.const_value(args[3])
        if not isinstance(width, int) or width < 1 or width > 32 or width & (width - 1):
            raise b.type_error(args[3], f"{fname}'s width must be a power of two from 1 to 32, "
                                        f"not {width!r}")
    lane_type = u32 if op in ("shfl_up", "shfl_down") else i32
    return ir.WarpOp(type=t, loc=loc, op=op, mask=mask, value=cast(value, t, loc),
                     lane=cast(lane, lane_type, loc), width=width)


def syncwarp_stmt(b, call, loc) -> ir.SyncWarp:
    if len(call.args) > 1 or call.keywords:
        raise b.syntax_error(call, "syncwarp() takes at most one argument (the mask)")
    if call.args:
        mask = _mask(b, call.args[0], loc)
    else:
        mask = ir.Const(type=u32, loc=loc, value=0xFFFFFFFF)
    return ir.SyncWarp(loc=loc, mask=mask)


def _mask(b, node, loc) -> ir.Expr:
    m = b.expr(node)
    if not m.type.is_int:
        raise b.type_error(node, f"a warp mask must be an integer (u32), not {m.type}")
    if isinstance(m, ir.Const):                # C converts the constant modulo 2**32
        return ir.Const(type=u32, loc=m.loc, value=int(m.value) & 0xFFFFFFFF)
    return cast(m, u32, loc)


def _third(fname) -> str:
    return {"shfl_sync": "src_lane", "shfl_xor_sync": "lane_mask"}.get(fname, "delta")
