"""Integer division and remainders at the edges of every integer dtype: MIN / -1 wraps to
MIN and MIN rem -1 is 0 (torch's kernels trap on both with SIGFPE, which killed the
process), a zero divisor is a located error — for the tile, tile-scalar, tensor and
broadcast forms on both platforms, and for ``numerics`` itself in every integer dtype. And
the other integer edge an op refuses: a shift by an amount outside the element's width."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import ExecutionError
from pypto.ir.types import DataType as D
from pypto.runtime import RunConfig
from pypto.sim.ops import numerics as num

PLATFORMS = ("ref", "a2a3sim")
INTS = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32)
R, C = 4, 16


def wrap(v: int, dtype) -> int:
    info = torch.iinfo(dtype)
    return (v - info.min) % (info.max - info.min + 1) + info.min


def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# What each op means, in Python's unbounded integers, then wrapped to the dtype.
DEFINITIONS = {
    "div": lambda a, b: trunc_div(a, b),
    "fmod": lambda a, b: a - b * trunc_div(a, b),  # the dividend's sign
    "rem": lambda a, b: a % b,  # the divisor's sign
}


def expected(name: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    b = b.expand_as(a)
    got = [wrap(DEFINITIONS[name](x, y), a.dtype) for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())]
    return torch.tensor(got, dtype=torch.int64).to(a.dtype).reshape(a.shape)


def edgy(dtype, nonzero: bool = False):
    """Values of ``dtype`` that reach its edges: MIN, MIN + 1, -1, 0, 1, MAX - 1, MAX, or any."""
    info = torch.iinfo(dtype)
    edges = sorted({info.min, info.min + 1, max(info.min, -1), 0, 1, 2, info.max - 1, info.max})
    values = st.one_of(st.sampled_from(edges), st.integers(info.min, info.max))
    return values.filter(bool) if nonzero else values


def corners(dtype) -> list[tuple[int, int]]:
    """The (dividend, divisor) pairs at the edges of the range."""
    info = torch.iinfo(dtype)
    pairs = [(info.min, -1), (info.min, 1), (info.max, -1), (info.min, info.min), (-1, info.min),
             (info.max, info.min), (info.min, info.max), (0, -1), (info.min + 1, -1), (info.max, info.max)]
    return [(a, b) for a, b in pairs if info.min <= a <= info.max and info.min <= b <= info.max and b]


def divisors(dtype):
    """A scalar divisor: -1 (where the dtype has it) as often as any other."""
    return st.one_of(st.just(-1), edgy(dtype, nonzero=True)) if dtype.is_signed else edgy(dtype, nonzero=True)


def operands(dtype, shape=(R, C)):
    """A dividend tile and a divisor tile whose elements pair up edges (MIN with -1 often)."""
    n = shape[0] * shape[1]
    pair = st.one_of(st.sampled_from(corners(dtype)), st.tuples(edgy(dtype), edgy(dtype, nonzero=True)))

    def tiles(pairs):
        a, b = zip(*pairs)
        return tuple(torch.tensor(v, dtype=torch.int64).to(dtype).reshape(shape) for v in (a, b))
    return st.lists(pair, min_size=n, max_size=n).map(tiles)


# ----------------------------------------------------------------------------- numerics


@pytest.mark.parametrize("dtype", INTS, ids=str)
@given(data=st.data())
def test_property_numerics_divides_every_integer_dtype_as_c_does_wrapping(dtype, data):
    name = data.draw(st.sampled_from(sorted(DEFINITIONS)))
    a, b = data.draw(operands(dtype, shape=(2, 8)))
    if data.draw(st.booleans()):  # the tile-scalar forms: a 0-d divisor
        b = num.scalar(data.draw(divisors(dtype)), num.FROM_TORCH[dtype])
    got = getattr(num, name)(a, b)
    assert got.dtype == dtype
    assert torch.equal(got, expected(name, a, b))


@pytest.mark.parametrize("dtype", [d for d in INTS if d.is_signed], ids=str)
def test_the_minimum_by_minus_one_wraps_and_leaves_no_remainder(dtype):
    info = torch.iinfo(dtype)
    a, b = torch.tensor([info.min, info.min, info.max], dtype=dtype), torch.tensor([-1, 1, -1], dtype=dtype)
    assert num.div(a, b).tolist() == [info.min, info.min, -info.max]
    assert num.rem(a, b).tolist() == [0, 0, 0] and num.fmod(a, b).tolist() == [0, 0, 0]


@pytest.mark.parametrize("name", sorted(DEFINITIONS))
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_an_integer_divisor_of_zero_is_an_error_with_a_hint(name, dtype):
    with pytest.raises(num.ArithmeticError_, match="by zero") as info:
        getattr(num, name)(torch.ones(3, dtype=dtype), torch.tensor([1, 0, 1], dtype=dtype))
    assert info.value.hint


# ----------------------------------------------------------------------------- kernels


@pl.jit
def divides(a: pl.Tensor, b: pl.Tensor, s: pl.Tensor, q: pl.Out[pl.Tensor], qs: pl.Out[pl.Tensor],
            qt: pl.Out[pl.Tensor], qr: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x, y = pl.load(a, [0, 0], [R, C]), pl.load(b, [0, 0], [R, C])
        pl.store(pl.div(x, y), [0, 0], q)
        pl.store(pl.divs(x, pl.read(s, [0])), [0, 0], qs)  # MARK-divs
        pl.store(pl.row_expand_div(x, pl.load(b, [0, 0], [R, 1])), [0, 0], qr)
        qt[:] = pl.div(a, b)  # the tensor form
    return q, qs, qt, qr


@pl.jit
def remainders(a: pl.Tensor, b: pl.Tensor, s: pl.Tensor, r: pl.Out[pl.Tensor], rs: pl.Out[pl.Tensor],
               rt: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x, y = pl.load(a, [0, 0], [R, C]), pl.load(b, [0, 0], [R, C])
        pl.store(pl.rem(x, y), [0, 0], r)
        pl.store(pl.rems(x, pl.read(s, [0])), [0, 0], rs)
        rt[:] = pl.rem(a, b)
    return r, rs, rt


@settings(max_examples=max(4, settings().max_examples // 4))
@pytest.mark.parametrize("dtype", [torch.int16, torch.int32], ids=str)  # the integer dtypes pl.div takes
@given(data=st.data())
def test_property_kernels_divide_at_the_edges_alike_on_both_platforms(dtype, data):
    a, b = data.draw(operands(dtype))
    s = data.draw(divisors(dtype))
    for platform in PLATFORMS:
        outs = [torch.zeros(R, C, dtype=dtype) for _ in range(4)]
        divides(a, b, torch.tensor([s], dtype=dtype), *outs, config=RunConfig(platform=platform))
        q, qs, qt, qr = outs
        assert torch.equal(q, expected("div", a, b)), platform
        assert torch.equal(qs, expected("div", a, torch.tensor(s, dtype=dtype))), platform
        assert torch.equal(qt, expected("div", a, b)), platform
        assert torch.equal(qr, expected("div", a, b[:, :1])), platform


@settings(max_examples=max(4, settings().max_examples // 4))
@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8], ids=str)
@given(data=st.data())
def test_property_kernel_remainders_at_the_edges_alike_on_both_platforms(dtype, data):
    a, b = data.draw(operands(dtype))
    s = data.draw(divisors(dtype))
    for platform in PLATFORMS:
        outs = [torch.zeros(R, C, dtype=dtype) for _ in range(3)]
        remainders(a, b, torch.tensor([s], dtype=dtype), *outs, config=RunConfig(platform=platform))
        r, rs, rt = outs
        assert torch.equal(r, expected("rem", a, b)), platform
        assert torch.equal(rs, expected("rem", a, torch.tensor(s, dtype=dtype))), platform
        assert torch.equal(rt, expected("rem", a, b)), platform


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_zero_divisor_in_a_kernel_is_an_error_at_its_line(platform):
    line = next(k for k, text in enumerate(open(__file__).read().splitlines(), 1) if "MARK-divs" in text)
    a = b = torch.ones(R, C, dtype=torch.int32)
    outs = [torch.zeros(R, C, dtype=torch.int32) for _ in range(4)]
    with pytest.raises(ExecutionError, match="integer division by zero") as info:
        divides(a, b, torch.tensor([0], dtype=torch.int32), *outs, config=RunConfig(platform=platform))
    assert info.value.span.line == line and info.value.hint


@pl.jit
def scalar_quotients(s: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.read(s, [0])
        d = pl.read(s, [1])
        z = pl.tile.full([1, 8], pl.INT32, 0)
        pl.store(pl.adds(z, v // d), [0, 0], out)
        pl.store(pl.adds(z, v % d), [1, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_scalar_units_quotients_of_the_minimum_by_minus_one(platform):
    # A scalar is an integer (Python's floor division, no trap); the tile's int32 takes its low bits.
    out = torch.zeros(2, 8, dtype=torch.int32)
    scalar_quotients(torch.tensor([-2**31, -1], dtype=torch.int32), out, config=RunConfig(platform=platform))
    assert out[0].tolist() == [-2**31] * 8 and out[1].tolist() == [0] * 8


def test_every_integer_dtype_is_drawn():
    assert {num.FROM_TORCH[d] for d in INTS} == {D.INT8, D.INT16, D.INT32, D.INT64, D.UINT8, D.UINT16, D.UINT32}


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.uint8], ids=str)
def test_a_shift_amount_just_outside_the_width_is_an_error_with_a_hint(dtype):
    bits = torch.iinfo(dtype).bits
    a = torch.ones(4, dtype=dtype)
    assert num.shift(a, torch.tensor(bits - 1, dtype=dtype), left=True).tolist() == [wrap(1 << (bits - 1), dtype)] * 4
    for amount in ([-1] if dtype.is_signed else []) + [bits]:
        with pytest.raises(num.ArithmeticError_, match=f"shift amount {amount} is outside 0..{bits - 1}") as info:
            num.shift(a, torch.tensor(amount, dtype=dtype), left=False)
        assert info.value.hint


def test_a_bool_scalar_is_a_bool():
    assert num.scalar(3, D.BOOL).dtype == torch.bool and num.scalar(0, D.BOOL).item() is False


# ----------------------------------------------------------------------------- past the valid region


def _valid_kernel(op: str, rows: int, cols: int, where):
    from pypto.fuzz.graphs import kernel_from

    where = where / f"{op}_{rows}_{cols}"
    where.mkdir(exist_ok=True)
    source = ("import pypto.language as pl\n\n\n@pl.jit\n"
              "def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):\n"
              "    with pl.at(level=pl.Level.CORE_GROUP):\n"
              f"        x = pl.load(a, [0, 0], [16, 64], valid_shape=[{rows}, {cols}])\n"
              f"        y = pl.load(b, [0, 0], [16, 64], valid_shape=[{rows}, {cols}])\n"
              f"        pl.store(pl.tile.{op}(x, y), [0, 0], out)\n"
              "    return out\n")
    return kernel_from(source, "k", where)


@pytest.mark.parametrize("platform", ["ref", "a2a3sim", "a5sim"])
@settings(deadline=None, max_examples=4)
@given(op=st.sampled_from(["div", "rem"]), dtype=st.sampled_from([torch.int16, torch.int32]),
       rows=st.integers(1, 16), cols=st.integers(1, 64), seed=st.integers(0, 2**16))
def test_property_a_divisor_past_the_valid_region_is_no_error(tmp_path_factory, platform, op, dtype, rows, cols,
                                                               seed):
    """A tile loaded with a valid_shape holds nothing the load wrote past it: zero there is no
    division by zero (the reference's A5 tail case, 11 x 37 of 16 x 64); within it the
    quotient is the definition's, on every platform."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(-1000, 1000, (16, 64), generator=g).to(dtype)
    b = torch.randint(1, 50, (16, 64), generator=g).to(dtype) * (1 - 2 * torch.randint(0, 2, (16, 64), generator=g)
                                                                  ).to(dtype)
    b[rows:, :] = 0  # what lies past the valid region: zeros
    b[:, cols:] = 0
    out = torch.zeros(16, 64, dtype=dtype)
    kernel = _valid_kernel(op, rows, cols, tmp_path_factory.mktemp("k"))
    kernel(a, b, out, config=RunConfig(platform=platform))
    want = torch.tensor([[wrap(DEFINITIONS[op](int(x), int(y)), dtype) for x, y in zip(ra, rb)]
                         for ra, rb in zip(a[:rows, :cols].tolist(), b[:rows, :cols].tolist())], dtype=dtype)
    assert torch.equal(out[:rows, :cols], want)


@pytest.mark.parametrize("platform", ["ref", "a5sim"])
def test_a_zero_divisor_inside_the_valid_region_is_still_an_error(tmp_path, platform):
    a = torch.ones(16, 64, dtype=torch.int32)
    b = torch.ones(16, 64, dtype=torch.int32)
    b[10, 36] = 0
    with pytest.raises(ExecutionError, match="by zero"):
        _valid_kernel("div", 11, 37, tmp_path)(a, b, torch.zeros(16, 64, dtype=torch.int32),
                                              config=RunConfig(platform=platform))
