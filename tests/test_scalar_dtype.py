"""The scalar of a tile-scalar op is converted to the tile's dtype first, then the op runs
in that dtype (``pypto/sim/ops/semantics.py``, ``numerics.scalar``): a float rounds once to
nearest-even, an integer wraps modulo 2**bits (constants that do not fit are refused where
they are written). Checked for every tile-scalar op, on fp16 / bf16 / fp32 / int tiles,
with scalars the tile dtype cannot represent, constant and at run time, on ``ref`` and
``a2a3sim``, against torch computing in the tile dtype with an independently rounded
scalar (exact rational rounding here, not the product's)."""

import functools
import math
from fractions import Fraction

import pytest
import torch
from helpers import program_text
from hypothesis import given
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import TypeCheckError
from pypto.lang import parse
from pypto.ir.types import DataType as D
from pypto.runtime import RunConfig
from pypto.runtime.compiled import compile_program

TORCH = {D.FP16: torch.float16, D.BF16: torch.bfloat16, D.FP32: torch.float32, D.INT8: torch.int8,
         D.INT16: torch.int16, D.INT32: torch.int32}
FLOAT_FORMATS = {D.FP16: (11, -14, 15), D.BF16: (8, -126, 127), D.FP32: (24, -126, 127)}  # precision, emin, emax
PLATFORMS = ("ref", "a2a3sim")
SHAPE = (8, 64)
SENTINEL = 77


def rounded(value: float, dtype: D) -> float:
    """``value`` rounded once to the nearest ``dtype`` value, ties to even (subnormals and
    overflow to inf as IEEE has them), computed exactly with fractions."""
    precision, emin, emax = FLOAT_FORMATS[dtype]
    if value == 0 or not math.isfinite(value):
        return value
    exponent = max(math.frexp(value)[1] - 1, emin)  # of the leading bit; subnormals share emin's quantum
    quantum = Fraction(2) ** (exponent - precision + 1)
    r = round(Fraction(value) / quantum) * quantum  # Fraction rounds half to even
    if abs(r) > (2 - Fraction(2) ** (1 - precision)) * Fraction(2) ** emax:
        return math.copysign(math.inf, value)
    return math.copysign(float(r), value)  # a tiny negative rounds to -0.0


def wrapped(value: int, dtype: D) -> int:
    bits = dtype.bits
    return (value + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)


def as_tile_dtype(value, dtype: D) -> torch.Tensor:
    """The scalar as torch sees it in the tile's dtype: a 0-d tensor of that dtype."""
    exact = rounded(value, dtype) if dtype.is_float else wrapped(value, dtype)
    return torch.tensor(exact, dtype=TORCH[dtype])


def ieee_extreme(pick, zero_is_negative):
    """IEEE 754-2019 maximum / minimum (``numerics``' documented rule): -0 < +0 whichever
    operand it is, which torch.maximum / minimum leave to operand order."""
    def op(x, s):
        s = s.expand_as(x)
        r = pick(x, s)
        if not r.dtype.is_floating_point:
            return r
        both_zero = (x == 0) & (s == 0)
        negative = zero_is_negative(torch.signbit(x), torch.signbit(s))
        return torch.where(both_zero, torch.where(negative, -torch.zeros_like(r), torch.zeros_like(r)), r)
    return op


ORACLE = {
    "adds": torch.add, "subs": torch.sub, "muls": torch.mul, "divs": torch.div,
    "maximums": ieee_extreme(torch.maximum, lambda a, b: a & b),
    "minimums": ieee_extreme(torch.minimum, lambda a, b: a | b),
}
INT_ORACLE = {**ORACLE, "divs": lambda x, s: torch.div(x, s, rounding_mode="trunc")}
CMPS = {0: torch.eq, 1: torch.ne, 2: torch.lt, 3: torch.le, 4: torch.gt, 5: torch.ge}


def expected(op: str, x: torch.Tensor, scalar, dtype: D) -> torch.Tensor:
    s = as_tile_dtype(scalar, dtype)
    if op.startswith("cmps"):
        return torch.where(CMPS[int(op[4:])](x, s), x, torch.zeros_like(x))
    return (ORACLE if dtype.is_float else INT_ORACLE)[op](x, s)


def inputs(scalar, dtype: D, seed: int = 0) -> torch.Tensor:
    """Values near the scalar as the tile dtype has it (itself and its neighbours, where
    a scalar kept wider than the tile compares or rounds differently), and random ones."""
    g = torch.Generator().manual_seed(seed)
    if dtype.is_float:
        x = (torch.randn(SHAPE, generator=g, dtype=torch.float64) * 4).to(TORCH[dtype])
        s = as_tile_dtype(scalar, dtype)
        near = [v for v in (s, torch.nextafter(s, torch.tensor(math.inf, dtype=s.dtype)),
                            torch.nextafter(s, torch.tensor(-math.inf, dtype=s.dtype)), -s) if torch.isfinite(v)]
    else:
        lo, hi = max(torch.iinfo(TORCH[dtype]).min, -1000), min(torch.iinfo(TORCH[dtype]).max, 1000)
        x = torch.randint(lo, hi + 1, SHAPE, generator=g).to(TORCH[dtype])
        s = as_tile_dtype(scalar, dtype)
        near = [s, s + 1, s - 1, torch.tensor(0, dtype=s.dtype)]
    flat = x.flatten()
    for k, v in enumerate(near):
        flat[k * 5:(k + 1) * 5] = v
    return flat.view(SHAPE)


def kernel_text(op: str, dtype: D, scalar: str) -> str:
    """``out = op(load(a), scalar)``; a cmps keeps the elements where it holds."""
    t = f"pl.Tensor[[{SHAPE[0]}, {SHAPE[1]}], pl.{dtype.name}]"
    runtime = ", s: pl.Scalar[pl.FP32]" if scalar == "s" and dtype.is_float else \
        ", s: pl.Scalar[pl.INT32]" if scalar == "s" else ""
    if op.startswith("cmps"):
        value = f"pl.tile.sel(pl.tile.cmps(t, {scalar}, cmp_type={op[4:]}), t, pl.tile.sub(t, t))"
    else:
        value = f"pl.tile.{op}(t, {scalar})"
    return program_text(f"""
@pl.function(type=pl.FunctionType.InCore)
def k(self, a: {t}, out: pl.Out[{t}]{runtime}):
    t = pl.tile.load(a, [0, 0], [{SHAPE[0]}, {SHAPE[1]}])
    pl.tile.store({value}, [0, 0], out)
""", name="k")


@functools.lru_cache(maxsize=None)
def runtime_kernel(op: str, dtype: D, platform: str):
    program = parse(kernel_text(op, dtype, "s"))
    config = RunConfig(platform=platform, disabled_diagnostics=("PH001",))
    return compile_program(program, ("a", "out", "s"), config, write=False)


def run(compiled, x, *scalar):
    out = torch.full(SHAPE, SENTINEL, dtype=x.dtype)
    compiled.run(x.clone(), out, *scalar)
    return out


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.view({2: torch.int16, 4: torch.int32}[t.element_size()]) if t.dtype.is_floating_point else t


def assert_bits(got, want, what):
    differ = (bits(got) != bits(want)).sum().item()
    assert differ == 0, f"{what}: {differ} of {got.numel()} elements differ from torch in the tile dtype"


FLOAT_OPS = ("adds", "subs", "muls", "divs", "maximums", "minimums", *(f"cmps{k}" for k in range(6)))
INT_OPS = ("adds", "subs", "muls", "maximums", "minimums", *(f"cmps{k}" for k in range(6)))
FLOAT_SCALARS = (0.1, 1 / 3, -2.718281828459045, 1e-3, 3.0000001, 1e-6, 65519.0, 12345.678)
INT_SCALARS = (300, -129, 40000, -40000, 2 ** 31 - 1, 255)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [D.FP16, D.BF16, D.FP32], ids=lambda d: d.name)
@pytest.mark.parametrize("op", FLOAT_OPS)
def test_a_runtime_float_scalar_is_rounded_to_the_tile_dtype_first(op, dtype, platform):
    compiled = runtime_kernel(op, dtype, platform)
    scalars = [v for v in FLOAT_SCALARS if rounded(v, dtype) != v]  # the point: the tile dtype cannot hold them
    assert len(scalars) >= 5
    for scalar in scalars:
        x = inputs(scalar, dtype)
        assert_bits(run(compiled, x, scalar), expected(op, x, scalar, dtype), f"{op}({dtype.name}, {scalar})")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [D.FP16, D.BF16], ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["adds", "muls", "divs", "maximums", "cmps2", "cmps0"])
def test_a_constant_float_scalar_is_rounded_to_the_tile_dtype_first(op, dtype, platform):
    for scalar in (0.1, 1 / 3, 65519.0):
        program = parse(kernel_text(op, dtype, repr(scalar)))
        compiled = compile_program(program, ("a", "out"), RunConfig(platform=platform), write=False)
        x = inputs(scalar, dtype)
        assert_bits(run(compiled, x), expected(op, x, scalar, dtype), f"{op}({dtype.name}, {scalar!r})")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [D.INT8, D.INT16], ids=lambda d: d.name)
@pytest.mark.parametrize("op", INT_OPS)
def test_a_runtime_int_scalar_wraps_to_the_tile_width(op, dtype, platform):
    compiled = runtime_kernel(op, dtype, platform)
    for scalar in INT_SCALARS:
        if -2 ** (dtype.bits - 1) <= scalar < 2 ** (dtype.bits - 1):
            continue
        x = inputs(scalar, dtype)
        assert_bits(run(compiled, x, scalar), expected(op, x, scalar, dtype), f"{op}({dtype.name}, {scalar})")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_int16_division_by_a_wrapped_scalar_truncates(platform):
    compiled = runtime_kernel("divs", D.INT16, platform)
    for scalar in (40003, -65539, 2 ** 31 - 1):  # wrap to -25533, -3, -1
        x = inputs(scalar, D.INT16)
        assert_bits(run(compiled, x, scalar), expected("divs", x, scalar, D.INT16), f"divs(INT16, {scalar})")


@pytest.mark.parametrize("dtype, constant, message", [
    (D.INT8, "300", "tile.adds's 'rhs' is 300, which does not fit the INT8 values it applies to (-128..127)"),
    (D.INT16, "-40000", "'rhs' is -40000, which does not fit the INT16 values it applies to (-32768..32767)"),
    (D.INT8, "0.5", "requires an integer scalar for a INT8 tile, but got 0.5"),
    (D.INT32, "0.1", "requires an integer scalar for a INT32 tile, but got 0.1"),
])
def test_a_constant_the_int_tile_cannot_hold_is_refused_where_it_is_written(dtype, constant, message):
    with pytest.raises(TypeCheckError) as info:
        compile_program(parse(kernel_text("adds", dtype, constant)), ("a", "out"), RunConfig(platform="ref"),
                        write=False)
    assert message in str(info.value)
    assert (info.value.span.line, info.value.span.col) == (10, 23)  # the pl.tile.adds(...) call


# ----------------------------------------------------------------------------- tensor level


@pl.jit
def scaled(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.FP32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.muls(pl.adds(a, s), s)
    return out


@pl.jit
def scaled_const(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.maximums(pl.divs(a, 0.1), 1 / 3)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [D.FP16, D.BF16], ids=lambda d: d.name)
def test_tensor_level_scalar_ops_round_the_scalar_too(dtype, platform):
    config = RunConfig(platform=platform)
    for s in (0.1, -2.718281828459045):
        x = inputs(s, dtype)
        out = torch.full(SHAPE, SENTINEL, dtype=x.dtype)
        scaled(x, out, s, config=config)
        assert_bits(out, expected("muls", expected("adds", x, s, dtype), s, dtype), f"(x + {s}) * {s}")
    x = inputs(0.1, dtype)
    out = torch.full(SHAPE, SENTINEL, dtype=x.dtype)
    scaled_const(x, out, config=config)
    assert_bits(out, expected("maximums", expected("divs", x, 0.1, dtype), 1 / 3, dtype), "max(x / 0.1, 1/3)")


# ----------------------------------------------------------------------------- property

unrepresentable = st.floats(min_value=-6e4, max_value=6e4, allow_nan=False, allow_infinity=False)


@given(st.sampled_from(FLOAT_OPS), st.sampled_from([D.FP16, D.BF16]), unrepresentable, st.sampled_from(PLATFORMS),
       st.integers(0, 2 ** 16))
def test_property_tile_scalar_ops_compute_in_the_tile_dtype(op, dtype, scalar, platform, seed):
    if rounded(scalar, dtype) == scalar or (op == "divs" and rounded(scalar, dtype) == 0):
        return
    x = inputs(scalar, dtype, seed)
    got = run(runtime_kernel(op, dtype, platform), x, scalar)
    assert_bits(got, expected(op, x, scalar, dtype), f"{op}({dtype.name}, {scalar!r})")
