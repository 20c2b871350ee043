"""Random task graphs (``pypto.fuzz.tasks``): those the rules order give the same bits on
a2a3sim as on ref and as torch in program order; an opt-out that drops a needed edge is
reported as a race."""

import hypothesis.strategies as st
from hypothesis import assume, given, settings

from pypto.fuzz.graphs import TASKS
from pypto.fuzz.properties import Example
from pypto.fuzz.tasks import BANDS, atomic_graphs, atomic_source, graphs, race_free, source


@settings(deadline=None)
@given(steps=graphs())
def test_property_race_free_graphs_give_the_same_bits_everywhere(steps):
    TASKS.check(Example(source=source(steps), detail=("graph", steps)))


@settings(deadline=None)
@given(steps=graphs(), op=st.sampled_from(["exp", "neg"]), band=st.integers(0, BANDS - 1))
def test_property_an_opt_out_that_drops_a_needed_edge_is_a_race(steps, op, band):
    assume(race_free(steps))  # the only race is the one the opt-out makes
    TASKS.check(Example(source=source(steps, opt_out=(op, band)), detail=("opt_out", steps, op, band)))


@settings(deadline=None)
@given(steps=atomic_graphs())
def test_property_atomic_adds_in_any_order_give_the_oracles_bits(steps):
    """Integer adds commute: whatever order the chip lands them in (and whatever a seed
    permutes), the sums are torch's; adds into the same bytes never race each other."""
    TASKS.check(Example(source=atomic_source(steps), detail=("atomic", steps)))
