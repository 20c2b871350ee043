"""A function body's early return: ``if c: ...; return a`` then ``...; return b`` (or an if /
else both returning) is one branch binding the value and one return, on both platforms."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import UnsupportedSyntaxError
from pypto.runtime import RunConfig


@pl.jit.incore
def early(x: pl.Tensor[[8, 32], pl.FP32], out: pl.Out[pl.Tensor[[8, 32], pl.FP32]], flag: pl.Scalar[pl.INT32]):
    if flag == 1:
        t = pl.load(x, [0, 0], [8, 32])
        return pl.store(pl.add(t, t), [0, 0], out)
    if flag == 2:
        return pl.store(pl.load(x, [0, 0], [8, 32]), [0, 0], out)
    else:
        return out


@pl.jit
def run_early(x: pl.Tensor[[8, 32], pl.FP32], out: pl.Out[pl.Tensor[[8, 32], pl.FP32]], flag: pl.Scalar[pl.INT32]):
    return early(x, out, flag)


@settings(max_examples=6, deadline=None)
@given(flag=st.integers(0, 3), platform=st.sampled_from(["ref", "a2a3sim"]))
def test_an_early_return_returns_its_branchs_value(flag, platform):
    x = torch.randn(8, 32, generator=torch.Generator().manual_seed(flag))
    out = torch.full((8, 32), -1.0)
    run_early(x, out, flag, config=RunConfig(platform=platform))
    want = x + x if flag == 1 else x if flag == 2 else torch.full((8, 32), -1.0)
    assert torch.equal(out, want)


def test_a_return_inside_a_loop_is_still_refused():
    @pl.jit.incore
    def in_loop(x: pl.Tensor[[8, 32], pl.FP32], out: pl.Out[pl.Tensor[[8, 32], pl.FP32]]):
        for i in pl.range(2):
            return pl.store(pl.load(x, [0, 0], [8, 32]), [0, 0], out)
        return out

    with pytest.raises(UnsupportedSyntaxError, match="return is only supported at the end"):
        in_loop(torch.zeros(8, 32), torch.zeros(8, 32), config=RunConfig(platform="ref"))
