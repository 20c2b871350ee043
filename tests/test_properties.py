"""Property tests over generated tile programs: the verifier accepts them, they print and
parse back to equal programs, and the interpreter computes what torch computes."""

from helpers import assert_matches_oracle, run_case
from hypothesis import given

from pypto.fuzz import strategies as ps
from pypto.ir import parse
from pypto.ir.verifier import verify

FAMILIES = {
    "elementwise": ps.elementwise_programs(),
    "reduction": ps.reduction_programs(),
    "matmul": ps.matmul_programs(),
    "carried": ps.carried_programs(),
}


def _roundtrip(program):
    for explicit in (False, True):
        text = program.as_python(explicit=explicit)
        again = parse(text)
        assert again == program, text
        assert again.as_python(explicit=explicit) == text


@given(ps.elementwise_programs())
def test_property_elementwise_bit_exact_with_torch(case):
    verify(case.program)
    assert_matches_oracle(case, run_case(case))


@given(ps.reduction_programs())
def test_property_reductions_with_tails_within_bound(case):
    verify(case.program)
    assert_matches_oracle(case, run_case(case))


@given(ps.matmul_programs())
def test_property_matmul_through_l0_within_bound(case):
    verify(case.program)
    assert_matches_oracle(case, run_case(case))


@given(ps.carried_programs())
def test_property_loop_carried_values_exact(case):
    verify(case.program)
    assert_matches_oracle(case, run_case(case))


@given(ps.shuffled_carry_programs())
def test_property_carried_tiles_that_trade_places_exact(case):
    verify(case.program)
    assert_matches_oracle(case, run_case(case))


@given(ps.tile_programs())
def test_property_print_parse_roundtrip(case):
    _roundtrip(case.program)


@given(ps.tile_programs())
def test_property_parsed_program_computes_the_same(case):
    again = parse(case.program.as_python())
    assert_matches_oracle(case, run_case(case, again))
