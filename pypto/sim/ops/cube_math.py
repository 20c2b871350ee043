"""The cube's arithmetic: what one MMAD computes, defined here once (``numerics.matmul`` and
``numerics.batch_matmul``, so the interpreter and the simulator, call ``mmad``).

The contract (DESIGN.md §8):

- K is cut into fractal blocks of 32 bytes of the operand dtype (16 fp16/bf16, 8 fp32, 32
  int8), aligned from the instruction's k = 0; when K is not a multiple, the last block is
  shorter (the padding adds exact zeros).
- A block's dot product is exact, then rounded once to fp32 (to nearest, ties to even; an
  exact sum past fp32's range is +-inf by that rounding's overflow rule). An exact zero is
  -0 only when every product is -0 (IEEE addition of the exact products); a zero that a
  nonzero sum rounds to keeps the sum's sign. A NaN product (a NaN operand, 0 x inf) or
  +inf beside -inf makes the block NaN; otherwise an infinite product makes it that inf.
- The block sums are added to the fp32 accumulator in K order, one fp32 add per block; with
  no accumulator the first block's sum is where it starts.
- int8 -> int32 is exact, wrapping modulo 2**32.

An MMAD over [k0, k1), k0 a multiple of the block, onto the accumulator of [0, k0) is thus
the unsliced product's continuation: slicing K at block multiples keeps the bits.

How it is computed: the operands in float64 (every product of two fp16/bf16/fp32 values is
exact there: at most 48 significant bits, exponents within -298..256), one batched float64
matmul of [blocks, M, block] by [blocks, block, N] gives every block's sum s, and each s is
taken when one of two cheap bounds proves that rounding it to fp32 gives the exact sum's
rounding, so no double rounding slips through:

1. *exact*: per block, the operands' largest magnitude and smallest ulp bound every product
   and partial sum; when they all fit 53 bits (``_exact_bits``) every order of float64
   additions is exact, so s is the exact sum (fp16 and bf16 operands of a block mostly do).
2. *one cell*: any order of additions errs by less than a bound E (Higham's gamma_{n-1}
   times the sum of magnitudes, with margin; ``_cell``). When s - E and s + E round to the
   same fp32 bits, every value between them — the exact sum among them — rounds there too
   (fp32 operands, whose 48-bit products rarely pass 1, mostly do).

The rest take an exact fallback (``_exact_blocks``: the products scaled to integers, summed
as Python ints, rounded by integer arithmetic). Non-finite operands and the signs of exact
zeros are decided from indicator counts (0/1 matmuls, exact), not from what the float64
matmul gave; the zeros' signs only where the result is a zero (``_float``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from pypto.backend import CUBE_K_BYTES

# significand bits and the smallest normal exponent of each float operand dtype
_FORMAT = {torch.float16: (11, -14), torch.bfloat16: (8, -126), torch.float32: (24, -126)}
# the integer view of each, the mask of its magnitude bits, the magnitude bits of +inf, where
# the exponent field starts, and its bias
_BITS = {torch.float16: (torch.int16, 0x7FFF, 0x7C00, 10, 15), torch.bfloat16: (torch.int16, 0x7FFF, 0x7F80, 7, 127),
         torch.float32: (torch.int32, 0x7FFFFFFF, 0x7F800000, 23, 127)}
_NONE = 1 << 12  # the exponent span of a block with no nonzero operand: far below any bound (fits int16)
_CHUNK = 1 << 16  # float64 block sums computed at once (512 KiB: a chunk's passes stay in L2)
_SEGMENT = 1 << 17  # operand elements of K laid out at once (1 MiB in float64: a long K joined costs no more per block)
_SCALE = 300  # 2**300 makes every product of two fp32 values an integer (the least is 2**-298)


def block_elems(dtype: torch.dtype) -> int:
    """The elements of ``dtype`` one fractal block of K holds."""
    return CUBE_K_BYTES // torch.empty((), dtype=dtype).element_size()


def mmad(a: torch.Tensor, b: torch.Tensor, acc: torch.Tensor | None = None) -> torch.Tensor:
    """``acc + a @ b`` as the cube computes it (the module doc): ``a`` [M, K] or [P, M, K],
    ``b`` [K, N] or [P, K, N] (pages paired one to one), ``acc`` [(P,) M, N] or None. An
    fp32 (int32 for int8) result; NaNs are whatever NaN the arithmetic gives (the caller
    applies the NaN policy)."""
    if a.dim() == 2:
        return mmad(a[None], b[None], None if acc is None else acc[None])[0]
    if a.dtype != b.dtype:
        raise TypeError(f"the cube multiplies operands of one dtype, not {a.dtype} and {b.dtype}")
    if a.dtype == torch.int8:
        return _int8(a, b, acc)
    if a.dtype not in _FORMAT:
        raise TypeError(f"the cube does not multiply {a.dtype}")
    return _float(a, b, acc)


def _int8(a, b, acc):
    # |product| <= 2**14, so K < 2**39 of them sum exactly in float64 in any order
    out = torch.matmul(a.to(torch.float64), b.to(torch.float64)).to(torch.int64)
    if acc is not None:
        out += acc.to(torch.int64)
    return out.to(torch.int32)  # narrowing wraps modulo 2**32


# ----------------------------------------------------------------------------- floats


def _float(a, b, acc, signed=False):
    """``signed``: every block sum's zero with its sign. Otherwise a zero block sum's sign is
    whatever float64's additions gave, and only the zeros of the result are computed again,
    signed: a nonzero result never depends on a zero's sign (x + -0 = x + +0 = x for x != 0,
    and an fp32 sum of two nonzero values that is zero is +0 whatever came before), so
    the blocks' zeros need their signs only where the result is a zero."""
    pages, m, k = a.shape
    n = b.shape[-1]
    length = block_elems(a.dtype)
    blocks = -(-k // length)
    out = None if acc is None else acc.to(torch.float32)
    if blocks == 0:
        return torch.zeros(pages, m, n) if out is None else out.clone()
    per = max(1, _CHUNK // (pages * m * n))
    # a long K in segments of whole blocks, each continuing the last's accumulator (the
    # contract's slicing rule): a segment's float64 operands stay in cache
    seg = max(1, _SEGMENT // (pages * (m + n) * length))
    owned = False  # whether ``out`` is this function's own tensor (not the caller's acc)
    for s0 in range(0, blocks, seg):
        k0, k1 = s0 * length, min(k, (s0 + seg) * length)
        count = -(-(k1 - k0) // length)
        ops = _Operands(a[..., k0:k1], b[:, k0:k1], length, count) if blocks > seg else _Operands(a, b, length, blocks)
        for j0 in range(0, count, per):
            sums = ops.sums(j0, min(count, j0 + per), signed)
            for block in sums.unbind(1):  # K order, one fp32 add per block
                if owned:
                    out.add_(block)
                else:
                    out = block.clone() if out is None else out + block
                    owned = True
    if not signed and int(torch.count_nonzero(out)) < out.numel():
        _sign_zeros(out, a, b, acc)
    return out


def _sign_zeros(out, a, b, acc):
    """The zeros of ``out`` computed again with every block's zero signed: on the pages,
    rows and columns that hold one (zero-padded rows of a tile: those rows)."""
    where = (out == 0).nonzero()
    (pages, page), (rows, row), (cols, col) = (torch.unique(x, return_inverse=True) for x in where.unbind(1))
    a, b = a[pages][:, rows], b[pages][:, :, cols]
    acc = None if acc is None else acc[pages][:, rows][:, :, cols]
    out[tuple(where.unbind(1))] = _float(a, b, acc, signed=True)[page, row, col]


class _Operands:
    """Both operands cut into blocks of K, in float64 ([P, blocks, M, L] and [P, blocks, L,
    N], a short last block padded with zeros), with what the bounds read of each block of
    a row of a and of a column of b."""

    def __init__(self, a, b, length, blocks):
        pages, m, k = a.shape
        n = b.shape[-1]
        full, tail = divmod(k, length)
        self.length, self.k = length, k
        self.precision, self.emin = _FORMAT[a.dtype]
        self.c = length.bit_length() - 1  # log2 of the block (a power of two)
        # one pass converts and lays out each operand by blocks
        self.a = (torch.zeros if tail else torch.empty)(pages, blocks, m, length, dtype=torch.float64)
        self.a[:, :full].copy_(a[..., :full * length].reshape(pages, m, full, length).transpose(1, 2))
        self.b = (torch.zeros if tail else torch.empty)(pages, blocks * length, n, dtype=torch.float64)
        self.b[:, :k].copy_(b)
        if tail:
            self.a[:, full, :, :tail].copy_(a[..., full * length:])
        self.b = self.b.reshape(pages, blocks, length, n)
        pad = blocks * length - k
        a, b = (a, b) if pad == 0 else (F.pad(a, (0, pad)), F.pad(b, (0, 0, 0, pad)))
        # a's rows' blocks beside b's columns', as they are (one narrow copy): [P, blocks, M + N, L]
        top, span, bad = self._spans(torch.cat([a.reshape(pages, m, blocks, length).transpose(1, 2),
                                                b.reshape(pages, blocks, length, n).transpose(2, 3)], 2), a.dtype)
        self.top_a, self.top_b = top[..., :m], top[..., m:]
        self.span_a, self.span_b = span[..., :m], span[..., m:]
        self.bad_a, self.bad_b = bad[..., :m], bad[..., m:]
        self.finite = not bool(bad.any())
        self._bound(blocks)

    def _spans(self, x, dtype):
        """Per block (the last axis): the exponent ``top`` of its largest magnitude (every
        element is below 2**(top + 1)), the span top - bot, bot the exponent of its
        smallest nonzero magnitude's ulp (every element is a multiple of 2**bot), and
        whether it holds an infinity or a NaN. Read from the bits as integers, whose order
        is the magnitudes' (two reductions of the operands as they are)."""
        view, mask, inf, shift, bias = _BITS[dtype]
        bits = x.view(view) & mask
        high = bits.amax(-1)
        low = ((bits - 1) & mask).amin(-1) + 1  # a zero wraps to the largest: never the least
        # exponent fields: a subnormal's (0) is taken as 1, the least normal one (top then
        # bounds it from above, bot is its ulp exactly)
        top = torch.clamp(high >> shift, min=1)
        span = top - torch.clamp(low >> shift, min=1) + (self.precision - 1)
        bad = high >= inf
        quiet = (high == 0) | bad  # no bound to take: nothing to add, or a special block
        return (top - bias).masked_fill_(quiet, -_NONE), span.masked_fill_(quiet, -_NONE), bad

    def _bound(self, blocks):
        """Which pairs of a block's row and column the exact bound does not take, for all
        blocks at once: ``failing`` per block; when they are few (fp16, bf16), their [F, 4]
        indices (block, page, row, column), block by block (``starts``); when most are
        (fp32), ``_cell``'s E per block."""
        limit = _exact_bits(self.c)
        span_a, span_b = self.span_a, self.span_b
        self.failing, self.pairs = [0] * blocks, None
        if bool((span_a.amax(-1) + span_b.amax(-1) <= limit).all()):
            return  # each block's worst row with its worst column is exact
        # per row, the columns past the bound: those whose span exceeds limit - the row's
        ordered = span_b.sort(-1).values.contiguous()
        over = span_b.shape[-1] - torch.searchsorted(ordered, (limit - span_a).contiguous(), right=True)
        self.failing = over.sum((0, 2)).tolist()
        if sum(self.failing) * 8 < over.numel() * span_b.shape[-1]:
            rows = over.transpose(0, 1).nonzero()  # (block, page, row), block-major
            j, p, i = rows.unbind(1)
            cols = (span_b[p, j] > (limit - span_a[p, j, i])[:, None]).nonzero()
            self.pairs = torch.cat([rows[cols[:, 0]], cols[:, 1:]], 1)
            self.starts = torch.searchsorted(self.pairs[:, 0].contiguous(), torch.arange(blocks + 1)).tolist()
        else:  # 2**(top_a + top_b + 2c - 48) with each block's largest tops
            self.e_block = _pow2(self.top_a.amax(-1) + 2 * self.c - 48) * _pow2(self.top_b.amax(-1))

    def tiers(self, j0, j1):
        """Blocks j0..j1: their float64 sums s [P, j1 - j0, M, N]; which have a non-finite
        operand (a mask, or None); how many fail the exact bound; and the [P, block, M, N]
        indices (blocks from j0) that neither bound takes, for ``_exact_blocks``."""
        s = torch.matmul(self.a[:, j0:j1], self.b[:, j0:j1])
        special = None
        if not self.finite:
            special = self.bad_a[:, j0:j1, :, None] | self.bad_b[:, j0:j1, None, :]
            special = special if bool(special.any()) else None
        failing = sum(self.failing[j0:j1])
        if failing == 0:
            return s, special, 0, torch.zeros(0, 4, dtype=torch.int64)
        if self.pairs is not None:  # a few (fp16, bf16): the cell test where the exact bound fails
            j, p, i, q = self.pairs[self.starts[j0]:self.starts[j1]].unbind(1)
            where = torch.stack([p, j - j0, i, q], 1)
        else:  # most (fp32): the exact bound where a coarse cell test fails
            where = self._cell(s, j0, j1)
            p, j, i, q = where.unbind(1)
            where = where[self.span_a[p, j + j0, i] + self.span_b[p, j + j0, q] > _exact_bits(self.c)]
        where = where[~self._cell_at(s, where, j0)]
        if special is not None:
            where = where[~special[tuple(where.unbind(1))]]
        return s, special, failing, where

    def sums(self, j0, j1, signed):
        """The fp32 block sums of blocks j0..j1: [P, j1 - j0, M, N]; ``signed``: with an
        exact zero's sign decided (else it is float64's: see ``_float``)."""
        s, special, _, left = self.tiers(j0, j1)
        out = s.to(torch.float32)
        # an exact sum of zero (where either bound holds, s == 0 only then) takes its sign
        # from the products, not from the order of float64's additions
        zero = s == 0 if signed and int(torch.count_nonzero(out)) < out.numel() else None
        if len(left):
            exact_zero = self._exact_blocks(out, left, j0)
            if zero is not None:  # their s may be 0 (cancelled) and their sums not, or the reverse
                zero[tuple(left.unbind(1))] = exact_zero
            elif signed and bool(exact_zero.any()):
                zero = torch.zeros_like(out, dtype=torch.bool)
                zero[tuple(left.unbind(1))] = exact_zero
        if zero is not None and special is not None:
            zero &= ~special
        if zero is not None and bool(zero.any()):
            out = torch.where(zero, self._zero_signs(j0, j1), out)
        if special is not None:
            out = torch.where(special, self._special(j0, j1, out), out)
        return out

    def _cell(self, s, j0, j1):
        """The [P, block, M, N] indices where s - E and s + E round to other fp32 bits, E =
        2**(top_a + top_b + 2c - 48) with each block's largest tops: the sum of magnitudes
        is below L 2**(top_a + top_b + 2), so E is at least ``_cell_at``'s bound."""
        e = self.e_block[:, j0:j1, None, None]
        low, high = (torch.empty(s.shape, dtype=torch.float32) for _ in range(2))
        torch.sub(s, e, out=low)  # in float64, rounded to fp32 as it is written
        torch.add(s, e, out=high)
        return (high.view(torch.int32) - low.view(torch.int32)).nonzero()  # (faster than ne on a sparse mask)

    def _cell_at(self, s, where, j0):
        """Where, at the [P, block, M, N] indices ``where``, s - E and s + E round to the
        same fp32 bits, with E = 8 L 2**-53 S and S the float64 sum of the products'
        magnitudes. Any order of float64 additions errs by at most gamma_{L-1} times the
        exact sum of magnitudes, below L 2**-53 S (S itself errs by gamma_{L-1}): an eighth
        of E; s -+ E round by at most 2**-53 (|s| + E) < E / 4 (|s| is about S at most);
        so [s - E, s + E] as computed holds the exact sum, and if both ends round to the
        same fp32 value, so does it."""
        p, j, i, q = where.unbind(1)
        magnitudes = (self.a[p, j + j0, i].abs() * self.b[p, j + j0, :, q].abs()).sum(-1)
        e = magnitudes * (8 * self.length * 2.0 ** -53)
        v = s[p, j, i, q]
        return (v - e).to(torch.float32).view(torch.int32) == (v + e).to(torch.float32).view(torch.int32)

    def _exact_blocks(self, out, where, j0):
        """The blocks at ``where`` summed exactly (the products scaled to integers, added as
        Python ints) and rounded into ``out``; whether each exact sum is zero, for
        ``_zero_signs``."""
        p, j, i, q = where.unbind(1)
        products = self.a[p, j + j0, i] * 2.0 ** _SCALE * self.b[p, j + j0, :, q]
        sums = [sum(map(int, row)) for row in products.tolist()]
        out[p, j, i, q] = torch.tensor([_round_fp32(v) for v in sums], dtype=torch.float32)
        return torch.tensor([v == 0 for v in sums], dtype=torch.bool)

    def _lengths(self, j0, j1):
        """Each block's own length (the last is shorter when K is not a multiple)."""
        ends = torch.clamp(torch.arange(j0 + 1, j1 + 1) * self.length, max=self.k)
        return (ends - torch.arange(j0, j1) * self.length).to(torch.float32)

    def _zero_signs(self, j0, j1):
        """-0 where every product of the block is -0, else +0. A product is -0 when one
        operand is zero and the signs differ: with u, v the signs (+-1) and z the zero
        flags, 2 [(za or zb) and u != v] = 1 - uv - (1-za)(1-zb) + (1-za)u (1-zb)v, a sum
        of products of a term of a and a term of b — one exact small-integer matmul."""
        a, b = self.a[:, j0:j1], self.b[:, j0:j1]
        u, v = 1 - 2 * torch.signbit(a).to(torch.float32), 1 - 2 * torch.signbit(b).to(torch.float32)
        nz_a, nz_b = (a != 0).to(torch.float32), (b != 0).to(torch.float32)
        twice = torch.matmul(torch.cat([torch.ones_like(u), -u, -nz_a, nz_a * u], -1),
                             torch.cat([torch.ones_like(v), v, nz_b, nz_b * v], -2))
        every = twice == 2 * self._lengths(j0, j1)[:, None, None]
        return torch.where(every, torch.tensor(-0.0), torch.tensor(0.0))

    def _special(self, j0, j1, out):
        """Blocks with an infinite or NaN operand: NaN where a product is NaN (NaN x
        anything, inf x 0) or +inf meets -inf, else the infinity of the infinite products
        (counted with exact 0/1 matmuls: a BLAS may skip a zero operand, IEEE may not)."""
        an, ap, am, az, apos, aneg = _flags(self.a[:, j0:j1])
        bn, bp, bm, bz, bpos, bneg = _flags(self.b[:, j0:j1])
        one_a, one_b = torch.ones_like(an), torch.ones_like(bn)
        nan = torch.matmul(torch.cat([an, one_a, ap + am, az], -1), torch.cat([one_b, bn, bz, bp + bm], -2))
        signs = torch.cat([ap, am, apos, aneg], -1)
        plus = torch.matmul(signs, torch.cat([bpos, bneg, bp, bm], -2))
        minus = torch.matmul(signs, torch.cat([bneg, bpos, bm, bp], -2))
        nan = (nan > 0) | ((plus > 0) & (minus > 0))
        inf = torch.where(plus > 0, math.inf, -math.inf).to(torch.float32)
        return torch.where(nan, math.nan, torch.where((plus > 0) | (minus > 0), inf, out))


def block_tiers(a: torch.Tensor, b: torch.Tensor) -> dict[str, int]:
    """How many blocks of float ``a @ b`` (``mmad``'s operands) each way of computing takes:
    ``exact`` (the float64 sum is exact), ``cell`` (rounding it is provably the exact sum's
    rounding), ``fallback`` (summed exactly with integers), ``special`` (a non-finite
    operand). For the benchmark, and for the tests that each way is exercised."""
    if a.dim() == 2:
        a, b = a[None], b[None]
    length = block_elems(a.dtype)
    blocks = -(-a.shape[-1] // length)
    ops = _Operands(a, b, length, blocks)
    counts = dict.fromkeys(("exact", "cell", "fallback", "special"), 0)
    for j0 in range(blocks):
        s, special, failing, left = ops.tiers(j0, j0 + 1)
        specials = 0 if special is None else int(special.sum())
        counts["special"] += specials
        counts["exact"] += s.numel() - failing - specials
        counts["cell"] += failing - len(left)
        counts["fallback"] += len(left)
    return counts


def _flags(x: torch.Tensor) -> list[torch.Tensor]:
    """0/1 tensors: NaN, +inf, -inf, zero, above zero, below zero."""
    return [f.to(torch.float32) for f in (torch.isnan(x), x == math.inf, x == -math.inf, x == 0, x > 0, x < 0)]


def _exact_bits(c: int) -> int:
    """The largest span_a + span_b at which a block of 2**c products sums exactly in
    float64: every product is a multiple of 2**(bot_a + bot_b) below 2**(top_a + top_b +
    2), a partial sum below 2**(top_a + top_b + 2 + c), so all are integers below 2**53
    times that multiple when span_a + span_b + 2 + c <= 53."""
    return 51 - c


def _pow2(e: torch.Tensor) -> torch.Tensor:
    """2**e in float64 (0 below its normal range: for blocks with no nonzero operand)."""
    return (torch.clamp(e.to(torch.int64) + 1023, min=0) << 52).view(torch.float64)


def _round_fp32(scaled: int) -> float:
    """``scaled * 2**-_SCALE`` rounded to fp32 (nearest, ties to even; past the range,
    infinity), by integer arithmetic: no intermediate rounding."""
    if scaled == 0:
        return 0.0
    magnitude = abs(scaled)
    exponent = magnitude.bit_length() - 1 - _SCALE  # of the leading bit
    ulp = max(exponent, -126) - 23  # fp32 keeps 24 bits, fewer below its normal range
    shift = ulp + _SCALE
    if shift > 0:
        q, rest = divmod(magnitude, 1 << shift)
        half = 1 << (shift - 1)
        q += rest > half or (rest == half and q & 1)
    else:
        q = magnitude << -shift
    value = math.ldexp(q, ulp) if ulp < 128 else math.inf
    value = math.inf if value >= 2.0 ** 128 else value
    return -value if scaled < 0 else value
