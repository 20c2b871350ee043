"""Event ids by interval colouring: the edges of one pipe pair share an id exactly when one
edge's flags all come before the other's in program order — at the boundary too, where one
edge's first flag directly follows another's last — and never while both are held; so a
kernel uses as many ids per pair as it has edges held at once, no more."""

import attrs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pypto.backend import CoreKind, Pipe
from pypto.codegen.isa import Cond, Loop, Region, SetFlag, WaitFlag, walk
from pypto.codegen.select import CodegenError
from pypto.codegen.sync.edges import Edge
from pypto.codegen.sync.events import assign_events
from pypto.ir import nodes as n
from pypto.ir.simplify import simplify

SRC, DST = (CoreKind.AIV, Pipe.MTE2), (CoreKind.AIV, Pipe.VECTOR)
LIMIT = 8


def _flags(order: list) -> tuple[list, list]:
    """A body of one pipe pair's flags in ``order`` (edge ids; an edge's first is its set,
    its second its wait) and the edges."""
    body, seen = [], set()
    for e in order:
        kind = WaitFlag if e in seen else SetFlag
        seen.add(e)
        body.append(kind(SRC[1], DST[1], n.Const(0), SRC[0], DST[0], e))
    edges = [Edge(e, order.index(e), len(order) - 1 - order[::-1].index(e), SRC, DST, 0, 0) for e in sorted(seen)]
    return body, edges


def _ids(order: list) -> dict:
    """Edge -> its id, as the edges and every flag of the body say it."""
    body, edges = assign_events(*_flags(order), LIMIT)
    ids = {e.id: e.base for e in edges}
    assert [(x.edge, x.event) for x in body] == [(e, n.Const(ids[e])) for e in order]
    return ids


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


# out of ids, 3..10 chain and so do 1 and 0 (listed after it, waited for before it), but not 2,
# set after 1's wait and waited for before 0's: the chain holds its id until 0's wait
@example(order=[3, 4, 5, 6, 7, 8, 9, 10, 1, 0, 1, 2, 2, 0, 3, 4, 5, 6, 7, 8, 9, 10])
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


@pytest.mark.parametrize("held, per_slot", [(6, True), (7, False)])
def test_a_rotating_edge_takes_an_id_per_slot_or_one_for_all_when_the_pair_runs_short(held, per_slot):
    """A sync of one slot of a two-slot region (its flags' events ``i % 2``) set while
    ``held`` others hold ids: two ids of its own when two are free, else one for both slots
    (its flags pair first in, first out, so each wait still meets its own set)."""
    slot = n.BinOp("%", n.Var("i"), n.Const(2))
    rotating = held  # its edge id
    order = [*range(held), rotating, rotating, *range(held)]
    body, edges = _flags(order)
    body = [attrs.evolve(x, event=slot) if x.edge == rotating else x for x in body]
    region = Region("buf", 0, 512, 2, slot)
    edges = [attrs.evolve(e, region=region, slot_u=slot, slot_v=slot) if e.id == rotating else e for e in edges]
    body, edges = assign_events(body, edges, LIMIT)
    (edge,) = [e for e in edges if e.id == rotating]
    events = {x.event for x in body if x.edge == rotating}
    assert edge.base == held
    if per_slot:
        assert edge.region == region and events == {simplify(n.BinOp("+", n.Const(held), slot))}
    else:
        assert edge.region is None and events == {n.Const(held)}


def test_flags_in_loops_and_either_branch_take_their_edges_ids():
    """An edge held around a loop of a branch: the syncs inside, in the then and in the else
    branch, take the next id, wherever they are nested."""
    def pair(e):
        return [SetFlag(SRC[1], DST[1], n.Const(0), SRC[0], DST[0], e),
                WaitFlag(SRC[1], DST[1], n.Const(0), SRC[0], DST[0], e)]

    outer, inner = pair(0)
    body = [outer, Loop("i", n.Const(0), n.Const(2), n.Const(1),
                        [Cond(n.BinOp("==", n.Var("i"), n.Const(0)), pair(1), pair(2))]), inner]
    edges = [Edge(e, 0, 1, SRC, DST, 0, 0) for e in range(3)]
    body, edges = assign_events(body, edges, LIMIT)
    assert {e.id: e.base for e in edges} == {0: 0, 1: 1, 2: 1}
    assert {(x.edge, x.event) for x in walk(body) if isinstance(x, (SetFlag, WaitFlag))} == \
        {(0, n.Const(0)), (1, n.Const(1)), (2, n.Const(1))}


def test_more_syncs_held_at_once_than_ids_none_in_first_in_first_out_order_is_refused():
    nested = [*range(LIMIT + 1), *reversed(range(LIMIT + 1))]  # each set after the last, waited for first
    with pytest.raises(CodegenError, match=f"more than {LIMIT} syncs between AIV.MTE2 and AIV.VECTOR in one kernel"):
        _ids(nested)
    _ids([*range(LIMIT + 1), *range(LIMIT + 1)])  # in order: they share ids


def test_syncs_in_first_in_first_out_order_share_one_id_when_the_rest_are_taken():
    """Seven syncs nested in one another hold seven ids; nine more set one after another and
    waited for in the same order share the eighth."""
    nested = [LIMIT + 1 + k for k in range(LIMIT - 1)]
    in_order = list(range(LIMIT + 1))
    ids = _ids([*nested, *in_order, *in_order, *reversed(nested)])
    assert len({ids[e] for e in in_order}) == 1 and len(set(ids.values())) == LIMIT
