"""``pl.expand_clone(input, target)``: ``target`` filled with copies of ``input`` along the
axes where ``input`` has extent 1 (the reference's DPS form: the result is ``target``), in
kernels of a program and in ``pl.at`` scopes — as torch's ``expand`` on both platforms,
and the refusals at the user's line."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import TypeCheckError
from pypto.runtime import RunConfig, run

PLATFORMS = ("ref", "a2a3sim")


def _program(shape, full):
    @pl.program
    class ExpandClone:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, x: pl.Tensor[shape, pl.FP32], y: pl.Out[pl.Tensor[full, pl.FP32]]) -> pl.Tensor[full, pl.FP32]:
            out: pl.Tensor[full, pl.FP32] = pl.expand_clone(x, y)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[shape, pl.FP32], y: pl.Out[pl.Tensor[full, pl.FP32]]) -> pl.Tensor[full, pl.FP32]:
            y = self.kernel(x, y)
            return y
    return ExpandClone


@settings(max_examples=settings().max_examples // 5, deadline=None)
@given(full=st.sampled_from([(4, 8, 32), (2, 16, 64), (8, 64)]), data=st.data(), seed=st.integers(0, 2 ** 16))
def test_property_expand_clone_is_torch_expand_on_both_platforms(full, data, seed):
    ones = data.draw(st.lists(st.booleans(), min_size=len(full), max_size=len(full)))
    shape = [1 if one else d for one, d in zip(ones, full)]
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
    program = _program(shape, list(full))
    for platform in PLATFORMS:
        y = torch.zeros(*full)
        run(program, x, y, config=RunConfig(platform=platform))
        assert torch.equal(y, x.expand(*full)), platform


@pl.jit
def rows_then_scaled(v: pl.Tensor, y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y = pl.expand_clone(v, y)  # the result is y, written
        z = pl.assemble(z, pl.muls(pl.slice(y, [4, 32], [2, 0]), 2.0), [0, 0])
    return y, z


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_result_is_the_target_and_reads_back_after_it(platform):
    v = torch.randn(1, 32)
    y, z = torch.zeros(8, 32), torch.zeros(4, 32)
    rows_then_scaled(v, y, z, config=RunConfig(platform=platform))
    assert torch.equal(y, v.expand(8, 32)) and torch.equal(z, v.expand(4, 32) * 2)


@pl.jit
def as_statement(v: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.expand_clone(v, y)
        y = pl.assemble(y, pl.exp(pl.slice(v, [1, 32], [0, 0])), [0, 0])
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_statement_writes_the_target_in_place(platform):
    v, y = torch.randn(1, 32), torch.zeros(4, 32)
    as_statement(v, y, config=RunConfig(platform=platform))
    assert torch.equal(y, torch.cat([torch.exp(v), v.expand(3, 32)]))


@pytest.mark.parametrize("shape, match", [([3, 32], "input dim 0 to be 1 or the target's 8"),
                                          ([32], "an input of the target's rank 2")])
def test_expand_clone_refusals_name_the_line(shape, match):
    with pytest.raises(TypeCheckError, match=match) as info:
        rows_then_scaled(torch.zeros(*shape), torch.zeros(8, 32), torch.zeros(4, 32))
    assert "test_expand_clone.py:" in str(info.value)
