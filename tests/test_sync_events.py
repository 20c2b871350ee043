"""Event ids by interval colouring: the edges of one pipe pair share an id exactly when one
edge's flags all come before the other's in program order — at the boundary too, where one
edge's first flag directly follows another's last — and never while both are held; so a
kernel uses as many ids per pair as it has edges held at once, no more."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pypto.backend import CoreKind, Pipe
from pypto.codegen.isa import SetFlag, WaitFlag
from pypto.codegen.select import CodegenError
from pypto.codegen.sync.edges import Edge
from pypto.codegen.sync.events import assign_events

SRC, DST = (CoreKind.AIV, Pipe.MTE2), (CoreKind.AIV, Pipe.VECTOR)
LIMIT = 8


def _flags(order: list) -> tuple[list, list]:
    """A body of one pipe pair's flags in ``order`` (edge ids; an edge's first is its set,
    its second its wait) and the edges."""
    body, seen = [], set()
    for e in order:
        kind = WaitFlag if e in seen else SetFlag
        seen.add(e)
        body.append(kind(SRC[1], DST[1], 0, SRC[0], DST[0], e))
    edges = [Edge(e, order.index(e), len(order) - 1 - order[::-1].index(e), SRC, DST, 0, 0) for e in sorted(seen)]
    return body, edges


def _ids(order: list) -> dict:
    _, edges = assign_events(*_flags(order), LIMIT)
    return {e.id: e.base for e in edges}


@pytest.mark.parametrize("order, shared", [
    ([0, 0, 1, 1], True),  # 1's set directly after 0's wait: 0 has drained its id
    ([0, 1, 0, 1], False),  # 1 set while 0's set is not yet waited for
    ([0, 1, 1, 0], False),  # 1 inside 0
])
def test_an_edge_takes_the_id_of_one_that_ended_just_before_it_and_not_of_one_still_held(order, shared):
    ids = _ids(order)
    assert (ids[0] == ids[1]) is shared


@st.composite
def flag_orders(draw):
    """Each of up to 14 edges set once and waited for once, interleaved at random (past
    the pair's 8 ids, now and then)."""
    count = draw(st.integers(1, 14))
    order = draw(st.permutations([e for e in range(count) for _ in (0, 1)]))
    return order


def _held_at_once(order: list) -> int:
    spans = {e: (order.index(e), len(order) - 1 - order[::-1].index(e)) for e in set(order)}
    return max(sum(lo <= p <= hi for lo, hi in spans.values()) for p in range(len(order)))


@given(order=flag_orders())
def test_property_ids_are_shared_only_by_edges_not_held_at_once_and_no_more_are_used(order):
    need = _held_at_once(order)
    try:
        ids = _ids(order)
    except CodegenError:
        assert need > LIMIT  # no chaining of the edges held at once fits either
        return
    assert all(0 <= i < LIMIT for i in ids.values())
    spans = {e: (order.index(e), len(order) - 1 - order[::-1].index(e)) for e in ids}
    for a in ids:
        for b in ids:
            if a < b and ids[a] == ids[b]:
                (lo_a, hi_a), (lo_b, hi_b) = spans[a], spans[b]
                # one drained before the other is set, or (the pair out of ids) both held in
                # first-in first-out order: each wait still meets its own edge's set
                fifo = (lo_a < lo_b) == (hi_a < hi_b)
                assert hi_a < lo_b or hi_b < lo_a or need > LIMIT and fifo, (order, a, b)
    if need <= LIMIT:
        assert len(set(ids.values())) == need, order  # interval colouring: as many as are held at once
