"""Compile-time arithmetic on Python numbers (issue 9, item 15): a constant expression —
ints and floats, ``/ // % **``, unary minus, ``min``/``max``/``abs``, ``math`` constants
and functions, module-level constants and static locals — folds to the value Python
computes, wherever a scalar operand is accepted; only runtime index expressions keep the
integer rules. A fold Python cannot compute is a located error."""

import importlib.util
import itertools
import math
import operator
import textwrap

import attrs
import pytest
import torch
from hypothesis import assume, event, given
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import ParseError, TypeCheckError, UnsupportedSyntaxError
from pypto.lang import parse
from pypto.ir.verifier import verify
from pypto.runtime import RunConfig
from pypto.backend import A2A3

R, C = 16, 128
HIDDEN = 128
EPS = 1e-06
PLATFORMS = ("ref", "a2a3sim")
TORCH = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}
BITS = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
SENTINEL = 1234.5  # outputs start as this, so "stored nothing" cannot pass for a result


def cfg(platform):
    return RunConfig(platform=platform, verification_level="ROUNDTRIP")


def bits(x: torch.Tensor) -> torch.Tensor:
    return x.view(BITS[x.dtype])


def as_tile_scalar(value, dtype: torch.dtype) -> torch.Tensor:
    """The scalar operand as a tile-scalar op sees it: the Python number rounded once to
    the tile's dtype (pypto.sim.ops.numerics.scalar)."""
    return torch.tensor(float(value), dtype=torch.float64).to(dtype)


def tile_scalar_oracle(op: str, x: torch.Tensor, value) -> torch.Tensor:
    s = as_tile_scalar(value, x.dtype)
    return {"adds": torch.add, "subs": torch.sub, "muls": torch.mul, "divs": torch.div,
            "maximums": torch.maximum, "minimums": torch.minimum}[op](x, s)


# ----------------------------------------------------------------------------- kernels from text


_counter = itertools.count()


def kernel_module(tmp_dir, body: str, params: str = "a: pl.Tensor, out: pl.Out[pl.Tensor]"):
    """A module holding ``@pl.jit def k(...)`` with ``body`` (kernels are parsed from their
    file, so a generated one needs a file of its own)."""
    path = tmp_dir / f"folded_{next(_counter)}.py"
    path.write_text(textwrap.dedent(f"""\
        import math

        import pypto.language as pl

        HIDDEN = 128
        EPS = 1e-06
        HALF = 0.5


        @pl.jit
        def k({params}):
        """) + textwrap.indent(textwrap.dedent(body), "    "))
    return load(path).k, path


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def line_of(path, token: str) -> int:
    """The line of ``path`` that holds ``token`` (1-based, as spans count)."""
    return next(k for k, text in enumerate(path.read_text().splitlines(), start=1) if token in text)


# ----------------------------------------------------------------------------- random constant trees


@attrs.frozen
class Expr:
    text: str  # fully parenthesized source
    value: object  # what Python computes, or the exception it raises

    @property
    def raises(self) -> bool:
        return isinstance(self.value, Exception)


def _apply(f, *operands: Expr):
    for o in operands:
        if o.raises:
            return o.value
    try:
        return f(*(o.value for o in operands))
    except (ArithmeticError, ValueError, TypeError) as exc:
        return exc


_LEAVES = st.one_of(
    st.integers(-9, 9).map(lambda v: Expr(repr(v), v)),
    st.floats(-100, 100, allow_nan=False, allow_infinity=False).map(lambda v: Expr(repr(v), v)),
    st.sampled_from([Expr("HIDDEN", HIDDEN), Expr("EPS", EPS), Expr("HALF", 0.5), Expr("LOCAL", 3),
                     Expr("FLOCAL", 0.1), Expr("math.pi", math.pi), Expr("math.e", math.e)]),
)
# '**' takes small literal exponents, so no example asks for a number with a million digits.
_EXPONENTS = st.sampled_from([-2, -1, 0, 1, 2, 3, 0.5, -0.5, 1.5]).map(lambda v: Expr(repr(v), v))
_BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           "//": operator.floordiv, "%": operator.mod}
_UNARY = {"abs": abs, "math.sqrt": math.sqrt, "math.exp": math.exp, "math.log": math.log}


def _extend(children):
    binary = st.tuples(st.sampled_from(sorted(_BINARY)), children, children).map(
        lambda t: Expr(f"({t[1].text}) {t[0]} ({t[2].text})", _apply(_BINARY[t[0]], t[1], t[2])))
    power = st.tuples(children, _EXPONENTS).map(
        lambda t: Expr(f"({t[0].text}) ** ({t[1].text})", _apply(operator.pow, t[0], t[1])))
    negate = children.map(lambda c: Expr(f"-({c.text})", _apply(operator.neg, c)))
    call = st.tuples(st.sampled_from(sorted(_UNARY)), children).map(
        lambda t: Expr(f"{t[0]}({t[1].text})", _apply(_UNARY[t[0]], t[1])))
    minmax = st.tuples(st.sampled_from(["min", "max"]), children, children).map(
        lambda t: Expr(f"{t[0]}({t[1].text}, {t[2].text})", _apply({"min": min, "max": max}[t[0]], t[1], t[2])))
    return st.one_of(binary, power, negate, call, minmax)


CONSTANT_EXPRS = st.recursive(_LEAVES, _extend, max_leaves=6)


def _usable(e: Expr) -> bool:
    """A value a tile-scalar op takes: a real number some float holds, not NaN (NaN's sign
    bits are a separate policy)."""
    if e.raises or isinstance(e.value, bool) or not isinstance(e.value, (int, float)):
        return False
    try:
        return not math.isnan(float(e.value))
    except OverflowError:
        return False


@given(e=CONSTANT_EXPRS, op=st.sampled_from(["adds", "subs", "muls", "divs", "maximums", "minimums"]),
       dtype=st.sampled_from(sorted(TORCH)), data=st.data())
def test_property_a_constant_expression_as_the_scalar_operand_is_what_python_computes(tmp_path_factory, e, op,
                                                                                       dtype, data):
    """On both platforms, the bits are torch's with the Python-folded constant; a constant
    Python cannot compute is a located error at the expression."""
    event("folds" if _usable(e) else "refused")
    if _usable(e):
        assume(not (op == "divs" and float(e.value) == 0.0))
    kernel, path = kernel_module(tmp_path_factory.mktemp("fold"), f"""\
        LOCAL = 3
        FLOCAL = 0.1
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [{R}, {C}])
            pl.store(pl.{op}(t, {e.text}), [0, 0], out)
        return out
        """)
    seed = data.draw(st.integers(0, 2 ** 16), label="seed")
    x = (torch.randn(R, C, generator=torch.Generator().manual_seed(seed)) * 4).to(TORCH[dtype])
    if not _usable(e):
        with pytest.raises(TypeCheckError) as info:
            kernel(x, torch.full((R, C), SENTINEL, dtype=x.dtype), config=cfg("ref"))
        span, line = info.value.span, line_of(path, "pl.store(")
        start = path.read_text().splitlines()[line - 1].index(e.text) + 1
        assert (span.file, span.line) == (str(path), line), info.value
        assert start <= span.col and span.end_col <= start + len(e.text), info.value  # within the expression
        return
    want = tile_scalar_oracle(op, x, e.value)
    for platform in PLATFORMS:
        out = torch.full((R, C), SENTINEL, dtype=x.dtype)
        kernel(x, out, config=cfg(platform))
        assert torch.equal(bits(out), bits(want)), (platform, e.text, e.value)


# ----------------------------------------------------------------------------- the program


def rms_scale(x: torch.Tensor) -> torch.Tensor:
    return torch.mul(x, as_tile_scalar(1.0 / HIDDEN, x.dtype))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_one_over_a_module_constant_scales_a_tile(platform):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            sq_sum = pl.load(a, [0, 0], [R, C])
            mean_sq = pl.mul(sq_sum, 1.0 / HIDDEN)
            pl.store(mean_sq, [0, 0], out)
        return out

    a, out = torch.randn(R, C), torch.full((R, C), SENTINEL)
    k(a, out, config=cfg(platform))
    assert torch.equal(out, rms_scale(a))
    program = k.specialize(a, out)
    assert "pl.tile.muls(sq_sum, 0.0078125)" in program.as_python()
    verify(program, A2A3)
    assert parse(program.as_python()) == program


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_scalar_operand_position_folds(platform):
    """pl.adds, pl.maximums, pl.tile.full's value and pl.cmps's scalar, with math constants,
    math functions, a static local and a power; the fp16 tile gets the scalar rounded once."""

    @pl.jit
    def k(a: pl.Tensor, h: pl.Tensor, out: pl.Out[pl.Tensor], hout: pl.Out[pl.Tensor]):
        x = 3.0
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            u = pl.adds(t, -math.pi ** 2 / x)
            u = pl.maximums(u, max(math.sqrt(2.0), abs(-0.5)) - math.e)
            f = pl.tile.full([R, C], dtype=pl.FP32, value=2 ** -3 % 0.7)
            mask = pl.cmps(t, math.log(2.0) / 4, cmp_type=4)  # 4: greater than
            v = pl.sel(mask, pl.add(u, f), pl.tile.full([R, C], dtype=pl.FP32, value=-math.inf))
            pl.store(v, [0, 0], out)
            g = pl.load(h, [0, 0], [R, C])
            pl.store(pl.muls(g, 1 / 3), [0, 0], hout)
        return out, hout

    a, h = torch.randn(R, C), torch.randn(R, C).half()
    out, hout = torch.full((R, C), SENTINEL), torch.full((R, C), SENTINEL, dtype=torch.float16)
    k(a, h, out, hout, config=cfg(platform))
    u = torch.maximum(a + as_tile_scalar(-math.pi ** 2 / 3.0, a.dtype),
                      as_tile_scalar(max(math.sqrt(2.0), 0.5) - math.e, a.dtype)) + (2 ** -3 % 0.7)
    want = torch.where(a > as_tile_scalar(math.log(2.0) / 4, a.dtype), u, torch.tensor(-math.inf))
    assert torch.equal(out, want)
    assert torch.equal(bits(hout), bits(torch.mul(h, as_tile_scalar(1 / 3, torch.float16))))


def test_static_shapes_and_offsets_take_integer_results():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [int(HIDDEN / 64) * 8 - 16, 0], [R, int(math.sqrt(HIDDEN * 128))])
            pl.store(t, [max(0, -HIDDEN // 3), abs(-0)], out)
        return out

    a, out = torch.randn(R, C), torch.full((R, C), SENTINEL)
    k(a, out, config=cfg("ref"))
    assert torch.equal(out, a)
    assert "pl.tile.load(a, [0, 0], [16, 128]" in k.specialize(a, out).as_python()


# ----------------------------------------------------------------------------- what stays an error


def error_line(err) -> str:
    return err.span.source_line()[err.span.col - 1:err.span.end_col - 1]


@pytest.mark.parametrize("expr, message", [
    ("1 / 0", "ZeroDivisionError"),
    ("HIDDEN // (LOCAL - 3)", "ZeroDivisionError"),
    ("math.sqrt(-EPS)", "math domain error"),
    ("math.log(0)", "math domain error"),
    ("10.0 ** 400", "OverflowError"),
    ("math.exp(1000)", "OverflowError"),
])
def test_a_fold_python_cannot_compute_is_located(tmp_path, expr, message):
    kernel, path = kernel_module(tmp_path, f"""\
        LOCAL = 3
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [{R}, {C}])
            pl.store(pl.adds(t, 1.0 + {expr}), [0, 0], out)
        return out
        """)
    with pytest.raises(TypeCheckError, match=message) as info:
        kernel(torch.randn(R, C), torch.zeros(R, C), config=cfg("ref"))
    assert (info.value.span.file, info.value.span.line) == (str(path), line_of(path, "pl.store("))
    assert error_line(info.value) == expr
    assert info.value.hint


@pytest.mark.parametrize("expr", ["9 ** 9 ** 9", "1 << 10 ** 12", "'ab' * 10 ** 9"])
def test_a_constant_too_large_to_compute_is_refused_not_computed(tmp_path, expr):
    kernel, path = kernel_module(tmp_path, f"""\
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [{R}, {C}])
            pl.store(pl.adds(t, {expr}), [0, 0], out)
        return out
        """)
    with pytest.raises(TypeCheckError, match="too large to be a kernel constant") as info:
        kernel(torch.randn(R, C), torch.zeros(R, C), config=cfg("ref"))
    assert info.value.span.line == line_of(path, "pl.store(")


def test_an_integer_no_float_holds_is_refused_on_a_float_tile(tmp_path):
    kernel, path = kernel_module(tmp_path, f"""\
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [{R}, {C}])
            pl.store(pl.muls(t, 10 ** 400), [0, 0], out)
        return out
        """)
    with pytest.raises(TypeCheckError, match="no float holds") as info:
        kernel(torch.randn(R, C), torch.zeros(R, C), config=cfg("ref"))
    assert info.value.span.line == line_of(path, "pl.store(")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_runtime_scalars_keep_their_rules_and_mix_with_folded_constants(platform):
    """A pl.Scalar parameter is a runtime value: ``s * (1.0 / HIDDEN)`` multiplies it by the
    folded constant when the kernel runs (Python's arithmetic, as the interpreter does it)."""

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.FP32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            u = pl.mul(t, s * (1.0 / HIDDEN))
            pl.store(pl.adds(u, s), [0, 0], out)
        return out

    a, out = torch.randn(R, C), torch.full((R, C), SENTINEL)
    k(a, out, 3.0, config=cfg(platform))
    assert torch.equal(out, a * as_tile_scalar(3.0 * (1.0 / HIDDEN), a.dtype) + 3.0)
    assert "s * 0.0078125" in k.specialize(a, out, 3.0).as_python()


@pytest.mark.parametrize("body, message, token", [
    ("pl.load(a, [i ** 2, 0], [R, C])", "'\\*\\*' is computed only on compile-time values", "i ** 2"),
    ("pl.adds(t, abs(i - 1))", "abs\\(\\) is computed only on compile-time values", "abs(i - 1)"),
    ("pl.adds(t, math.sqrt(s))", "math.sqrt\\(\\) is computed only on compile-time values", "math.sqrt(s)"),
])
def test_runtime_values_keep_the_index_rules(tmp_path, body, message, token):
    kernel, path = kernel_module(tmp_path, f"""\
        R = {R}
        C = {C}
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(2):
                t = pl.load(a, [0, 0], [R, C])
                v = {body}
        return out
        """, params="a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.FP32]")
    with pytest.raises(UnsupportedSyntaxError, match=message) as info:
        kernel(torch.randn(R, C), torch.zeros(R, C), 2.0, config=cfg("ref"))
    assert (info.value.span.file, info.value.span.line) == (str(path), line_of(path, "v = "))
    assert error_line(info.value) == token


def test_a_users_own_function_named_like_a_math_function_is_not_folded(tmp_path):
    """Pure functions are recognized by identity: a module's own 'sqrt' is not math.sqrt."""
    path = tmp_path / "own_sqrt.py"
    path.write_text(textwrap.dedent(f"""\
        import pypto.language as pl


        def sqrt(x):
            return x


        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [0, 0], [{R}, {C}])
                pl.store(pl.adds(t, sqrt(4.0)), [0, 0], out)
            return out
        """))
    with pytest.raises(ParseError, match="not a kernel-language operation") as info:
        load(path).k(torch.randn(R, C), torch.zeros(R, C), config=cfg("ref"))
    assert info.value.span.line == line_of(path, "sqrt(4.0)")


def test_a_float_where_a_static_int_is_needed_says_how_to_divide(tmp_path):
    kernel, path = kernel_module(tmp_path, f"""\
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [HIDDEN / 8, {C}])
            pl.store(t, [0, 0], out)
        return out
        """)
    with pytest.raises(TypeCheckError, match=r"must be a list of ints, not \[16.0, 128\]") as info:
        kernel(torch.randn(R, C), torch.zeros(R, C), config=cfg("ref"))
    assert info.value.span.line == line_of(path, "HIDDEN / 8")
    assert "//" in info.value.hint
