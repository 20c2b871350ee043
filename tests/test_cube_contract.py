"""The cube's numerics contract (``pypto.sim.ops.cube_math``; DESIGN.md §8): K in fractal blocks of
32 bytes of the operand dtype, each block's dot product exact and rounded once to fp32, the
block sums added to the fp32 accumulator in K order. Checked against an exact oracle (Python
fractions) over adversarial values; and through kernels on both platforms, where any slicing
of K at block multiples — the tensor-level cube chain's, a user's K loop — gives the bits of
one unsliced matmul, and a slice that starts elsewhere keeps its own blocks."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch
from hypothesis import event, given
from hypothesis import strategies as st

import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.sim.ops import cube_math
from pypto.sim.ops import numerics as num

FLOATS = (torch.float16, torch.bfloat16, torch.float32)
PLATFORMS = ("ref", "a2a3sim")
BITS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32}
LARGEST = {torch.float16: 65504.0, torch.bfloat16: 3.3895313892515355e38, torch.float32: 3.4028234663852886e38}
SMALLEST = {torch.float16: 2.0 ** -24, torch.bfloat16: 2.0 ** -133, torch.float32: 2.0 ** -149}
TINIEST_NORMAL = {torch.float16: 2.0 ** -14, torch.bfloat16: 2.0 ** -126, torch.float32: 2.0 ** -126}


# ----------------------------------------------------------------------------- the oracle


def _fp32(x: Fraction) -> float:
    """An exact rational rounded to fp32: nearest, ties to even, past the range infinity."""
    if x == 0:
        return 0.0
    m = abs(x)
    e = m.numerator.bit_length() - m.denominator.bit_length()
    e += 1 if Fraction(2) ** (e + 1) <= m else 0
    e -= 1 if Fraction(2) ** e > m else 0
    ulp = Fraction(2) ** (max(e, -126) - 23)
    q, rest = divmod(m, ulp)
    q += 1 if rest > ulp / 2 or (rest == ulp / 2 and q % 2) else 0
    value = math.inf if q * ulp >= 2 ** 128 else float(q * ulp)
    return -value if x < 0 else value


def _block(xs: list[float], ys: list[float]) -> float:
    """One block: NaN for a NaN product or +inf beside -inf, the infinity of infinite
    products, else the exact sum rounded once; an exact zero is -0 iff every product is."""
    products = [x * y for x, y in zip(xs, ys)]  # only their class is read from these floats
    if any(math.isnan(p) for p in products):
        return math.nan
    infinite = {p for p in products if math.isinf(p)}
    if infinite:
        return math.nan if len(infinite) == 2 else infinite.pop()
    exact = sum((Fraction(x) * Fraction(y) for x, y in zip(xs, ys)), Fraction(0))
    if exact == 0:
        negative = all((x == 0 or y == 0) and math.copysign(1, x) != math.copysign(1, y) for x, y in zip(xs, ys))
        return -0.0 if negative else 0.0
    return _fp32(exact)


def _add(x: float, y: float) -> float:
    """IEEE fp32 addition of two fp32 values, by exact arithmetic."""
    if math.isnan(x) or math.isnan(y) or (math.isinf(x) and math.isinf(y) and x != y):
        return math.nan
    if math.isinf(x) or math.isinf(y):
        return x if math.isinf(x) else y
    exact = Fraction(x) + Fraction(y)
    if exact == 0:
        return -0.0 if math.copysign(1, x) < 0 and math.copysign(1, y) < 0 else 0.0
    return _fp32(exact)


def oracle(a: torch.Tensor, b: torch.Tensor, acc: torch.Tensor | None = None) -> torch.Tensor:
    """The contract written plainly, element by element, in exact arithmetic."""
    m, k = a.shape
    n = b.shape[1]
    length = 32 // a.element_size()
    rows, cols = a.double().tolist(), b.double().T.tolist()
    out = torch.empty(m, n)
    for i in range(m):
        for j in range(n):
            total = None if acc is None else float(acc[i, j])
            for k0 in range(0, k, length):
                s = _block(rows[i][k0:k0 + length], cols[j][k0:k0 + length])
                total = s if total is None else _add(total, s)
            out[i, j] = total
    return num.canonical_nan(out)


def same_bits(x: torch.Tensor, y: torch.Tensor) -> bool:
    return num.bits_equal(x, y)


# ----------------------------------------------------------------------------- values


def _specials(dtype, nonfinite: bool) -> list[float]:
    big, small, normal = LARGEST[dtype], SMALLEST[dtype], TINIEST_NORMAL[dtype]
    out = [0.0, -0.0, 1.0, -1.0, big, -big, small, -small, normal, -normal, big / 2, 2.0 ** 11 + 1]
    if dtype is not torch.float16:
        out += [2.0 ** 127, -(2.0 ** 127), 2.0 ** 100, 2.0 ** -100]  # products past fp32's range
    return out + ([math.inf, -math.inf, math.nan] if nonfinite else [])


def _of(dtype, x: float) -> float:
    return torch.tensor(x, dtype=torch.float64).to(dtype).item()


# per dtype: the exponent field's shift, its mask and its bias
EXPONENT = {torch.float16: (10, 0x1F, 15), torch.bfloat16: (7, 0xFF, 127), torch.float32: (23, 0xFF, 127)}


def values(dtype, nonfinite: bool):
    """The dtype's edges (subnormals, the largest, bf16's 2**127), small integers (exact
    cancellations, ties), and values near 1."""
    return st.one_of(st.sampled_from(_specials(dtype, nonfinite)), st.integers(-9, 9).map(float),
                     st.floats(-4, 4).map(lambda x: _of(dtype, x)))


@st.composite
def operands(draw, dtype, nonfinite: bool, k=None):
    """a [M, K], b [K, N] of ``dtype`` (K below, at and past block multiples) and maybe an
    fp32 accumulator. Each entry is, as a byte drawn for it says, a value of a small pool
    (signed either way: products cancel, sums tie), any bit pattern of the dtype, or one
    whose exponent is near 1's (both from bytes drawn at once: fast to draw)."""
    length = cube_math.block_elems(dtype)
    m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    k = k or draw(st.integers(1, 3 * length + 3))
    pool = torch.tensor(draw(st.lists(values(dtype, nonfinite), min_size=1, max_size=4)), dtype=torch.float64)

    def matrix(rows, cols, of=dtype):
        count, view = rows * cols, BITS[of]
        width = torch.empty((), dtype=view).element_size()
        raw = torch.frombuffer(bytearray(draw(st.binary(min_size=count * width, max_size=count * width))),
                               dtype=view).clone()
        pick = torch.frombuffer(bytearray(draw(st.binary(min_size=count, max_size=count))),
                                dtype=torch.uint8).to(torch.int64)
        shift, field, bias = EXPONENT[of]
        near = (raw & ~(field << shift)) | ((bias - 3 + (raw >> shift & 7)) << shift).to(view)
        anything = raw.view(of)
        if not nonfinite:
            anything = torch.where(torch.isfinite(anything), anything, near.view(of))
        pooled = pool[(pick >> 2) % len(pool)] * torch.where(pick & 64 > 0, -1.0, 1.0)
        kind = pick & 3
        out = torch.where(kind < 2, pooled.to(of), torch.where(kind == 2, anything, near.view(of)))
        return out.reshape(rows, cols)

    a, b = matrix(m, k), matrix(k, n)
    return a, b, (matrix(m, n, torch.float32) if draw(st.booleans()) else None)


def _events(a, b):
    for tier, count in cube_math.block_tiers(a, b).items():
        if count:
            event(tier)


# ----------------------------------------------------------------------------- numerics


@pytest.mark.parametrize("nonfinite", [False, True], ids=["finite", "nonfinite"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: str(d).removeprefix("torch."))
@given(data=st.data())
def test_property_mmad_is_the_exact_oracle(dtype, nonfinite, data):
    a, b, acc = data.draw(operands(dtype, nonfinite))
    _events(a, b)
    got = num.matmul(a, b, acc)
    assert same_bits(got, oracle(a, b, acc)), (a, b, acc, got, oracle(a, b, acc))


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: str(d).removeprefix("torch."))
@given(data=st.data())
def test_property_slicing_k_at_block_multiples_keeps_the_bits(dtype, data):
    """A first matmul over [0, k1), then matmul_acc over each next slice, all starting at
    block multiples, is the unsliced product — whatever the slices' lengths."""
    length = cube_math.block_elems(dtype)
    a, b, acc = data.draw(operands(dtype, data.draw(st.booleans()), k=data.draw(st.integers(length + 1, 6 * length))))
    k = a.shape[1]
    cuts = sorted(set(data.draw(st.lists(st.integers(1, (k - 1) // length), max_size=4))))
    bounds = [0, *(c * length for c in cuts), k]
    got = acc
    for k0, k1 in zip(bounds, bounds[1:]):
        got = num.matmul(a[:, k0:k1], b[k0:k1], got)
    assert same_bits(got, num.matmul(a, b, acc))


@given(data=st.data())
def test_property_batched_pages_are_each_page_s_matmul(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    pages = [data.draw(operands(dtype, True, k=17)) for _ in range(3)]
    rows, cols = min(p[0].shape[0] for p in pages), min(p[1].shape[1] for p in pages)
    a = torch.stack([p[0][:rows] for p in pages])
    b = torch.stack([p[1][:, :cols] for p in pages])
    acc = torch.stack([num.matmul(x, y) for x, y in zip(a, b)])  # an accumulator with signed zeros, NaNs
    got = num.batch_matmul(a, b, acc)
    assert all(same_bits(got[i], num.matmul(a[i], b[i], acc[i])) for i in range(3))


@given(st.integers(1, 70).flatmap(lambda k: st.tuples(
    st.lists(st.integers(-128, 127), min_size=2 * k, max_size=2 * k),
    st.lists(st.integers(-128, 127), min_size=3 * k, max_size=3 * k),
    st.lists(st.integers(-(2 ** 31), 2 ** 31 - 1), min_size=6, max_size=6))))
def test_property_int8_is_exact_and_wraps_in_int32(lists):
    x, y, z = lists
    k = len(x) // 2
    a, b = torch.tensor(x, dtype=torch.int8).reshape(2, k), torch.tensor(y, dtype=torch.int8).reshape(k, 3)
    acc = torch.tensor(z, dtype=torch.int32).reshape(2, 3)
    got = num.matmul(a, b, acc)
    for i in range(2):
        for j in range(3):
            exact = z[i * 3 + j] + sum(x[i * k + t] * y[t * 3 + j] for t in range(k))
            assert got[i, j].item() == (exact + 2 ** 31) % 2 ** 32 - 2 ** 31


def test_a_block_float64_rounds_is_not_taken_for_exact():
    """bf16 products 2^24, 1, 2^-20 (1 + 2^-6 + 2^-14) and -2^-20 (1 + 2^-6): exactly
    2^24 + 1 + 2^-34, just above an fp32 tie, so 2^24 + 2; float64 (ulp 2^-28 there) drops
    the 2^-34 (in the order its BLAS sums here) and lands on the tie, which rounds to
    2^24. The block's largest exponents and least ulps leave it 58 bits wide: past the
    exact bound, close enough that a bound a few bits loose would take float64's sum."""
    a, b = torch.zeros(4, 16), torch.zeros(16, 4)
    a[:, :4] = torch.tensor([2.0 ** 12, 1.0, 2.0 ** -10 * (1 + 2 ** -7), 2.0 ** -10 * (1 + 2 ** -6)])
    b[:4, :] = torch.tensor([2.0 ** 12, 1.0, 2.0 ** -10 * (1 + 2 ** -7), -(2.0 ** -10)])[:, None]
    a, b = a.bfloat16(), b.bfloat16()
    assert same_bits(num.matmul(a, b), torch.full((4, 4), 2.0 ** 24 + 2))
    assert same_bits(num.matmul(a, b), oracle(a, b))


def test_each_way_of_computing_a_block_is_taken():
    """The three tiers and the special values each decide some blocks (on randn operands:
    fp16/bf16 blocks are exact in float64, fp32 ones mostly settle in one fp32 cell; a
    cancellation across a wide span needs the integer fallback)."""
    g = torch.Generator().manual_seed(0)
    for dtype, tier in ((torch.bfloat16, "exact"), (torch.float32, "cell")):
        a, b = torch.randn(64, 256, generator=g).to(dtype), torch.randn(256, 64, generator=g).to(dtype)
        tiers = cube_math.block_tiers(a, b)
        assert max(tiers, key=tiers.get) == tier
    a = torch.tensor([[2.0 ** 100, 1.0, -(2.0 ** 100)]], dtype=torch.bfloat16)
    b = torch.tensor([[2.0 ** 20], [2.0 ** -100], [2.0 ** 20]], dtype=torch.bfloat16)
    assert cube_math.block_tiers(a, b)["fallback"] == 1
    assert num.matmul(a, b).item() == 2.0 ** -100  # float64 would have said 0
    a[0, 1] = math.inf
    assert cube_math.block_tiers(a, b)["special"] == 1


def test_the_blocks_round_where_the_contract_says():
    # K = 3, one block: 2^24 + 1 - 2^24, exact, is 1 (one k at a time would give 0)
    a = torch.tensor([[2048.0, 1.0, -2048.0]], dtype=torch.float16)
    b = torch.tensor([[8192.0], [1.0], [8192.0]], dtype=torch.float16)
    assert num.matmul(a, b).item() == 1.0
    # K = 33 in three fp16 blocks: block 0 is 2^24 + 1, a tie, to 2^24; block 2 adds -2^24
    a, b = _spread(33, {0: (2048, 8192), 1: (1, 1), 32: (-2048, 8192)})
    assert num.matmul(a, b).item() == 0.0
    # an fp32 accumulator takes the rounded block sums in K order: 5 + 2^24 -> 2^24 + 4 (tie)
    assert num.matmul(a, b, torch.tensor([[5.0]])).item() == 4.0


def _mm(x, y, dtype=torch.float16, acc=None):
    return num.matmul(torch.tensor(x, dtype=dtype), torch.tensor(y, dtype=dtype),
                      None if acc is None else torch.tensor(acc))


def test_infinities_nans_overflow_and_signed_zeros():
    inf, nan = math.inf, math.nan
    assert math.isnan(_mm([[inf, 1.0]], [[0.0], [1.0]]).item())  # inf x 0
    assert math.isnan(_mm([[inf, inf]], [[1.0], [-1.0]]).item())  # +inf beside -inf
    assert _mm([[inf, 65504.0]], [[1.0], [-65504.0]]).item() == inf  # an infinite product wins
    assert _mm([[nan]], [[1.0]]).view(torch.int32).item() == 0x7FC00000  # the canonical NaN
    assert _mm([[-0.0, 0.0]], [[5.0], [-3.0]]).signbit()  # every product -0: the exact zero is -0
    assert not _mm([[-0.0, 0.0]], [[5.0], [3.0]]).signbit()  # +0 x 3 is +0
    assert not _mm([[1.0, 1.0]], [[5.0], [-5.0]]).signbit()  # a cancelled sum is +0
    assert not _mm([[-0.0]], [[5.0]], acc=[[0.0]]).signbit()  # +0 + -0
    assert _mm([[-0.0]], [[5.0]], acc=[[-0.0]]).signbit()  # -0 + -0
    # a block sum past fp32's range is inf (rounded once); partial sums past it are not
    assert _mm([[2.0 ** 127, 2.0 ** 127]], [[2.0], [2.0]], torch.bfloat16).item() == inf
    assert _mm([[2.0 ** 127, 1.0, -(2.0 ** 127)]], [[4.0], [1.0], [4.0]], torch.bfloat16).item() == 1.0
    # a negative sum below half fp32's least subnormal rounds to -0
    assert _mm([[2.0 ** -100]], [[-(2.0 ** -100)]], torch.bfloat16).signbit()


def _spread(k, at: dict, dtype=torch.float16):
    """[1, k] and [k, 1] zeros with the products ``at[k] = (a, b)``."""
    a, b = torch.zeros(1, k, dtype=dtype), torch.zeros(k, 1, dtype=dtype)
    for i, (x, y) in at.items():
        a[0, i], b[i, 0] = x, y
    return a, b


# ----------------------------------------------------------------------------- kernels


def _both(fn, *args, out_shape):
    outs = []
    for platform in PLATFORMS:
        out = torch.zeros(out_shape)
        fn(*args, out, config=RunConfig(platform=platform))
        outs.append(out)
    assert same_bits(outs[0], outs[1])  # ref == a2a3sim
    return outs[0]


def _tile_k_loop(kb: int):
    """The user's K loop at tile level: a first matmul over [0, kb), matmul_acc over each
    next kb (a shorter last slice where K is not a multiple of kb)."""

    @pl.jit
    def k_loop(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            m, n, k = a.shape[0], b.shape[1], a.shape[1]
            x = pl.move(pl.load(a, [0, 0], [m, kb], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            y = pl.move(pl.load(b, [0, 0], [kb, n], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.matmul(x, y)
            for i in pl.range(1, k // kb):
                x = pl.move(pl.load(a, [0, i * kb], [m, kb], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                y = pl.move(pl.load(b, [i * kb, 0], [kb, n], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
                acc = pl.matmul_acc(acc, x, y)
            pl.store(acc, [0, 0], out)
        return out

    return k_loop


@pl.jit
def tensor_matmul(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.matmul(a, b, out_dtype=pl.FP32), [0, 0])
    return out


def _adversarial(m, k, n, dtype, seed):
    """randn operands with, in the first rows and columns, cancelling huge products, a
    tie of the kind the blocks round, signed zeros, and subnormals."""
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    big = 2.0 ** (7 if dtype is torch.float16 else 60)
    a[0, :6] = torch.tensor([big, 1.0, -big, -0.0, SMALLEST[dtype], 0.0])
    b[:6, 0] = torch.tensor([big, 1.0 / big, big, 3.0, -SMALLEST[dtype], -2.0])
    a[1, :] = -0.0
    b[:, 1] = b[:, 1].abs()  # row 1 by column 1: every product -0
    return a.to(dtype), b.to(dtype)


@pytest.mark.parametrize("dtype, kb", [(torch.float16, 32), (torch.bfloat16, 48), (torch.float32, 24)],
                         ids=["fp16", "bf16", "fp32"])
def test_a_user_k_loop_at_block_multiples_is_one_unsliced_matmul(dtype, kb):
    a, b = _adversarial(16, 4 * kb, 32, dtype, seed=kb)
    out = _both(_tile_k_loop(kb), a, b, out_shape=(16, 32))
    assert same_bits(out, _both(_tile_k_loop(4 * kb), a, b, out_shape=(16, 32)))  # one tile.matmul over K
    assert same_bits(out, num.matmul(a, b))
    assert out[1, 1].signbit() and not out[1, 2].signbit()


@pytest.mark.parametrize("dtype, shape", [(torch.float16, (128, 1024, 256)), (torch.bfloat16, (64, 4096, 64)),
                                          (torch.float16, (128, 600, 150)), (torch.float32, (64, 200, 150)),
                                          (torch.float32, (128, 300, 200))],
                         ids=["fp16-1024", "bf16-4096", "fp16-600", "fp32-200", "fp32-300"])
def test_the_cube_chain_slices_k_at_block_multiples(dtype, shape):
    """A tensor-level matmul is computed in K slices as long as L0 holds. The lengths tried
    include divisors of K off the block grid (600 / 3 = 200 for fp16, 200 / 2 = 100 and
    300 / 4 = 75 for fp32: the longest that fit here); the chain takes only block
    multiples, so it gives the interpreter's unsliced bits."""
    m, k, n = shape
    a, b = _adversarial(m, k, n, dtype, seed=k)
    assert same_bits(_both(tensor_matmul, a, b, out_shape=(m, n)), num.matmul(a, b))


@pl.jit
def odd_slices(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(a[:, 0:40], b[0:40, :], out_dtype=pl.FP32)
        acc = pl.matmul_acc(acc, a[:, 40:80], b[40:80, :])
        out = pl.assemble(out, acc, [0, 0])
    return out


def test_a_k_slice_off_the_block_grid_keeps_its_own_blocks():
    """fp16 slices of 40: [0, 40) is blocks [0, 16) [16, 32) [32, 40) and [40, 80) is
    [40, 56) [56, 72) [72, 80). Products -2^24 at k = 32, 1 at 40, 2^24 at 47: unsliced,
    block [32, 48) sums them exactly to 1; sliced, [40, 56) holds 2^24 + 1, a tie, which
    rounds to 2^24 and cancels: 0. As on the chip, the bits depend on such a slicing."""
    a, b = _spread(80, {32: (-2048, 8192), 40: (1, 1), 47: (2048, 8192)})
    assert num.matmul(a, b).item() == 1.0
    sliced = num.matmul(a[:, 40:], b[40:], num.matmul(a[:, :40], b[:40]))
    assert sliced.item() == 0.0
    out = _both(odd_slices, a, b, out_shape=(1, 1))
    assert same_bits(out, sliced)
    a, b = _adversarial(16, 80, 32, torch.float16, seed=3)
    assert same_bits(_both(odd_slices, a, b, out_shape=(16, 32)),
                     num.matmul(a[:, 40:], b[40:], num.matmul(a[:, :40], b[:40])))
