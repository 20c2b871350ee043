"""A launch whose kernel holds cross-rank instructions (the ``pld`` ops: SLOADCTX, TNOTIFY,
TWAIT, TGET, TPUT, TCOLL), simulated on a rank of a cluster.

Its data cannot wait for the end of the launch, as a chip launch's does (timeline first,
then ``apply``): a wait holds until a peer's notify has landed, and what the rank reads after
it is what the peer wrote. So such a launch computes its data as it goes (``OnRank``, the
``Live`` way, on the real tensors and the peers' windows, never applied again), and each
cross-rank record is performed when it starts: the cluster's port (``pypto.cluster``) times
the act on the interconnect from the rank's simulated cycle — the launch's base plus the
record's start — and the cycles it took (a wait: until its notify landed and was polled; a
remote load: until the bytes came back) are the record's on its pipe, so everything the scalar
unit issues after it starts later. The port may block the rank's thread on a wait until a
peer has notified (``baton``).

The signal unit's instructions (TNOTIFY, TWAIT, TCOLL) are fenced: each starts after every
pipe of its core has landed what was issued before it — a notify after a TPUT then lands at
the peer behind the data it announces, as the signal protocol needs (``schedule``).
"""

from __future__ import annotations

import weakref

from pypto.codegen.comm import CROSS_RANK
from pypto.codegen.isa import Instr, Kernel, TensorArg, walk
from pypto.sim.data import effects as Effects
from pypto.sim.ops.comm import PORT
from pypto.sim.timing.issue import ConcreteBuf
from pypto.sim.ops.semantics import IMPLS, OutOfRange
from pypto.errors import ExecutionError

_CROSSES: dict[int, tuple] = {}  # id(kernel) -> (weak reference, whether it crosses)


def crosses(kernel: Kernel) -> bool:
    """Whether any of the kernel's programs holds a cross-rank instruction."""
    entry = _CROSSES.get(id(kernel))
    if entry is None or entry[0]() is not kernel:
        ident = id(kernel)
        found = any(isinstance(x, Instr) and x.mnemonic in CROSS_RANK for program in kernel.programs
                    for x in walk(program.body))
        entry = _CROSSES[ident] = (weakref.ref(kernel, lambda _: _CROSSES.pop(ident, None)), found)
    return entry[1]


def is_cross(d) -> bool:
    return isinstance(d.node, Instr) and d.node.mnemonic in CROSS_RANK


class OnRank(Effects.Live):
    """``Live`` on the tensors themselves (a rank's windows are shared with its peers, and
    what a peer reads must be what this rank's pipes wrote by then): the timeline it gives
    has no effects left to apply."""

    def __init__(self, sizes, tensors: list):
        self.memories = Effects.Memories(sizes)
        self.tensors = [dict(t) for t in tensors]
        self.prints = []
        self.port = PORT.get()  # (None on one chip: the op's impl then says it needs a cluster)

    def timed(self, d) -> int:
        """Perform the cross-rank record ``d`` as it starts (``d.start``): its cycles."""
        def act():
            self._cross(d)

        if self.port is None:
            act()  # raises: no cluster
            return 1
        return max(1, self.port.timed(d.start, act))

    def _cross(self, d) -> None:
        ins = d.node
        kwargs = {}
        for name, v in d.args.items():
            if name == "__dst__":
                continue
            if isinstance(v, ConcreteBuf):
                kwargs[name] = self.memories.read(d.core.name, v)
            elif isinstance(v, TensorArg):
                kwargs[name] = self.tensors[d.launch][v.name]
            else:
                kwargs[name] = v
        try:
            out = IMPLS[ins.op](**kwargs, span=ins.span)
        except OutOfRange as exc:
            raise ExecutionError(f"pld.{ins.op}: {exc}", span=ins.span, hint=getattr(exc, "hint", None)) from None
        if ins.mnemonic == "SLOADCTX":
            d.value = out
        elif "__dst__" in d.args:
            self.memories.write(d.core.name, d.args["__dst__"], self.memories.owned(out))

    def perform(self, d) -> None:
        if not d.timed:  # (a cross-rank record was performed as it started: ``timed``)
            super().perform(d)
