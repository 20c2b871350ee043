"""The MX (microscaling) cube's arithmetic: what one MX MMAD computes, defined here once
(``numerics.matmul_mx``, so the interpreter and the simulator, call ``mmad_mx``).

The formats are the OCP Microscaling (MX) specification's: elements FP8 E4M3 (no inf; the
one NaN code S.1111.111), FP8 E5M2 (IEEE-like: inf S.11111.00, NaN S.11111.{01,10,11}) and
FP4 E2M1 (no inf, no NaN), each block of 32 elements along K sharing one E8M0 scale (2**(c -
127); code 0xFF is NaN, and a NaN scale makes every element of its block NaN). Both operands
arrive as their codes (uint8, one element each); A's scales are [M, K / 32], B's [K / 32, N]
(the logical layout: the MX_A_ZZ / MX_B_NN packing is the load's business).

The contract is the cube's (DESIGN.md §8), with the MX block as the fractal block:

- K is cut into blocks of 32 from k = 0 (K a multiple of 32). A block's sum of products
  sa * a_k * sb * b_k is exact, then rounded once to fp32 (to nearest, ties to even; past
  fp32's range it is +-inf by that rounding's overflow rule). An exact zero is -0 only when
  every product is -0. A NaN product (a NaN element or scale, 0 x inf) or +inf beside -inf
  makes the block NaN; otherwise an infinite product makes it that inf.
- The block sums are added to the fp32 accumulator (or the bias row) in K order, one fp32
  add per block; with neither, the first block's sum is where it starts.

How it is computed: every finite element is an integer A times a fixed power of two of its
format (E4M3: 2**-9, E5M2: 2**-16, E2M1: 2**-1), |A| < 2**32. Split into 16-bit limbs, a
block's four limb products sum exactly in float64 (each below 2**37), their exact sum is
carried into two int64 words, rounded to odd in float64 (53 >= 24 + 2 bits, so rounding
that once more to fp32 is the exact sum's rounding), scaled by the block's power of two
(exact) and rounded to fp32. Non-finite values and the signs of zeros come from indicator
counts (0/1 matmuls, exact).
"""

from __future__ import annotations

import attrs
import torch

BLOCK = 32  # elements of K sharing one scale (the OCP MX block size)
SCALE_BIAS = 127
SCALE_NAN = 0xFF


@attrs.frozen
class Format:
    """An MX element format: its bit fields and the power of two its integers count."""

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    inf: bool  # all-ones exponent with a zero mantissa is inf (E5M2), else finite or NaN
    nan: str  # "ieee": all-ones exponent with a nonzero mantissa; "top": the one all-ones code; "none"

    @property
    def bits(self) -> int:
        return 1 + self.exp_bits + self.man_bits

    @property
    def shift(self) -> int:
        """A finite element is A * 2**-shift with A an integer."""
        return self.bias + self.man_bits - 1


E4M3 = Format("fp8e4m3fn", 4, 3, 7, inf=False, nan="top")
E5M2 = Format("fp8e5m2", 5, 2, 15, inf=True, nan="ieee")
E2M1 = Format("fp4e2m1", 2, 1, 1, inf=False, nan="none")
FORMATS = {f.name: f for f in (E4M3, E5M2, E2M1)}


@attrs.frozen
class Decoded:
    """Elements as the arithmetic reads them: the signed integer A (0 where not finite), the
    sign, and which are NaN, inf or zero. All int64, the codes' shape."""

    value: torch.Tensor
    negative: torch.Tensor
    nan: torch.Tensor
    inf: torch.Tensor
    zero: torch.Tensor


def decode(codes: torch.Tensor, fmt: Format) -> Decoded:
    """The elements of ``fmt`` whose codes (uint8, the low ``fmt.bits`` bits) are ``codes``."""
    c = codes.to(torch.int64) & ((1 << fmt.bits) - 1)
    sign = (c >> (fmt.bits - 1)) & 1
    e = (c >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1)
    m = c & ((1 << fmt.man_bits) - 1)
    top = e == (1 << fmt.exp_bits) - 1
    if fmt.nan == "ieee":
        nan = top & (m != 0)
    elif fmt.nan == "top":
        nan = top & (m == (1 << fmt.man_bits) - 1)
    else:
        nan = torch.zeros_like(top)
    inf = top & (m == 0) if fmt.inf else torch.zeros_like(top)
    magnitude = torch.where(e == 0, m, ((1 << fmt.man_bits) + m) << (e - 1).clamp(min=0))
    magnitude = torch.where(nan | inf, 0, magnitude)
    value = torch.where(sign == 1, -magnitude, magnitude)
    return Decoded(value, sign, nan.to(torch.int64), inf.to(torch.int64), ((magnitude == 0) & ~nan & ~inf).to(torch.int64))


def mmad_mx(a: torch.Tensor, a_scale: torch.Tensor, a_format: Format, b: torch.Tensor, b_scale: torch.Tensor,
            b_format: Format, acc: torch.Tensor | None = None) -> torch.Tensor:
    """``acc + (sa * a) @ (sb * b)`` as the MX cube computes it (the module doc): ``a`` [M, K]
    and ``b`` [K, N] element codes, ``a_scale`` [M, K/32] and ``b_scale`` [K/32, N] E8M0 codes
    (uint8), ``acc`` [M, N] fp32 (or a bias row [1, N]) or None. An fp32 result."""
    m, k = a.shape
    n = b.shape[-1]
    if k % BLOCK or b.shape[0] != k or a_scale.shape != (m, k // BLOCK) or b_scale.shape != (k // BLOCK, n):
        raise ValueError(f"MX operands [M, K] [M, K/32] [K, N] [K/32, N] with K a multiple of {BLOCK}, got "
                         f"{tuple(a.shape)} {tuple(a_scale.shape)} {tuple(b.shape)} {tuple(b_scale.shape)}")
    g = k // BLOCK
    da, db = decode(a, a_format), decode(b, b_format)
    sa, sb = a_scale.to(torch.int64), b_scale.to(torch.int64)
    # a NaN scale makes its whole block NaN
    nan_a = da.nan | (sa == SCALE_NAN).to(torch.int64).repeat_interleave(BLOCK, 1)
    nan_b = db.nan | (sb == SCALE_NAN).to(torch.int64).repeat_interleave(BLOCK, 0)

    def blocks_a(x):  # [M, K] -> [G, M, 32]
        return x.reshape(m, g, BLOCK).permute(1, 0, 2).to(torch.float64)

    def blocks_b(x):  # [K, N] -> [G, 32, N]
        return x.reshape(g, BLOCK, n).to(torch.float64)

    def count(x, y):  # per block and output element: sum over the block of x * y (0/1 indicators: exact)
        return torch.bmm(blocks_a(x), blocks_b(y))

    sums = _exact_sums(blocks_a, blocks_b, da.value, db.value)  # [G, M, N], rounded to odd
    # the block's power of two: both scales and both formats' fixed points
    power = (sa.T[:, :, None] + sb[:, None, :] - 2 * SCALE_BIAS - a_format.shift - b_format.shift)
    block = torch.ldexp(sums, power.to(torch.float64)).to(torch.float32)

    # zeros: -0 only when every product is -0 (a zero by a finite value of the other sign)
    fin_a, fin_b = 1 - da.nan - da.inf, 1 - db.nan - db.inf
    pos_a, neg_a = 1 - da.negative, da.negative
    pos_b, neg_b = 1 - db.negative, db.negative
    neg_zero = (count(da.zero * pos_a, fin_b * neg_b) + count(da.zero * neg_a, fin_b * pos_b)
                + count(fin_a * pos_a * (1 - da.zero), db.zero * neg_b)
                + count(fin_a * neg_a * (1 - da.zero), db.zero * pos_b))
    # (a nonzero sum that rounds to zero keeps its sign: only exact zeros are decided here)
    block = torch.where(sums == 0, torch.where(neg_zero == BLOCK, -0.0, 0.0).to(torch.float32), block)
    # infinities: a product is inf when one factor is inf and the other a nonzero non-NaN
    live_a, live_b = (1 - da.zero) * (1 - nan_a), (1 - db.zero) * (1 - nan_b)
    pos_inf = (count(da.inf * pos_a, live_b * pos_b) + count(da.inf * neg_a, live_b * neg_b)
               + count(live_a * pos_a * (1 - da.inf), db.inf * pos_b)
               + count(live_a * neg_a * (1 - da.inf), db.inf * neg_b))
    neg_inf = (count(da.inf * pos_a, live_b * neg_b) + count(da.inf * neg_a, live_b * pos_b)
               + count(live_a * pos_a * (1 - da.inf), db.inf * neg_b)
               + count(live_a * neg_a * (1 - da.inf), db.inf * pos_b))
    nan = (count(nan_a, torch.ones_like(nan_b)) + count(torch.ones_like(nan_a), nan_b)
           + count(da.zero * (1 - nan_a), db.inf) + count(da.inf, db.zero * (1 - nan_b))) > 0
    nan |= (pos_inf > 0) & (neg_inf > 0)
    block = torch.where(pos_inf > 0, torch.inf, torch.where(neg_inf > 0, -torch.inf, block))
    block = torch.where(nan, torch.nan, block)

    out = None if acc is None else acc.to(torch.float32).expand(m, n).clone()
    for s in block.unbind(0):  # K order, one fp32 add per block
        out = s.clone() if out is None else out + s
    return torch.zeros(m, n) if out is None else out


# The scale buffers' packings (the reference's MX_A_ZZ / MX_B_NN, as its system test packs
# them): A's logical [M, G] in bands of 16 rows, each band's column pairs one after another;
# B's logical [G, N] in bands of 16 columns, each band's row pairs one after another.
BAND, PAIR = 16, 2


def unpack_a(packed: torch.Tensor) -> torch.Tensor:
    """A's logical [M, K/32] scales from their MX_A_ZZ packing."""
    m, g = packed.shape
    return packed.reshape(m // BAND, g // PAIR, BAND, PAIR).permute(0, 2, 1, 3).reshape(m, g)


def unpack_b(packed: torch.Tensor) -> torch.Tensor:
    """B's logical [K/32, N] scales from their MX_B_NN packing."""
    g, n = packed.shape
    return packed.reshape(n // BAND, g // PAIR, BAND, PAIR).permute(1, 3, 0, 2).reshape(g, n)


def pack_a(logical: torch.Tensor) -> torch.Tensor:
    m, g = logical.shape
    return logical.reshape(m // BAND, BAND, g // PAIR, PAIR).permute(0, 2, 1, 3).reshape(m, g)


def pack_b(logical: torch.Tensor) -> torch.Tensor:
    g, n = logical.shape
    return logical.reshape(g // PAIR, PAIR, n // BAND, BAND).permute(2, 0, 3, 1).reshape(g, n)


_LIMB = 16


def _exact_sums(blocks_a, blocks_b, va: torch.Tensor, vb: torch.Tensor) -> torch.Tensor:
    """Per block and output element, the exact sum of va * vb over the block (|v| < 2**32),
    as a float64 rounded to odd."""
    sign_a, sign_b = torch.where(va < 0, -1, 1), torch.where(vb < 0, -1, 1)
    ma, mb = va.abs(), vb.abs()
    a_hi, a_lo = blocks_a(sign_a * (ma >> _LIMB)), blocks_a(sign_a * (ma & 0xFFFF))
    b_hi, b_lo = blocks_b(sign_b * (mb >> _LIMB)), blocks_b(sign_b * (mb & 0xFFFF))

    def exact(x, y):  # each sum below 2**37: exact in float64, then an int64
        return torch.bmm(x, y).to(torch.int64)

    high = exact(a_hi, b_hi)  # counts 2**32
    low = ((exact(a_hi, b_lo) + exact(a_lo, b_hi)) << _LIMB) + exact(a_lo, b_lo)  # |low| < 2**55
    high = high + (low >> 32)  # carry: low now in [0, 2**32)
    low = low & 0xFFFFFFFF
    h = high.to(torch.float64) * 2.0 ** 32  # exact: |high| < 2**40
    lo = low.to(torch.float64)
    s = h + lo
    # round to odd: where h + lo was inexact and s is even, step to the odd neighbour on the
    # exact sum's side (TwoSum's error term tells the side)
    bv = s - h
    err = (h - (s - bv)) + (lo - bv)
    even = (s.view(torch.int64) & 1) == 0
    step = torch.nextafter(s, torch.where(err > 0, torch.inf, -torch.inf))
    return torch.where((err != 0) & even, step, s)
