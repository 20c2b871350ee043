"""Happens-before by vector clocks over abstract events on sequential agents (a core's
pipe here; a core or a task queue on the chip): an event knows, for every agent, how many
of that agent's events precede it — its own agent's, and through each synchronization it
received, everything its sender knew. ``a`` happens before ``b`` when ``b``'s clock has
counted ``a``.

An event's clock is (its agent, its sequence number, what it learnt from others): the last
part changes only when the agent receives, so every event between two receives shares one
dict — a long run of events on one pipe costs a number each, not a clock each."""

from __future__ import annotations


class VectorClocks:
    def __init__(self):
        self.learnt: dict = {}  # agent -> what it knows of the others, as of its latest receive
        self.seq: dict = {}  # agent -> how many events it has had

    def tick(self, agent, received: tuple | None = None) -> tuple:
        """The clock of ``agent``'s next event, which receives ``received`` (a
        synchronization's sender's clock) if given."""
        learnt = self.learnt.get(agent)
        if learnt is None:
            learnt = self.learnt[agent] = {}
        if received is not None:
            sender, sender_seq, known = received
            merged = dict(learnt)
            for k, v in known.items():
                if v > merged.get(k, 0):
                    merged[k] = v
            if sender_seq > merged.get(sender, 0):
                merged[sender] = sender_seq
            learnt = self.learnt[agent] = merged
        seq = self.seq[agent] = self.seq.get(agent, 0) + 1
        return agent, seq, learnt


def ordered(first: tuple, later: tuple) -> bool:
    """Whether the event whose clock is ``first`` happens before the one whose clock is
    ``later``."""
    agent, seq, _ = first
    later_agent, later_seq, known = later
    if agent == later_agent:
        return seq <= later_seq
    return known.get(agent, 0) >= seq
