"""Shared checks: run a fuzz Case on a platform and compare with its oracle."""

from __future__ import annotations

from pypto.fuzz import strategies as ps
from pypto.sim import interpreter


def run_case(case: ps.Case, program=None) -> tuple:
    """Interpret ``program`` (default: the case's) on fresh arguments; the Out tensors."""
    args = case.args()
    interpreter.run(program or case.program, case.entry, args)
    return args[len(case.inputs):]


def assert_matches_oracle(case: ps.Case, outputs) -> None:
    for k, (got, want) in enumerate(zip(outputs, case.expected)):
        if case.check == "exact":
            assert ps.bits_equal(got, want), f"{case.recipe}: output {k} differs from torch\n{got}\n{want}"
        else:
            err = (got.double() - want.double()).abs().max().item()
            assert ps.within_bounds(got, want, case.bounds[k]), f"{case.recipe}: error {err} beyond the bound"
