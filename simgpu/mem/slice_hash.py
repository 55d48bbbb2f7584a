"""Which partition (L2 slice and its channel) a hashed address map gives an address.

A GPU does not deal its memory out round robin: NVIDIA hashes addresses over L2 slices
with an unpublished function, so that power-of-two strides (a matrix column, the same
field of many records) spread over all slices instead of camping on a few.  On the
lent H100 a transpose's column of 2,048 stores 8 KiB apart spreads over the 80 slices
(busiest slice 1.03x the mean, docs/results/heldout-stalls-2026-11-27.md); round
robin puts it on 5.

What the probes pin down is kept exactly; what they leave open is pseudo-random, but
dealt so that every partition gets the same share of any aligned stretch (a stream
stays as even as round robin keeps it), and each place in a partition holds one
address (the DRAM banks see no false locality):

* a ``unit`` (``partition_hash_unit_bytes``, 4 KiB on the H100) spreads its interleave
  pieces over a group of as many partitions as it has pieces (after
  ``partition_skip_bit``), all in one L2 half: an aligned 4 KiB is 8 slices
  (calibration/l2_slice_map.py), and the 4 KiB chunks share a home half
  (calibration/l2_chunks.py); a hash of the unit number permutes its pieces over the
  group;
* the half is the parity of the address bits in ``partition_half_mask`` (bits 12, 13,
  16, 17, 19 on the H100), flipped or not per ``partition_hash_page_bytes`` page (the
  probe's fit has a free constant per 2 MiB page) by a hash of the page number.  The
  mask holds the unit's own bit, so two neighbouring units are one in each half;
* a block of ``halves x groups`` units gives each group of each half one unit: the
  block's pairs (or units, with one half) take the groups in turn, from a place a hash
  of the block number chooses.  In a partition, block ``b``'s pieces lie at place
  ``b`` (one block a round, as round robin's rounds of ``partitions`` pieces).

A partition number is ``(group * pieces + place) * halves + half``, so that its
parity is its half (:meth:`simgpu.mem.caches.L2.home`).  Every function takes an int
or a numpy integer array.
"""
from __future__ import annotations

from typing import Any

__all__ = ["mix", "parity", "SliceHash"]

_MASK32 = 0xFFFFFFFF


def mix(x: Any) -> Any:
    """A 32-bit integer hash of ``x`` (its low 32 bits xor its next 32): two rounds of
    xor-shift and multiply by 0x45D9F3B, whose products stay below 2^59, so numpy's
    int64 arrays compute what Python's ints do."""
    x = (x ^ (x >> 32)) & _MASK32
    x = (((x >> 16) ^ x) * 0x45D9F3B) & _MASK32
    x = (((x >> 16) ^ x) * 0x45D9F3B) & _MASK32
    return (x >> 16) ^ x


def parity(x: Any) -> Any:
    """The parity (0 or 1) of the set bits of ``x`` (below 2^64)."""
    for shift in (32, 16, 8, 4, 2, 1):
        x = x ^ (x >> shift)
    return x & 1


class SliceHash:
    """Partitions and places of addresses, for a ``[memory]`` with
    ``partition_hash_unit_bytes`` set."""

    def __init__(self, memory):
        skip = memory.partition_skip_bit
        self.interleave = memory.partition_interleave_bytes
        self.unit = memory.partition_hash_unit_bytes
        self.skip = -1 if skip is None else skip - (self.interleave.bit_length() - 1)
        self.shares = 1 if skip is None else 2     # a unit's pieces in one partition
        self.pieces = self.unit // self.interleave // self.shares
        self.mask = memory.partition_half_mask or 0
        self.halves = 2 if self.mask else 1
        self.page = memory.partition_hash_page_bytes or 0
        self.groups = memory.partitions // self.halves // self.pieces
        self.block = self.halves * self.groups     # units a block deals out

    def locate(self, address: Any) -> tuple[Any, Any]:
        """(partition, place within it in bytes) of byte addresses."""
        chunk = address // self.interleave
        share = 0
        if self.skip >= 0:                 # as AddressMap.locate: the skipped bit orders
            s = self.skip                  # the two pieces that share a partition
            share = (chunk >> s) & 1
            chunk = (chunk & ((1 << s) - 1)) | ((chunk >> (s + 1)) << s)
        u = address // self.unit
        block = u // self.block
        place = (chunk % self.pieces) ^ (mix(u) % self.pieces)
        group = ((u % self.block) // self.halves + mix(block)) % self.groups
        part = group * self.pieces + place
        if self.halves == 2:
            half = parity(address & self.mask)
            if self.page:
                half = half ^ (mix(address // self.page) & 1)
            part = part * 2 + half
        local = (block * self.shares + share) * self.interleave + address % self.interleave
        return part, local
