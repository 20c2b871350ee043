"""The hazard checker (``pypto.sim.timing.hazards.RaceChecker``) against a byte-by-byte oracle: on
random instructions with strided accesses (rows of a window, across pages) and random
happens-before, it reports the oracle's first hazard — the same pair, the same way round,
from the same byte — and none where the oracle finds none."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.sim.timing import hazards
from pypto.sim.accesses.happens import ordered
from pypto.sim.timing.issue import GM


class Found(Exception):
    pass


@st.composite
def programs(draw):
    """Instructions in an order that extends happens-before: each on one of three agents,
    knowing of the others' instructions up to a point that never moves back."""
    seq, known, out = {}, {}, []
    for key in range(draw(st.integers(1, 14))):
        agent = draw(st.integers(0, 2))
        seq[agent] = seq.get(agent, 0) + 1
        mine = known.setdefault(agent, {})
        for other in range(3):
            if other != agent and seq.get(other):
                mine[other] = max(mine.get(other, 0), draw(st.integers(0, seq[other])))
        accesses = []
        for _ in range(draw(st.integers(1, 3))):
            space = draw(st.sampled_from([GM, ("core", "ub")]))
            lo, rows, width = draw(st.integers(0, 90)), draw(st.integers(1, 5)), draw(st.integers(1, 12))
            stride, write = draw(st.integers(width, 40)), draw(st.booleans())
            accesses += [(space, lo + r * stride, lo + r * stride + width, write) for r in range(rows)]
        out.append(SimpleNamespace(key=key, vc=(agent, seq[agent], dict(mine)), accesses=accesses))
    return out


def oracle(program):
    """The first unordered pair met, byte by byte in the checker's order: (earlier key,
    whether it writes, later key, space, first byte)."""
    writer, readers = {}, {}
    for d in program:
        for space, lo, hi, write in d.accesses:
            for x in range(lo, hi):
                w = writer.get((space, x))
                if w is not None and w.key != d.key and not ordered(w.vc, d.vc):
                    return w.key, True, d.key, space, x
                if write:
                    for u in readers.get((space, x), ()):
                        if u.key != d.key and not ordered(u.vc, d.vc):
                            return u.key, False, d.key, space, x
                    writer[space, x], readers[space, x] = d, ()
                else:
                    readers[space, x] = tuple(u for u in readers.get((space, x), ()) if u.key != d.key) + (d,)
    return None


@settings(max_examples=300, deadline=None)
@given(programs())
def test_property_the_checker_reports_the_byte_oracle_s_first_hazard(program):
    want = oracle([SimpleNamespace(key=d.key, vc=d.vc, accesses=d.accesses) for d in program])
    checker = hazards.RaceChecker()
    made = hazards._hazard
    hazards._hazard = lambda u, u_writes, v, space, lo, hi: Found(u.key, u_writes, v.key, space, lo)
    try:
        got = None
        for d in program:
            checker.started(d)
    except Found as found:
        got = found.args
    finally:
        hazards._hazard = made
    assert got == want
