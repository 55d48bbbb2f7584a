"""Wylie's pointer jumping on the device: multi-kernel and single-block.

Each node keeps one 64-bit word (the paper's "union" of two 32-bit values)::

    bit 63      done: the node's current successor is a tail
    bits 62-32  succ: the node's current successor (node ids are < 2^31)
    bits 31-0   rank: the distance covered so far

Initially ``rank = 0 if succ[i] == i else 1`` (every tail points to itself, so
forests need nothing special) and ``done = succ[succ[i]] == succ[i]``.  A round
is, for every node i at once, ``rank[i] += rank[succ[i]]; succ[i] =
succ[succ[i]]``; with the word layout that is a single addition::

    w  = src[i]
    ws = src[succ(w)]
    dst[i] = ws + (w & 0xFFFFFFFF)      # ws's done bit, ws's succ, rank + rank(succ)

because a node's new successor is a tail exactly when its successor's
successor was (the done bit travels with the successor).  A tail's word is
(1, itself, 0), so adding it changes nothing: the update is branch-free.
Rounds are double-buffered: a round reads only ``src`` and writes only
``dst``, then the two swap.

Termination: a round whose results still contain a word that is not done
sets a flag, so the host (multi-kernel) or the block (single-block) runs
exactly ceil(log2 D) rounds, D the longest list's length in links (its
head's rank), and none when D <= 1.  The flag is the only conditional: a
store guarded by the done bit (a predicated store in CUDA C); the ranking
arithmetic has no branch.

Kernels (report.kernel):
  wylie_init           build the words from succ (multi-kernel version)
  wylie_jump           one round, striding over the nodes, src -> dst
  wylie_single_block   the whole algorithm in one block: build, then rounds
                       separated by syncthreads() (block_pointer_jumping)
block_pointer_jumping is a device function, shared with the random
splitter's RS4, which ranks the short list of splitters with it.
"""
from __future__ import annotations

import numpy as np

from simgpu.lang import (Array, blockDim, blockIdx, device_function, gridDim, i32, kernel,
                         syncthreads, threadIdx, u64)

LOW = 0xFFFFFFFF            # the rank field
SUCC_MASK = 0x7FFFFFFF      # the succ field, once shifted down (bit 63 is the done bit)
DONE = 1 << 63              # the done bit; a word below DONE is not done yet


@device_function
def wylie_word(succ: Array[i32], i: i32) -> u64:
    """The initial word of node i: done << 63 | succ << 32 | rank."""
    s = succ[i]
    ss = succ[s]
    return (u64(ss == s) << 63) | (u64(s) << 32) | u64(s != i)


@kernel
def wylie_init(succ: Array[i32], words: Array[u64], flags: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        w = wylie_word(succ, i)
        words[i] = w
        if w < DONE:
            flags[0] = 1


@kernel
def wylie_jump(src: Array[u64], dst: Array[u64], flags: Array[i32], slot: i32, n: i32):
    """One round: dst[i] = src[succ(i)] + rank(i); flags[slot] = 1 if a result is not done."""
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        w = src[i]
        nw = src[i32((w >> 32) & SUCC_MASK)] + (w & LOW)
        dst[i] = nw
        if nw < DONE:
            flags[slot] = 1


@device_function
def block_pointer_jumping(buf: Array[u64], m: i32, flags: Array[i32], max_rounds: i32) -> i32:
    """Pointer jumping on the m words buf[0..m) by the threads of one block.

    buf has 2m words (double buffer); after R rounds (the return value) the
    result is in buf[(R & 1) * m ..].  flags[0..2] must be 0 on entry: flags[r % 3]
    says whether the words after r rounds still hold one that is not done.  Three
    slots let one syncthreads() per round suffice: in round r the block writes
    slot r+1, reads slot r, and thread 0 clears slot r+2, which nobody reads or
    writes until after the next barrier.  Stops after max_rounds rounds at most
    (then flags[R % 3] != 0 tells the caller the input had a cycle).
    """
    t = threadIdx.x
    for i in range(t, m, blockDim.x):
        if buf[i] < DONE:
            flags[0] = 1
    syncthreads()
    rounds = 0
    while flags[rounds % 3] != 0 and rounds < max_rounds:
        if t == 0:
            flags[(rounds + 2) % 3] = 0
        src = (rounds & 1) * m
        dst = m - src
        for i in range(t, m, blockDim.x):
            w = buf[src + i]
            nw = buf[src + i32((w >> 32) & SUCC_MASK)] + (w & LOW)
            buf[dst + i] = nw
            if nw < DONE:
                flags[(rounds + 1) % 3] = 1
        syncthreads()
        rounds += 1
    return rounds


@kernel
def wylie_single_block(succ: Array[i32], buf: Array[u64], flags: Array[i32], n: i32,
                       max_rounds: i32):
    """Launch with one block.  flags (4 words, zero): flags[3] = rounds run."""
    for i in range(threadIdx.x, n, blockDim.x):
        buf[i] = wylie_word(succ, i)
    syncthreads()
    rounds = block_pointer_jumping(buf, n, flags, max_rounds)
    if threadIdx.x == 0:
        flags[3] = rounds


def max_rounds(n: int) -> int:
    """Rounds that suffice for any valid input of n nodes: ceil(log2(n - 1)) <= this."""
    return max(1, int(n).bit_length())


def low_words(ctx, words, n: int, off: int = 0):
    from .device_input import low_words as unpack_on_device
    return unpack_on_device(ctx, words, n, off)


def unpack_ranks(words: np.ndarray) -> np.ndarray:
    return (words & np.uint64(LOW)).astype(np.int64)


def not_a_forest(method: str) -> RuntimeError:
    return RuntimeError(f"{method}: pointer jumping did not converge in log2(n) rounds: succ "
                        "is not a forest of lists (a cycle?); rank it with validate=True to "
                        "find the offending nodes")


def wylie_words(dev, n: int):
    """The two arrays of packed (rank, successor) words that the rounds swap.  rank()
    allocates them before it checks succ on the device, so that a list too large for
    the device is refused before any launch: at 64M nodes on the 896 MB GTX 260 they
    are what does not fit, and the check's scan would otherwise be simulated first."""
    return dev.zeros(n, np.uint64), dev.zeros(n, np.uint64)


def run_wylie(ctx, succ_d, n: int, words):
    """Multi-kernel Wylie; returns (ranks: int64 device array, rounds).  words: what
    wylie_words() returned (rank() allocates them before its input check)."""
    dev = ctx.device
    a, b = words
    limit = max_rounds(n)
    flags = dev.zeros(limit + 1, np.int32)
    threads = ctx.node_threads(n)
    ctx.launch(wylie_init, threads, succ_d, a, flags, n, step="init")
    rounds = 0
    while int(flags.to_host()[rounds]):      # the words after `rounds` rounds are not all done
        if rounds == limit:
            raise not_a_forest("wylie")
        ctx.launch(wylie_jump, threads, a, b, flags, rounds + 1, n, step=f"round {rounds + 1}")
        a, b = b, a
        rounds += 1
    return low_words(ctx, a, n), rounds


def run_wylie_single_block(ctx, succ_d, n: int):
    """Single-block Wylie (one launch, syncthreads between rounds); (ranks: int64 device
    array, rounds)."""
    dev = ctx.device
    buf = dev.zeros(2 * n, np.uint64)
    flags = dev.zeros(4, np.int32)
    limit = max_rounds(n)
    block = ctx.threads if ctx.threads is not None else ctx.block_threads(n)
    ctx.launch(wylie_single_block, block, succ_d, buf, flags, n, limit,
               step="single block", one_block=True)
    f = flags.to_host()
    rounds = int(f[3])
    if f[rounds % 3]:
        raise not_a_forest("wylie-single-block")
    half = (rounds & 1) * n
    return low_words(ctx, buf, n, half), rounds
