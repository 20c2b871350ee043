"""The catalog's trigonometric, remainder and bitwise families through the language: the
unified ``pl.*`` names (tile or tensor by the operands, the scalar form by the rhs),
``pl.tile.*`` with the reference's scratch tile, the same bits on both platforms, and the
refusals naming the user's line."""

import inspect

import pytest
import torch

import pypto.language as pl
from pypto.errors import TypeCheckError
from pypto.runtime import RunConfig

R, C = 16, 64
PLATFORMS = ("ref", "a2a3sim")


@pl.jit
def trig_and_remainder(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [R, C])
        y = pl.load(b, [0, 0], [R, C])
        pl.store(pl.add(pl.mul(pl.sin(x), pl.cos(y)), pl.fmod(pl.fmod(x, y), 0.75)), [0, 0], out)
    return out


@pl.jit
def bitwise(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [R, C])
        y = pl.load(b, [0, 0], [R, C])
        tmp = pl.load(b, [0, 0], [R, C])
        z = pl.tile.xor(pl.and_(x, y), pl.or_(x, 0x0F0F), tmp)
        pl.store(pl.xor(pl.ands(z, 0x7FFF), 0x0101), [0, 0], out)
    return out


@pl.jit
def tensor_level(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.xor(pl.and_(a, b), pl.not_(pl.or_(a, 3)))
    return out


def _floats():
    g = torch.Generator().manual_seed(7)
    return torch.randn(R, C, generator=g) * 4, torch.rand(R, C, generator=g) * 3 + 0.25


def _ints(dtype):
    g = torch.Generator().manual_seed(11)
    info = torch.iinfo(dtype)
    return tuple(torch.randint(info.min, info.max, (R, C), generator=g, dtype=dtype) for _ in range(2))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_sin_cos_fmod_match_torch(platform):
    a, b = _floats()
    out = torch.zeros(R, C)
    trig_and_remainder(a, b, out, config=RunConfig(platform=platform))
    want = torch.sin(a) * torch.cos(b) + torch.fmod(torch.fmod(a, b), torch.tensor(0.75))
    assert torch.equal(out, want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_bitwise_tiles_match_torch(platform):
    a, b = _ints(torch.int32)
    out = torch.zeros(R, C, dtype=torch.int32)
    bitwise(a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, (((a & b) ^ (a | 0x0F0F)) & 0x7FFF) ^ 0x0101)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_bitwise_tensors_match_torch(platform):
    a, b = _ints(torch.int16)
    out = torch.zeros(R, C, dtype=torch.int16)
    tensor_level(a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, (a & b) ^ ~(a | 3))


def test_the_dsl_spells_keyword_ops_with_an_underscore_and_dumps_read_back():
    from pypto.lang import parse

    program = tensor_level.compile(*_ints(torch.int16), torch.zeros(R, C, dtype=torch.int16)).program
    text = program.as_python()
    assert "pl.tensor.and_(" in text and "pl.tensor.not_(" in text and "pl.tensor.ors(" in text
    assert parse(text) == program


@pl.jit
def float_and(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.and_(pl.load(a, [0, 0], [R, C]), pl.load(b, [0, 0], [R, C])), [0, 0], out)  # MARK-and
    return out


@pl.jit
def wide_not(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.not_(pl.load(a, [0, 0], [R, C])), [0, 0], out)  # MARK-not
    return out


@pl.jit
def bad_scratch(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [R, C])
        pl.store(pl.tile.xor(x, x, pl.load(a, [0, 0], [R // 2, C])), [0, 0], out)  # MARK-tmp
    return out


@pl.jit
def far_shift(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.shl(pl.load(a, [0, 0], [R, C]), 32), [0, 0], out)  # MARK-shls
    return out


@pl.jit
def shift_by_tile(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.shr(pl.load(a, [0, 0], [R, C]), pl.load(b, [0, 0], [R, C])), [0, 0], out)  # MARK-shr
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_shifts_match_torch_and_an_amount_past_the_width_is_an_error_where_it_runs(platform):
    from pypto.errors import ExecutionError

    a, _ = _ints(torch.int32)
    amounts = torch.arange(R * C, dtype=torch.int32).reshape(R, C) % 32
    out = torch.zeros(R, C, dtype=torch.int32)
    shift_by_tile(a, amounts, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a >> amounts)
    amounts[3, 5] = 40
    with pytest.raises(ExecutionError, match="shift amount 40 is outside 0..31") as info:
        shift_by_tile(a, amounts, out, config=RunConfig(platform=platform))
    assert info.value.span.line == _line("MARK-shr")


@pl.jit
def ragged_concat(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.concat(pl.load(a, [0, 0], [R, C]), pl.load(a, [0, 0], [R // 2, C])), [0, 0], out)  # MARK-cat
    return out


def _line(marker):
    lines, _ = inspect.getsourcelines(inspect.getmodule(_line))
    return next(k for k, text in enumerate(lines, start=1) if marker in text and "_line(" not in text)


@pytest.mark.parametrize("kernel, args, marker, match", [
    (float_and, (torch.zeros(R, C), torch.zeros(R, C), torch.zeros(R, C)), "MARK-and",
     r"The operator tile.and requires a dtype it computes in \(INT8, INT16, INT32, UINT8\), but got FP32"),
    (wide_not, (torch.zeros(R, C, dtype=torch.int32), torch.zeros(R, C, dtype=torch.int32)), "MARK-not",
     r"The operator tile.not requires a dtype it computes in \(INT16, UINT16\), but got INT32"),
    (bad_scratch, (torch.zeros(R, C, dtype=torch.int32), torch.zeros(R, C, dtype=torch.int32)), "MARK-tmp",
     r"The operator tile.xor requires its tmp tile to match its operand"),
    (ragged_concat, (torch.zeros(R, C), torch.zeros(R, 2 * C)), "MARK-cat",
     r"The operator tile.concat requires the same row count, but got 16 vs 8"),
    (far_shift, (torch.zeros(R, C, dtype=torch.int32), torch.zeros(R, C, dtype=torch.int32)), "MARK-shls",
     r"The operator tile.shls requires a shift amount in 0..31 for INT32, but got 32"),
])
def test_refusals_name_the_line(kernel, args, marker, match):
    with pytest.raises(TypeCheckError, match=match) as info:
        kernel(*args, config=RunConfig(platform="ref"))
    assert info.value.span.file == __file__ and info.value.span.line == _line(marker)


def test_fmod_never_writes_over_its_operand():
    from pypto.ir.ops import lookup

    assert not lookup("tile.fmod").in_place and not lookup("tile.fmods").in_place
    assert lookup("tile.and").in_place and lookup("tile.sin").unit == "transcendental"
