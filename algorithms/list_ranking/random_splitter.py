"""Reid-Miller's random splitter list ranking on the device: kernels RS1..RS5.

Splitters live in *slots*: slots 0 .. p-1 are drawn at random, one per
thread (slot k from KISS generator k, seeded like seed_words(seed, k)); slots
p .. r-1 are *given* nodes: the head of every list (a walk only goes forward,
so each head must start a sublist), or, for ``splitters="even"``, the nodes
at exactly equal spacing along each list (heads included; then p = 0 random
slots).  A node's *owner* is the slot of its sublist's splitter.  Slot r is a
sentinel that ends the short list of splitters.

  RS1  rs1_init_{64,48}   every node: owner = none                       (n, coalesced)
  RS2  rs2_choose_{64,48} slot k: s = random node (KISS) or given node;
                          mark s as slot k's splitter.  Two slots on one
                          node: one plain store wins, the loser finds out in RS3
  RS3  rs3_walk_{64,48}   slot k: if owner[s] is still k, walk from s along
                          succ writing owner = k and local rank 1, 2, ...
                          until a node that has an owner (the next splitter,
                          whose owner is its slot) or past the tail.  Writes
                          the slot's word for RS4: done << 63 | next slot << 32
                          | sublist length (a loser: length 0, next = sentinel)
  RS4  rs4_rank_splitters one block: pointer jumping (block_pointer_jumping,
                          syncthreads between rounds) over the r + 1 slot
                          words, weighted by sublist length.  The sentinel
                          (weight 0, pointing to itself) ends every chain,
                          so slot k gets Q = the number of nodes from its
                          splitter to its tail; sp_rank[k] = Q - 1 is the
                          splitter's rank.  Above SINGLE_BLOCK_SLOTS slots
                          (more splitters than the paper ever used) one
                          block is the bottleneck, and RS4 is instead
                          rs4_jump_in_place (pointer jumping in place, one
                          launch, up to IN_PLACE_RESIDENT_FACTOR x the
                          resident threads), beyond that wylie_jump launched
                          ceil(log2(r + 1)) times, then rs4_splitter_ranks
  RS5  rs5_final_{64,48}  every node: rank = sp_rank[owner] - local rank   (n, coalesced)

Direction: local ranks grow along the list away from the splitter, ranks
shrink toward the tail, so a node d links after its splitter has rank
rank(splitter) - d.

Packing
  64: one 64-bit word per node that first holds the successor and then the
      node's owner and local rank, so that the walk reads and writes one
      word per node and RS5 writes the final ranks over it (the paper's
      "output reusing the succ buffer")::

          before the walk   UNWALKED_HIGH      << 32 | succ    (no owner yet)
          a splitter        SPLIT | slot       << 32 | succ    (RS2)
          a walked node     slot               << 32 | local rank  (RS3)
          after RS5         rank (int64)

      RS1 builds the words from the 32-bit successor array; RS3 reads a
      node's word (its successor and whether it is a splitter) and writes
      its owner and local rank over it: 128 bits per node, both in one
      32-byte sector.  A walk never writes a splitter's word, so a walker
      that arrives at the next splitter reads its slot undisturbed.
  48: owner in a uint16 array (none = 0xFFFF), local rank in an int32 array
      that RS5 overwrites with the final rank.  RS3 moves 16 + 32 + 32 + 16 =
      96 bits per node.  The owner field holds slot ids 0 .. 65534; the
      paper caps the 48-bit version at 16,384 threads (64 blocks of 256), and
      so do we (ValueError above it).  The cap is what keeps every owner id
      inside the 16 bits: with many lists the slots of the heads count too,
      so r = p + heads must also stay below 65,535.

Walks (``walk=``): the two 64-bit layouts above and below access memory differently
  fused  (64 only; the default for 64) the successor lives in the packed word,
         so RS3 reads one 64-bit word and writes one per node (128 bits), and
         RS5 writes the 64-bit ranks over the words.  Kernels rs*_64.
  paper  the access pattern the paper states (section on Fig. 3 right):
         64-bit: the 32-bit succ array stays as given and a separate 64-bit
         word holds owner and local rank (0 = no owner yet, a splitter:
         SPLIT | slot << 32 with local rank 0), so RS3 does per node a 64-bit
         read (the word: has it an owner?), a 32-bit read (succ) and a 64-bit
         write (owner and local rank): 160 bits; RS5 writes the 32-bit ranks
         into the succ buffer (the paper's "output reusing succ_d"); device
         memory 12 bytes per node, as for fused.  Kernels rs*_64p.
         48-bit: the 48-bit kernels above are already the paper's pattern
         (16-bit read, 16-bit write, 32-bit write, 32-bit read: 96 bits), so
         walk="paper" with packing=48 runs them (the default for 48).

Every node belongs to exactly one sublist, the one of the nearest splitter
before it (heads are splitters), and a walk writes only nodes no other walk
reaches, so RS3 has no race whatever the schedule; the only concurrent
stores are RS2's collisions (all of which keep the same successor in the
low half), resolved by RS3 reading the owner back after the kernel
boundary.  Splitter collisions are what "random" costs: they
show up as empty sublists (stats["collisions"]).

Validation in the walk (fused 64-bit walk; the others leave it to a gather pass
after the ranking, device_input.lr_check_ranks).  Given what the range scan and
the heads found (ids in range, at least one tail; several tails: every head,
i.e. node of in-degree 0, is a splitter, and with validate=True no node has two
predecessors; one tail: the head h from the successors' sum is a splitter):

  RS3  a walk reads a node's word before it writes it.  A node some walk wrote
       already (high half a slot, not UNWALKED_HIGH) is never met in a forest of
       lists (its one predecessor is walked once), so meeting one sets
       err[WALKED_TWICE] and ends the walk; every step of a walk therefore takes a
       node no walk had taken, follows its true successor, and no walk circles.
  RS4  pointer jumping over the splitters converges only without a cycle among
       them (RuntimeError otherwise, as before).
  RS5  err[UNOWNED]: a node neither splitter nor walked; err[HEAD_RANK]: one tail
       and rank[h] != n - 1.

Why that suffices.  One tail: without a flag the chain of walks from h follows
succ faithfully, ends at the tail (RS4 converged) and counts rank[h] + 1 = n
nodes: the path from h to the tail visits n distinct nodes, i.e. all of them, so
succ is that one list.  Several tails: in-degrees are at most one, so succ is
lists plus cycles no list enters; a cycle without a splitter is never walked
(UNOWNED), one with a splitter is a cycle of splitters (RS4).  A race in which two
walks take one node at the same moment (a node of two predecessors) can hide
WALKED_TWICE, never the other checks.  So with validate=True the default method
needs no pass over the ranks: the flags come back with RS4's, in one host read.
"""
from __future__ import annotations

import numpy as np

from .random_splitter_kernels import (NONE16, NOT_ONE_LIST, UNWALKED_HIGH, rs1_init_48, rs1_init_64, rs1_init_64p,
                                      rs2_choose_48, rs2_choose_64, rs2_choose_64p, rs3_walk_48,
                                      rs3_walk_64, rs3_walk_64p, rs4_jump_in_place,
                                      rs4_rank_splitters,
                                      rs4_splitter_ranks, rs5_final_48, rs5_final_64,
                                      rs5_final_64p)
from .sublists import harmonic, sublist_stats  # noqa: F401  (re-exported: cpu.py, tests)
from .wylie import LOW, max_rounds, wylie_jump

SINGLE_BLOCK_SLOTS = 16384    # RS4 in one block up to this many slots (the paper's p)
# above: RS4 as one launch of rs4_jump_in_place while the slots are at most this many
# times the device's resident threads (it needs every walker resident to jump as fast
# as rounds would); beyond, ceil(log2 m) launches of wylie_jump
# (H100, benchmarks/rank_host_profile.py, docs/results/rank-host-profile-h100.md: at 2^26
# nodes, 1,048,577 slots = 3.9x the resident threads, 0.137 ms in place against 0.713 ms
# for 22 launches; 2^24: 0.060 against 0.248)
IN_PLACE_RESIDENT_FACTOR = 8
MAX_THREADS_48 = 16384        # the paper's limit for the 48-bit version
MAX_SLOTS_48 = NONE16         # owner ids 0 .. 65534


# --- host side -------------------------------------------------------------

def even_splitters(succ: np.ndarray, p: int) -> np.ndarray:
    """Nodes at exact equal spacing ceil(n / p) along each list, counted from its
    head (so every head is one): the paper's "perfect" splitters.  Found on the
    host from the distance of every node to its head (the reversed lists ranked
    sequentially)."""
    from .sequential import rank_sequential
    n = len(succ)
    ids = np.arange(n, dtype=np.int64)
    pred = ids.copy()
    links = succ != ids
    pred[succ[links]] = ids[links]
    pos = rank_sequential(pred)
    spacing = max(1, -(-n // max(p, 1)))
    return np.flatnonzero(pos % spacing == 0).astype(np.int32)


def check_48_threads(p: int) -> None:
    if p > MAX_THREADS_48:
        raise ValueError(f"packing=48 keeps each node's owner in 16 bits and allows at most "
                         f"{MAX_THREADS_48:,} threads (the paper's limit); got threads={p:,}. "
                         "Use packing=64 or fewer threads")


def check_48(p: int, r: int, heads: int) -> None:
    check_48_threads(p)
    if r > MAX_SLOTS_48:
        raise ValueError(f"packing=48: {r:,} splitters ({p:,} threads + {heads:,} list heads) "
                         f"do not fit the 16-bit owner field (at most {MAX_SLOTS_48:,}); "
                         "use packing=64")


WALKS = ("paper", "fused")


def default_walk(packing: int) -> str:
    return "fused" if packing == 64 else "paper"


def check_walk(walk, packing: int) -> str:
    walk = default_walk(packing) if walk is None else walk
    if walk not in WALKS:
        raise ValueError(f"walk must be one of {', '.join(WALKS)} (or None: the default), "
                         f"not {walk!r}")
    if walk == "fused" and packing != 64:
        raise ValueError("walk='fused' keeps the successor in the 64-bit word: it needs "
                         "packing=64 (the 48-bit walk is the paper's: walk='paper')")
    return walk


def checks_in_walk(packing: int, walk: str | None) -> bool:
    """Whether the walk itself validates (the fused 64-bit walk: see validation below)."""
    return packing == 64 and check_walk(walk, packing) == "fused"


class Started:
    """What start() queued before the input checks came back: RS1 (it needs no splitter)
    and, for random splitters, the arrays of r = p + 1 slots (one list, the usual case)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def start(ctx, succ_d, n: int, *, p: int, packing: int, splitters: str,
          walk: str | None = None) -> Started:
    """RS1 and the allocations that do not depend on the heads, so that the host queues
    them while the GPU runs the input scan (device_input.prepare's ``early``)."""
    walk = check_walk(walk, packing)
    dev = ctx.device
    first = len(ctx.launches)
    st = Started(first=first, walk=walk, r=None)
    # RS1 writes every node's word (owner) before any kernel reads it: no memset (on an
    # H100 zeroing the 128 MB of words at 2^24 nodes idled the GPU 0.044 ms before RS1)
    if packing == 64 and walk == "paper":
        st.word = dev.uninitialized(n, np.uint64)
        ctx.launch(rs1_init_64p, p, st.word, n, step="RS1")
    elif packing == 64:
        st.word = dev.uninitialized(n, np.uint64)
        ctx.launch(rs1_init_64, p, succ_d, st.word, n, step="RS1")
    else:
        st.owner = dev.uninitialized(n, np.uint16)
        st.lrank = dev.empty(n, np.int32)
        ctx.launch(rs1_init_48, p, st.owner, n, step="RS1")
    if splitters == "random":
        st.r = p + 1
        st.arrays = slot_arrays(dev, p + 1, p, zero_flags=not checks_in_walk(packing, walk))
    return st


def slot_specs(r: int, p_rand: int) -> list:
    """(length, dtype) of sp_node, spw, kiss, sp_rank and flags for r slots."""
    return [(r, np.int32), (2 * (r + 1), np.uint64), (4 * p_rand, np.uint32),
            (r + 1, np.int32), (n_flag_words(r), np.int32)]


def slot_arrays(dev, r: int, p_rand: int, zero_flags: bool) -> tuple:
    """sp_node, spw, kiss, sp_rank and flags (RS4's flag words, then the fused walk's
    four words, WALKED_TWICE ..: one host read for all) for r slots, in one allocation
    on a GPU (Device.uninitialized_arrays: the host's cost of five was time the GPU
    idled before RS2).  None is zeroed by a memset but the flags where zero_flags: RS2
    writes every sp_node[k] and kiss word it reads, RS2/RS3 every slot word (RS4's
    second half is written by its first round before it is read), RS4 every sp_rank;
    the fused walk's RS2 zeroes the flags itself (n_flag_words(r)), the other RS2s
    leave that to a memset."""
    specs = slot_specs(r, p_rand)
    if zero_flags:
        return tuple(dev.uninitialized_arrays(*specs[:4]) + [dev.zeros(*specs[4])])
    return tuple(dev.uninitialized_arrays(*specs))


def n_flag_words(r: int) -> int:
    """The int32 flag words of r slots: RS4's, then the fused walk's four."""
    return rs4_flag_words(r + 1) + 4


def run_random_splitter(ctx, succ_d, n: int, heads_d, n_heads: int, *, p: int, packing: int,
                        splitters: str, seed: int, walk: str | None = None, host_succ=None,
                        head: int = -1, started: Started | None = None, scan_stats=None):
    """Kernels RS1..RS5; returns (ranks: int64 device array, stats dict).  heads_d: the
    heads of the lists (int32 device array, n_heads of them), or None for a single
    list whose head is ``head``.  walk="paper" with packing=64 overwrites succ_d with
    the ranks (give it a copy).  splitters="even" finds the splitters on the host:
    host_succ() gives succ as a numpy array.  head (>= 0, one list): the fused walk
    checks that it gets rank n - 1.  started: what start() queued (else it is called
    here).  The fused walk raises RuntimeError when its checks find succ is not a
    forest of lists (see the validation in the module docstring).

    scan_stats (fused walk, random splitters): the input scan's counters, not read yet:
    RS2..RS5 are queued for one list, its head found on the device (one_list_head),
    before anyone knows that succ is one list; returns None where it is not (the
    kernels then did nothing: RS1's words stay for a second call, and the attempt's
    launches move to ctx.helpers, step "one list?")."""
    walk = check_walk(walk, packing)
    dev = ctx.device
    st = started if started is not None else start(ctx, succ_d, n, p=p, packing=packing,
                                                   splitters=splitters, walk=walk)
    given_head = -1
    one_list = 0
    if scan_stats is not None:                  # one list, guessed (see above)
        assert splitters == "random" and packing == 64 and walk == "fused"
        heads_d, n_heads, one_list = None, 1, 1
    if splitters == "random":
        p_rand, given_d, n_given = p, heads_d, n_heads
        if heads_d is None:                     # one list: its head
            if packing == 64 and walk == "fused":
                given_head = head               # a scalar of RS2: nothing to copy up
            else:
                given_d = dev.to_device(np.array([head], dtype=np.int32))
    else:
        given = even_splitters(np.asarray(host_succ(), dtype=np.int64), p)
        p_rand, given_d, n_given = 0, dev.to_device(given), len(given)
    r = p_rand + n_given
    if packing == 48:
        check_48(p, r, n_heads)
    if r >= UNWALKED_HIGH:
        raise ValueError(f"random-splitter: {r:,} splitters ({p_rand:,} random + {n_given:,} "
                         f"given) exceed the {UNWALKED_HIGH - 1:,} slot ids of the 64-bit "
                         "word; use fewer threads")
    threads = p
    # RS3: one thread per slot, as in the paper, up to the threads the device holds
    # at once; beyond, each walker takes several slots in turn (see rs3_walk_64)
    walkers = min(r, max(threads, ctx.resident_threads()))
    sp_node, spw, kiss, sp_rank, flags = (st.arrays if st.r == r and p_rand == p
                                          else slot_arrays(dev, r, p_rand,
                                                           not checks_in_walk(packing, walk)))
    st.r = None                         # used: a second call allocates its own
    if given_d is None:
        given_d = sp_node               # not read (given_head >= 0): any int32 array
    if scan_stats is None and packing == 64 and walk == "fused":
        scan_stats = st.word.view(np.int64)     # not read (one_list = 0): any int64 array
    e = rs4_flag_words(r + 1)
    seed64 = int(seed) % (1 << 64)
    first = st.first
    if packing == 64 and walk == "paper":
        word = st.word
        ctx.launch(rs2_choose_64p, threads, word, sp_node, spw, kiss, given_d, seed64, p_rand, r,
                   n, step="RS2")
        ctx.launch(rs3_walk_64p, walkers, succ_d, word, sp_node, spw, r, step="RS3")
    elif packing == 64:
        word = st.word
        ctx.launch(rs2_choose_64, threads, word, sp_node, spw, kiss, given_d, seed64, p_rand, r,
                   n, given_head, scan_stats, one_list, flags, n_flag_words(r), step="RS2")
        ctx.launch(rs3_walk_64, walkers, word, sp_node, spw, r, flags, e, step="RS3")
    else:
        owner, lrank = st.owner, st.lrank
        ctx.launch(rs2_choose_48, threads, owner, lrank, sp_node, spw, kiss, given_d, seed64,
                   p_rand, r, n, step="RS2")
        ctx.launch(rs3_walk_48, walkers, succ_d, owner, lrank, sp_node, spw, r, step="RS3")
    rs4_done, slot_words = rank_splitters(ctx, spw, sp_rank, r + 1, flags, n, deferred=True)
    if packing == 64 and walk == "paper":
        ctx.launch(rs5_final_64p, threads, word, sp_rank, succ_d, n, step="RS5")
        ranks = succ_d          # RS5 wrote the 32-bit ranks over succ (the caller widens)
    elif packing == 64:
        ctx.launch(rs5_final_64, threads, word, sp_rank, n, flags, e, head, n - 1, scan_stats,
                   one_list, step="RS5")
        ranks = word.view(np.int64)                       # RS5 wrote the ranks over the words
    else:
        ctx.launch(rs5_final_48, threads, owner, lrank, sp_rank, n, step="RS5")
        ranks = lrank           # RS5 wrote the 32-bit ranks over the local ranks (ditto)
    rs1 = ctx.launches[first]

    def sublists():
        # r slot words and r splitter nodes back, vectorized (none of n); on first use
        lengths = (slot_words.to_host()[:r] & np.uint64(LOW)).astype(np.int64)
        out = sublist_stats(lengths, n, p_rand, n_heads, splitters, p)
        out["splitter_nodes"] = sp_node.to_host()[lengths > 0].astype(np.int64)
        return out

    # made before the read below, while the GPU still runs: after it, the host's time is
    # the call's time beyond the kernels
    stats = LazyStats(sublists, threads=p, launched_threads=rs1.grid[0] * rs1.block[0],
                      packing=packing, walk=walk, slots=r, rs4_rounds=None)
    rs4_rounds, words = rs4_done()      # RS4's convergence, read once RS5 is queued
    if one_list and words[NOT_ONE_LIST]:
        attempt = ctx.launches[first + 1:]
        del ctx.launches[first + 1:]
        for rep in attempt:
            rep.extra["step"] = "one list?"
        ctx.helpers.extend(attempt)
        return None
    check_walk_words(words)
    stats["rs4_rounds"] = rs4_rounds
    return ranks, stats


class LazyStats(dict):
    """A dict whose sublist statistics are computed on first use: reading them back and
    the numpy work take longer than the kernels' margin at 2^24 nodes on an H100, so a
    caller who never looks does not pay."""

    def __init__(self, compute, **now):
        super().__init__(**now)
        self._compute = compute

    def _fill(self):
        if self._compute is not None:
            compute, self._compute = self._compute, None
            for k, v in compute().items():
                super().setdefault(k, v)

    def __missing__(self, key):
        self._fill()
        if key in dict.keys(self):
            return dict.__getitem__(self, key)
        raise KeyError(key)

    def _filled(name):
        def method(self, *args, **kwargs):
            self._fill()
            return getattr(dict, name)(self, *args, **kwargs)
        method.__name__ = name
        return method

    for _name in ("__contains__", "__iter__", "__len__", "__repr__", "__eq__", "get", "keys",
                  "items", "values", "copy", "pop", "update", "setdefault"):
        locals()[_name] = _filled(_name)
    del _name, _filled


def rs4_flag_words(m: int) -> int:
    """The int32 flag words RS4 uses for m slots (see rank_splitters)."""
    return 4 if m <= SINGLE_BLOCK_SLOTS else max_rounds(m) + 1


def rank_splitters(ctx, spw, sp_rank, m: int, flags, n: int, deferred: bool = False):
    """RS4 over the m = r + 1 slot words in spw[0..m) (spw has 2m words); flags: zeros,
    rs4_flag_words(m) for RS4, then the fused walk's words.  Returns ((the rounds run,
    the fused walk's words), the slot words as RS3 left them, for the stats); deferred:
    a function that reads and checks the flags in place of the first, so that the host
    queues the next kernel before it waits for RS4 (RuntimeError where RS4 did not
    converge).  Up to SINGLE_BLOCK_SLOTS slots: the paper's single block (in place:
    the stats get a copy).  Up to IN_PLACE_RESIDENT_FACTOR times the resident threads:
    rs4_jump_in_place, one launch (rounds reported: 1).  Beyond: wylie_jump launched
    max_rounds(m) times between two other buffers (spw stays as RS3 left it), with no
    host round trip between rounds (a finished word does not change), then one check
    of the last round's flag."""
    dev = ctx.device
    limit = max_rounds(m)
    e = rs4_flag_words(m)
    if m <= SINGLE_BLOCK_SLOTS:
        slot_words = dev.copy(spw)
        ctx.launch(rs4_rank_splitters, ctx.block_threads(m), spw, sp_rank, flags, m, limit,
                   step="RS4", one_block=True)

        def finish():
            f = flags.to_host()
            rounds = int(f[3])
            return check_rs4(rounds, f[rounds % 3]), f[e:]
    elif m <= IN_PLACE_RESIDENT_FACTOR * ctx.resident_threads():
        slot_words = dev.uninitialized(m, np.uint64)       # thread k writes before[k]
        ctx.launch(rs4_jump_in_place, m, spw, sp_rank, flags, m, n, slot_words, step="RS4")

        def finish():
            f = flags.to_host()
            return check_rs4(1, f[0]), f[e:]
    else:
        slot_words = spw
        a, b = dev.uninitialized(m, np.uint64), dev.uninitialized(m, np.uint64)   # round k
        # writes every word of its dst before round k + 1 reads it
        ctx.launch(wylie_jump, m, spw, a, flags, 1, m, step="RS4")
        for k in range(1, limit):
            ctx.launch(wylie_jump, m, a, b, flags, k + 1, m, step="RS4")
            a, b = b, a
        ctx.launch(rs4_splitter_ranks, m, a, sp_rank, m, step="RS4")

        def finish():
            f = flags.to_host()
            return check_rs4(limit, f[limit]), f[e:]
    return (finish if deferred else finish()), slot_words


def check_rs4(rounds: int, unfinished) -> int:
    if unfinished:
        raise RuntimeError("random-splitter: the list of splitters did not converge (the "
                           "input is not a forest of lists); rank it with validate=True")
    return rounds


def check_walk_words(words) -> None:
    """RuntimeError where the fused walk's checks (WALKED_TWICE, UNOWNED, HEAD_RANK) fired."""
    found = [what for what, w in zip(("a node reached twice", "a node no walk reached",
                                      "a head without rank n - 1"), words[:3]) if w]
    if found:
        raise RuntimeError(f"random-splitter: the walk found {' and '.join(found)} (the input "
                           "is not a forest of lists); rank it with validate=True")
