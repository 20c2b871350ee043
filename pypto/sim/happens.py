"""Happens-before by vector clocks over abstract events on sequential agents (a core's
pipe here; a core or a task queue on the chip): an event knows, for every agent, how many
of that agent's events precede it — its own agent's, and through each synchronization it
received, everything its sender knew. ``a`` happens before ``b`` when ``b``'s clock has
counted ``a``."""

from __future__ import annotations


class VectorClocks:
    def __init__(self):
        self.now: dict = {}  # agent -> its clock after its latest event

    def tick(self, agent, received: dict | None = None) -> tuple[int, dict]:
        """(sequence number, clock) of ``agent``'s next event, which receives the clock of
        ``received`` (a synchronization's sender) if given."""
        mine = self.now.get(agent)
        vc = dict(mine) if mine is not None else {}
        if received:
            for k, v in received.items():
                if v > vc.get(k, 0):
                    vc[k] = v
        seq = vc.get(agent, 0) + 1
        vc[agent] = seq
        self.now[agent] = vc
        return seq, vc


def ordered(first_agent, first_seq: int, later_clock: dict) -> bool:
    """Whether the ``first_seq``-th event of ``first_agent`` happens before the event whose
    clock is ``later_clock``."""
    return later_clock.get(first_agent, 0) >= first_seq
