"""The race check across a fast-forwarded loop's skipped trips (``steady``), with no trip
checked one by one.

Two trips d apart touch bytes in the same pattern as any two others d apart (on-chip
addresses are fixed, GM windows move by a step per trip) and are ordered the same way (a
clock d trips later is the clock moved on), so it is enough to show, for each pair of
instructions, that the nearest trips whose accesses meet are ordered — farther ones are
ordered through the pipes' program order — and that what the shadow held before the loop
is ordered before the first skipped trip (``check``). Then the shadow is moved on: the last
simulated trip's records become stand-ins with their clocks moved on, and the GM the
skipped trips touched is held by the latest of each pipe's (``move_on``). A stand-in is
never earlier than what it stands for, so a later access can only be found racing one too
often — and a hazard in a fast-forwarded run is simulated again, trip by trip.
"""

from __future__ import annotations

from pypto.sim.fastforward.drift import Unshown
from pypto.sim.accesses.happens import ordered
from pypto.sim.timing.issue import GM, Dyn


_Fail = Unshown


class LoopRaces:
    """The skipped trips of a loop: its last simulated trip's records that touch memory
    (``touches``: record, clock, accesses with their step per trip) and how the
    scheduler moves on (``schedule.Move``)."""

    def __init__(self, touches: list, move, reach: int | None = None):
        """``reach``: the skipped trips whose GM windows the shadow takes (all; or those up
        to the first out of its tensor, where the data stops: ``steady``)."""
        self.touches, self.move = touches, move
        self.trips, self.cycles = move.trips, move.cycles
        self.reach = self.trips if reach is None else reach
        self._groups = None

    def check(self, races) -> None:
        """_Fail unless the skipped trips are shown race-free (module doc)."""
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
                ranges = list(_skipped_ranges(merged[0][0], merged[0][1], s, self.reach))
            else:
                ranges = [r for lo, hi in merged for r in _skipped_ranges(lo, hi, s, self.reach)]
            order = sorted(members, key=lambda m: m[1][1])  # by sequence number on the pipe
            self._groups.append((space, key, write, ranges, order[0], order[-1]))
        return self._groups

    def gm_apart(self) -> bool:
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

    def move_on(self, races) -> None:
        """The shadow as the skipped trips would leave it, their last records as stand-ins."""
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


def moving(accesses, before) -> list:
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
