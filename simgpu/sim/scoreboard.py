"""A warp's scoreboard: which of its values are still on their way from memory.

A GPU does not stop a warp when it issues a load.  The load's destination
register is marked pending, the warp goes on issuing, and it stalls at the
first instruction that reads a pending register, until the data are back.
Independent loads of one thread thus overlap (memory-level parallelism), and a
dependent chain (``a[b[i]]``) still pays each load's latency in full.

The interpreter keeps that state for the timed engines, which tell it when
each access's data are back (they set ``access.ready`` before resuming the
generator); the other engines never do, so nothing is ever pending there and
their results, counts and speed are those of an interpreter without a
scoreboard.  Two kinds of pending values:

* **named variables**: ``x = a[i]`` (a load, an atomic, a call, or a cast of
  one, as the whole value) leaves ``x`` pending until its data are back.  A
  statement that reads (or overwrites) a pending variable waits for it: the
  interpreter yields a :class:`Stall` first.  Statements that touch no memory
  run as compiled closures, whole; they wait before they start.
* **temporaries** inside one statement: ``a[i] + b[i]`` issues both loads and
  waits once, where the value is needed.  Arithmetic on pending values gives a
  pending value (nvcc schedules an expression's loads before the arithmetic
  that uses them); the warp waits where the value must be there: the address
  or data of a memory instruction, a branch condition, or the end of the
  statement (an assignment of a computed value: the instruction that writes it
  issues in order).

A load is issued where the IR it runs has it: the kernel's source, or, where the
config's ``[issue]`` asks, the source unrolled and its loads scheduled ahead of their
uses as nvcc does (:mod:`simgpu.sim.compiler_passes`).  Not seen: the register
file's limit on outstanding loads.
"""
from __future__ import annotations

from ..ir import nodes as ir


class Stall:
    """Yielded by a warp that must wait for its data: it issues nothing before ``until``."""
    __slots__ = ("until",)

    def __init__(self, until: float):
        self.until = until

    def __repr__(self):
        return f"Stall(until={self.until})"


# The three functions below walk the IR; the compiled kernel (simgpu.sim.fast_paths.
# CompiledKernel) keeps their answers per node.

def touched(node) -> frozenset:
    """The variables a statement (or an expression) reads, and those that the
    statements nested in it assign, without looking into called functions (they have
    their own frame).  A statement that touches a pending variable waits for it first;
    an assignment's own target is not in its set: it only makes the old value dead."""
    names = set()
    for n in ir.walk(node):
        t = type(n)
        if t is ir.Var:
            names.add(n.name)
        elif t is ir.Assign and n is not node:
            names.add(n.name)
        elif t is ir.For:
            names.add(n.var)
    return frozenset(names)


_BARE = (ir.Load, ir.Atomic, ir.Call)


def keeps_pending(s: ir.Assign) -> bool:
    """True if ``s`` assigns the result of a load, atomic or call (or a cast of one) as
    the whole value: the variable is then pending, as the load's destination register
    is.  Any other pending value is computed by an instruction that must wait."""
    v = s.value
    if type(v) is ir.Cast:
        v = v.operand
    return isinstance(v, _BARE)


class Fence:
    """Yielded at ``syncthreads()`` by a block that runs as one group (engine
    ``timed-block``, where no warp waits for another): it waits for its stores."""
    __slots__ = ()


FENCE = Fence()


def loop_test_reads(s) -> frozenset:
    """What a loop reads at each turn: a ``while``'s condition; a ``for``'s variable,
    stop and step."""
    if type(s) is ir.While:
        return touched(s.cond)
    return touched((s.stop, s.step)) | {s.var}


class ScoreboardWaits:
    """The interpreter's side of the scoreboard (mixed into
    :class:`~simgpu.sim.interpreter.Executor`): its ``pending`` variables (name ->
    cycle their data are back), ``temp_ready`` (the latest pending value of the
    statement so far) and ``clock`` (the timed engine's environment), and the waits
    the statements ask for.  Only the timed engines set ready times, so elsewhere
    nothing is ever pending and no wait stalls."""

    pending: dict
    temp_ready: float
    clock: object

    def stall(self, until: float):
        """A :class:`Stall` until ``until`` (None if the warp's clock is past it); what
        is back by then is no longer pending."""
        self.temp_ready = 0.0
        p = self.pending
        for name in [n for n, r in p.items() if r <= until]:
            del p[name]
        if until <= self.clock.now:
            return None
        return Stall(until)

    # The methods below take the lanes ``idx`` that wait (unused here): the trace
    # recorder (simgpu.sim.trace_record) runs many blocks as one group and needs them.

    def wait_all(self, idx):
        """At the end: wait for every pending value."""
        stall = self.stall(max(self.pending.values()))
        if stall is not None:
            yield stall

    def wait_for(self, names, idx):
        """Before a statement (or a loop's test) runs: wait for the pending variables
        it reads (or, inside a compound statement, assigns)."""
        until = 0.0
        for name, r in self.pending.items():
            if r > until and name in names:
                until = r
        if until:
            stall = self.stall(until)
            if stall is not None:
                yield stall

    def wait_value(self, idx):
        """The value computed so far must be there (an address, data, a branch)."""
        stall = self.stall(self.temp_ready)
        if stall is not None:
            yield stall

    def forget(self, name, idx):
        """``name`` is assigned again by lanes ``idx``: its old value is dead."""
        self.pending.pop(name, None)

    def make_pending(self, name, ready, idx):
        self.pending[name] = ready

    @staticmethod
    def later(a, b):
        """The later of two ready times (the trace recorder: the union of two sets)."""
        return a if a > b else b
