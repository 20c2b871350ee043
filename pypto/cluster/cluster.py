"""A run of many ranks: each rank's program runs in its own thread with its ``RankPort``
installed (the ``CommPort`` the pld ops reach), one rank at a time (``baton``), the clock
of its cross-rank acts kept by ``links``. A run every rank of which waits for a signal no
rank will send ends with a ``DeadlockError`` naming each blocked rank, its cell, the value
it expects and the value it holds, and the wait's source line.
"""

from __future__ import annotations

import attrs
import torch

from pypto.backend import SoC
from pypto.cluster.baton import Baton, Deadlock
from pypto.cluster.links import Links
from pypto.cluster.races import Access, Clocks
from pypto.cluster.windows import WindowTag, peer_view, tag_of
from pypto.errors import ExecutionError, Span
from pypto.ir.types import NotifyOp, WaitCmp
from pypto.sim.ops import numerics as num
from pypto.sim.ops.comm import PORT, satisfied, signal_update
from pypto.sim.ops.semantics import OutOfRange


class DeadlockError(ExecutionError):
    """Every rank left waits on a signal cell that no rank will notify."""


@attrs.frozen
class Blocked:
    """What a waiting rank waits for."""

    rank: int
    window: str
    index: tuple
    expected: int
    cmp: WaitCmp
    signal: torch.Tensor = attrs.field(eq=False, repr=False)
    span: Span | None = None

    def line(self) -> str:
        where = f"{self.span.file}:{self.span.line}" if self.span is not None else "?"
        sign = "==" if self.cmp is WaitCmp.Eq else ">="
        holds = int(self.signal[self.index])
        return (f"rank {self.rank} waits at {where} for {self.window}{list(self.index)} {sign} {self.expected}; "
                f"it holds {holds}")


def _cell(tag: WindowTag, rank: int, index: tuple) -> tuple:
    """A signal cell, the same on whichever rank's side it is named: (buffer, rank, byte)."""
    flat = 0
    for i, extent in zip(index, tag.shape):
        flat = flat * extent + i
    return id(tag.buffer), rank, flat * tag.dtype.nbytes


class RankPort:
    def __init__(self, cluster: Cluster, rank: int):
        self.cluster = cluster
        self.rank = rank
        self.nranks = cluster.nranks
        # on the simulated chip: the rank's cycle its dispatch began at, that of the launch
        # being simulated, and the latest cycle an act of the dispatch reached
        self.dispatch_base = self.launch_base = self.high = 0

    def step(self, seq) -> None:
        """The rank begins its dispatch ``seq`` of the host's order (after any earlier one
        another rank can run)."""
        self.cluster.baton.step(self.rank, seq)

    def dispatching(self) -> None:
        """A dispatch of the rank begins, at its clock."""
        self.dispatch_base = self.high = self.cluster.links.clocks[self.rank].now

    def dispatched(self, cycles: int) -> None:
        """It ended, ``cycles`` after it began (its chip's makespan; 0 on ``ref``)."""
        clock = self.cluster.links.clocks[self.rank]
        clock.now = max(clock.now, self.high, self.dispatch_base + cycles)

    def launching(self, cycle: int) -> None:
        """A launch holding cross-rank instructions starts ``cycle`` into the dispatch."""
        self.launch_base = self.dispatch_base + cycle

    def timed(self, cycle: int, act) -> int:
        """``act()`` — a cross-rank act — performed ``cycle`` into the launch: the cycles it
        held the instruction (its issue; a wait until it was satisfied; a load until its bytes
        came back)."""
        clock = self.cluster.links.clocks[self.rank]
        at = clock.now = self.launch_base + cycle
        act()
        self.high = max(self.high, clock.now)
        return clock.now - at

    def _tag(self, tensor, what: str) -> WindowTag:
        tag = tag_of(tensor)
        if tag is None:
            raise OutOfRange(f"pld.{what}: its operand is not a window on this rank",
                             hint="pass pld.window(...) from the host orchestrator, not a tensor a kernel made")
        return tag

    def peer_view(self, tensor, peer: int, span) -> torch.Tensor:
        self._tag(tensor, "remote access")
        return peer_view(tensor, peer)

    def access(self, tensor, owner: int, box: tuple, write: bool, what: str, span) -> None:
        tag = tag_of(tensor)
        if tag is None:
            return
        access = Access(self.rank, self.cluster.clocks.epoch(self.rank), (tag.shape, tag.dtype.nbytes), box, write,
                        what, span)
        self.cluster.clocks.access((id(tag.buffer), owner), tag.buffer.name, access)

    def notify(self, target, peer: int, index: tuple, value: int, op: NotifyOp, span) -> None:
        tag = self._tag(target, "system.notify")
        cell = peer_view(target, peer)
        cell[index] = signal_update(int(cell[index]), value, op)
        key = _cell(tag, peer, index)
        self.cluster.links.notify(self.rank, peer, key, value, op)
        self.cluster.carried.setdefault(key, []).append(self.cluster.clocks.released(self.rank))

    def wait(self, signal, index: tuple, expected: int, cmp: WaitCmp, span) -> None:
        tag = self._tag(signal, "system.wait")
        blocked = Blocked(self.rank, tag.buffer.name, index, expected, cmp, signal, span)
        self.cluster.baton.block(self.rank, lambda: satisfied(int(signal[index]), expected, cmp), blocked)
        key = _cell(tag, self.rank, index)
        self.cluster.links.waited(self.rank, key, expected, cmp, 0, signal_update, satisfied)
        self.cluster.clocks.acquired(self.rank, self.cluster.carried.get(key, ()))

    def moved(self, peer: int, nbytes: int, load: bool, span) -> None:
        self.cluster.links.transfer(self.rank, peer, nbytes, load)


class Cluster:
    def __init__(self, nranks: int, soc: SoC, links: Links | None = None):
        self.nranks = nranks
        self.soc = soc
        self.baton = Baton(nranks)
        self.links = links if links is not None else Links(nranks, soc.links)
        self.clocks = Clocks(nranks)
        self.carried: dict[tuple, list] = {}  # a signal cell -> the clocks its notifies carried

    def run(self, bodies: list, first: list | None = None) -> list:
        """Each rank's ``bodies[r]()`` with its port installed; their results. ``first``: each
        rank's first step in the host's order (``RankPort.step``)."""
        if first is not None:
            self.baton.next = list(first)
        def setup(rank: int) -> None:
            PORT.set(RankPort(self, rank))

        with num.one_thread():  # (each rank's own would restore the setting out of order)
            try:
                return self.baton.run(bodies, setup)
            except Deadlock as dl:
                raise deadlock_error(dl.blocked) from None


def deadlock_error(blocked: dict) -> DeadlockError:
    waits = list(blocked.values())
    lines = "\n".join("  " + b.line() for b in waits)
    return DeadlockError(f"deadlock: every rank still running waits for a signal no rank will send\n{lines}",
                         span=waits[0].span,
                         hint="each wait needs notifies that reach its cell: check the notifying rank's peer= and "
                              "offsets= against the cell, and the expected value against what they add up to")
