"""The random splitter's kernels, RS1..RS5, in both packings and both 64-bit walks
(fused and the paper's).  What each does, the word layouts and why the walk has no
race: random_splitter.py's docstring; the host side that launches them is there too."""
from __future__ import annotations

from algorithms.kiss import kiss_below, kiss_next, kiss_seed_device
from simgpu.lang import (Array, blockDim, blockIdx, device_function, gridDim, i32, i64, kernel,
                         threadIdx, u16, u32, u64)

from .device_input import BAD, SUCC_SUM, TAILS
from .wylie import DONE, LOW, SUCC_MASK, block_pointer_jumping

NONE16 = 0xFFFF               # 48-bit: owner of a node that has none yet
SPLIT = 1 << 63               # 64-bit: the word of a splitter (its high half: SPLIT | slot)
SPLIT_HIGH = 1 << 31          # the same bit in the high half, shifted down
SLOT_MASK = 0x7FFFFFFF        # the slot in a word's high half, once shifted down
# 64-bit fused: the high half of a word no walk has reached yet (RS1), a slot id no
# slot has (r < UNWALKED_HIGH: random_splitter.py checks), so that RS3 tells a node
# already walked (high half = its slot, below) from a fresh one, and RS5 an unowned one
UNWALKED_HIGH = 0x7FFFFFFF
UNWALKED = UNWALKED_HIGH << 32
# 64-bit fused: the words the walk leaves for the host (err[E + ...]): three errors, and
# NOT_ONE_LIST: a run that guessed one list (``one_list`` below) found the guess wrong
WALKED_TWICE, UNOWNED, HEAD_RANK, NOT_ONE_LIST = range(4)

# --- RS1 -------------------------------------------------------------------

@kernel
def rs1_init_64(succ: Array[i32], word: Array[u64], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        word[i] = UNWALKED | u64(succ[i])        # no owner yet


@kernel
def rs1_init_48(owner: Array[u16], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        owner[i] = NONE16


# --- RS2 -------------------------------------------------------------------

@device_function
def one_list_head(stats: Array[i64], n: i32) -> i32:
    """The head of succ from the input scan's counters (device_input.lr_scan_*) when
    succ may be one list (every id in range, one tail, the head's id n(n-1)/2 minus
    the successors' sum in range), else -1.  Lets the host queue RS2..RS5 for one
    list before it has read the counters: with -1 they do nothing (one_list=1)."""
    h = -1
    if stats[BAD] == 0 and stats[TAILS] == 1:
        s = i64(n) * (i64(n) - 1) // 2 - stats[SUCC_SUM]
        if s >= 0 and s < i64(n):
            h = i32(s)
    return h


@kernel
def rs2_choose_64(word: Array[u64], sp_node: Array[i32], spw: Array[u64], kiss: Array[u32],
                  given: Array[i32], seed: u64, p: i32, r: i32, n: i32, head: i32,
                  stats: Array[i64], one_list: i32, flags: Array[i32], n_flags: i32):
    """head >= 0: the one given splitter (slot p, a single list's head: no array to copy
    up for it); else the given splitters are given[0 .. r - p).  one_list=1: the head
    comes from the input scan's counters (one_list_head) and, where succ is not one
    list, no splitter is marked (every sp_node[k] = 0, not node 0's splitter), so RS3
    walks nothing and RS4 has nothing to rank.  Also zeroes flags[0 .. n_flags) (RS4's
    and the walk's flag words), so that the host allocates it without a memset: every
    word the later kernels read is written here (check="uninit" tests this)."""
    t = blockIdx.x * blockDim.x + threadIdx.x
    stride = gridDim.x * blockDim.x
    if t == 0:
        spw[r] = DONE | (u64(r) << 32)          # the sentinel: weight 0, points to itself
    for f in range(t, n_flags, stride):
        flags[f] = 0
    choose = 1
    if one_list != 0:
        head = one_list_head(stats, n)
        if head < 0:
            choose = 0
    for k in range(t, r, stride):
        s = 0                                   # not one list: RS3 finds slot k lost
        if choose != 0:
            if k < p:
                kiss_seed_device(kiss, k, seed, u64(k))
                s = i32(kiss_below(kiss_next(kiss, k), n))
            elif head >= 0:
                s = head
            else:
                s = given[k - p]
            word[s] = (u64(SPLIT_HIGH | k) << 32) | (word[s] & LOW)    # keeps s's successor; benign race: one of two picks wins (RS3)
        sp_node[k] = s


@kernel
def rs2_choose_48(owner: Array[u16], lrank: Array[i32], sp_node: Array[i32], spw: Array[u64],
                  kiss: Array[u32], given: Array[i32], seed: u64, p: i32, r: i32, n: i32):
    t = blockIdx.x * blockDim.x + threadIdx.x
    if t == 0:
        spw[r] = DONE | (u64(r) << 32)
    for k in range(t, r, gridDim.x * blockDim.x):
        if k < p:
            kiss_seed_device(kiss, k, seed, u64(k))
            s = i32(kiss_below(kiss_next(kiss, k), n))
        else:
            s = given[k - p]
        sp_node[k] = s
        owner[s] = u16(k)  # benign race: one of two picks wins (RS3)
        lrank[s] = 0


# --- RS3 -------------------------------------------------------------------

@device_function
def slot_word(nxt: i32, r: i32, length: i32) -> u64:
    """Slot k's word for RS4: done << 63 | next slot << 32 | sublist length."""
    return (u64(nxt == r) << 63) | (u64(nxt) << 32) | u64(length)


# The walks are one flat loop in which every iteration either takes one step
# of the current sublist or starts the thread's next slot (k, k + stride, ...):
# with two nested loops a lane that ends its sublist would idle until the
# longest walk of its warp ended (sublist lengths are geometric, so a warp's
# longest is about H_32 ~ 4 times its mean).  With one slot per thread, as in
# the paper, the two forms do the same steps.

@kernel
def rs3_walk_64(word: Array[u64], sp_node: Array[i32], spw: Array[u64], r: i32,
                err: Array[i32], e: i32):
    """err[e + WALKED_TWICE] = 1 if a walk reaches a node some walk already wrote: in
    a forest of lists never (a node's one predecessor is walked once), so the input
    has a node with two predecessors or a cycle; that walk ends there, so no walk
    runs around a cycle (each step takes a fresh node)."""
    stride = gridDim.x * blockDim.x
    k = blockIdx.x * blockDim.x + threadIdx.x
    walking = 0                                  # 1 while slot k's sublist is being walked
    mine = u64(0)
    j = 0
    nx = 0
    d = 0
    while k < r:
        if walking == 0:                         # start slot k
            s = sp_node[k]
            w = word[s]
            if (w >> 32) == u64(SPLIT_HIGH | k):    # slot k won node s in RS2
                walking = 1
                mine = u64(k) << 32
                j = s
                nx = i32(w & LOW)
                d = 0
            else:                                # a loser: empty sublist
                spw[k] = slot_word(r, r, 0)
                k += stride
        elif nx == j:                            # j is a tail
            spw[k] = slot_word(r, r, d + 1)
            walking = 0
            k += stride
        else:
            wn = word[nx]
            if wn >= SPLIT:                      # the next splitter
                spw[k] = slot_word(i32((wn >> 32) & SLOT_MASK), r, d + 1)
                walking = 0
                k += stride
            elif wn < UNWALKED:                  # walked already: not a forest of lists
                err[e + WALKED_TWICE] = 1
                spw[k] = slot_word(r, r, d + 1)
                walking = 0
                k += stride
            else:
                d += 1
                word[nx] = mine | u64(d)         # owner and local rank over the successor
                j = nx
                nx = i32(wn & LOW)


@kernel
def rs3_walk_48(succ: Array[i32], owner: Array[u16], lrank: Array[i32], sp_node: Array[i32],
                spw: Array[u64], r: i32):
    stride = gridDim.x * blockDim.x
    k = blockIdx.x * blockDim.x + threadIdx.x
    walking = 0
    j = 0
    nx = 0
    d = 0
    while k < r:
        if walking == 0:
            s = sp_node[k]
            if owner[s] == k:
                walking = 1
                j = s
                nx = succ[j]
                d = 0
            else:
                spw[k] = slot_word(r, r, 0)
                k += stride
        elif nx == j:
            spw[k] = slot_word(r, r, d + 1)
            walking = 0
            k += stride
        else:
            o = owner[nx]
            if o != NONE16:
                spw[k] = slot_word(i32(o), r, d + 1)
                walking = 0
                k += stride
            else:
                d += 1
                owner[nx] = u16(k)
                lrank[nx] = d
                j = nx
                nx = succ[j]


# --- RS4 -------------------------------------------------------------------

@kernel
def rs4_rank_splitters(spw: Array[u64], sp_rank: Array[i32], flags: Array[i32], m: i32,
                       rounds_cap: i32):
    """One block.  spw: 2m words (m = r + 1 slots with the sentinel); flags: 4 zeros."""
    rounds = block_pointer_jumping(spw, m, flags, rounds_cap)
    src = (rounds & 1) * m
    for k in range(threadIdx.x, m, blockDim.x):
        sp_rank[k] = i32(spw[src + k] & LOW) - 1
    if threadIdx.x == 0:
        flags[3] = rounds


@kernel
def rs4_splitter_ranks(words: Array[u64], sp_rank: Array[i32], m: i32):
    """After the multi-kernel rounds: sp_rank[k] = Q - 1 from the ranked slot words."""
    for k in range(blockIdx.x * blockDim.x + threadIdx.x, m, gridDim.x * blockDim.x):
        sp_rank[k] = i32(words[k] & LOW) - 1


# --- RS5 -------------------------------------------------------------------

@kernel
def rs5_final_64(word: Array[u64], sp_rank: Array[i32], n: i32, err: Array[i32], e: i32,
                 head: i32, last: i32, stats: Array[i64], one_list: i32):
    """Also the validation's last checks: err[e + UNOWNED] = 1 if a node has no owner
    (no walk reached it: it lies on a cycle without a splitter), err[e + HEAD_RANK] = 1
    if node ``head`` (>= 0) does not get rank ``last``.  An unowned node's rank is -1.
    one_list=1: the head from the scan's counters; where succ is not one list
    (one_list_head), err[e + NOT_ONE_LIST] = 1 and the words stay as they are."""
    todo = n
    if one_list != 0:
        head = one_list_head(stats, n)
        if head < 0:
            todo = 0
            if blockIdx.x == 0 and threadIdx.x == 0:
                err[e + NOT_ONE_LIST] = 1
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, todo, gridDim.x * blockDim.x):
        w = word[i]
        rk = -1
        if w >= SPLIT:                                    # a splitter: local rank 0
            rk = sp_rank[i32((w >> 32) & SLOT_MASK)]
        elif w >= UNWALKED:
            err[e + UNOWNED] = 1
        else:
            rk = sp_rank[i32(w >> 32)] - i32(w & LOW)
        if i == head and rk != last:
            err[e + HEAD_RANK] = 1
        word[i] = u64(i64(rk))


@kernel
def rs5_final_48(owner: Array[u16], lrank: Array[i32], sp_rank: Array[i32], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        lrank[i] = sp_rank[owner[i]] - lrank[i]


# --- the paper's 64-bit walk (walk="paper"): succ apart from the owner/rank word ---------

@kernel
def rs1_init_64p(word: Array[u64], n: i32):
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        word[i] = u64(0)                         # no owner yet


@kernel
def rs2_choose_64p(word: Array[u64], sp_node: Array[i32], spw: Array[u64], kiss: Array[u32],
                   given: Array[i32], seed: u64, p: i32, r: i32, n: i32):
    t = blockIdx.x * blockDim.x + threadIdx.x
    if t == 0:
        spw[r] = DONE | (u64(r) << 32)
    for k in range(t, r, gridDim.x * blockDim.x):
        if k < p:
            kiss_seed_device(kiss, k, seed, u64(k))
            s = i32(kiss_below(kiss_next(kiss, k), n))
        else:
            s = given[k - p]
        sp_node[k] = s
        word[s] = u64(SPLIT_HIGH | k) << 32      # owner slot k, local rank 0; benign race: one of two picks wins (RS3)


@kernel
def rs3_walk_64p(succ: Array[i32], word: Array[u64], sp_node: Array[i32], spw: Array[u64],
                 r: i32):
    """Per node walked: a 64-bit read (word[nx]: owned?), a 32-bit read (succ[nx]) and a
    64-bit write (word[nx] = owner, local rank), in the paper's order."""
    stride = gridDim.x * blockDim.x
    k = blockIdx.x * blockDim.x + threadIdx.x
    walking = 0
    mine = u64(0)
    j = 0
    nx = 0
    d = 0
    while k < r:
        if walking == 0:
            s = sp_node[k]
            if (word[s] >> 32) == u64(SPLIT_HIGH | k):    # slot k won node s in RS2
                walking = 1
                mine = u64(k) << 32
                j = s
                nx = succ[s]
                d = 0
            else:
                spw[k] = slot_word(r, r, 0)
                k += stride
        elif nx == j:
            spw[k] = slot_word(r, r, d + 1)
            walking = 0
            k += stride
        else:
            wn = word[nx]
            if wn != u64(0):                     # owned: the next splitter
                spw[k] = slot_word(i32((wn >> 32) & SLOT_MASK), r, d + 1)
                walking = 0
                k += stride
            else:
                d += 1
                after = succ[nx]
                word[nx] = mine | u64(d)
                j = nx
                nx = after


@kernel
def rs5_final_64p(word: Array[u64], sp_rank: Array[i32], rank: Array[i32], n: i32):
    """rank is the succ buffer: the paper's output reusing succ_d (32-bit ranks)."""
    for i in range(blockIdx.x * blockDim.x + threadIdx.x, n, gridDim.x * blockDim.x):
        w = word[i]
        rank[i] = sp_rank[i32((w >> 32) & SLOT_MASK)] - i32(w & LOW)


@kernel
def rs4_jump_in_place(spw: Array[u64], sp_rank: Array[i32], flags: Array[i32], m: i32,
                      n: i32, before: Array[u64]):
    """RS4 in one launch: pointer jumping in place, without rounds.  A word is always
    (done, a later slot x, the nodes from this slot's splitter to x's), whether a
    thread reads it before or after another thread's update (a 64-bit word is read
    and written whole), so adding the word of one's x to one's own is right at any
    moment and moves x at least one slot on: each thread jumps until its word is
    done, at most m - 1 times on a list of splitters.  With every thread resident the
    jumps run about as ceil(log2 m) synchronous rounds would, in one launch instead
    of one per round (random_splitter.py).  On a cycle of splitters no word gets done:
    a thread gives up after m jumps or once its count passes the n nodes (every jump
    adds at least one), stores only counts up to n (so no sum overflows into the slot
    field) and sets flags[0] = 1.  before[k]: slot k's word as RS3 left it (for the
    statistics; thread k reads spw[k] before anyone but thread k writes it)."""
    for k in range(blockIdx.x * blockDim.x + threadIdx.x, m, gridDim.x * blockDim.x):
        w = spw[k]
        before[k] = w
        jumps = 0
        while w < DONE and jumps < m and (w & LOW) <= u64(n):
            # a store first: the load below is fresh (the L2)
            spw[k] = w  # benign race: any (slot, distance) word read is right (docstring)
            w = spw[i32((w >> 32) & SUCC_MASK)] + (w & LOW)  # benign race: as the line above
            jumps += 1
        if w < DONE:
            flags[0] = 1
        else:
            spw[k] = w  # benign race: any (slot, distance) word read is right (docstring)
        sp_rank[k] = i32(w & LOW) - 1
