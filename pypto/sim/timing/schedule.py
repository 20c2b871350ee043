"""When each issued instruction starts and ends: one pass over every core's stream of
issued records (``Issuer.stream``), in issue order, handing each record on as it starts.

The scalar unit issues in order, ``scalar_cost`` after its previous issue, and stalls while
its pipe's queue holds ``queue_depth`` issued instructions that have not started, and while
a record on its own pipe (an element it reads or writes, a wait_flag for it) is not done. A pipe
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

from pypto.backend import Pipe
from pypto.codegen.isa import SetFlag
from pypto.sim.accesses.happens import VectorClocks
from pypto.sim.timing.issue import PIPE_NUMBER, Boundary, SimulatorError


SCALAR = Pipe.SCALAR  # the scalar unit's own pipe: it issues nothing else until a record there is done


class SimulatorDeadlock(SimulatorError):
    """Pipes wait for flags nobody will set."""


def schedule(streams: dict, depth: int, started, boundary=None, timed=None) -> list:
    """Give every record of ``streams`` (core -> iterator of ``Dyn``) its issue, start and
    end times and its vector clock, calling ``started(d)`` as each starts (in an order that
    extends happens-before); a deadlock raises. Returns the flags set more often than
    waited for, with how many times.

    At a ``Boundary`` in a stream (the top of a loop's trip), everything issued before it
    is started first if it can be, and ``boundary(mark, state)`` is told the state then
    (``State``; None if something issued still waits for a flag set later); it may answer
    (trips, cycles, issues per pipe) to move the state on by that many trips, each that
    many cycles later with those issues (``steady``).

    ``timed(d)``: the cycles of a record whose cost is known only when it starts (``Dyn.timed``:
    a cross-rank act, which the cluster times and performs then)."""
    head: dict = dict.fromkeys(streams)  # the record a core could not issue yet
    blocked: dict = dict.fromkeys(streams)  # a record on the scalar unit's own pipe, not started yet
    scalar_time = dict.fromkeys(streams, 0)
    count = dict.fromkeys(streams, 0)  # how many each core has issued
    # per pipe (``Dyn.key``): issued, not started; start times in issue order; how many issued
    pending: dict[int, collections.deque] = collections.defaultdict(collections.deque)
    starts: dict[int, array.array] = collections.defaultdict(lambda: array.array("q"))
    # the issue number of each pipe's first start kept: a jump keeps only the last ``depth``
    # (what a later issue's queue stall reads), whatever the trips it skips
    based: dict[int, int] = collections.defaultdict(int)
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
            if d.timed and timed is not None:
                d.start = t
                d.cost = timed(d)
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

    def drained() -> bool:
        """Start everything issued that can start; whether that is all of it."""
        moved = True
        while moved:
            moved = False
            for key, q in pending.items():
                if q:
                    before = len(q)
                    start(key)
                    moved = moved or len(q) != before
            while ready:
                start(ready.pop())
                moved = True
        return not any(pending.values())

    def state(c) -> State:
        pipes = {key: (issued[key], tuple(starts[key][-depth:]), busy[key], landed[key]) for key in issued}
        return State(scalar_time[c], pipes, {f: tuple(q) for f, q in tokens.items() if q},
                     {a: (s, clocks.learnt[a]) for a, s in clocks.seq.items()})

    def move(c, jump: Move) -> None:
        """On by ``jump.trips`` trips (``Move``)."""
        trips, per = jump.trips, jump.per
        shift = trips * jump.cycles
        scalar_time[c] += shift
        count[c] += trips * sum(per.values())
        for key, k in per.items():
            if not k:
                continue
            issued[key] += trips * k
            free = starts[key]
            tail = free[-depth:]
            based[key] += len(free) + trips * k - len(tail)
            starts[key] = array.array("q", (t + shift for t in tail))
            busy[key] += shift
            landed[key] += shift
        for f in jump.flags:
            tokens[f] = collections.deque((end + shift, jump.later(vc, trips)) for end, vc in tokens[f])
        for a in clocks.seq:
            if per.get(a):  # a pipe the loop does not use has no events in it
                clocks.seq[a] += trips * per[a]
                if a in jump.learning:
                    clocks.learnt[a] = {b: v + trips * per.get(b, 0) for b, v in clocks.learnt[a].items()}

    def issue(c) -> None:
        """Issue what the core can; stop where a full queue's head has not started yet."""
        stream, d = streams[c], head[c]
        t_scalar, n_issued = scalar_time[c], count[c]
        own = blocked[c]
        if own is not None:  # the scalar unit waits for its own work (or its wait_flag) to be done
            if pending[own.key] and pending[own.key][-1] is own:
                return
            blocked[c] = None
            t_scalar = max(t_scalar, own.end)
        while True:
            if d is None:
                d = next(stream, None)
                if d is None:
                    break
                if type(d) is Boundary:
                    scalar_time[c], count[c] = t_scalar, n_issued
                    jump = boundary(d, state(c) if drained() else None)
                    if jump is not None:
                        move(c, jump)
                    t_scalar, n_issued = scalar_time[c], count[c]
                    d = None
                    continue
            key = d.key
            t = t_scalar + d.scalar_cost
            if d.fenced:  # after all its core issued before it has started and landed
                first = key - PIPE_NUMBER[d.pipe]
                mine = range(first, first + len(PIPE_NUMBER))
                if any(pending[k] for k in mine):
                    break
                t = max(t, *(landed[k] for k in mine))
            n = issued[key]
            if n >= depth:
                free, first = starts[key], based[key]
                if first + len(free) <= n - depth:  # the queue is full of what has not started
                    break
                t = max(t, free[n - depth - first])
            d.issue = t_scalar = t
            issued[key] = n + 1
            n_issued += 1
            pending[key].append(d)
            start(key)
            if d.pipe is SCALAR:
                if pending[key] and pending[key][-1] is d:
                    blocked[c] = d
                    d = None
                    break
                t_scalar = max(t_scalar, d.end)
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


class State:
    """The scheduler at a trip's top, everything issued before started: when the scalar
    unit issued last; per pipe, how many it issued, the start times a later issue's queue
    stall reads (the last ``depth``), when it is free and when all it started has landed;
    the flag tokens waiting (landing time, clock); each pipe's clock (sequence number,
    what it learnt)."""

    __slots__ = ("scalar", "pipes", "tokens", "clocks")

    def __init__(self, scalar: int, pipes: dict, tokens: dict, clocks: dict):
        self.scalar, self.pipes, self.tokens, self.clocks = scalar, pipes, tokens, clocks


class Move:
    """How far the scheduler moves on at a loop's trip top (``steady``): ``trips`` trips of
    ``cycles`` each, ``per[pipe]`` issues on each pipe per trip; the tokens of ``flags``
    move with them (the others' were set before the loop and wait for after it), and the
    pipes in ``learning`` receive in each trip (what the others learnt stays)."""

    __slots__ = ("trips", "cycles", "per", "flags", "learning")

    def __init__(self, trips: int, cycles: int, per: dict, flags=(), learning=frozenset()):
        self.trips, self.cycles, self.per, self.flags, self.learning = trips, cycles, per, flags, learning

    def later(self, vc: tuple, trips: int) -> tuple:
        """The clock of the event ``trips`` trips after the one whose clock is ``vc``."""
        agent, seq, learnt = vc
        per = self.per
        if agent in self.learning:
            learnt = {b: v + trips * per.get(b, 0) for b, v in learnt.items()}
        return agent, seq + trips * per.get(agent, 0), learnt


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
