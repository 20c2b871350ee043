"""Steady loops, fast-forwarded. When every trip of a loop is the same to the machine
(``affine``) and the scheduler's state at the top of a trip is the state at the top of the
trip before, moved on in time (every time later by the same cycles, every pipe's count and
clock on by its issues per trip), then each later trip is the last one moved on again: the
scheduler is a function of its state and the trip, and it commutes with moving time on.
So the rest of the loop, but its last trip, is produced from the last trip simulated —
its trace items repeated later, its data effects with their offsets moved, its pipes'
busy cycles counted again — and the scheduler's state moved on by as many trips.

The race check needs no trip by trip either (``loop_races``); the skipped trips' effects
are one effect of the timeline, batched where the trips share no data (``trips``).
Anything not shown and the loop is simulated trip by trip, as it is unless a state repeats.
"""

from __future__ import annotations

from pypto.sim.fastforward import trips as Trips
from pypto.sim.fastforward import drift
from pypto.sim.reports import progress
from pypto.sim.fastforward.drift import Unshown
from pypto.sim.fastforward.loop_races import LoopRaces, moving
from pypto.sim.timing.schedule import Move

# trips compared before a loop is left to run trip by trip: a loop not steady by then rarely becomes so
_ATTEMPTS = 96


class _Trip:
    """One trip as simulated, from the drained state at its top: what started in it (each
    record with its clock, accesses and arguments, which the race check and the effects
    drop), and where its trace items and effects begin."""

    __slots__ = ("loop", "k", "state", "pending", "seen", "items", "steps")

    def __init__(self, mark, state, record):
        self.loop, self.k, self.state, self.pending = mark.loop, mark.k, state, mark.pending
        self.seen: list = []
        self.items, self.steps = record.items.stored(), len(record.steps.steps)


class Steady:
    """Watches the trips of uniform loops as they start (``watch``) and, at each trip's top
    (``boundary``), fast-forwards the loop when its state repeats."""

    def __init__(self, record):
        self.record = record
        self.trip: _Trip | None = None
        self.done: list[_Trip] = []  # the last two complete trips of the loop under way
        self.skipped = 0  # trips fast-forwarded, all loops

    def watch(self, d) -> None:
        if self.trip is not None:
            self.trip.seen.append((d, d.vc, d.accesses, d.args))

    def boundary(self, mark, state):
        """The scheduler at the top of trip ``mark.k`` (``state`` None: not drained)."""
        trip, rec, period = self.trip, self.record, mark.period
        if trip is not None and trip.loop is mark.loop and trip.k == mark.k - 1 and state is not None:
            self.done = self.done[1 - 2 * period:] + [trip]  # the last two periods' trips
        else:
            self.done = []
        self.trip = None if state is None else _Trip(mark, state, rec)
        if mark.k > _ATTEMPTS * period:
            mark.give_up, self.trip, self.done = True, None, []
            return None
        if len(self.done) < 2 * period or self.done[0].k != mark.k - 2 * period:
            return None
        prev, base = _joined(self.done[:period]), _joined(self.done[period:])
        # whole periods, and the last trip simulated: its scalars are the loop's last
        trips = (mark.trips - mark.k - 1) // period
        if trips < 1 or base.pending != mark.pending:
            return None
        jump = _Jump.make(prev, base, state, trips, rec)
        if jump is None:
            return None
        jump.emit(rec)
        mark.skip = trips * period
        self.skipped += trips * period
        self.trip, self.done = None, []
        return jump.move


def _joined(trips: list) -> _Trip:
    """Consecutive trips as one: a period of a loop whose trips are alike every few."""
    if len(trips) == 1:
        return trips[0]
    first = trips[0]
    out = _Trip.__new__(_Trip)
    out.loop, out.k, out.state, out.pending, out.items, out.steps = (first.loop, first.k, first.state, first.pending,
                                                                      first.items, first.steps)
    out.seen = [x for t in trips for x in t.seen]
    return out


def _instances(seen) -> list:
    """Each record of a period as (its node, how many of that node came before it)."""
    counts: dict = {}
    out = []
    for d, *_ in seen:
        k = counts[id(d.node)] = counts.get(id(d.node), -1) + 1
        out.append((id(d.node), k))
    return out


_Fail = Unshown  # the loop cannot be shown steady here: simulate it trip by trip


class _Jump:
    """How the rest of a loop follows from its last trip simulated (``base``, ``prev`` the
    one before it): cycles per trip, issues per pipe, the flags whose tokens move, and each
    record's step per trip."""

    @classmethod
    def make(cls, prev: _Trip, base: _Trip, now, trips: int, rec):
        self = cls()
        try:
            self.move = _moved_on(base.state, now, trips)
            self.cycles, self.per, self.trips = self.move.cycles, self.move.per, trips
            self._records(prev, base, rec)
            self.reach = _reach(self.prints, rec.steps.tensors, trips)
            self.races = LoopRaces(self.touches, self.move, self.reach)
            if rec.races is not None:
                self.races.check(rec.races)
        except _Fail:
            return None
        self.base = base
        return self

    def _records(self, prev: _Trip, base: _Trip, rec) -> None:
        # a record is its node's how-manieth in the period (a period of several trips issues each node once a trip)
        before = dict(zip(_instances(prev.seen), prev.seen))
        if len(before) != len(prev.seen) or len(base.seen) != len(prev.seen):
            raise _Fail
        steps, footprint = rec.steps.steps, rec.footprint
        self.steps, self.prints, self.touches = [], [], []
        n_prev, n_base = prev.steps, base.steps
        order_prev = {}
        for key, (d, *_) in zip(_instances(prev.seen), prev.seen):
            if d.flag is None:
                order_prev[key] = n_prev
                n_prev += 1
        for key, (d, vc, accesses, args) in zip(_instances(base.seen), base.seen):
            p = before.get(key)
            if p is None or p[0].cost != d.cost or p[0].latency != d.latency:
                raise _Fail
            if d.flag is not None:
                continue
            template, launch, varying = steps[n_base]
            t0, l0, v0 = steps[order_prev[key]]
            if t0 is not template or l0 != launch:
                raise _Fail
            self.steps.append((template, launch, varying, drift.delta(varying, v0)))
            n_base += 1
            if d.gm is not None:
                key = footprint.key(d, args)
                if key is not None:
                    self.prints.append((key, drift.delta(key, footprint.key(p[0], p[3]))))
            if accesses:
                self.touches.append((d, vc, moving(accesses, p[2])))

    # ------------------------------------------------------------------ the race check

    # ------------------------------------------------------------------ the rest of the loop

    def emit(self, rec) -> None:
        """Add the skipped trips' trace items, effects, footprint, totals and race-check
        view to the record."""
        trips, cycles, base = self.trips, self.cycles, self.base
        rec.items.repeat(base.items, base.items + len(base.seen), trips, cycles)
        if self.steps:
            entries = [(template, varying, delta) for template, _, varying, delta in self.steps]
            launch = self.steps[0][1]
            settles = Trips.settles(entries, rec.steps)
            batched = Trips.plan(entries, rec.steps, trips, rec.steps.tensors[launch]) \
                if settles is None and self.races.gm_apart() else None
            ops, chunk = batched or (None, (1, 1))
            where = progress.loop_at(getattr(base.loop, "span", None))
            rec.steps.steps.append((Trips.perform, launch, Trips.Trips(entries, trips, ops, chunk, settles, where)))
        seen = rec.footprint.seen
        for key, delta in self.prints:  # (a window that stays is the base trip's, seen)
            if delta is not None:
                seen.update(dict.fromkeys(drift.moved(key, delta, j) for j in range(1, self.reach + 1)))
        end = 0
        for d, *_ in base.seen:
            rec.busy[(d.core.name, d.pipe.value)] += trips * d.cost
            if d.flag is None:
                rec.instructions += trips
            else:
                rec.syncs += trips
            end = max(end, d.end)
        rec.cycles = max(rec.cycles, end + trips * cycles)
        if rec.races is not None:
            self.races.move_on(rec.races)

def _reach(prints, tensors, trips: int) -> int:
    """How many of the skipped trips have GM windows to keep (footprint, race check): all,
    or those up to the first whose window leaves its tensor — the data stops there, where
    that trip's load or store is refused."""
    reach = trips
    for (launch, param, _, offsets, extents), delta in prints:
        if delta is None or delta[4] is not None:
            continue
        reach = min(reach, _inside(offsets, extents, delta[3] or (None,) * len(offsets),
                                   tensors[launch][param].shape, trips) + 1)
    return reach


def _inside(offsets, extents, steps, shape, trips: int) -> int:
    """How many of the trips 1 .. ``trips`` keep the window ``offsets`` (moving by
    ``steps`` a trip), ``extents`` inside ``shape``: the first ones, as it moves affinely."""
    count = trips
    for o, e, d, dim in zip(offsets, extents, steps, shape):
        d = d or 0
        if o + d < 0 or o + d + e > dim:
            return 0
        if d > 0:
            count = min(count, (dim - e - o) // d)
        elif d < 0:
            count = min(count, o // -d)
    return count


def _moved_on(s1, s2, trips: int) -> Move:
    """How ``s2`` is ``s1`` moved on by one trip, to move on by ``trips``; else _Fail."""
    cycles = s2.scalar - s1.scalar
    if cycles <= 0 or s1.pipes.keys() != s2.pipes.keys():
        raise _Fail
    per = {}
    for key, (n1, tail1, busy1, landed1) in s1.pipes.items():
        n2, tail2, busy2, landed2 = s2.pipes[key]
        per[key] = k = n2 - n1
        if not k:
            if (tail1, busy1, landed1) != (tail2, busy2, landed2):
                raise _Fail
        elif len(tail1) != len(tail2) or busy2 != busy1 + cycles or landed2 != landed1 + cycles \
                or any(b != a + cycles for a, b in zip(tail1, tail2)):
            raise _Fail
    if s1.clocks.keys() != s2.clocks.keys():
        raise _Fail
    learning = set()
    for agent, (seq1, learnt1) in s1.clocks.items():
        seq2, learnt2 = s2.clocks[agent]
        if seq2 != seq1 + per.get(agent, 0):
            raise _Fail
        if learnt2 is learnt1:  # no receive on this pipe in a trip: none in any
            continue
        if learnt2 != {b: v + per.get(b, 0) for b, v in learnt1.items()}:
            raise _Fail
        learning.add(agent)
    move = Move(trips, cycles, per, (), frozenset(learning))
    if s1.tokens.keys() != s2.tokens.keys():
        raise _Fail
    flags = []
    for f, q1 in s1.tokens.items():
        q2 = s2.tokens[f]
        if q1 == q2:  # set before the loop, waited for after it
            continue
        if len(q1) != len(q2) or any(e2 != e1 + cycles or v2 != move.later(v1, 1)
                                     for (e1, v1), (e2, v2) in zip(q1, q2)):
            raise _Fail
        flags.append(f)
    move.flags = flags
    return move
