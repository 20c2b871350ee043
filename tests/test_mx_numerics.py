"""The MX matmul's arithmetic (``pypto.sim.ops.mx_math``) against an exact oracle written here
from the OCP Microscaling specification: every element format (FP8 E4M3, FP8 E5M2, FP4
E2M1) and the E8M0 scales, all codes — NaN, inf, the largest finite values, subnormals,
signed zeros — each block's sum exact and rounded once to fp32, the blocks added in K order."""

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.sim.ops import mx_math
from pypto.sim.ops.mx_math import E2M1, E4M3, E5M2

NAN = "nan"


def element(code: int, fmt) -> object:
    """The value of one element code, from the specification's fields: a Fraction, a signed
    zero as (0, sign), NaN, or +-inf as a float."""
    bits = 1 + fmt.exp_bits + fmt.man_bits
    code &= (1 << bits) - 1
    sign = -1 if code >> (bits - 1) else 1
    e = (code >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1)
    m = code & ((1 << fmt.man_bits) - 1)
    if fmt is E5M2 and e == 31:
        return NAN if m else sign * math.inf
    if fmt is E4M3 and e == 15 and m == 7:
        return NAN
    if e == 0:
        value = Fraction(m, 1 << fmt.man_bits) * Fraction(2) ** (1 - fmt.bias)
    else:
        value = (1 + Fraction(m, 1 << fmt.man_bits)) * Fraction(2) ** (e - fmt.bias)
    return (0, sign) if value == 0 else sign * value


def scale(code: int) -> object:
    return NAN if code == 0xFF else Fraction(2) ** (code - 127)


def product(x, y):
    """x * y, each a value as ``element`` gives it (scaled)."""
    if x is NAN or y is NAN:
        return NAN
    if isinstance(x, float) or isinstance(y, float):  # an inf
        if isinstance(x, tuple) or isinstance(y, tuple):
            return NAN  # 0 x inf
        return math.copysign(math.inf, (1 if x > 0 else -1) * (1 if y > 0 else -1))
    if isinstance(x, tuple) or isinstance(y, tuple):
        sx = x[1] if isinstance(x, tuple) else (1 if x > 0 else -1)
        sy = y[1] if isinstance(y, tuple) else (1 if y > 0 else -1)
        return (0, sx * sy)
    return x * y


def times_scale(x, s):
    if s is NAN or x is NAN:
        return NAN
    if isinstance(x, (float, tuple)):
        return x
    return x * s


def to_fp32(x: Fraction) -> np.float32:
    """The fp32 nearest x, ties to even; +-inf past the range."""
    sign = -1 if x < 0 else 1
    x = abs(x)
    top = Fraction(2) ** 128 - Fraction(2) ** 103  # the largest finite plus half its ulp
    if x >= top:
        return np.float32(sign * np.inf)
    e = max(math.floor(math.log2(x)) if x else -126, -126)
    while Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    e = max(e, -126)
    ulp = Fraction(2) ** (e - 23)
    q = x / ulp
    n = math.floor(q)
    if q - n > Fraction(1, 2) or (q - n == Fraction(1, 2) and n % 2):
        n += 1
    value = np.float32(float(n * ulp))
    return np.float32(-value) if sign < 0 else value


def block_sum(products: list) -> np.float32:
    if any(p is NAN for p in products):
        return np.float32(np.nan)
    infs = {p for p in products if isinstance(p, float)}
    if len(infs) == 2:
        return np.float32(np.nan)
    if infs:
        return np.float32(infs.pop())
    total = sum((p for p in products if not isinstance(p, tuple)), Fraction(0))
    if total == 0:
        all_negative = all(isinstance(p, tuple) and p[1] < 0 for p in products)
        return np.float32(-0.0) if all_negative else np.float32(0.0)
    return to_fp32(total)


def oracle(a, sa, fa, b, sb, fb, acc=None):
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n), dtype=np.float32)
    for i in range(m):
        for j in range(n):
            value = None if acc is None else np.float32(acc[0 if acc.shape[0] == 1 else i, j])
            for g in range(k // 32):
                terms = [product(times_scale(element(int(a[i, kk]), fa), scale(int(sa[i, g]))),
                                 times_scale(element(int(b[kk, j]), fb), scale(int(sb[g, j]))))
                         for kk in range(g * 32, g * 32 + 32)]
                s = block_sum(terms)
                value = s if value is None else np.float32(value + s)
            out[i, j] = value
    return out


def same_bits(x: torch.Tensor, y: np.ndarray) -> bool:
    x = x.numpy()
    both_nan = np.isnan(x) & np.isnan(y)
    return bool(np.all(both_nan | (x.view(np.uint32) == y.view(np.uint32))))


FORMAT = st.sampled_from([E4M3, E5M2, E2M1])


def _special(fmt) -> list:
    top = (1 << (1 + fmt.exp_bits + fmt.man_bits)) - 1
    half = top >> 1
    return [0, half + 1, 1, half + 2, half, top, half - 1, top - 1]  # zeros, subnormals, NaN/inf/largest


@st.composite
def codes(draw, fmt, shape):
    """Codes of ``fmt``: random ones (any code but NaN and inf, so blocks are mostly
    finite), with a few positions set to special ones (NaN, inf, the largest, zeros,
    subnormals)."""
    top = (1 << (1 + fmt.exp_bits + fmt.man_bits)) - 1
    x = torch.randint(0, top + 1, shape, generator=torch.Generator().manual_seed(draw(st.integers(0, 2**32))))
    x = x.to(torch.uint8)
    nonfinite = mx_math.decode(x, fmt)
    x = torch.where((nonfinite.nan | nonfinite.inf).bool(), x & ((1 << fmt.man_bits) - 1), x)
    flat = x.reshape(-1)
    for _ in range(draw(st.integers(0, 3))):
        flat[draw(st.integers(0, flat.numel() - 1))] = draw(st.sampled_from(_special(fmt)))
    return x


@st.composite
def scales(draw, shape):
    """E8M0 codes near 1.0 mostly, with a few at the extremes (2**-127, 2**127) or NaN."""
    x = torch.randint(117, 138, shape, generator=torch.Generator().manual_seed(draw(st.integers(0, 2**32))))
    x = x.to(torch.uint8)
    flat = x.reshape(-1)
    for _ in range(draw(st.integers(0, 2))):
        flat[draw(st.integers(0, flat.numel() - 1))] = draw(st.sampled_from([0, 1, 254, 255, 20, 230]))
    return x


@st.composite
def cases(draw):
    fa, fb = draw(FORMAT), draw(FORMAT)
    m, n, g = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    k = 32 * g
    a, b = draw(codes(fa, (m, k))), draw(codes(fb, (k, n)))
    if draw(st.booleans()):  # cancellation: b's columns the same, a's halves opposite
        b = b[:, :1].repeat(1, n)
    sa = draw(scales((m, g)) if draw(st.booleans()) else st.just(torch.full((m, g), 127, dtype=torch.uint8)))
    sb = draw(scales((g, n)) if draw(st.booleans()) else st.just(torch.full((g, n), 127, dtype=torch.uint8)))
    acc = draw(st.sampled_from([None, "acc", "bias"]))
    if acc is not None:
        rows = 1 if acc == "bias" else m
        acc = torch.tensor(draw(st.lists(st.floats(width=32, allow_nan=True), min_size=rows * n, max_size=rows * n)),
                           dtype=torch.float32).reshape(rows, n)
    return a, sa, fa, b, sb, fb, acc


@settings(max_examples=300, deadline=None)
@given(cases())
def test_the_mx_cube_is_the_exact_oracle_over_every_format(case):
    a, sa, fa, b, sb, fb, acc = case
    got = mx_math.mmad_mx(a, sa, fa, b, sb, fb, acc)
    want = oracle(a.numpy(), sa.numpy(), fa, b.numpy(), sb.numpy(), fb, None if acc is None else acc.numpy())
    assert same_bits(got, want), (got, want)


@pytest.mark.parametrize("fmt,code,value", [
    (E4M3, 0x7E, 448.0), (E4M3, 0x01, 2.0 ** -9), (E4M3, 0x08, 2.0 ** -6), (E4M3, 0x7F, NAN), (E4M3, 0xFF, NAN),
    (E5M2, 0x7B, 57344.0), (E5M2, 0x01, 2.0 ** -16), (E5M2, 0x7C, math.inf), (E5M2, 0xFC, -math.inf),
    (E5M2, 0x7D, NAN), (E2M1, 0x7, 6.0), (E2M1, 0x1, 0.5), (E2M1, 0xF, -6.0), (E2M1, 0x8, (0, -1)),
])
def test_the_formats_are_the_ocp_specifications(fmt, code, value):
    """The largest finite values, the least subnormals and the special codes of each format
    (OCP MX v1.0, tables 1 and 2), decoded both ways."""
    assert element(code, fmt) == value or (value is NAN and element(code, fmt) is NAN)
    d = mx_math.decode(torch.tensor([code], dtype=torch.uint8), fmt)
    if value is NAN:
        assert int(d.nan[0]) == 1
    elif isinstance(value, float) and math.isinf(value):
        assert int(d.inf[0]) == 1 and (int(d.negative[0]) == 1) == (value < 0)
    elif isinstance(value, tuple):
        assert int(d.zero[0]) == 1 and int(d.negative[0]) == 1
    else:
        assert int(d.value[0]) * 2.0 ** -fmt.shift == value


def test_a_nan_scale_makes_its_block_nan_and_only_its_block():
    a = torch.full((1, 64), 0x38, dtype=torch.uint8)  # E4M3 1.0
    b = torch.full((64, 2), 0x38, dtype=torch.uint8)
    sa = torch.tensor([[127, 127]], dtype=torch.uint8)
    sb = torch.tensor([[0xFF, 127], [127, 127]], dtype=torch.uint8)
    got = mx_math.mmad_mx(a, sa, E4M3, b, sb, E4M3)
    assert math.isnan(got[0, 0]) and got[0, 1] == 64.0


def _row(fmt_codes: list, k: int = 32) -> torch.Tensor:
    return torch.tensor(fmt_codes + [0] * (k - len(fmt_codes)), dtype=torch.uint8)


ONES = torch.full((1, 1), 127, dtype=torch.uint8)


@pytest.mark.parametrize("sign", [0, 0x80])
def test_a_block_sum_past_53_bits_is_rounded_once(sign):
    """2**30 + 2**6 + 2**-30 (E5M2: 2**15 * 2**15 + 2**3 * 2**3 + 2**-15 * 2**-15) lies just
    above the midpoint of two fp32 values; rounded to float64 first it would be the midpoint
    itself, and ties-to-even would round it down."""
    a = _row([0x78 | sign, 0x48 | sign, 0x02 | sign])[None]
    b = _row([0x78, 0x48, 0x02])[:, None]
    got = mx_math.mmad_mx(a, ONES, E5M2, b, ONES, E5M2)
    want = oracle(a.numpy(), ONES.numpy(), E5M2, b.numpy(), ONES.numpy(), E5M2)
    assert same_bits(got, want) and abs(float(got[0, 0])) == 2.0 ** 30 * (1 + 2.0 ** -23)


@pytest.mark.parametrize("a_codes,b_codes,scale,want", [
    ([0x80] * 32, [0x38] * 32, 127, "-0"),  # every product -0: the sum is -0
    ([0x80] * 31 + [0x00], [0x38] * 32, 127, "+0"),  # one +0 product: +0
    ([0x38, 0xB8], [0x38, 0x38], 127, "+0"),  # 1 - 1: an exact zero of nonzero products is +0
    ([0x81], [0x01], 0, "-0"),  # -2**-18 * 2**-254: rounds to zero, keeping the sign
    ([0x7E, 0x7E], [0x7E, 0x7E], 200, "+inf"),  # past fp32's range: +inf by rounding
])
def test_signed_zeros_and_overflow(a_codes, b_codes, scale, want):
    a, b = _row(a_codes)[None], _row(b_codes)[:, None]
    s = torch.full((1, 1), scale, dtype=torch.uint8)
    got = mx_math.mmad_mx(a, s, E4M3, b, s, E4M3)
    value = float(got[0, 0])
    assert (value, math.copysign(1, value)) == {"-0": (0.0, -1), "+0": (0.0, 1), "+inf": (math.inf, 1)}[want]
    assert same_bits(got, oracle(a.numpy(), s.numpy(), E4M3, b.numpy(), s.numpy(), E4M3))


@pytest.mark.parametrize("a_codes,b_codes,want", [
    ([0x7C, 0x7C], [0x3C, 0xBC], "nan"),  # +inf and -inf products
    ([0x7C, 0x3C], [0x3C, 0xBC], "+inf"),  # +inf beside a finite product
    ([0x7C], [0x00], "nan"),  # inf x 0
    ([0x7D], [0x3C], "nan"),  # a NaN element
])
def test_infinities_and_nans_of_e5m2(a_codes, b_codes, want):
    a, b = _row(a_codes)[None], _row(b_codes)[:, None]
    got = float(mx_math.mmad_mx(a, ONES, E5M2, b, ONES, E5M2)[0, 0])
    assert math.isnan(got) if want == "nan" else got == math.inf
