"""``pl.dynamic`` axes: a kernel's annotation leaves an extent to its call, each call's
tensors give it (the same axis object, the same extent throughout), and the kernel's
body reads it as the constant the call gave."""

import inspect

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import torch

import pypto.language as pl
from pypto.errors import SpecializationError, TypeCheckError
from pypto.runtime import RunConfig

N = pl.dynamic("N")
K = pl.dynamic("K")
TILE = 16


@pl.jit.incore
def rows(x: pl.Tensor[[N, 64], pl.FP32], out: pl.Out[pl.Tensor[[N, 64], pl.FP32]]):
    for i in pl.range(N // TILE):  # the body reads the extent the call gave
        pl.store(pl.mul(pl.load(x, [i * TILE, 0], [TILE, 64]), 2.0), [i * TILE, 0], out)
    return out


@pl.jit
def drive(x: pl.Tensor[[N, 64], pl.FP32], out: pl.Out[pl.Tensor[[N, 64], pl.FP32]]):
    return rows(x, out)


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_each_call_gives_the_extent(platform):
    for extent in (TILE, 3 * TILE, 5 * TILE):
        x, out = torch.randn(extent, 64), torch.zeros(extent, 64)
        drive(x, out, config=RunConfig(platform=platform))
        assert torch.equal(out, x * 2.0), extent


@pl.jit
def two_axes(x: pl.Tensor[[N, K], pl.FP32], y: pl.Tensor[[K, N], pl.FP32], out: pl.Out[pl.Tensor[[N, K], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(x, [0, 0], [N, K]), [0, 0], out)
    return out


@pl.jit
def first_wins(flat: pl.Tensor[[N], pl.FP32], x: pl.Tensor[[N, K], pl.FP32], out: pl.Out[pl.Tensor[[N, K], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.adds(pl.load(x, [0, 0], [16, K]), N), [0, 0], out)  # N: flat's extent
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_an_axis_object_reads_as_its_first_parameters_extent(platform):
    out = torch.zeros(16, 32)
    two_axes(torch.ones(16, 32), torch.zeros(32, 16), out, config=RunConfig(platform=platform))
    assert torch.equal(out, torch.ones(16, 32))
    # as the reference: each parameter's axis is its own tensor's extent (nothing checks that they
    # agree), and the axis read as a value is the first parameter's — here a flat [256] and a [16, 32]
    x, out = torch.randn(16, 32), torch.zeros(16, 32)
    first_wins(torch.zeros(256), x, out, config=RunConfig(platform=platform))
    assert torch.equal(out, x + 256)
    program = first_wins.lower(torch.zeros(256), x, out)
    assert [p.type.shape for p in program.functions[-1].params] == [(256,), (16, 32), (16, 32)]
    with pytest.raises(SpecializationError, match=r"argument 'x' is .* but the kernel declares pl.Tensor\[\[N, K\], "
                                                  r"pl.FP32\]"):
        two_axes(torch.ones(16, 32, 2), torch.zeros(32, 16), torch.zeros(16, 32), config=RunConfig(platform="ref"))


def test_an_axis_name_is_an_identifier():
    with pytest.raises(ValueError, match="DynVar name must be a valid identifier, got '2M'"):
        pl.dynamic("2M")
    assert repr(pl.dynamic("M")) == "pl.dynamic('M')" and pl.dynamic("M") is not pl.dynamic("M")


M = pl.dynamic("M")


def test_without_a_call_there_is_no_extent():
    from pypto.runtime.compiled import compile_program

    with pytest.raises(TypeCheckError, match="'x' has a pl.dynamic axis \\(\\[M, 64\\]\\), whose extent a call's "
                                             "tensor gives") as info:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):  # MARK-dyn
                pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], out)
                return out

        compile_program(P, ["x", "out"], RunConfig(platform="ref"), write=False)
    lines, _ = inspect.getsourcelines(inspect.getmodule(test_without_a_call_there_is_no_extent))
    assert info.value.span.line == next(k for k, t in enumerate(lines, start=1) if "MARK-dyn" in t and "in t" not in t)


@pl.jit
def by_dim(x: pl.Tensor[[N, 64], pl.FP32], out: pl.Out[pl.Tensor[[N, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(pl.tensor.dim(x, 0) // TILE):  # the extent the call gave, as a value
            pl.store(pl.adds(pl.load(x, [i * TILE, 0], [TILE, 64]), pl.dim(x, -1)), [i * TILE, 0], out)
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_tensor_dim_reads_an_extent(platform):
    for rows in (32, 48):
        x, out = torch.randn(rows, 64), torch.zeros(rows, 64)
        by_dim(x, out, config=RunConfig(platform=platform))
        assert torch.equal(out, x + 64)


def test_tensor_dim_refuses_an_axis_past_the_rank():
    from pypto.lang import parse

    text = ("import pypto.language as pl\n\n\n@pl.program\nclass P:\n    @pl.function(type=pl.FunctionType.InCore)\n"
            "    def k(self, x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):\n"
            "        n = pl.tensor.dim(x, 2)\n        return out\n")
    with pytest.raises(TypeCheckError, match="axis 2 is outside the 2 axes of Tensor") as info:
        parse(text, filename="dim.py")
    assert info.value.span.line == 8


# An axis written as an expression of a pl.dynamic axis (``M * 2``, ``2 * M + 16``): the call's
# extent solves it for the axis no bare annotation gives, and the body reads that value.
@pl.jit
def doubled(x: pl.Tensor[[M * 2, 16], pl.FP32], out: pl.Out[pl.Tensor[[M * 2, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2 * M // 8):
            pl.store(pl.adds(pl.load(x, [i * 8, 0], [8, 16]), M), [i * 8, 0], out)
    return out


@pl.jit
def shifted(x: pl.Tensor[[2 * M + 16, 16], pl.FP32], k: pl.Tensor[[M, K * 4 - 4], pl.FP32],
            out: pl.Out[pl.Tensor[[2 * M + 16, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.adds(pl.load(x, [0, 0], [16, 16]), M * 100 + K), [0, 0], out)
    return out


@pl.jit
def two_free(x: pl.Tensor[[M * K, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):  # MARK-two
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)
    return out


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 6).map(lambda k: 4 * k), platform=st.sampled_from(["ref", "a2a3sim"]))
def test_an_axis_written_as_an_expression_is_solved_from_the_call(m, platform):
    x, out = torch.randn(2 * m, 16), torch.zeros(2 * m, 16)
    doubled(x, out, config=RunConfig(platform=platform))
    assert torch.equal(out, x + m)
    x, out = torch.randn(2 * m + 16, 16), torch.zeros(2 * m + 16, 16)
    shifted(x, torch.zeros(m, 8), out, config=RunConfig(platform=platform))  # K * 4 - 4 = 8: K = 3
    assert torch.equal(out[:16], x[:16] + (m * 100 + 3))


def test_an_expression_axis_without_a_solution_or_with_two_free_axes_is_refused():
    with pytest.raises(SpecializationError, match=r"argument 'x' has extent 33 on axis 0, which is M \* 2 for no "
                                                  r"positive 'M'") as info:
        doubled(torch.zeros(33, 16), torch.zeros(33, 16), config=RunConfig(platform="ref"))
    assert "M >= 1" in info.value.hint
    with pytest.raises(SpecializationError, match=r"argument 'out' is Tensor\[16x16 fp32\] but the kernel declares "
                                                  r"Tensor\[32x16 fp32\]"):  # M bound by x: out's M * 2 is 32
        doubled(torch.zeros(32, 16), torch.zeros(16, 16), config=RunConfig(platform="ref"))
    with pytest.raises(SpecializationError, match="which is 2 \\* M \\+ 16 for no positive 'M'"):
        shifted(torch.zeros(16, 16), torch.zeros(1, 8), torch.zeros(16, 16), config=RunConfig(platform="ref"))
    with pytest.raises(TypeCheckError, match=r"axis 0 of 'x' is M \* K, whose extent binds two pl.dynamic axes "
                                             r"\('M', 'K'\)") as info:
        two_free(torch.zeros(32, 16), torch.zeros(16, 16), config=RunConfig(platform="ref"))
    lines, _ = inspect.getsourcelines(inspect.getmodule(test_without_a_call_there_is_no_extent))
    assert info.value.span.line == next(k for k, t in enumerate(lines, start=1) if "MARK-two" in t and "in t" not in t)
