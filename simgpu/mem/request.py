"""The request record that flows through the memory pipeline's units.

One :class:`Request` per warp instruction (its transactions, after the
coalescer): the units read it and write their results into it, so the
pipeline (:class:`~simgpu.mem.memory_system.MemorySystem`) is the order in
which the units see it.  Slots, not a dataclass: the timed engines make one
per warp memory instruction, on their hot path.
"""
from __future__ import annotations

__all__ = ["Request"]


class Request:
    """One warp instruction's global-memory transactions on their way through the units.

    ``addresses`` and ``sizes`` are the coalescer's transactions (lists of ints);
    ``issued`` is the SM cycle the instruction was issued; the units set
    ``accepted`` (when the pipeline took the request: later than ``issued`` when a
    bounded queue was full), ``translated`` (when its addresses are translated) and
    ``done`` (when its data are back, or for a store when it is acknowledged).
    """

    __slots__ = ("kind", "sm", "issued", "addresses", "sizes", "use_l1",
                 "accepted", "translated", "done", "lanes")

    def __init__(self, kind: str, sm: int, issued: float, addresses: list, sizes: list,
                 use_l1: bool = True):
        self.kind = kind
        self.sm = sm
        self.issued = issued
        self.addresses = addresses
        self.sizes = sizes
        self.use_l1 = use_l1
        self.accepted = issued
        self.translated = issued
        self.done = issued
        self.lanes = None         # atomics: {word address: lanes on it} (the atomic unit's)

    @property
    def write(self) -> bool:
        return self.kind == "store"

    def __repr__(self) -> str:
        return (f"Request({self.kind}, sm={self.sm}, issued={self.issued:g}, "
                f"{len(self.addresses)} transactions, done={self.done:g})")
