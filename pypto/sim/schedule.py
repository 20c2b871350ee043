"""When each issued instruction starts and ends: one pass over every core's stream of
issued records (``Issuer.stream``), in issue order, handing each record on as it starts.

The scalar unit issues in order, ``scalar_cost`` after its previous issue, and stalls while
its pipe's queue holds ``queue_depth`` issued instructions that have not started. A pipe
starts its queue in order: when the instruction is issued, the pipe is free, and — a
set_flag — everything the pipe started has landed, or — a wait_flag — its token (the
matching set_flag's landing) exists. Each time is a function of earlier ones, so the pass
only waits where a wait_flag's token comes from a stream not yet that far; it switches to
the stream that sets it. Nothing starts before what it waits for, so the order of starts
extends happens-before: the order the race check and the data effects may use.
"""

from __future__ import annotations

import array
import collections

from pypto.codegen.isa import SetFlag
from pypto.sim.happens import VectorClocks
from pypto.sim.issue import SimulatorError


class SimulatorDeadlock(SimulatorError):
    """Pipes wait for flags nobody will set."""


def schedule(streams: dict, depth: int, started) -> list:
    """Give every record of ``streams`` (core -> iterator of ``Dyn``) its issue, start and
    end times and its vector clock, calling ``started(d)`` as each starts (in an order that
    extends happens-before); a deadlock raises. Returns the flags set more often than
    waited for, with how many times."""
    head: dict = dict.fromkeys(streams)  # the record a core could not issue yet
    scalar_time = dict.fromkeys(streams, 0)
    count = dict.fromkeys(streams, 0)  # how many each core has issued
    # per pipe (``Dyn.key``): issued, not started; start times in issue order; how many issued
    pending: dict[int, collections.deque] = collections.defaultdict(collections.deque)
    starts: dict[int, array.array] = collections.defaultdict(lambda: array.array("q"))
    issued: dict[int, int] = collections.defaultdict(int)
    busy = collections.defaultdict(int)  # when each pipe can start its next instruction
    landed = collections.defaultdict(int)  # when everything each pipe started has landed
    tokens: dict[tuple, collections.deque] = collections.defaultdict(collections.deque)
    waiting: dict[tuple, int] = {}  # flag -> the pipe whose head waits for it
    clocks = VectorClocks()  # happens-before over the pipes, carried by the flags
    ready: list = []

    def start(key) -> None:
        """Start what the pipe can, in order; a set_flag may let its waiting pipe go on."""
        q = pending[key]
        while q:
            d = q[0]
            t = d.issue if d.issue > busy[key] else busy[key]
            is_set = False
            received = None
            if d.flag is not None:
                if isinstance(d.node, SetFlag):
                    is_set = True
                    t = max(t, landed[key])
                else:
                    got = tokens[d.flag]
                    if not got:
                        waiting[d.flag] = key
                        return
                    when, received = got.popleft()
                    t = max(t, when)
            q.popleft()
            d.start, d.end = t, t + d.cost + d.latency
            busy[key] = t + d.cost
            if d.end > landed[key]:
                landed[key] = d.end
            starts[key].append(t)
            d.vc = clocks.tick(key, received)
            if is_set:
                tokens[d.flag].append((d.end, d.vc))
                other = waiting.pop(d.flag, None)
                if other is not None:
                    ready.append(other)
            started(d)

    def issue(c) -> None:
        """Issue what the core can; stop where a full queue's head has not started yet."""
        stream, d = streams[c], head[c]
        t_scalar, n_issued = scalar_time[c], count[c]
        while True:
            if d is None:
                d = next(stream, None)
                if d is None:
                    break
            key = d.key
            t = t_scalar + d.scalar_cost
            n = issued[key]
            if n >= depth:
                free = starts[key]
                if len(free) <= n - depth:  # the queue is full of what has not started
                    break
                t = max(t, free[n - depth])
            d.issue = t_scalar = t
            issued[key] = n + 1
            n_issued += 1
            pending[key].append(d)
            start(key)
            d = None
        head[c], scalar_time[c], count[c] = d, t_scalar, n_issued

    progress = True
    while progress:
        progress = False
        for c in streams:
            before = count[c]
            issue(c)
            progress = progress or count[c] != before
        while ready:
            start(ready.pop())
            progress = True
    stuck = [q[0] for q in pending.values() if q]
    if stuck or any(d is not None for d in head.values()):
        wanted = {d.flag for d in stuck}
        # the cores whose scalar unit stopped before a set_flag a stuck wait needs
        stalled = [c for c, d in head.items() if d is not None and any(
            isinstance(x.node, SetFlag) and x.flag in wanted for x in (d, *streams[c]))]
        raise _deadlock(stuck, stalled, depth)
    return [(k, len(v)) for k, v in tokens.items() if v]


def _deadlock(stuck, stalled, depth: int) -> SimulatorDeadlock:
    piped = [d for d in stuck if getattr(d.node, "note", ())]
    if piped:  # a hand-written pipe's flag: say which ring, and which op is missing
        d = piped[0]
        slot, pipe = d.node.note
        if slot == "free":
            return SimulatorDeadlock(
                f"the Group deadlocks: {d.core.name} (the producer of {pipe}) waits for a free slot of {pipe} that "
                f"is never given back: the consumer popped a tile and did not free it (or waits itself, for the "
                f"producer)", hint="free every popped tile once it is used: pl.tfree_to_aiv(tile) on the cube, "
                                   "pl.tfree_to_aic(tile) on a vector core")
        return SimulatorDeadlock(
            f"the Group deadlocks: {d.core.name} (the consumer of {pipe}) waits for a ready slot of {pipe} that "
            f"never comes: it pops more tiles than its producer pushes",
            hint="pair every tpop with a tpush of the same pipe id in the peer function")
    waits = ", ".join(f"{d.core.name}.{d.pipe.value} {d.name()}" for d in stuck[:4])
    if stalled:  # a set_flag is still to be issued behind a full queue
        cores = ", ".join(c.name for c in stalled)
        return SimulatorDeadlock(
            f"the kernel deadlocks: {waits} wait(s) for flags, and the scalar unit of {cores} cannot issue "
            f"what would set them: the queue of a pipe holds {depth} instructions that have not started",
            hint="a wait_flag more than a queue's depth ahead of its set_flag: the sync program orders them badly")
    return SimulatorDeadlock(f"the kernel deadlocks: {waits} wait(s) for flags nobody sets",
                             hint="a wait_flag without its set_flag: the sync program is broken")
