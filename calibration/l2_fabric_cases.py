"""The cases of the L2 fabric probe (calibration/l2_fabric.py), which the GPU's side
(l2_fabric.py) and the model's (l2_fabric_sim.py) both run: each a module of its own
that imports this one, so neither side imports the other."""
from __future__ import annotations

MIB = 8                          # each buffer (default)
REPEATS = 5
SLOTS = 8                        # blocks per SM (256 threads each: a full SM)
NONE, READ, WRITE, COPY = 0, 1, 2, 3
NAMES = {READ: "reads", WRITE: "writes", COPY: "copies"}

#: (name, what half g does, what the other half does, how the L2 is prepared, in order:
#: (who, mode, buffer)): g reads X, writes Y, copies X to Y; the other half reads Z or
#: writes Y.  "g" / "o" / "all": g's SMs, the other half's, both.
CASES = [
    ("g reads X, near", (READ, "X"), None, [("g", READ, "X")]),
    ("g reads X, far", (READ, "X"), None, [("o", READ, "X")]),
    ("g writes Y", (WRITE, "Y"), None, [("all", WRITE, "Y")]),
    ("g reads X far; the other half reads Z near", (READ, "X"), (READ, "Z"),
     [("o", READ, "X"), ("o", READ, "Z")]),
    ("g reads X far; the other half writes Y", (READ, "X"), (WRITE, "Y"),
     [("o", READ, "X"), ("all", WRITE, "Y")]),
    ("g reads X near; the other half writes Y", (READ, "X"), (WRITE, "Y"),
     [("g", READ, "X"), ("all", WRITE, "Y")]),
    ("g copies X (far) to Y", (COPY, "X>Y"), None, [("o", READ, "X"), ("all", WRITE, "Y")]),
]


def launches(mine, other, prep, g: int):
    """A case's launches when half g does its first part: the preparing ones, then the
    measured one, each as (mode, source, destination) buffer names for half 0 and half 1
    (the GPU's child and the model's side both run these)."""
    def part(what):
        if what is None:
            return (NONE, "Z", "Z")
        mode, names = what
        src, _, dst = names.partition(">")
        return (mode, src, dst or src)
    preps = [[(mode if who == "all" or (who == "g") == (h == g) else NONE, b, b) for h in (0, 1)]
             for who, mode, b in prep]
    measured = [part(mine), part(other)]
    return preps, measured if g == 0 else measured[::-1]
