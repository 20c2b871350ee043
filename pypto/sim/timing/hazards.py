"""Hazards: vector clocks carried through the flags (``pypto.sim.accesses.happens``, kept by the
scheduler as instructions start) say which instructions are ordered;
two instructions on different pipes touching the same bytes (one writing) that are not
ordered are a ``SimulatorHazard`` — whatever this run's timing did with them. GM is one
space at real addresses, so two tensor parameters that are views of one storage meet there."""

from __future__ import annotations

from pypto.sim.accesses.happens import ordered
from pypto.sim.accesses.intervals import IntervalMap, Segments
from pypto.sim.timing.issue import GM, Dyn, SimulatorError


class SimulatorHazard(SimulatorError):
    """Two pipes touch the same bytes without a sync ordering them."""


# GM is paged (strided windows scatter short runs over it); on-chip spaces hold few
# segments, tile-sized, and stay one list. 64 KiB pages: a tile's window is one or two
# segments of one page, and a page of 128 B runs still inserts into a short list.
_GM_PAGE_BITS = 16


# A segment's value: (last writer, the readers since — at most one per pipe), immutable,
# so a split segment's pieces share it.
_UNTOUCHED = (None, ())


class RaceChecker:
    """Each instruction's accesses, as it starts, against the last writer and the readers
    since of every byte segment: one it is not ordered after is a hazard. Starts come in
    an order that extends happens-before (nothing starts before what it waits for), the
    order a vector-clock race detector needs."""

    def __init__(self):
        self.shadows: dict = {}

    def started(self, d: Dyn) -> None:
        """Check ``d``'s accesses; it stays a segment's writer or reader (its accesses are
        not needed again). A strided window is a run per row, and its rows mostly hold one
        value (one earlier writer's, shared by the pieces it left): each distinct value is
        checked and replaced once (``seen``), the segments walked in the same order as
        one by one, so the first hazard met is the same."""
        key, vc = d.key, d.vc
        written = (d, ())  # every segment d writes holds this one value
        seen: dict = {}  # id(value before) -> (value before, value after) for d's reads and writes
        shadows = self.shadows
        for space, lo, hi, write in d.accesses:
            if hi <= lo:
                continue
            sh = shadows.get(space)
            if sh is None:
                sh = shadows[space] = IntervalMap(_GM_PAGE_BITS if space == GM else None)
            bits, pages = sh.page_bits, sh.pages
            if bits is None:
                parts = ((0, lo, hi),)
            elif (lo >> bits) == ((hi - 1) >> bits):  # (one page: a row of a window)
                parts = ((lo >> bits, lo, hi),)
            else:
                parts = sh._parts(lo, hi)
            for p, plo, phi in parts:
                page = pages.get(p)
                if page is None:
                    page = pages[p] = Segments()
                a = page.split(plo)
                b = page.split(phi)
                values = page.values
                for k in range(a, b):
                    old = values[k]
                    got = seen.get((id(old), write))
                    if got is None:
                        writer, readers = old or _UNTOUCHED
                        if writer is not None and writer.key != key and not ordered(writer.vc, vc):
                            raise _hazard(writer, True, d, space, *_met(sh, page.bounds[k], hi, writer, True))
                        if write:
                            for u in readers:
                                if u.key != key and not ordered(u.vc, vc):
                                    raise _hazard(u, False, d, space, *_met(sh, page.bounds[k], hi, u, False))
                            new = written
                        else:
                            new = (writer, tuple(u for u in readers if u.key != key) + (d,))
                        seen[id(old), write] = got = (old, new)
                    values[k] = got[1]
        # from now on d is only ever the earlier of a pair: its pipe and sequence number say
        # all; what it learnt from others need not stay alive with it
        d.vc = (vc[0], vc[1], None)


def _met(sh: IntervalMap, lo: int, hi: int, u: Dyn, u_writes: bool) -> tuple[int, int]:
    """The bytes of [lo, hi) from ``lo`` on that ``u`` still holds (as their writer, or a
    reader since): the whole run the two meet on, not the segment it was found in — pages
    cut at real addresses, so that would say where the tensors happen to lie."""
    end = lo
    for page, k in sh.pieces(lo, hi):
        writer, readers = page.values[k] or _UNTOUCHED
        if not (writer is u if u_writes else u in readers):
            break
        end = page.bounds[k + 1]
    return lo, end


def _hazard(u: Dyn, u_writes: bool, v: Dyn, space, lo: int, hi: int) -> SimulatorHazard:
    """``v``, starting, meets ``u`` (its segment's writer, or a reader since) unordered."""
    def who(d):
        where = f" at {d.node.span}" if getattr(d.node, "span", None) is not None else ""
        return f"{d.core.name}.{d.pipe.value} `{d.name()}`{where}"

    overlapped = u.start < v.end and v.start < u.end
    hint = "the sync program misses a set_flag/wait_flag between these pipes"
    if u.launch != v.launch:
        hint = ("these are two launches that run at once, and nothing orders one launch against another: give them "
                "outputs that share no bytes, or run one after the other")
    if space == GM:
        (name, base), (other, other_base) = v.gm, u.gm
        place = f"[{lo - base}, {hi - base}) of GM tensor '{name}'"
        if other != name:  # two parameters that are views of one storage
            place += f", which are bytes [{lo - other_base}, {hi - other_base}) of GM tensor '{other}',"
            hint = (f"'{name}' and '{other}' are views of one storage: the compiler orders each tensor's own "
                    "accesses, not one tensor's against another's, so pass tensors that share no memory")
    else:
        place = f"[{lo}, {hi}) of {space[0]} {space[1].name}"
    return SimulatorHazard(
        f"{who(v)} {'writes' if any(w for s, a, b, w in v.accesses if s == space) else 'reads'} bytes "
        f"{place} that {who(u)} {'writes' if u_writes else 'reads'}, and no sync orders them "
        f"(they {'overlapped' if overlapped else 'did not overlap'} in time in this run)",
        span=getattr(v.node, "span", None),
        hint=hint)
