"""Steady loops, fast-forwarded. When every trip of a loop is the same to the machine
(``affine``) and the scheduler's state at the top of a trip is the state at the top of the
trip before, moved on in time (every time later by the same cycles, every pipe's count and
clock on by its issues per trip), then each later trip is the last one moved on again: the
scheduler is a function of its state and the trip, and it commutes with moving time on.
So the rest of the loop, but its last trip, is produced from the last trip simulated —
its trace items repeated later, its data effects with their offsets moved, its pipes'
busy cycles counted again — and the scheduler's state moved on by as many trips.

The race check needs no trip by trip either. Two trips d apart touch bytes in the same
pattern as any two others d apart (on-chip addresses are fixed, GM offsets move by a step
per trip), and are ordered the same way (a clock d trips later is the clock moved on), so
it is enough to show, for each pair of instructions, that the nearest trips whose accesses
meet are ordered — farther ones are ordered through the pipes' program order — and that
what the shadow held before the loop is ordered before the first skipped trip. Then the
shadow's view of the loop is moved on: the last simulated trip's records become stand-ins
with their clocks moved on, GM the skipped trips wrote or read held by them. Anything not
shown this way and the loop is simulated trip by trip, as it is unless a state repeats.
"""

from __future__ import annotations

from pypto.sim import trips as Trips
from pypto.sim.happens import ordered
from pypto.sim.issue import GM, Dyn
from pypto.sim.schedule import Move

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


class _Fail(Exception):
    """The loop cannot be shown steady here: simulate it trip by trip."""


class _Jump:
    """How the rest of a loop follows from its last trip simulated (``base``, ``prev`` the
    one before it): cycles per trip, issues per pipe, the flags whose tokens move, and each
    record's step per trip."""

    @classmethod
    def make(cls, prev: _Trip, base: _Trip, now, trips: int, rec):
        self = cls()
        self._groups = None
        try:
            self.move = _moved_on(base.state, now, trips)
            self.cycles, self.per, self.trips = self.move.cycles, self.move.per, trips
            self._records(prev, base, rec)
            if rec.races is not None:
                self._race_free(rec.races)
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
            self.steps.append((template, launch, varying, _delta(varying, v0)))
            n_base += 1
            if d.gm is not None:
                key = footprint.key(d, args)
                if key is not None:
                    self.prints.append((key, _delta(key, footprint.key(p[0], p[3]))))
            if accesses:
                self.touches.append((d, vc, _moving(accesses, p[2])))

    # ------------------------------------------------------------------ the race check

    def _race_free(self, races) -> None:
        trips = self.trips
        base_ids = {id(d) for d, _, _ in self.touches}
        for x, xvc, xs in self.touches:
            for y, yvc, ys in self.touches:
                if x.key == y.key:  # one pipe: program order
                    continue
                for ax in xs:
                    for ay in ys:
                        if ax[0] != ay[0] or not (ax[3] or ay[3]):
                            continue
                        d = _meet(ax, ay, trips)
                        if d is None:
                            continue
                        if ax[0] == GM and (ax[4] or ay[4]):
                            raise _Fail  # moving GM two instructions share across trips: the shadow could not follow
                        if not ordered(xvc, self.move.later(yvc, d)):
                            raise _Fail  # a race, or one this cannot rule out: the trip by trip check says which
        # what the shadow holds, against the first skipped trip (later ones follow it on their pipe)
        checks = [(space, x.key, write, ((lo, hi),), xvc) for x, xvc, xs in self.touches
                  for space, lo, hi, write, s in xs if not s]
        checks += [(space, key, write, ranges, first[1]) for space, key, write, ranges, first, _ in self._onward()]
        for space, key, write, ranges, vc in checks:
            shadow = races.shadows.get(space)
            if shadow is None:
                continue
            first = self.move.later(vc, 1)
            for a, b in ranges:
                for value in shadow.values(a, b):
                    if value is None:
                        continue
                    writer, readers = value
                    for u in (writer, *readers):
                        if u is None or id(u) in base_ids or u.key == key:
                            continue
                        if (write or u is writer) and not ordered(u.vc, first):
                            raise _Fail

    def _onward(self) -> list:
        """The GM the skipped trips move on to, per pipe, step and direction: (space, pipe,
        writes, byte ranges, the earliest and the latest of its records (with clocks) in a
        trip). One pipe's windows that tile their step make one range for all the trips."""
        if self._groups is not None:
            return self._groups
        groups: dict = {}
        for d, vc, xs in self.touches:
            for space, lo, hi, write, s in xs:
                if s:
                    g = groups.setdefault((space, d.key, s, write), ([], []))
                    g[0].append((lo, hi))
                    g[1].append((d, vc))
        self._groups = []
        for (space, key, s, write), (spans, members) in groups.items():
            merged: list = []
            for lo, hi in sorted(spans):
                if merged and lo <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], hi)
                else:
                    merged.append([lo, hi])
            if len(merged) == 1 and merged[0][1] - merged[0][0] >= abs(s):
                ranges = list(_skipped_ranges(merged[0][0], merged[0][1], s, self.trips))
            else:
                ranges = [r for lo, hi in merged for r in _skipped_ranges(lo, hi, s, self.trips)]
            order = sorted(members, key=lambda m: m[1][1])  # by sequence number on the pipe
            self._groups.append((space, key, write, ranges, order[0], order[-1]))
        return self._groups

    # ------------------------------------------------------------------ the rest of the loop

    def emit(self, rec) -> None:
        """Add the skipped trips' trace items, effects, footprint, totals and race-check
        view to the record."""
        trips, cycles, base = self.trips, self.cycles, self.base
        rec.items.repeat(base.items, base.items + len(base.seen), trips, cycles)
        if self.steps:
            entries = [(template, varying, delta) for template, _, varying, delta in self.steps]
            launch = self.steps[0][1]
            batched = Trips.plan(entries, rec.steps, trips, rec.steps.tensors[launch]) if self._gm_apart() else None
            ops, chunk = batched or (None, 1)
            columns = None if ops else [_series(varying, delta, trips) for _, varying, delta in entries]
            rec.steps.steps.append((Trips.perform, launch, Trips.Trips(entries, trips, columns, ops, chunk)))
        seen = rec.footprint.seen
        for key, delta in self.prints:
            seen.update(dict.fromkeys(_series(key, delta, trips)))
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
            self._move_shadow(rec.races)

    def _gm_apart(self) -> bool:
        """Whether no trip's GM store meets another trip's load or store: then the trips'
        effects may run in any order of trips (``trips``)."""
        for x, _, xs in self.touches:
            for y, _, ys in self.touches:
                for ax in xs:
                    for ay in ys:
                        if ax[0] != GM or ay[0] != GM or not (ax[3] or ay[3]):
                            continue
                        try:
                            if _meet(ax, ay, self.trips) is not None:
                                return False
                        except _Fail:
                            return False
        return True

    def _move_shadow(self, races) -> None:
        shift = self.trips * self.cycles
        stand = {}
        for d, vc, _ in self.touches:
            agent, seq, _ = self.move.later(vc, self.trips)
            s = Dyn(d.node, d.core, d.pipe, None, d.scalar_cost, d.cost, d.latency, launch=d.launch, key=d.key)
            s.start, s.end, s.gm, s.vc = d.start + shift, d.end + shift, d.gm, (agent, seq, None)
            stand[id(d)] = s

        def moved(value):
            writer, readers = value
            return stand.get(id(writer), writer), tuple(stand.get(id(u), u) for u in readers)

        for d, _, xs in self.touches:
            for space, lo, hi, _, _ in xs:
                races.shadows[space].rewrite(lo, hi, moved)
        for space, _, write, ranges, _, (last, _) in self._onward():  # GM the skipped trips moved on to
            me = stand[id(last)]  # a pipe's latest: after the others on it, so none is missed
            shadow = races.shadows[space]
            for a, b in ranges:
                if write:
                    shadow.assign(a, b, (me, ()))
                    continue
                for page, k in shadow.pieces(a, b):
                    writer, readers = page.values[k] or (None, ())
                    page.values[k] = (writer, tuple(u for u in readers if u.key != me.key) + (me,))


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


def _moving(accesses, before) -> list:
    """Each access as (space, lo, hi, write, step per trip): on-chip bytes stay, GM windows
    move by one step (the record's, the same for all its runs)."""
    if len(accesses) != len(before):
        raise _Fail
    out, step = [], None
    for (space, lo, hi, write), (space0, lo0, hi0, write0) in zip(accesses, before):
        if space != space0 or write != write0 or hi - lo != hi0 - lo0:
            raise _Fail
        s = lo - lo0
        if space != GM:
            if s:
                raise _Fail
        elif step is None:
            step = s
        elif s != step:
            raise _Fail
        out.append((space, lo, hi, write, s))
    return out


def _meet(ax, ay, trips: int) -> int | None:
    """The fewest trips d >= 1 after which ``ay``'s access meets ``ax``'s of d trips
    before, within the loop (None: never); _Fail where they move apart unevenly."""
    _, lo_x, hi_x, _, sx = ax
    _, lo_y, hi_y, _, sy = ay
    if sx != sy:  # the one might cross the other somewhere: not followed
        if _hull(lo_x, hi_x, sx, trips) & _hull(lo_y, hi_y, sy, trips):
            raise _Fail
        return None
    if sx == 0:
        return 1 if lo_x < hi_y and lo_y < hi_x else None
    if sx > 0:
        first, last = (lo_x - hi_y) // sx + 1, (hi_x - lo_y - 1) // sx
    else:
        t = -sx
        first, last = (lo_y - hi_x) // t + 1, (hi_y - lo_x - 1) // t
    first = max(first, 1)
    return first if first <= min(last, trips) else None


class _Hull:
    __slots__ = ("lo", "hi")

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __and__(self, other) -> bool:
        return self.lo < other.hi and other.lo < self.hi


def _hull(lo: int, hi: int, s: int, trips: int) -> _Hull:
    return _Hull(min(lo, lo + trips * s), max(hi, hi + trips * s))


def _skipped_ranges(lo: int, hi: int, s: int, trips: int):
    """The bytes [lo, hi) moved on by 1..trips steps of ``s``, as few ranges as they make."""
    if s == 0:
        yield lo, hi
    elif abs(s) <= hi - lo:
        yield (lo + s, hi + trips * s) if s > 0 else (lo + trips * s, hi + s)
    else:
        for j in range(1, trips + 1):
            yield lo + j * s, hi + j * s


# ----------------------------------------------------------------------------- steps of values


def _delta(now, before):
    """What moves ``before`` to ``now`` each trip: per int its difference, None where
    nothing moves; _Fail for anything else that differs."""
    if now is before:
        return None
    if type(now) is int and type(before) is int:
        return now - before or None
    if type(now) is tuple and type(before) is tuple and len(now) == len(before):
        parts = tuple(_delta(a, b) for a, b in zip(now, before))
        return None if all(p is None for p in parts) else parts
    if type(now) is type(before) and type(now) is not float and _equal(now, before):
        return None
    if type(now) is float and type(before) is float and now.hex() == before.hex():
        return None
    raise _Fail


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # an object with no equality (a tensor): not shown the same
        return False


def _series(value, delta, trips: int) -> list:
    """``value`` moved on by 1, 2, .. ``trips`` steps of ``delta``."""
    if delta is None:
        return [value] * trips
    if type(delta) is int:
        return list(range(value + delta, value + delta * (trips + 1), delta))
    return list(zip(*(_series(v, d, trips) for v, d in zip(value, delta))))


def _add(value, delta, trips: int):
    if delta is None:
        return value
    if type(delta) is int:
        return value + trips * delta
    return tuple(_add(v, d, trips) for v, d in zip(value, delta))
