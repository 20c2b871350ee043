"""Casts at the edges: every rounding mode into FP16, BF16 and FP32 against an exact
(``fractions.Fraction``) model of IEEE 754 rounding — near and past the largest finite
value (a nearest mode overflows to infinity, a mode rounding toward zero stops at the
largest finite value), subnormals, ties, NaN and infinities — from float64, fp32 and
integer sources, in ``numerics`` and in kernels on both platforms. And the integer edges: a
tile's cast between integer types saturates, a scalar's keeps the low bits (as
``numerics.scalar`` wraps), a float past int64's range saturates."""

import functools
import math
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.fuzz import strategies as ps
from pypto.ir.types import DataType as D
from pypto.runtime import RunConfig
from pypto.sim.ops import numerics as num

PLATFORMS = ("ref", "a2a3sim")
MODES = ("round", "rint", "floor", "ceil", "trunc", "odd", "none")
# significand bits (with the implicit one), the least normal exponent, the largest exponent
FORMATS = {D.FP16: (11, -14, 15), D.BF16: (8, -126, 127), D.FP32: (24, -126, 127)}


def _exponent(a: Fraction) -> int:
    """e with 2**e <= a < 2**(e + 1), for a > 0."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def ieee(value, target: D, mode: str) -> float:
    """The exact ``value`` (a float, int or Fraction) rounded into ``target`` as IEEE 754
    says for the mode (``odd``: toward zero, then the odd neighbour if that was inexact)."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value) or value == 0):
        return value
    p, emin, emax = FORMATS[target]
    x = Fraction(value)
    if x == 0:
        return 0.0
    negative, a = x < 0, abs(x)
    biggest = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    quantum = Fraction(2) ** (max(_exponent(a), emin) - p + 1)
    k, rest = divmod(a, quantum)
    k, rest = int(k), rest / quantum
    lo, hi = k * quantum, (k + 1) * quantum
    away = mode == "ceil" and not negative or mode == "floor" and negative
    if rest == 0:
        m = lo
    elif mode in ("trunc", "floor", "ceil"):
        m = hi if away else lo
    elif mode == "odd":
        m = lo if k % 2 else hi
    elif rest != Fraction(1, 2):
        m = lo if rest < Fraction(1, 2) else hi
    else:  # a tie
        m = hi if mode == "round" or k % 2 else lo
    if m > biggest:  # past the range: infinity, or the largest finite where the mode rounds toward zero
        m = math.inf if mode in ("round", "rint", "none") or away else biggest
    out = float(m)
    return -out if negative else out


def same(got: torch.Tensor, want: list[float], target: D) -> bool:
    return ps.bits_equal(got, num.canonical_nan(torch.tensor(want, dtype=torch.float64).to(num.TORCH[target])))


def edges(target: D):
    """Exact values near the format's own: its largest finite value and past it, its
    subnormals, its ties and near-ties (a value of the format plus a fraction of its ulp
    as fine as 2**-30), any value of it, and the specials."""
    p, emin, emax = FORMATS[target]
    biggest = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    tiny = Fraction(2) ** (emin - p + 1)
    anchors = st.one_of(
        st.sampled_from([Fraction(0), tiny, 2 * tiny, Fraction(2) ** emin - tiny, Fraction(2) ** emin, Fraction(1),
                         biggest, biggest - Fraction(2) ** (emax - p + 1), Fraction(2) ** (emax + 1)]),
        st.integers(emin - p + 1, emax).flatmap(
            lambda e: st.integers(0, 2 ** (p - 1) - 1).map(lambda m: (2 ** (p - 1) + m) * Fraction(2) ** (e - p + 1))))
    offsets = st.one_of(st.sampled_from([Fraction(0), Fraction(1, 2), Fraction(-1, 2)]),
                        st.integers(1, 30).flatmap(lambda j: st.integers(-3 * 2 ** j, 3 * 2 ** j).map(
                            lambda n: Fraction(n, 2 ** j))),
                        st.integers(1, 30).map(lambda j: Fraction(1, 2) + Fraction(1, 2 ** j)),
                        st.integers(1, 30).map(lambda j: Fraction(1, 2) - Fraction(1, 2 ** j)),
                        st.integers(2, 2 ** 20).map(Fraction))  # far past the anchor (and past the range)

    def place(anchor, offset, negative):
        ulp = Fraction(2) ** (max(_exponent(anchor), emin) - p + 1) if anchor else tiny
        v = float(anchor + offset * ulp)  # as a float64 (the property rounds that, exactly)
        return -v if negative else v
    finite = st.builds(place, anchors, offsets, st.booleans())
    past = st.builds(place, st.just(biggest), offsets.map(abs), st.booleans())  # from the largest finite value out
    return st.one_of(finite, past, st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, -1e308,
                                                    5e-324, -5e-324]))


TARGETS = st.sampled_from(sorted(FORMATS, key=lambda d: d.name))


@given(target=TARGETS, mode=st.sampled_from(MODES), data=st.data())
def test_property_float64_rounds_into_every_format_as_ieee_says(target, mode, data):
    values = data.draw(st.lists(edges(target), min_size=4, max_size=16))
    got = num._round_float(torch.tensor(values, dtype=torch.float64), num.TORCH[target], mode)
    assert same(num.canonical_nan(got), [ieee(v, target, mode) for v in values], target), values


def as_fp32(v: float) -> float:
    return float(torch.tensor(v, dtype=torch.float64).to(torch.float32))


@given(target=st.sampled_from([D.FP16, D.BF16]), mode=st.sampled_from(MODES), data=st.data())
def test_property_fp32_tiles_cast_as_ieee_says(target, mode, data):
    values = [as_fp32(v) for v in data.draw(st.lists(edges(target), min_size=4, max_size=16))]
    got = num.cast(torch.tensor(values, dtype=torch.float32), target, mode)
    assert same(got, [ieee(v, target, mode) for v in values], target), values


@given(target=TARGETS, data=st.data())
def test_property_integers_cast_to_floats_as_ieee_says(target, data):
    p = FORMATS[target][0]
    # big ints at, next to and between the target's values (its ties), off by quarters of a
    # float64 ulp (past 2**53 float64 itself rounds them: once, to odd, is what keeps them apart)
    exponents = st.one_of(st.integers(53, 62), st.integers(p, 62))
    near = exponents.flatmap(lambda e: st.tuples(
        st.sampled_from([2 ** e, 2 ** e + 2 ** (e - p), 2 ** e + 2 ** (e - p + 1), 2 ** e + 3 * 2 ** (e - p)]),
        st.integers(-12, 12).map(lambda k: k * 2 ** max(0, e - 54)), st.sampled_from([1, -1]))).map(
        lambda t: t[2] * (t[0] + t[1]))
    ints = st.one_of(near, st.integers(-2 ** 63, 2 ** 63 - 1), st.sampled_from([-2 ** 63, 2 ** 63 - 1, 0, 65504,
                                                                               65519, 65520, 70000]))
    values = data.draw(st.lists(ints.map(lambda v: max(-2 ** 63, min(2 ** 63 - 1, v))), min_size=4, max_size=16))
    for dtype in (torch.int64, torch.int32):
        vs = [v for v in values if torch.iinfo(dtype).min <= v <= torch.iinfo(dtype).max] or [0]
        for mode in MODES:  # (one draw for all: the draws are the expensive part)
            got = num.cast(torch.tensor(vs, dtype=dtype), target, mode)
            assert same(got, [ieee(v, target, mode) for v in vs], target), (dtype, mode, vs)


@pytest.mark.parametrize("target, mode, x, want", [
    (D.FP16, "trunc", 70000.0, 65504.0), (D.FP16, "floor", 65520.0, 65504.0), (D.FP16, "ceil", -70000.0, -65504.0),
    (D.FP16, "rint", 65520.0, math.inf), (D.FP16, "round", 65519.0, 65504.0), (D.FP16, "round", 65520.0, math.inf),
    (D.FP16, "odd", 1e30, 65504.0), (D.FP16, "floor", -70000.0, -math.inf), (D.FP16, "ceil", 70000.0, math.inf),
    (D.BF16, "trunc", 3.4e38, 3.3895313892515355e38), (D.FP16, "trunc", math.inf, math.inf),
])
def test_the_edges_the_issue_names(target, mode, x, want):
    assert same(num.cast(torch.tensor([x]), target, mode), [want], target)


@functools.lru_cache(maxsize=None)
def cast_kernel(target: D, mode: str, n: int):
    dt = getattr(pl, target.name)

    @pl.jit
    def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.cast(pl.load(a, [0, 0], [1, n]), target_type=dt, mode=mode), [0, 0], out)
        return out
    return kernel


@settings(max_examples=max(6, settings().max_examples // 3))
@given(target=st.sampled_from([D.FP16, D.BF16]), mode=st.sampled_from(MODES), data=st.data())
def test_property_kernels_cast_at_the_edges_as_ieee_says_on_both_platforms(target, mode, data):
    values = [as_fp32(v) for v in data.draw(st.lists(edges(target), min_size=16, max_size=16))]
    want = [ieee(v, target, mode) for v in values]
    for platform in PLATFORMS:
        out = torch.zeros(1, 16, dtype=num.TORCH[target])
        cast_kernel(target, mode, 16)(torch.tensor([values], dtype=torch.float32), out,
                                      config=RunConfig(platform=platform))
        assert same(out[0], want, target), (platform, values)


# ----------------------------------------------------------------------------- integers

INTS = (D.INT8, D.INT16, D.INT32, D.INT64, D.UINT8, D.UINT16, D.UINT32)


def int_edges(dtype: D):
    info = torch.iinfo(num.TORCH[dtype])
    return st.one_of(st.sampled_from([info.min, info.max, 0, -1 if info.min else 1, 127, 128, -129, 255, 256, 300]),
                     st.integers(info.min, info.max)).map(lambda v: max(info.min, min(info.max, v)))


@given(src=st.sampled_from(INTS), dst=st.sampled_from(INTS), data=st.data())
def test_property_a_tiles_integer_cast_saturates(src, dst, data):
    values = data.draw(st.lists(int_edges(src), min_size=1, max_size=16))
    info = torch.iinfo(num.TORCH[dst])
    got = num.cast(torch.tensor(values, dtype=torch.int64).to(num.TORCH[src]), dst, "round")
    assert got.dtype == num.TORCH[dst]
    assert got.to(torch.int64).tolist() == [max(info.min, min(info.max, v)) for v in values]


@pl.jit
def narrows(a: pl.Tensor, s: pl.Tensor, o8: pl.Out[pl.Tensor], o16: pl.Out[pl.Tensor], u8: pl.Out[pl.Tensor],
            w8: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [1, 16])
        pl.store(pl.cast(t, target_type=pl.INT8), [0, 0], o8)
        pl.store(pl.cast(t, target_type=pl.INT16), [0, 0], o16)
        pl.store(pl.cast(t, target_type=pl.UINT8), [0, 0], u8)
        v = pl.cast(pl.read(s, [0]), pl.INT8)  # the scalar unit's conversion
        pl.store(pl.adds(pl.tile.full([1, 16], pl.INT8, 0), v), [0, 0], w8)
    return o8, o16, u8, w8


@settings(max_examples=max(4, settings().max_examples // 4))
@given(values=st.lists(int_edges(D.INT32), min_size=16, max_size=16), scalar=int_edges(D.INT32))
def test_property_kernels_saturate_a_tiles_integer_cast_and_wrap_a_scalars(values, scalar):
    a = torch.tensor([values], dtype=torch.int32)
    for platform in PLATFORMS:
        outs = [torch.zeros(1, 16, dtype=d) for d in (torch.int8, torch.int16, torch.uint8, torch.int8)]
        narrows(a, torch.tensor([scalar], dtype=torch.int32), *outs, config=RunConfig(platform=platform))
        for out, dst in zip(outs[:3], (D.INT8, D.INT16, D.UINT8)):
            info = torch.iinfo(num.TORCH[dst])
            assert out[0].tolist() == [max(info.min, min(info.max, v)) for v in values], (platform, dst)
        assert outs[3][0].tolist() == [int(num.scalar(scalar, D.INT8))] * 16, platform  # the low bits
        assert int(num.scalar(scalar, D.INT8)) == (scalar + 128) % 256 - 128


def test_a_float_past_int64s_range_saturates():
    x = torch.tensor([1e19, -1e19, math.inf, -math.inf, math.nan, 2.0 ** 62], dtype=torch.float32)
    assert num.cast(x, D.INT64, "rint").tolist() == [2 ** 63 - 1, -2 ** 63, 2 ** 63 - 1, -2 ** 63, 0, 2 ** 62]


@pytest.mark.parametrize("dtype", [torch.int32, torch.uint8, torch.float16, torch.float32], ids=str)
def test_a_cast_to_bool_is_nonzero(dtype):
    x = torch.tensor([0, 1, 2, 0], dtype=dtype)
    assert num.cast(x, D.BOOL).tolist() == [False, True, True, False]
