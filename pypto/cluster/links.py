"""The simulated clock of each rank's cross-rank acts, on the interconnect of the SoC table
(``Interconnect``): every ordered pair of ranks has a link, on which transfers take turns;
a notify rides the same link (so it lands after the data its rank put there before it); a wait ends
at the first poll after the notifies that satisfy it have landed. Cycles of the core clock.

The ranks run one at a time (``baton``), not in simulated time, so a wait's end is found
from the landing times of the notifies its cell received, replayed in time order.
"""

from __future__ import annotations

import bisect
import math

import attrs

from pypto.backend.soc import Interconnect
from pypto.ir.types import NotifyOp, WaitCmp


@attrs.define
class RankClock:
    now: int = 0  # the rank's simulated cycle
    comm: int = 0  # cycles its notifies and transfers took
    waited: int = 0  # cycles its waits blocked it
    sent: int = 0  # bytes it moved to or from peers
    notifies: int = 0
    waits: int = 0


@attrs.frozen
class Event:
    """One cross-rank act on the timeline (``links.events``), cycles of the core clock."""

    kind: str  # "notify", "remote_store", "remote_load", "wait"
    rank: int
    peer: int  # the other rank (a wait: the rank whose notify ended it; -1 if none did)
    start: int
    end: int  # a transfer: its bytes crossed; a notify: it landed; a wait: it ended
    nbytes: int = 0
    ident: int = -1  # a notify's number, which the wait it ended names (``cause``)
    cause: int = -1


@attrs.frozen
class Landing:
    """A notify as the peer's cell receives it."""

    time: int
    op: NotifyOp
    value: int
    source: int  # the notifying rank
    ident: int = -1  # its Event's


class Links:
    def __init__(self, nranks: int, figures: Interconnect):
        self.figures = figures
        self.clocks = [RankClock() for _ in range(nranks)]
        # (from, to) -> the link's busy intervals, sorted. The ranks run one at a time, not in
        # simulated time, so a transfer takes the first gap that fits it at or after its issue
        # rather than queueing behind whatever a rank that ran earlier booked later
        self.busy: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self.landings: dict[tuple, list[Landing]] = {}  # a signal cell -> what reached it
        self.events: list[Event] = []  # every act, in the order the ranks ran them

    def _send(self, src: int, dst: int, issuer: int, issue: int, nbytes: int) -> tuple[int, int]:
        """(start, end of streaming) of ``nbytes`` from ``src`` to ``dst``, issued by ``issuer``."""
        clock = self.clocks[issuer]
        length = math.ceil(nbytes / self.figures.link_bytes_per_cycle)
        start = clock.now + issue
        booked = self.busy.setdefault((src, dst), [])
        for b0, b1 in booked:
            if b0 >= start + length:
                break
            if b1 > start:
                start = b1
        bisect.insort(booked, (start, start + length))
        return start, start + length

    def notify(self, rank: int, peer: int, cell: tuple, value: int, op: NotifyOp) -> None:
        """Issued, it rides the link behind what the rank sent there before; the rank goes on."""
        clock = self.clocks[rank]
        _, end = self._send(rank, peer, rank, self.figures.notify_issue, 4)
        ident = len(self.events)
        self.events.append(Event("notify", rank, peer, clock.now, end + self.figures.latency, 4, ident))
        self.landings.setdefault(cell, []).append(Landing(end + self.figures.latency, op, value, rank, ident))
        clock.comm += self.figures.notify_issue
        clock.now += self.figures.notify_issue
        clock.notifies += 1

    def transfer(self, rank: int, peer: int, nbytes: int, load: bool) -> None:
        """A remote store is issued and streams on its link while the rank goes on (its DMA
        queue is not bounded here; what the rank sends after it on that link queues behind
        it); a remote load asks the peer and waits for the bytes to arrive."""
        clock = self.clocks[rank]
        src, dst = (peer, rank) if load else (rank, peer)
        start, end = self._send(src, dst, rank, self.figures.rma_issue, nbytes)
        done = end + 2 * self.figures.latency if load else clock.now + self.figures.rma_issue
        self.events.append(Event("remote_load" if load else "remote_store", rank, peer, clock.now,
                                 done if load else end + self.figures.latency, nbytes))
        clock.comm += done - clock.now
        clock.now = done
        clock.sent += nbytes

    def waited(self, rank: int, cell: tuple, expected: int, cmp: WaitCmp, initial: int, update, satisfied) -> None:
        """The rank's wait on its ``cell`` ends: at the first poll after the landing that made
        it hold (replayed from ``initial`` in time order), at the earliest one poll from now."""
        clock = self.clocks[rank]
        value, when, cause = initial, None, None
        if satisfied(value, expected, cmp):
            when = 0
        for landing in sorted(self.landings.get(cell, ()), key=lambda x: (x.time, x.source)):
            if when is not None:
                break
            value = update(value, landing.value, landing.op)
            if satisfied(value, expected, cmp):
                when, cause = landing.time, landing
        end = max(clock.now, when if when is not None else clock.now) + self.figures.poll
        self.events.append(Event("wait", rank, cause.source if cause else -1, clock.now, end,
                                 cause=cause.ident if cause else -1))
        clock.waited += end - clock.now
        clock.now = end
        clock.waits += 1
