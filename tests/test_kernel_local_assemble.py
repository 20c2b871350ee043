"""A tensor a kernel creates and assembles into (``local = pl.create_tensor(...)``;
``local = pl.assemble(local, x, offset)``) is a value computed on chip: a window of it is
the source's where it lies in what the assemble wrote and the target's (zeros, for a
creation) where it lies outside. ref and a2a3sim give the same bits."""

import inspect

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import PyptoError
from pypto.runtime import RunConfig

R, C = 16, 64


def kernel(r0, c0, sr, sc, wr, wc, inside):
    """Assembles ``exp(x)`` [sr, sc] at (r0, c0) of a zero [R, C] local tensor, and stores
    a [wr, wc] window of it: at the assembled part's corner (``inside``) or after it."""
    at_c = c0  # (outside: the rows after the assembled part, or before it)
    at_r = r0 if inside else r0 + sr if r0 + sr + wr <= R else r0 - wr

    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor], echo: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            local = pl.create_tensor([R, C], dtype=pl.FP32)
            local = pl.assemble(local, pl.exp(x), [r0, c0])
            out = pl.assemble(out, pl.add(pl.slice(local, [wr, wc], [at_r, at_c]), 1.0), [0, 0])
            echo = pl.assemble(echo, pl.slice(local, [sr, sc], [r0, c0]), [0, 0])
        return out, echo

    return k, at_r, at_c


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sr=st.sampled_from([4, 8]), sc=st.sampled_from([16, 32]), data=st.data())
def test_a_window_of_a_tensor_assembled_on_chip_is_its_sources_or_its_targets(sr, sc, data):
    r0, c0 = data.draw(st.sampled_from([0, 4, 8])), data.draw(st.sampled_from([0, 16, 32]))
    inside = data.draw(st.booleans())
    wr = data.draw(st.integers(1, sr if inside else min(4, max(r0, R - r0 - sr))))
    wc = data.draw(st.sampled_from([8, 16]))
    k, at_r, at_c = kernel(r0, c0, sr, sc, wr, wc, inside)
    x = torch.randn(sr, sc, generator=torch.Generator().manual_seed(sr * sc + r0 + c0))
    local = torch.zeros(R, C)
    local[r0:r0 + sr, c0:c0 + sc] = x.exp()
    got = []
    for platform in ("ref", "a2a3sim"):
        out, echo = torch.zeros(wr, wc), torch.zeros(sr, sc)
        k(x, out, echo, config=RunConfig(platform=platform))
        got.append((out, echo))
    assert torch.equal(got[0][0], got[1][0]) and torch.equal(got[0][1], got[1][1])
    assert torch.equal(got[1][1], local[r0:r0 + sr, c0:c0 + sc])
    torch.testing.assert_close(got[1][0], local[at_r:at_r + wr, at_c:at_c + wc] + 1.0, rtol=0, atol=0)


def test_a_window_partly_in_what_was_assembled_is_refused_at_the_assemble():
    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            local = pl.create_tensor([R, C], dtype=pl.FP32)
            local = pl.assemble(local, x, [0, 0])  # MARK
            out = pl.assemble(out, pl.add(local, 1.0), [0, 0])
        return out

    with pytest.raises(PyptoError, match=r"not known to lie wholly inside what this assemble writes nor wholly outside it") as info:
        k(torch.zeros(8, 32), torch.zeros(R, C), config=RunConfig(platform="ref"))
    lines, first = inspect.getsourcelines(test_a_window_partly_in_what_was_assembled_is_refused_at_the_assemble)
    assert info.value.span.line == first + next(i for i, t in enumerate(lines) if t.rstrip().endswith("# MARK"))
