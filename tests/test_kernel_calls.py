"""Calls: inline helpers (values, effects, annotations, keywords, defaults, where their
errors are reported), InCore kernels (returning nothing, keywords, scalar widening, the
names messages use), and the Python call of a kernel (keywords, decorator options)."""

import inspect

import pytest
import torch
from helpers_inline import addit, scale_by

import pypto.language as pl
from pypto.errors import ParseError, SpecializationError, TypeCheckError, UnsupportedSyntaxError
from pypto.lang import parse
from pypto.ir.verifier import verify
from pypto.runtime import RunConfig
from pypto.backend import A2A3

R, C = 16, 128
HELPERS = inspect.getsourcefile(addit.fn)


@pytest.fixture(params=["ref", "a2a3sim"])
def cfg(request):
    return RunConfig(platform=request.param, verification_level="ROUNDTRIP")


def line_of(marker: str, token: str, file: str = __file__):
    with open(file) as f:
        lines = f.read().splitlines()
    number = next(k for k, text in enumerate(lines, start=1) if marker in text and "line_of(" not in text)
    return number, lines[number - 1].index(token) + 1


def error_at(cls, kernel, *args, match: str, marker: str, token: str):
    with pytest.raises(cls, match=match) as info:
        kernel(*args, config=RunConfig(platform="ref"))
    err = info.value
    assert err.hint, f"{type(err).__name__} says no fix (hint=): {err}"
    assert (err.span.file, err.span.line, err.span.col) == (__file__, *line_of(marker, token)), err.span
    return err


# ----------------------------------------------------------------------------- inline helpers (item 4)


@pl.jit.inline
def _store_only(t, dst):
    pl.store(t, [0, 0], dst)


def test_binding_the_result_of_a_helper_that_returns_nothing():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [16, 0], [R, C])
            v = _store_only(t, out)  # MARK-binds-nothing
            u = pl.load(a, [v, 0], [R, C])
            pl.store(u, [16, 0], out)
        return out

    err = error_at(TypeCheckError, k, torch.zeros(32, C), torch.zeros(32, C),
                   match="'_store_only' returns nothing, so there is no value to use here",
                   marker="MARK-binds-nothing", token="_store_only(")
    assert "call it as a statement: _store_only(t, out)" in str(err)


@pl.jit.inline
def _twice(x):
    return pl.add(x, x)


def test_a_discarded_pure_helper_result_is_rejected():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            _twice(t)  # MARK-discard
            pl.store(t, [0, 0], out)
        return out

    error_at(UnsupportedSyntaxError, k, torch.zeros(R, C), torch.zeros(R, C),
             match="the result of _twice is discarded; assign it to a name", marker="MARK-discard", token="_twice")


@pl.jit.inline
def _store_and_return(t, dst):
    dst = pl.store(t, [0, 0], dst)
    return dst


def test_a_helper_with_effects_may_be_called_as_a_statement(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            _store_and_return(pl.exp(t), out)
        return out

    a, out = torch.randn(R, C), torch.zeros(R, C)
    k(a, out, config=cfg)
    assert torch.equal(out, torch.exp(a))


@pl.jit.inline
def _as_half(t) -> pl.Tile[[16, 128], pl.FP16]:
    return pl.exp(t)  # MARK-return-annotation


def test_a_helper_return_annotation_is_checked():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            pl.store(_as_half(t), [0, 0], out)  # MARK-half-call
        return out

    with pytest.raises(TypeCheckError, match=r"'_as_half' returns Tile\[16x128 fp32 Vec\], but its annotation says "
                                             r"pl.Tile\[\[16, 128\], pl.FP16\]") as info:
        k(torch.zeros(R, C), torch.zeros(R, C), config=RunConfig(platform="ref"))
    err = info.value
    assert (err.span.line, err.span.col) == line_of("MARK-return-annotation", "return")
    line, col = line_of("MARK-half-call", "_as_half")
    assert f"inlined at {__file__}:{line}:{col}" in str(err)


@pl.jit.inline
def _scaled(t, s=2.0, *, bias=0.0):
    return pl.adds(pl.muls(t, s), bias)


def test_helper_keywords_and_defaults_bind_by_signature(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            u = _scaled(t)
            v = _scaled(t, s=3.0)
            w = _scaled(s=0.5, t=t, bias=1.0)
            pl.store(pl.add(pl.add(u, v), w), [0, 0], out)
        return out

    a, out = torch.randn(R, C), torch.zeros(R, C)
    program = k.specialize(a, out)
    verify(program, A2A3)
    assert parse(program.as_python()) == program
    k(a, out, config=cfg)
    assert torch.equal(out, ((a * 2.0 + 0.0) + (a * 3.0 + 0.0)) + (a * 0.5 + 1.0))


def test_helper_keyword_mistakes_are_named():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            pl.store(_scaled(t, sclae=3.0), [0, 0], out)  # MARK-bad-keyword
        return out

    err = error_at(TypeCheckError, k, torch.zeros(R, C), torch.zeros(R, C),
                   match="'_scaled' got an unexpected keyword 'sclae'", marker="MARK-bad-keyword", token="sclae")
    assert "its parameters are: t, s, bias" in str(err)

    @pl.jit
    def k2(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(_scaled(s=3.0), [0, 0], out)  # MARK-missing
        return out

    error_at(TypeCheckError, k2, torch.zeros(R, C), torch.zeros(R, C), match="'_scaled' is missing its 't' argument",
             marker="MARK-missing", token="_scaled(")


# ----------------------------------------------------------------------------- where helper errors point (item 9)


def test_an_error_inside_a_helper_names_the_call_too():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            u = pl.load(a, [0, 0], [8, C])
            w = addit(t, u)  # MARK-addit
            pl.store(w, [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="requires compatible shapes") as info:
        k(torch.zeros(R, C), torch.zeros(R, C), config=RunConfig(platform="ref"))
    err = info.value
    assert err.span.file == HELPERS and err.span.line == line_of("return pl.add(x, y)", "pl.add", HELPERS)[0]
    line, col = line_of("MARK-addit", "addit(")
    assert f"note: in 'addit', inlined at {__file__}:{line}:{col}" in str(err)


def test_a_helper_parameter_is_checked_at_its_own_line():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            pl.store(scale_by(t, 2.0), [0, 0], out)
        return out

    with pytest.raises(ParseError, match="'self' cannot name a value in a kernel") as info:
        k(torch.zeros(R, C), torch.zeros(R, C), config=RunConfig(platform="ref"))
    span = info.value.span
    assert (span.file, span.line, span.col) == (HELPERS, *line_of("def scale_by(t, self)", "self", HELPERS))


# ----------------------------------------------------------------------------- InCore kernels (items 7, 9)


@pl.jit.incore
def _noret(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], o)


def test_binding_the_result_of_a_kernel_that_returns_nothing():
    @pl.jit
    def k(a: pl.Tensor, o: pl.Out[pl.Tensor]):
        x = _noret(a, o)  # MARK-noret  # noqa: F841
        return o

    error_at(TypeCheckError, k, torch.zeros(R, C), torch.zeros(R, C),
             match="'_noret' returns nothing, so there is no value to use here", marker="MARK-noret", token="_noret(")


@pl.jit.incore
def _copy(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], o)
    return o


def test_kernels_take_keyword_arguments_from_python_and_from_kernels(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        out = _copy(o=out, a=a)
        return out

    a = torch.randn(R, C)
    out = torch.zeros(R, C)
    k(a, out=out, config=cfg)
    assert torch.equal(out, a)
    out = torch.zeros(R, C)
    k(out=out, a=a, config=cfg)
    assert torch.equal(out, a)
    with pytest.raises(SpecializationError, match="got an unexpected keyword argument 'ot'") as info:
        k(a, ot=out, config=cfg)  # MARK-ot
    assert "did you mean 'out'?" in str(info.value)
    assert (info.value.span.file, info.value.span.line, info.value.span.col) == (__file__, *line_of("MARK-ot", "ot="))
    with pytest.raises(SpecializationError, match="got multiple values for argument 'a'"):
        k(a, a=a, config=cfg)
    with pytest.raises(SpecializationError, match="'out' is missing"):
        k(a, config=cfg)


def test_a_misspelt_decorator_option_is_reported_where_it_is_written():
    with pytest.raises(ParseError, match="@pl.jit.incore got an unexpected option 'levle'") as info:
        @pl.jit.incore(levle=pl.Level.AIC)  # MARK-levle
        def f(a: pl.Tensor, o: pl.Out[pl.Tensor]):
            return o

    assert (info.value.span.line, info.value.span.col) == line_of("MARK-levle", "levle")
    assert "did you mean 'level'?" in str(info.value)


def test_an_incore_level_other_than_the_default_is_rejected_clearly():
    with pytest.raises(UnsupportedSyntaxError, match=r"@pl.jit.incore\(level=pl.Level.AIC\) is not supported") as info:
        @pl.jit.incore(level=pl.Level.AIC)  # MARK-aic
        def f(a: pl.Tensor, o: pl.Out[pl.Tensor]):
            return o

    assert info.value.span.line == line_of("MARK-aic", "level")[0]

    @pl.jit.incore(level=pl.Level.CHIP_DIE)
    def g(a: pl.Tensor, o: pl.Out[pl.Tensor]):
        pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], o)
        return o

    @pl.jit
    def k(a: pl.Tensor, o: pl.Out[pl.Tensor]):
        o = g(a, o)
        return o

    a, o = torch.randn(R, C), torch.zeros(R, C)
    k(a, o, config=RunConfig(platform="ref"))
    assert torch.equal(o, a)


@pl.jit.incore
def _two(a: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [R, C])
    pl.store(t, [0, 0], o1)
    pl.store(t, [0, 0], o2)
    return o1, o2


def test_messages_name_the_kernel_not_its_specialization():
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
        o1, o2 = _two(a, o1, o2)
        o1 = _two(b, o1, o2)  # MARK-two
        return o1, o2

    err = error_at(TypeCheckError, k, torch.zeros(R, C), torch.zeros(R, 2 * C), torch.zeros(R, C), torch.zeros(R, C),
                   match="'_two' returns 2 values", marker="MARK-two", token="_two(")
    assert "_two_1" not in str(err)


@pl.jit.incore
def _row(a: pl.Tensor, i: pl.Scalar[pl.INT64], o: pl.InOut[pl.Tensor]):
    t = pl.load(a, [i * R, 0], [R, C])
    o = pl.store(pl.add(pl.load(o, [0, 0], [R, C]), t), [0, 0], o)
    return o


def test_a_loop_index_widens_to_an_int64_kernel_parameter(cfg):
    @pl.jit
    def k(a: pl.Tensor, o: pl.InOut[pl.Tensor]):
        for i in pl.range(4):
            o = _row(a, i, o)
        return o

    a, o = torch.randn(4 * R, C), torch.zeros(R, C)
    program = k.specialize(a, o)
    verify(program, A2A3)
    assert parse(program.as_python()) == program
    k(a, o, config=cfg)
    assert torch.equal(o, ((a[:R] + a[R:2 * R]) + a[2 * R:3 * R]) + a[3 * R:])


def test_a_wrong_scalar_argument_is_reported_at_the_call():
    @pl.jit
    def k(a: pl.Tensor, o: pl.InOut[pl.Tensor]):
        o = _row(a, 1.5, o)  # MARK-float-arg
        return o

    err = error_at(TypeCheckError, k, torch.zeros(4 * R, C), torch.zeros(R, C),
                   match="'_row': argument 'i' is a fp32 scalar but the parameter is declared int64",
                   marker="MARK-float-arg", token="1.5")
    line, col = line_of("def _row(", "pl.Scalar")
    assert f"the parameter is declared at {__file__}:{line}:{col}" in str(err)


def test_a_program_inline_function_returning_a_window_is_its_callers_code():
    # an Inline function of a program is spliced where it is called: never lowered on its own
    from pypto.runtime.compiled import compile_program

    rows, cols = 16, 128

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Inline)
        def top(self, a: pl.Tensor[[32, 128], pl.FP32]) -> pl.Tensor[[16, 128], pl.FP32]:
            return a[0:16, :]

        @pl.function(type=pl.FunctionType.InCore)
        def band(self, x: pl.Tensor[[16, 128], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
            pl.store(pl.exp(pl.load(x, [0, 0], [16, 128])), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[32, 128], pl.FP32],
                 c: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
            c = self.band(self.top(a), c)
            return c

    for platform in ("ref", "a2a3sim"):
        a, c = torch.randn(2 * rows, cols), torch.zeros(rows, cols)
        compile_program(P, ["a", "c"], RunConfig(platform=platform), write=False).run(a, c)
        assert torch.equal(c, torch.exp(a[:rows])), platform
