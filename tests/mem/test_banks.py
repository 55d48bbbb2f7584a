"""Shared-memory bank conflicts: the programming guide's worked cases and properties."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simgpu.mem.banks import bank_layout, bank_passes


def words(stride, ws=4, lanes=32, base=0):
    return [base + k * stride * ws for k in range(lanes)]


@pytest.mark.parametrize("stride, passes", [(1, 1), (2, 2), (3, 1), (4, 4), (8, 8), (16, 16),
                                            (32, 32), (33, 1)])
def test_sm90_int_strides(stride, passes):
    # 32 banks of 4 bytes: lanes k and k' conflict when stride*(k-k') is a multiple
    # of 32 with different words; odd strides are conflict-free (CPG, 5.x+ examples).
    assert bank_passes(words(stride), 4, "sm_90") == (passes, 1)


def test_sm90_broadcast_and_same_word_bytes():
    assert bank_passes([64] * 32, 4, "sm_90") == (1, 1)           # one word: multicast
    assert bank_passes(list(range(32)), 1, "sm_90") == (1, 1)     # 8 words, bytes of each
    assert bank_passes([0, 128, 256, 0], 4, "sm_90") == (3, 1)    # 3 words in bank 0


def test_sm90_64_bit_words():
    # A full warp of doubles moves 256 B: two passes, and that is the ideal.
    assert bank_passes(words(1, 8), 8, "sm_90") == (2, 2)
    assert bank_passes(words(1, 8, lanes=16), 8, "sm_90") == (1, 1)
    assert bank_passes(words(2, 8), 8, "sm_90") == (4, 2)         # stride 2 doubles: 4 words/bank


def test_sm13_half_warps_and_int_strides():
    # 16 banks per half-warp; the two half-warps never conflict with each other.
    assert bank_passes(words(1), 4, "sm_13") == (2, 2)
    assert bank_passes(words(2), 4, "sm_13") == (4, 2)            # lanes k, k+8 share a bank
    assert bank_passes(words(16), 4, "sm_13") == (32, 2)          # 16-way per half-warp
    assert bank_passes(words(1, lanes=16), 4, "sm_13") == (1, 1)


def test_sm13_guide_char_and_double_examples():
    # CPG 1.x: char shared[tid] conflicts (4 bytes of a word in one bank, one
    # broadcast word per step): 4 steps per half-warp.
    assert bank_passes(list(range(32)), 1, "sm_13") == (8, 2)
    # double shared[tid]: two 32-bit requests of stride 2 words: 2-way each.
    assert bank_passes(words(1, 8), 8, "sm_13") == (8, 4)
    # every thread reading one word: the broadcast serves all in one step
    assert bank_passes([40] * 32, 4, "sm_13") == (2, 2)


def test_layout():
    assert bank_layout("sm_13") == (16, 16, 2)
    assert bank_layout("sm_90") == (32, 32, 1)
    with pytest.raises(ValueError):
        bank_layout("gt200")


lane_sets = st.lists(st.integers(0, 31), min_size=1, max_size=32, unique=True).map(sorted)


@settings(max_examples=200, deadline=None)
@given(lanes=lane_sets, data=st.data(), ws=st.sampled_from([1, 2, 4, 8]),
       arch=st.sampled_from(["sm_13", "sm_90"]), shift=st.integers(0, 50))
def test_properties(lanes, data, ws, arch, shift):
    idx = data.draw(st.lists(st.integers(0, 300), min_size=len(lanes), max_size=len(lanes)))
    addresses = [i * ws for i in idx]
    passes, ideal = bank_passes(addresses, ws, arch, lanes)
    assert 1 <= ideal <= passes <= len(lanes) * max(1, ws // 4)
    # Moving the whole access by whole rows of banks (128 B) changes nothing.
    assert bank_passes([a + 128 * shift for a in addresses], ws, arch, lanes) == (passes, ideal)
    if arch == "sm_90" and ws == 4:
        # independent count: the most distinct words any bank holds
        w = np.unique(np.array(addresses) // 4)
        assert passes == np.bincount(w % 32).max()
