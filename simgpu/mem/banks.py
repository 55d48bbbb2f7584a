"""Shared-memory bank conflicts, as pure functions (like ``simgpu.mem.coalesce``).

Shared memory is split into banks of 32-bit words (word w lives in bank
w mod banks); each bank serves one word per pass, so lanes that need
different words of one bank are served in several passes.  The rules follow
the CUDA C Programming Guide, section "Shared Memory" of each compute
capability:

* **1.x** (16 banks): a warp's request is split into its two half-warps,
  which never conflict with each other.  Each half-warp is served "in
  several steps ... one step every two clock cycles ... by servicing one
  conflict-free subset of these addresses per step": select one of the
  remaining words as the broadcast word, serve every address within it,
  plus one address for each other bank.  Here the broadcast word is that
  of the lowest remaining lane.  So 8- and 16-bit accesses by different
  threads to one word conflict (the guide's ``char shared[32]`` example),
  and a 64-bit access is "compiled into two separate 32-bit requests"
  (each with a stride of two words: the guide's 2-way ``double`` example).
* **2.0 and later** (32 banks): the whole warp at once; lanes reading any
  bytes of one 32-bit word never conflict (multicast), so a request takes
  as many passes as the most distinct words any one bank holds; a 64-bit
  access by a full warp needs two passes even without a conflict (256 B at
  128 B per pass), which is not counted as a conflict.

``passes`` is what the hardware spends; ``ideal`` is the number of passes
a conflict-free access of the same width by the same lanes needs;
``passes - ideal`` are the replays (Nsight Compute's shared-memory "bank
conflicts" count wavefronts beyond the ideal in the same way).
"""
from __future__ import annotations

import re

__all__ = ["bank_passes", "bank_layout"]


def bank_layout(arch: str) -> tuple[int, int, int]:
    """(banks, lanes served per request, cycles per pass) of an architecture.

    1.x: 16 banks per half-warp, one step every two clock cycles (CPG,
    compute capability 1.x, "Shared Memory"); 2.0+: 32 banks per warp, 32
    bits per bank per clock cycle (CPG, compute capability 5.x and later;
    the model uses that figure for every 2.0+ GPU).
    """
    m = re.match(r"^sm_(\d+)", arch)
    if not m:
        raise ValueError(f"unknown architecture {arch!r}")
    return (16, 16, 2) if int(m.group(1)) < 20 else (32, 32, 1)


def bank_passes(addresses, word_size: int, arch: str, lanes=None) -> tuple[int, int]:
    """(passes, ideal) for one warp's shared-memory access.

    ``addresses``: byte address of each active lane's word; ``lanes``: each
    one's lane number 0..31 (default: 0, 1, 2, ...).  Only the active lanes
    are given.
    """
    addresses = [int(a) for a in addresses]
    lanes = list(range(len(addresses))) if lanes is None else [int(x) for x in lanes]
    if len(lanes) != len(addresses):
        raise ValueError("addresses and lanes differ in length")
    if not addresses:
        return 0, 0
    banks, per_request, _ = bank_layout(arch)
    if per_request == 16:
        return _passes_1x(addresses, lanes, word_size, banks)
    words_per_lane = max(1, word_size // 4)
    held: dict = {}                                  # bank -> distinct words
    for a in addresses:
        first = a // 4
        for w in range(first, first + words_per_lane):
            held.setdefault(w % banks, set()).add(w)
    passes = max(len(ws) for ws in held.values())
    ideal = -(-len(addresses) * word_size // (banks * 4))
    return passes, max(1, ideal)


def _passes_1x(addresses, lanes, word_size, banks):
    passes = ideal = 0
    subs = max(1, word_size // 4)                    # 64/128-bit: 32-bit requests
    for half in (0, 1):
        mine = [a for a, lane in zip(addresses, lanes) if lane // 16 == half]
        if not mine:
            continue
        for j in range(subs):
            if word_size >= 4:
                part = [a + 4 * j for a in mine]
            else:
                part = mine
            passes += _steps_1x(part, banks)
            ideal += 1
    return passes, ideal


def _steps_1x(addresses, banks):
    """Steps for one half-warp request of byte addresses (the guide's procedure)."""
    remaining = list(addresses)
    steps = 0
    while remaining:
        steps += 1
        broadcast = remaining[0] // 4
        served_banks = {broadcast % banks}
        chosen = set()
        for a in remaining:
            bank = (a // 4) % banks
            if a // 4 != broadcast and bank not in served_banks:
                served_banks.add(bank)
                chosen.add(a)
        remaining = [a for a in remaining if a // 4 != broadcast and a not in chosen]
    return steps
