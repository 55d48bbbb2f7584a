"""Exercises on coalescing, with answers: one warp, one access pattern, one GPU.

For each: how many memory transactions does the warp's load become, and how
many bytes do they move?  Work it out from the rules (docs/coalescing.md),
then check:

    python -m simgpu_apps.lessons.exercises              # the questions
    python -m simgpu_apps.lessons.exercises --answers    # answers, reasons, pictures
    simgpu coalesce --stride 1 --offset 1 --arch sm_13 --steps   # any one, step by step

The answers below were worked by hand from the CUDA C Programming Guide's rules;
tests/test_teaching.py holds every one against the simulator's coalescer.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from simgpu.mem.coalesce import transactions
from simgpu.mem.explain import access_pattern, explain


@dataclass(frozen=True)
class Exercise:
    question: str
    stride: int
    offset: int
    word_size: int
    arch: str
    transactions: int          # the answer: transactions of the warp's instruction
    bytes: int                 # and the bytes they move
    why: str

    def addresses(self):
        return access_pattern(self.stride, self.offset, self.word_size)

    def simulated(self) -> tuple[int, int]:
        t = transactions(self.addresses(), self.word_size, self.arch)
        return len(t), sum(s for _, s in t)


EXERCISES = (
    Exercise("CC 1.3 (sm_13): 32 lanes read consecutive 4-byte words from an aligned start.",
             1, 0, 4, "sm_13", 2, 128,
             "each half-warp reads 64 B inside one 128 B segment; only its lower or upper "
             "half is used, so it shrinks to one 64 B transaction; two half-warps"),
    Exercise("CC 1.3: the same, one word further (offset 1).",
             1, 1, 4, "sm_13", 3, 224,
             "half-warp 0 uses both halves of segment 0 (128 B); half-warp 1 uses the upper "
             "half of segment 0 (64 B) and one word of segment 1 (shrunk to 32 B)"),
    Exercise("CC 1.1 (sm_11): offset 1, as before.",
             1, 1, 4, "sm_11", 32, 1024,
             "CC 1.1 coalesces a half-warp only if lane k reads word k of an aligned segment; "
             "misaligned, every lane gets its own 32 B transaction"),
    Exercise("Hopper (sm_90): offset 1.",
             1, 1, 4, "sm_90", 5, 160,
             "128 B starting 4 B into a sector touch 5 sectors of 32 B"),
    Exercise("CC 1.3: stride 16 (lanes 64 B apart).",
             16, 0, 4, "sm_13", 16, 2048,
             "a half-warp covers 1024 B: 8 segments with two lanes each, at bytes 0 and 64, "
             "so no segment shrinks: 8 x 128 B per half-warp"),
    Exercise("CC 1.3: stride 32 (lanes 128 B apart).",
             32, 0, 4, "sm_13", 32, 1024,
             "one lane per 128 B segment, which shrinks to 32 B: 16 x 32 B per half-warp; "
             "less than stride 16 moves"),
    Exercise("CC 1.3: consecutive 8-byte words (i64).",
             1, 0, 8, "sm_13", 2, 256,
             "a half-warp reads 128 B, exactly one segment: one 128 B transaction each"),
    Exercise("CC 1.3: consecutive 2-byte words (i16).",
             1, 0, 2, "sm_13", 2, 64,
             "2-byte words use 64 B segments; each half-warp's 32 B fill one half: 32 B each"),
    Exercise("Hopper: every lane reads the same word (stride 0).",
             0, 0, 4, "sm_90", 1, 32,
             "one sector holds the word; the lanes share it (a broadcast)"),
)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m simgpu_apps.lessons.exercises", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--answers", action="store_true", help="print the answers and pictures")
    args = p.parse_args(argv)
    print("For each: how many transactions does the warp's load become, and how many bytes "
          "do they move?\n")
    for n, e in enumerate(EXERCISES, 1):
        print(f"{n}. {e.question}  ({e.word_size}-byte words, stride {e.stride}, "
              f"offset {e.offset}, {e.arch})")
        if args.answers:
            print(f"   answer: {e.transactions} transaction{'s' * (e.transactions != 1)}, "
                  f"{e.bytes} bytes: {e.why}")
            print("\n".join("   " + line for line in
                            explain(e.addresses(), e.word_size, e.arch).splitlines()))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
