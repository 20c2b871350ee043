"""Property tests over generated tile programs: the verifier accepts them, they print and
parse back to equal programs, and the interpreter computes what torch computes."""

import pytest
from helpers import assert_matches_oracle, run_case
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pypto.fuzz import strategies as ps
from pypto.lang import parse
from pypto.ir.verifier import verify
from pypto.backend import A2A3

FAMILIES = ps.families()
# Each family is its own test so that every one is drawn; together they take about the
# profile's budget.
PER_FAMILY = settings(max_examples=max(3, settings().max_examples // len(FAMILIES)))


def _roundtrip(program):
    for explicit in (False, True):
        text = program.as_python(explicit=explicit)
        again = parse(text)
        assert again == program, text
        assert again.as_python(explicit=explicit) == text


ELEMENT_DTYPES = ps.FLOATS + ps.INTS


# One test per dtype: fp16 and bf16, where a tile-scalar op must round its scalar, are
# always drawn.
@pytest.mark.parametrize("dtype", ELEMENT_DTYPES, ids=lambda d: d.name)
@settings(max_examples=max(3, settings().max_examples // len(ELEMENT_DTYPES)))
@given(data=st.data())
def test_property_elementwise_bit_exact_with_torch(dtype, data):
    case = data.draw(ps.elementwise_programs(dtypes=(dtype,)), label="case")
    event("specials" if "specials" in case.recipe else "ordinary values")
    verify(case.program, A2A3)
    assert_matches_oracle(case, run_case(case))


@given(ps.reduction_programs())
def test_property_reductions_with_tails_within_bound(case):
    event(case.recipe.split()[0] + (" with specials" if "specials" in case.recipe else ""))
    verify(case.program, A2A3)
    assert_matches_oracle(case, run_case(case))


@given(ps.matmul_programs())
def test_property_matmul_through_l0_within_bound(case):
    verify(case.program, A2A3)
    assert_matches_oracle(case, run_case(case))


@given(ps.carried_programs())
def test_property_loop_carried_values_exact(case):
    verify(case.program, A2A3)
    assert_matches_oracle(case, run_case(case))


@given(ps.shuffled_carry_programs())
def test_property_carried_tiles_that_trade_places_exact(case):
    verify(case.program, A2A3)
    assert_matches_oracle(case, run_case(case))


@pytest.mark.parametrize("family", sorted(FAMILIES))
@PER_FAMILY
@given(data=st.data())
def test_property_print_parse_roundtrip(family, data):
    _roundtrip(data.draw(FAMILIES[family], label="case").program)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@PER_FAMILY
@given(data=st.data())
def test_property_parsed_program_computes_the_same(family, data):
    case = data.draw(FAMILIES[family], label="case")
    again = parse(case.program.as_python())
    assert_matches_oracle(case, run_case(case, again))
