"""The step-1 lesson of the paper (section 4): shortcutting and marking fused
into one striding kernel is wrong; they need two kernels with the grid-wide
barrier between them.  The simulator's random schedules (warps engine) find an
execution where the fused kernel leaves a tree that is not a star without its
mark, and step 3 then closes a cycle in the parent array; the two-kernel
version keeps every invariant under every seed tried.  See the README."""
import numpy as np
import pytest

import simgpu
from algorithms import generators as gen
from algorithms.connected_components import kernels as K
from algorithms.connected_components.sequential import label_sequential
from algorithms.connected_components.shiloach_vishkin import (prepare_edges, round_bound,
                                                              shiloach_vishkin)

RANDOM_WARPS = dict(engine="warps", schedule="random")
STEP1 = ("sv1b_mark", "sv1_shortcut_mark_fused")


def increasing_paths(warps=12, length=9):
    """32 paths, one per lane: path c visits `length` of the `warps` warps in
    increasing order (vertex 32 w + c), the warps drawn with KISS.  Round 1
    hooks each path into a chain (every vertex onto its predecessor), so
    round 2 starts with deep trees whose vertices live in different warps."""
    edges = []
    for c in range(32):
        w = np.sort(gen.random_permutation(warps, seed=c)[:length])
        v = 32 * w + c
        edges += zip(v[:-1].tolist(), v[1:].tolist())
    return 32 * warps, np.array(edges, dtype=np.int64)


def roots(D):
    """Root of every vertex, or None if following parents runs into a cycle."""
    cur = D
    for _ in range(len(D).bit_length() + 1):     # pointer jumping: log n steps suffice
        cur = cur[cur]
    return cur if np.array_equal(D[cur], cur) else None


class Invariants:
    """Observer for shiloach_vishkin: after every kernel D must be a forest;
    after step 1 the root of every tree that is not a star must carry the
    round's mark (step 3 relies on it)."""

    def __init__(self):
        self.violations = []

    def __call__(self, kernel, s, D, Q):
        d = D.to_host()
        r = roots(d)
        if r is None:
            self.violations.append((s, kernel, "parent cycle"))
        elif kernel in STEP1:
            q = Q.to_host()
            not_star = np.unique(r[d[d] != d])
            unmarked = not_star[q[not_star] != s]
            if len(unmarked):
                self.violations.append((s, kernel, "non-star tree unmarked", unmarked.tolist()))


def run(n, edges, seed, fused):
    inv = Invariants()
    labels, rounds, *_ = shiloach_vishkin(n, edges, simgpu.get_device("sim:gtx260"),
                                          launch_options=RANDOM_WARPS, seed=seed,
                                          fused_step1=fused, observer=inv)
    return labels, rounds, inv.violations


def test_fused_step1_is_caught_by_a_random_schedule():
    n, edges = increasing_paths()
    for seed in range(60):
        _, _, violations = run(n, edges, seed, fused=True)
        if violations:
            break
    else:
        pytest.fail("no random schedule in 60 seeds exposed the fused step 1")
    # Seed 13 is the first to do it (about one seed in eight does): in round 2
    # a tree that is not a star leaves the fused kernel without its mark ...
    s, kernel, what, _ = violations[0]
    assert (kernel, what) == ("sv1_shortcut_mark_fused", "non-star tree unmarked")
    # ... and step 3 of the same round takes it for a stagnant star and hooks
    # its root onto one of its own vertices: D is no longer a forest.
    assert (s, "sv3_hook_stagnant", "parent cycle") in violations[1:]


def test_two_kernel_step1_is_right_under_every_seed_tried():
    n, edges = increasing_paths()
    expected = label_sequential(n, edges)
    for seed in range(30):
        labels, rounds, violations = run(n, edges, seed, fused=False)
        assert violations == [], seed
        assert np.array_equal(labels, expected), seed
        assert rounds <= round_bound(n)


def test_a_lost_mark_on_a_deeper_tree_never_terminates():
    """Why a missing mark matters: a crafted round-2 state of the kind the
    fused kernel leaves behind, a tree 0 <- 1 <- 2 <- 3 of depth 3 whose root
    has no mark of round 2 (its mark went to vertex 1).  Step 3 hooks the
    root onto D[3] = 2, closing the odd cycle 0 -> 2 -> 1 -> 0, which lockstep
    pointer jumping keeps for ever: every later round marks again, w stays 1."""
    dev = simgpu.get_device("sim:gtx260")
    n, edges = 4, [(0, 3), (1, 3), (2, 3)]
    E = dev.to_device(prepare_edges(n, edges))
    m = E.size
    D = dev.to_device(np.array([0, 0, 1, 2], dtype=np.int32))
    Q = dev.to_device(np.array([1, 2, 1, 1], dtype=np.int32))
    w = dev.zeros(1, np.int32)
    s = 2
    dev.launch(K.sv2_hook, 1, 32, E, D, Q, s, m)
    dev.launch(K.sv3_hook_stagnant, 1, 32, E, D, Q, s, m)
    assert D.to_host().tolist() == [2, 0, 1, 2] and roots(D.to_host()) is None
    for s in range(2, 3 * round_bound(n)):
        if s > 2:
            dev.launch(K.sv1a_shortcut, 1, 32, D, n)
            dev.launch(K.sv1b_mark, 1, 32, D, Q, s, n)
            dev.launch(K.sv2_hook, 1, 32, E, D, Q, s, m)
            dev.launch(K.sv3_hook_stagnant, 1, 32, E, D, Q, s, m)
        dev.launch(K.sv4_shortcut, 1, 32, D, n)
        w.copy_from(np.zeros(1, np.int32))
        dev.launch(K.sv5_any_change, 1, 32, Q, w, s, n)
        assert w.to_host()[0] == 1 and roots(D.to_host()) is None
    # From the start, with the two-kernel step 1, the same graph is one component.
    labels, rounds, *_ = shiloach_vishkin(n, edges, dev)
    assert labels.tolist() == [0, 0, 0, 0] and rounds <= round_bound(n)
