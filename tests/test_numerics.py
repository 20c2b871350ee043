"""The arithmetic defined once in pypto.sim.ops.numerics: rounding modes, reduction and
matmul order, packed masks; the scalar's conversion to the tile dtype, the min/max rule on
signed zeros, and the NaN policy, on both platforms."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.fuzz import strategies as ps
from pypto.ir.types import DataType as D
from pypto.ir.types import PadValue
from pypto.runtime import RunConfig
from pypto.sim.ops import numerics as num

HALF_ULP_16 = 2.0 ** -11  # half an fp16 ulp at 1.0


@pytest.mark.parametrize("mode, x, want", [
    ("rint", 1 + HALF_ULP_16, 1.0),                       # tie to even
    ("round", 1 + HALF_ULP_16, 1 + 2 * HALF_ULP_16),      # tie away from zero
    ("round", -(1 + HALF_ULP_16), -(1 + 2 * HALF_ULP_16)),
    ("round", 1 + 3 * HALF_ULP_16, 1 + 4 * HALF_ULP_16),  # tie between 1+2u and 1+4u: away
    ("floor", 1 + HALF_ULP_16 / 2, 1.0),
    ("floor", -(1 + HALF_ULP_16 / 2), -(1 + 2 * HALF_ULP_16)),
    ("ceil", 1 + HALF_ULP_16 / 2, 1 + 2 * HALF_ULP_16),
    ("trunc", -(1 + 3 * HALF_ULP_16 / 2), -(1 + 2 * HALF_ULP_16) + 2 * HALF_ULP_16),
    ("odd", 1 + HALF_ULP_16, 1 + 2 * HALF_ULP_16),        # 1 has an even mantissa; the odd neighbour wins
    ("none", 1 + HALF_ULP_16, 1.0),
    ("round", 1.0, 1.0),                                  # exact values stay
])
def test_fp32_to_fp16_rounding_modes(mode, x, want):
    got = num.cast(torch.tensor([x], dtype=torch.float32), D.FP16, mode)
    assert got.dtype == torch.float16
    assert got.item() == want


@pytest.mark.parametrize("mode, want", [
    ("round", [3, -3, 2, -2, 0]), ("rint", [2, -2, 2, -2, 0]), ("floor", [2, -3, 1, -3, 0]),
    ("ceil", [3, -2, 2, -2, 0]), ("trunc", [2, -2, 1, -2, 0]), ("odd", [3, -3, 1, -3, 0]),
])
def test_float_to_int_modes(mode, want):
    x = torch.tensor([2.5, -2.5, 1.5, -2.25, 0.0])
    assert num.cast(x, D.INT32, mode).tolist() == want


def test_float_to_int_saturates_and_maps_nan_to_zero():
    x = torch.tensor([1e10, -1e10, float("nan"), float("inf"), 300.0])
    assert num.cast(x, D.INT32, "round").tolist() == [2**31 - 1, -(2**31), 0, 2**31 - 1, 300]
    assert num.cast(x, D.INT8, "trunc").tolist() == [127, -128, 0, 127, 127]


def test_int_to_float_rounds_once():
    x = torch.tensor([2**24 + 1, 2049], dtype=torch.int32)
    assert num.cast(x, D.FP32, "rint").tolist() == [2**24, 2049.0]
    assert num.cast(x, D.FP16, "rint").tolist()[1] == 2048.0
    assert num.cast(x, D.FP16, "round").tolist()[1] == 2050.0


def test_reductions_combine_pairwise():
    # Sequential summation gives 1 (1e8 + 1 rounds back to 1e8); pairwise halves give 2.
    x = torch.tensor([[1e8, 1.0, -1e8, 1.0]], dtype=torch.float32)
    assert num.reduce_last(x, "sum").item() == 2.0
    assert num.reduce_last(x, "max").item() == 1e8
    odd = torch.tensor([[1.0, 2.0, 4.0, 8.0, 16.0]])
    assert num.reduce_last(odd, "sum").item() == 31.0
    assert num.reduce_first(odd.T.contiguous(), "sum").shape == (1, 1)


def test_matmul_rounds_each_fractal_block_once_and_adds_the_blocks_in_k_order():
    # K = 3 is one fp16 block (16): its exact sum 2^24 + 1 - 2^24 = 1 rounds to itself
    a = torch.tensor([[2048.0, 1.0, -2048.0]], dtype=torch.float16)
    b = torch.tensor([[8192.0], [1.0], [8192.0]], dtype=torch.float16)
    assert num.matmul(a, b).item() == 1.0
    assert num.matmul(a, b, torch.tensor([[5.0]])).item() == 6.0
    # K = 17 is two blocks: block 0's 2^24 + 1 rounds to 2^24 (a tie, to even), block 1 adds -2^24
    a, b = torch.zeros(1, 17, dtype=torch.float16), torch.zeros(17, 1, dtype=torch.float16)
    a[0, 0], a[0, 1], a[0, 16], b[0, 0], b[1, 0], b[16, 0] = 2048, 1, -2048, 8192, 1, 8192
    assert num.matmul(a, b).item() == 0.0
    # 5 + 2^24 -> 2^24 + 4 (a tie, to even); - 2^24 -> 4
    assert num.matmul(a, b, torch.tensor([[5.0]])).item() == 4.0
    ints = num.matmul(torch.tensor([[100, -7]], dtype=torch.int8), torch.tensor([[100], [3]], dtype=torch.int8))
    assert ints.dtype == torch.int32 and ints.item() == 9979


def test_masks_pack_one_bit_per_column():
    pred = torch.tensor([[True, False, True] + [False] * 6 + [True]])
    mask = num.pack_mask(pred, 32)
    assert mask.shape == (1, 32) and mask[0, 0].item() == 0b101 and mask[0, 1].item() == 0b10
    assert torch.equal(num.unpack_mask(mask, 10), pred)


def test_integer_division_by_zero_is_an_error():
    with pytest.raises(num.ArithmeticError_):
        num.div(torch.tensor([1], dtype=torch.int32), torch.tensor([0], dtype=torch.int32))
    assert num.div(torch.tensor([-7], dtype=torch.int32), torch.tensor([2], dtype=torch.int32)).item() == -3


def test_pad_values():
    assert num.pad_value(PadValue.max, D.FP16) == float("inf")
    assert num.pad_value(PadValue.min, D.INT8) == -128
    assert num.pad_value(PadValue.zero, D.FP32) == 0


# ----------------------------------------------------------------------------- the scalar rule


def bits(t: torch.Tensor) -> list[int]:
    """Unsigned bit patterns of a float tensor's elements."""
    width = t.element_size() * 8
    view = {16: torch.int16, 32: torch.int32}[width]
    return [v & ((1 << width) - 1) for v in t.contiguous().view(view).reshape(-1).tolist()]


@pytest.mark.parametrize("value, dtype, want", [
    (0.1, D.FP16, 0x2E66), (0.1, D.BF16, 0x3DCD), (-0.3, D.FP16, 0xB4CD),
    (1 + 2**-11 + 2**-40, D.FP16, 0x3C01),  # just above a tie: torch's float64 -> fp16 gives 0x3C00
    (1 + 2**-8 + 2**-40, D.BF16, 0x3F81),
    (1 + 2**-11, D.FP16, 0x3C00),            # an exact tie: to even
    (-0.0, D.FP16, 0x8000), (65520.0, D.FP16, 0x7C00), (65519.0, D.FP16, 0x7BFF),
    (float("nan"), D.FP16, 0x7E00), (float("-nan"), D.FP32, 0x7FC00000),
])
def test_a_scalar_rounds_once_to_nearest_in_the_tile_dtype(value, dtype, want):
    assert bits(num.scalar(value, dtype).reshape(1)) == [want]


def test_int_to_narrow_float_rounds_once():
    x = torch.tensor([2**24 + 2**16 + 1, -(2**24 + 2**16 + 1), 2**24 + 2**16], dtype=torch.int32)
    # through fp32 the first two become ties and round to even (2**24); the exact value is nearer 2**24 + 2**17
    assert num.cast(x, D.BF16, "rint").double().tolist() == [2**24 + 2**17, -(2**24 + 2**17), 2**24]


def _nearest(v: int, mantissa: int, top: float) -> float:
    """The float with ``mantissa`` significant bits nearest to the integer v (ties to even)."""
    m = abs(v)
    shift = max(m.bit_length() - mantissa, 0)
    q, r = divmod(m, 1 << shift)
    half = (1 << shift) >> 1
    if shift and (r > half or (r == half and q & 1)):
        q += 1
    out = float(q << shift)
    out = float("inf") if out >= top else out
    return -out if v < 0 else out


@given(st.integers(-(2**31), 2**31 - 1))
def test_property_int32_to_fp16_and_bf16_is_the_nearest(v):
    x = torch.tensor([v], dtype=torch.int32)
    assert num.cast(x, D.FP16, "rint").item() == _nearest(v, 11, 65520.0)
    assert num.cast(x, D.BF16, "rint").item() == _nearest(v, 8, 2.0**128)


@given(st.floats(width=32))
def test_property_fp32_to_fp16_is_numpys_nearest(v):
    x = torch.tensor([v], dtype=torch.float32)
    with np.errstate(over="ignore"):  # overflow to inf is the expected rounding
        want = np.float32(v).astype(np.float16)
    got = num.cast(x, D.FP16, "rint")
    if np.isnan(want):
        assert bits(got) == [0x7E00]
    else:
        assert bits(got) == [int(want.view(np.uint16))]


_INT_MODES = {"round": lambda t: np.sign(t) * np.floor(np.abs(t) + 0.5), "rint": np.rint, "floor": np.floor,
              "ceil": np.ceil, "trunc": np.trunc}


@pytest.mark.parametrize("mode", sorted(_INT_MODES))
@given(v=st.floats(width=32))
def test_property_float_to_int_rounds_as_its_mode_says_and_saturates(mode, v):
    x = np.float64(np.float32(v))
    r = 0.0 if np.isnan(x) else float(np.clip(_INT_MODES[mode](x), -(2**31), 2**31 - 1))
    assert num.cast(torch.tensor([v], dtype=torch.float32), D.INT32, mode).item() == int(r)


def _tile_scalar_ops():
    from pypto.sim.ops.semantics import IMPLS, TileVal

    base = {"adds": torch.add, "subs": torch.sub, "muls": torch.mul, "divs": torch.div,
            "maximums": torch.maximum, "minimums": torch.minimum}
    for name, fn in base.items():
        yield f"tile.{name}", (lambda impl: lambda x, s: impl(TileVal(x, tuple(x.shape)), s))(IMPLS[f"tile.{name}"]), fn
        yield f"tensor.{name}", IMPLS[f"tensor.{name}"], fn


@pytest.mark.parametrize("dtype", [D.FP16, D.BF16], ids=lambda d: d.name)
@pytest.mark.parametrize("op, impl, fn", list(_tile_scalar_ops()), ids=lambda v: v if isinstance(v, str) else "")
def test_a_tile_scalar_op_converts_its_scalar_to_the_tile_dtype(op, impl, fn, dtype):
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(16, 128, generator=g) * 0.25).to(num.TORCH[dtype])  # near 0.1: an add sees its rounding
    got = impl(x, 0.1)
    assert got.dtype == x.dtype
    assert ps.bits_equal(got, fn(x, torch.tensor(0.1, dtype=torch.float64).to(x.dtype)))
    if "max" not in op and "min" not in op:  # (max/min with the wider scalar round back to the same bits)
        # the fp32 scalar (the op computed in fp32, rounded once) gives other bits: the check above can fail
        assert not ps.bits_equal(got, fn(x.float(), torch.tensor(0.1, dtype=torch.float32)).to(x.dtype))


@pl.jit
def scalar_ops(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.FP32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 128])
        pl.store(pl.mul(t, s), [0, 0], out)
        pl.store(pl.add(t, 0.1), [16, 0], out)  # a constant: the same rule
        pl.store(pl.div(t, s), [32, 0], out)
        pl.store(pl.sub(t, s), [48, 0], out)
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_kernels_convert_scalars_to_the_tile_dtype_on_every_platform(platform, dtype):
    g = torch.Generator().manual_seed(5)
    a = (torch.randn(16, 128, generator=g) * 4).to(dtype)
    out = ps.sentinel((64, 128), dtype)
    scalar_ops(a, out, 0.1, config=RunConfig(platform=platform))
    s = torch.tensor(0.1, dtype=torch.float64).to(dtype)
    want = torch.cat([a * s, a + s, a / s, a - s])
    assert ps.bits_equal(out, want)
    wide, a32 = torch.tensor(0.1, dtype=torch.float32), a.float()
    assert not ps.bits_equal(out, torch.cat([a32 * wide, a32 + wide, a32 / wide, a32 - wide]).to(dtype))


# ----------------------------------------------------------------------------- min / max


@pytest.mark.parametrize("width", [1, 7, 8, 16, 17, 64, 100])  # torch's scalar and vector loops differ
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_min_and_max_order_minus_zero_below_plus_zero_in_either_order(width, dtype):
    p, m = torch.zeros(width, dtype=dtype), -torch.zeros(width, dtype=dtype)
    for a, b in ((p, m), (m, p)):
        assert torch.signbit(num.minimum(a, b)).all()
        assert not torch.signbit(num.maximum(a, b)).any()
    assert torch.signbit(num.minimum(m, torch.ones(width, dtype=dtype))).all()  # a zero against a non-zero
    assert torch.signbit(num.maximum(m, -torch.ones(width, dtype=dtype))).all()
    assert not torch.signbit(num.minimum(p, torch.ones(width, dtype=dtype))).any()


def _independent_min_max(x: torch.Tensor, kind: str) -> torch.Tensor:
    """Per row: canonical NaN if any NaN; else the extreme value, a zero taking -0 (min) /
    +0 (max) when one is there."""
    ext = (torch.amin if kind == "min" else torch.amax)(x, dim=1, keepdim=True)
    zeros = x == 0
    neg = (zeros & torch.signbit(x)).any(dim=1, keepdim=True)
    pos = (zeros & ~torch.signbit(x)).any(dim=1, keepdim=True)
    signed = torch.where(neg if kind == "min" else ~pos, -ext.abs(), ext.abs())
    ext = torch.where(ext == 0, signed, ext)
    return num.canonical_nan(torch.where(torch.isnan(x).any(dim=1, keepdim=True), torch.nan, ext))


@given(st.integers(1, 40), st.integers(1, 5), st.sampled_from([D.FP32, D.FP16, D.BF16]),
       st.integers(0, 2**31 - 1), st.sampled_from(["min", "max"]), st.randoms(use_true_random=False))
def test_property_max_min_reductions_follow_the_rule_in_any_order(cols, rows, dtype, seed, kind, rnd):
    x = ps.random_tensor((rows, cols), dtype, seed, specials=True)
    got = num.reduce_last(x, kind)
    assert ps.bits_equal(got, _independent_min_max(x, kind))
    order = list(range(cols))
    rnd.shuffle(order)
    assert ps.bits_equal(num.reduce_last(x[:, order], kind), got)
    assert ps.bits_equal(num.reduce_first(x.T.contiguous(), kind), got.T.contiguous())


def _pairwise(x: torch.Tensor, kind: str) -> torch.Tensor:
    """The vector unit's tree: halves combined element by element with IEEE max / min."""
    combine = num.maximum if kind == "max" else num.minimum
    while x.shape[-1] > 1:
        half = x.shape[-1] // 2
        merged = combine(x[..., :half], x[..., half:2 * half])
        x = torch.cat([merged, x[..., 2 * half:]], dim=-1) if x.shape[-1] % 2 else merged
    return num.canonical_nan(x.clone())


@given(st.lists(st.lists(st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, math.inf, -math.inf, math.nan]),
                         min_size=1, max_size=9), min_size=1, max_size=4).filter(lambda r: len({len(x) for x in r}) == 1),
       st.sampled_from([torch.float32, torch.float16, torch.bfloat16]), st.sampled_from(["min", "max"]))
def test_property_max_min_rows_of_signed_zeros_and_specials_reduce_as_the_tree_does(rows, dtype, kind):
    # few distinct values: rows with both zeros, all zeros of one sign, NaN beside infinities
    x = torch.tensor(rows, dtype=torch.float32).to(dtype)
    assert ps.bits_equal(num.reduce_last(x, kind), _pairwise(x, kind))


@given(st.lists(st.tuples(st.integers(0, 2**32 - 1), st.sampled_from([None, 0x8000, 0x7FFF, 0x8001, 0])),
                min_size=1, max_size=64))
def test_property_fp32_to_bf16_rounds_as_from_the_exact_value(draws):
    # each draw's low half forced to a tie or its neighbours (or left as drawn): the bits
    # path from fp32 against the general one from float64 (the same values, exactly)
    bits = [(b & ~0xFFFF | low) if low is not None else b for b, low in draws]
    x = torch.tensor([b - (1 << 32) if b >= 1 << 31 else b for b in bits], dtype=torch.int32).view(torch.float32)
    for mode in ("round", "rint"):
        got = num.cast(x, D.BF16, mode)
        want = num.canonical_nan(num._round_float(x.to(torch.float64), torch.bfloat16, mode))
        assert ps.bits_equal(got, want), mode


# ----------------------------------------------------------------------------- NaN policy

CANONICAL = {torch.float32: 0x7FC00000, torch.float16: 0x7E00, torch.bfloat16: 0x7FC0}
RAW_NAN = {torch.float32: 0xFFC00001, torch.float16: 0xFE01, torch.bfloat16: 0xFFC1}  # sign set, a payload


def raw_nans(shape, dtype) -> torch.Tensor:
    view = {torch.float32: torch.int32}.get(dtype, torch.int16)
    width = torch.empty((), dtype=dtype).element_size() * 8
    return torch.full(shape, RAW_NAN[dtype] - (1 << width), dtype=view).view(dtype)


@pytest.mark.parametrize("dtype", sorted(CANONICAL, key=str))
def test_canonical_nan_replaces_every_nan_and_nothing_else(dtype):
    x = torch.tensor([1.5, -0.0, float("inf"), 0.0], dtype=dtype)
    x = torch.cat([x, raw_nans((2,), dtype), torch.tensor([float("nan")], dtype=dtype)])
    got = num.canonical_nan(x)
    assert bits(got)[:4] == bits(x)[:4]
    assert bits(got)[4:] == [CANONICAL[dtype]] * 3


@pytest.mark.parametrize("fn", [
    lambda x: num.matmul(x[:, :16], x[:16, :].to(torch.float16).to(x.dtype)),
    lambda x: num.reduce_last(x[:, :1], "max"),  # one column reduces nothing, yet computes
    lambda x: num.reduce_first(x, "sum"),
    lambda x: num.cast(x, D.FP16, "rint"),
    lambda x: num.cast(x, D.BF16, "round"),
    lambda x: num.minimum(x, torch.ones_like(x)),
    lambda x: num.maximum(torch.zeros_like(x), x),
], ids=["matmul", "reduce-one", "col-sum", "cast-fp16", "cast-bf16", "minimum", "maximum"])
def test_every_numerics_op_returns_the_canonical_nan(fn):
    x = raw_nans((16, 16), torch.float16)
    got = fn(x)
    assert set(bits(got)) == {CANONICAL[got.dtype]}


def _computing_tile_ops():
    """Every registered tile op that computes one tile from tiles (and a scalar): name, call."""
    from pypto.sim.ops.semantics import IMPLS, TileVal

    tile = lambda x: TileVal(x, tuple(x.shape))  # noqa: E731
    for name in ("neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "recip"):
        yield f"tile.{name}", (lambda f: lambda x: f(tile(x)))(IMPLS[f"tile.{name}"])
    for name in ("add", "sub", "mul", "div", "maximum", "minimum"):
        yield f"tile.{name}", (lambda f: lambda x: f(tile(x), tile(torch.ones_like(x))))(IMPLS[f"tile.{name}"])
    for name in ("adds", "subs", "muls", "divs", "maximums", "minimums"):
        yield f"tile.{name}", (lambda f: lambda x: f(tile(x), 2.0))(IMPLS[f"tile.{name}"])
    for name in ("add", "sub", "mul", "div", "expdif"):
        op = f"tile.row_expand_{name}"
        yield op, (lambda f: lambda x: f(tile(x), tile(torch.ones_like(x[:, :1]))))(IMPLS[op])
    for name in ("add", "sub", "mul", "div"):
        op = f"tile.col_expand_{name}"
        yield op, (lambda f: lambda x: f(tile(x), tile(torch.ones_like(x[:1]))))(IMPLS[op])
    for name in ("row_sum", "row_max", "row_min", "col_sum", "col_max", "col_min"):
        yield f"tile.{name}", (lambda f: lambda x: f(tile(x)))(IMPLS[f"tile.{name}"])
    yield "tile.cast", lambda x: IMPLS["tile.cast"](tile(x), D.FP32, "rint")


@pytest.mark.parametrize("op, call", list(_computing_tile_ops()), ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("dtype", sorted(CANONICAL, key=str))
def test_every_op_that_computes_returns_the_canonical_nan(op, call, dtype):
    got = call(raw_nans((4, 16), dtype))
    assert set(bits(got)) == {CANONICAL[got.dtype]}, op


@pl.jit
def nan_ops(a: pl.Tensor, z: pl.Tensor, out: pl.Out[pl.Tensor], copied: pl.Out[pl.Tensor], half: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [1, 64])  # one row: col_max reduces nothing
        q = pl.div(x, x)  # 0 / 0: 0xFFC00000 on x86, from torch.div
        pl.store(pl.col_expand_add(q, pl.col_max(q)), [0, 0], out)
        r = pl.load(z, [0, 0], [1, 64])  # NaNs with a sign and a payload
        pl.store(pl.neg(r), [1, 0], out)
        pl.store(pl.maximum(r, x), [2, 0], out)
        pl.store(pl.row_expand_sub(x, pl.row_sum(r)), [3, 0], out)
        pl.store(pl.mul(r, 2.0), [4, 0], out)
        pl.store(r, [0, 0], copied)  # a move keeps the bits
        pl.store(pl.cast(r, target_type=pl.FP16), [0, 0], half)
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_nan_results_are_canonical_and_moved_nans_keep_their_bits(platform):
    a, z = torch.zeros(1, 64), raw_nans((1, 64), torch.float32)
    out, copied, half = ps.sentinel((5, 64)), ps.sentinel((1, 64)), ps.sentinel((1, 64), torch.float16)
    nan_ops(a, z, out, copied, half, config=RunConfig(platform=platform))
    assert set(bits(out)) == {0x7FC00000}
    assert set(bits(half)) == {0x7E00}
    assert set(bits(copied)) == {RAW_NAN[torch.float32]}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_rsqrt_of_an_element_does_not_depend_on_where_it_sits(dtype):
    # torch's fp16/bf16 rsqrt differs between its vector loop and its scalar tail; ours is
    # 1 / sqrt in fp32 rounded once, whatever the tile's width
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(4096, generator=g) * 100 + 1e-3).to(dtype)
    whole = num.rsqrt(x)
    pieces = torch.cat([num.rsqrt(x[i:i + 7]) for i in range(0, x.numel(), 7)])
    assert torch.equal(whole, pieces)
    if dtype != torch.float32:
        assert torch.equal(whole, (1.0 / torch.sqrt(x.float())).to(dtype))
