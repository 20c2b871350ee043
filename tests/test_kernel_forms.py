"""Forms of kernel source the reference accepts and model code writes: ``None`` where a value
may be left out (a closure's ``valid_shape = None``, ``if bias is not None:``), an inline
function returning a tuple, ``s / t`` and ``s - t`` with a scalar on the left, ``/`` on
scalars (the scalar unit's division: a float's, or an integer quotient toward zero), an
``auto_scope=False`` inline helper with its own ``pl.scope()``, ``pl.array`` in a kernel
(the scalar unit's stack), and ``pl.cast`` of an integer scalar to a float type."""

from __future__ import annotations


import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import ParseError, PyptoError, TypeCheckError
from pypto.lang import parse
from pypto.runtime import RunConfig
from kernel_files import PLATFORMS, kernel_module, on_both


# ----------------------------------------------------------------------------- None


def build(valid, bias):
    @pl.jit
    def k(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 64], valid_shape=valid)
            if bias is not None:
                t = pl.adds(t, bias)
            pl.store(t, [0, 0], out)
        return out

    return k


@pytest.mark.parametrize("valid, bias", [(None, None), ([8, 64], None), (None, 1.5), ([4, 32], -2.0)])
def test_a_closure_s_none_leaves_the_argument_out_and_is_tested_when_compiling(valid, bias):
    a = torch.randn(16, 64)
    _, out = on_both(build(valid, bias), a, torch.zeros(16, 64))
    rows, cols = valid or (16, 64)
    want = torch.zeros(16, 64)
    want[:rows, :cols] = a[:rows, :cols] + (bias or 0.0)
    assert torch.equal(out, want)


# ----------------------------------------------------------------------------- inline tuples


@pl.jit.inline
def split_halves(t: pl.Tile) -> tuple[pl.Tile, pl.Tile]:
    lo = t[:, 0:32]
    hi = t[:, 32:64]
    return pl.add(lo, hi), pl.sub(lo, hi)


@pl.jit
def uses_pair(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s, d = split_halves(pl.load(a, [0, 0], [16, 64]))
        pl.store(s, [0, 0], out)
        pl.store(d, [0, 32], out)
    return out


def test_an_inline_function_returns_a_tuple_its_caller_unpacks():
    a = torch.randn(16, 64)
    _, out = on_both(uses_pair, a, torch.zeros(16, 64))
    assert torch.equal(out[:, :32], a[:, :32] + a[:, 32:]) and torch.equal(out[:, 32:], a[:, :32] - a[:, 32:])


def test_an_inline_tuple_used_as_one_value_is_refused_at_the_call():
    module, path = kernel_module("""
        @pl.jit.inline
        def two(t: pl.Tile):
            return t, t


        @pl.jit
        def k(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                x = pl.exp(two(pl.load(a, [0, 0], [16, 64])))  # MARK
                pl.store(x, [0, 0], out)
            return out
    """)
    with pytest.raises(TypeCheckError, match="'two' returns 2 values; unpack them") as info:
        module.k(torch.zeros(16, 64), torch.zeros(16, 64))
    assert info.value.span.line == next(k for k, x in enumerate(open(path).read().splitlines(), 1) if "MARK" in x)


# ----------------------------------------------------------------------------- scalars on the left, '/'


@pl.jit
def reversed_ops(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
                 out2: pl.Out[pl.Tensor[[16, 64], pl.FP32]], s: pl.Scalar[pl.FP32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        pl.store(1.0 / t, [0, 0], out)
        pl.store(s - t, [0, 0], out2)
    return out, out2


@pl.jit
def reversed_tensor(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = 3.0 / a
    return out


def test_a_scalar_over_a_tile_or_tensor_divides_each_element_once():
    a = torch.randn(16, 64)
    _, out, out2, _ = on_both(reversed_ops, a, torch.zeros(16, 64), torch.zeros(16, 64), 0.25)
    # (torch's own 3.0 / a is a reciprocal times 3.0, rounded twice: the division is a tensor of 3.0 over a)
    assert torch.equal(out, torch.full_like(a, 1.0) / a) and torch.equal(out2, 0.25 - a)
    _, out = on_both(reversed_tensor, a, torch.zeros(16, 64))
    assert torch.equal(out, torch.full_like(a, 3.0) / a)


def c_divide(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


@settings(max_examples=25, deadline=None)
@given(x=st.integers(-20, 20), y=st.integers(-7, 7).filter(bool))
def test_property_an_integer_quotient_rounds_toward_zero_on_both_platforms(x, y):
    """``x / y`` of integer scalars is the scalar unit's quotient (C's), not Python's floor."""
    a = torch.randn(1, 64)
    out = on_both(quotient, a, torch.zeros(41, 64), x, y)[1]
    row = c_divide(x, y) + 20
    assert torch.equal(out[row:row + 1], a) and int((out.abs().sum(1) > 0).sum()) == 1


@pl.jit
def quotient(a: pl.Tensor[[1, 64], pl.FP32], out: pl.Out[pl.Tensor[[41, 64], pl.FP32]],
             x: pl.Scalar[pl.INT32], y: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [1, 64])
        pl.store(t, [x / y + 20, 0], out)
    return out


@pl.jit
def float_scale(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        f = pl.cast(n, pl.FP32)
        t = pl.load(a, [0, 0], [16, 64])
        pl.store(pl.muls(t, f / 4.0), [0, 0], out)
    return out


@pytest.mark.parametrize("n", [0, 3, -5, 1 << 20])
def test_an_integer_scalar_cast_to_fp32_scales_as_its_float(n):
    a = torch.randn(16, 64)
    _, out, _ = on_both(float_scale, a, torch.zeros(16, 64), n)
    assert torch.equal(out, a * torch.tensor(n / 4.0, dtype=torch.float32))
    text = float_scale.specialize(a, out, n).as_python()
    assert "f = n * 1.0" in text and parse(text) == float_scale.specialize(a, out, n)


def test_a_float_scalar_cast_to_an_integer_is_still_refused():
    module, _ = kernel_module("""
        @pl.jit
        def k(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]], s: pl.Scalar[pl.FP32]):
            with pl.at(level=pl.Level.CORE_GROUP):
                i = pl.cast(s, pl.INT32)  # MARK
                pl.store(pl.load(a, [i, 0], [16, 64]), [0, 0], out)
            return out
    """)
    with pytest.raises(PyptoError, match="from FP32 to INT32 is not supported") as info:
        module.k(torch.zeros(16, 64), torch.zeros(16, 64), 1.0)
    assert info.value.hint


# ----------------------------------------------------------------------------- scopes in inline helpers


@pl.jit.inline(auto_scope=False)
def scoped_stage(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.scope():
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.exp(pl.load(a, [0, 0], [16, 64])), [0, 0], out)
    return out


@pl.jit
def calls_scoped(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    out = scoped_stage(a, out)
    return out


def test_an_inline_helper_without_auto_scopes_places_its_own_scope_in_its_caller():
    a = torch.randn(16, 64)
    _, out = on_both(calls_scoped, a, torch.zeros(16, 64))
    assert torch.equal(out, torch.exp(a))
    assert "with pl.scope():" in calls_scoped.specialize(a, out).as_python()


# ----------------------------------------------------------------------------- arrays in a kernel


@pl.jit
def array_rows(idx: pl.Tensor[[1, 8], pl.INT32], src: pl.Tensor[[1, 32], pl.FP32],
               dst: pl.InOut[pl.Tensor[[32, 32], pl.FP32]], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        it = pl.load(idx, [0, 0], [1, 8])
        s = pl.load(src, [0, 0], [1, 32])
        rows = pl.array.create(8, pl.INT32)
        for k in pl.range(8):
            rows[k] = pl.tile.read(it, [0, k])
        c: pl.Scalar[pl.INT32] = rows[n]
        if c > 16:
            rows[0] = c - 16
        else:
            rows[0] = c + 1
        for k in pl.range(n + 1):
            pl.store(s, [pl.cast(rows[k], pl.INDEX), 0], dst)
    return dst


@pytest.mark.parametrize("n", [0, 3, 7])
def test_an_array_on_the_scalar_unit_carries_indices_through_loops_and_branches(n):
    idx = torch.tensor([[3, 9, 20, 31, 0, 12, 17, 25]], dtype=torch.int32)
    src = torch.arange(32.0).reshape(1, 32) + 1
    _, _, dst, _ = on_both(array_rows, idx, src, torch.zeros(32, 32), n)
    rows = idx[0].tolist()
    c = rows[n]
    rows[0] = c - 16 if c > 16 else c + 1
    want = torch.zeros(32, 32)
    for k in range(n + 1):
        want[rows[k]] = src[0]
    assert torch.equal(dst, want)


def test_an_array_index_past_its_end_stops_the_kernel_where_it_is_read():
    for platform in PLATFORMS:
        with pytest.raises(PyptoError, match="index 9 is outside the array's 8 elements"):
            array_rows(torch.zeros(1, 8, dtype=torch.int32), torch.zeros(1, 32), torch.zeros(32, 32), 9,
                       config=RunConfig(platform=platform))


def test_an_array_of_task_ids_in_a_kernel_is_refused():
    module, path = kernel_module("""
        @pl.jit
        def k(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                ids = pl.array.create(2, pl.TASK_ID)  # MARK
                pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], out)
            return out
    """)
    with pytest.raises(ParseError, match="pl.array.create of TaskIds is the orchestration's") as info:
        module.k(torch.zeros(16, 64), torch.zeros(16, 64))
    assert info.value.hint
