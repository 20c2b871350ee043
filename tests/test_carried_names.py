"""Names rebound inside loops and ifs keep their Python meaning after them: carried with
explicit init_values or without, the loop variable's last value, no silent fallback to a
pre-loop value or a module constant; and pl.yield_ in the wrong place or with the wrong
count is a front-end error at the user's line."""

import inspect

import pytest
import torch

import pypto.language as pl
from pypto.errors import ParseError, TypeCheckError, UnsupportedSyntaxError
from pypto.lang import parse
from pypto.ir.verifier import verify
from pypto.runtime import RunConfig
from pypto.backend import A2A3

R, C = 16, 128


@pytest.fixture(params=["ref", "a2a3sim"])
def cfg(request):
    return RunConfig(platform=request.param, verification_level="ROUNDTRIP")


def rows(n=64):
    """Row r of the tensor holds r: which rows a kernel read is visible in its output."""
    return torch.arange(n, dtype=torch.float32).repeat_interleave(C).reshape(n, C)


def roundtrips(program):
    verify(program, A2A3)
    assert parse(program.as_python()) == program
    return program


def error_at(cls, kernel, *args, match: str, marker: str, token: str):
    """The error ``kernel(*args)`` raises, located at ``token`` on the line marked ``marker``."""
    with pytest.raises(cls, match=match) as info:
        kernel(*args, config=RunConfig(platform="ref"))
    err = info.value
    assert err.hint, f"{type(err).__name__} says no fix (hint=): {err}"
    lines, _ = inspect.getsourcelines(inspect.getmodule(error_at))
    line = next(k for k, text in enumerate(lines, start=1) if marker in text and "marker=" not in text)
    assert (err.span.file, err.span.line, err.span.col) == (__file__, line, lines[line - 1].index(token) + 1), err.span
    return err


# ----------------------------------------------------------------------------- item 1: explicit carries


def test_an_init_values_loop_also_carries_other_rebound_names(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t0 = pl.load(a, [0, 0], [R, C])
            other = pl.load(a, [R, 0], [R, C])
            for i, (acc,) in pl.range(2, init_values=(t0,)):
                other = pl.add(other, acc)
                res = pl.yield_(acc)
            pl.store(pl.add(other, res), [0, 0], out)
        return out

    a, out = torch.randn(2 * R, C), torch.zeros(R, C)
    program = roundtrips(k.specialize(a, out))
    assert "for i, (acc, other_1) in pl.range(2, init_values=(t0, other)):" in program.as_python()
    assert "res, other_3 = pl.yield_(acc, other_2)" in program.as_python()
    k(a, out, config=cfg)
    assert torch.equal(out, ((a[R:] + a[:R]) + a[:R]) + a[:R])


def test_an_if_that_yields_also_joins_other_rebound_names(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t0 = pl.load(a, [0, 0], [R, C])
            other = pl.load(a, [R, 0], [R, C])
            if s > 0:
                other = pl.add(other, t0)
                u = pl.yield_(t0)
            else:
                u = pl.yield_(pl.neg(t0))
            pl.store(pl.add(other, u), [0, 0], out)
        return out

    a = torch.randn(2 * R, C)
    roundtrips(k.specialize(a, torch.zeros(R, C), 1))
    for s, want in ((1, (a[R:] + a[:R]) + a[:R]), (0, a[R:] + -a[:R])):
        out = torch.zeros(R, C)
        k(a, out, s, config=cfg)
        assert torch.equal(out, want)


# ----------------------------------------------------------------------------- item 2: names after loops and ifs


def test_the_loop_variable_after_a_static_loop_is_its_last_value(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            i = 0
            for i in pl.range(3):
                pass
            t = pl.load(a, [i * R, 0], [R, C])
            pl.store(t, [0, 0], out)
        return out

    a, out = rows(), torch.zeros(R, C)
    roundtrips(k.specialize(a, out))
    k(a, out, config=cfg)
    assert torch.equal(out, a[32:48])


def test_the_loop_variable_after_a_dynamic_loop_is_carried(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            i = 1
            for i in pl.range(n):
                pass
            t = pl.load(a, [i * R, 0], [R, C])
            pl.store(t, [0, 0], out)
        return out

    a = rows()
    roundtrips(k.specialize(a, torch.zeros(R, C), 3))
    for n, first in ((3, 32), (0, 16)):  # a loop that never runs leaves i as it was
        out = torch.zeros(R, C)
        k(a, out, n, config=cfg)
        assert torch.equal(out, a[first:first + R])


def test_nested_loops_reusing_the_loop_variable(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(1):
                for i in pl.range(3):
                    pass
                t = pl.load(a, [i * R, 0], [R, C])
                pl.store(t, [0, 0], out)
        return out

    a, out = rows(), torch.zeros(R, C)
    k(a, out, config=cfg)
    assert torch.equal(out, a[32:48])


def test_a_loop_variable_read_after_the_loop_of_an_init_values_loop(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t0 = pl.load(a, [0, 0], [R, C])
            for i, (acc,) in pl.range(3, init_values=(t0,)):
                acc = pl.yield_(pl.add(acc, t0))
            t = pl.load(a, [i * R, 0], [R, C])
            pl.store(pl.add(acc, t), [0, 0], out)
        return out

    a, out = rows(), torch.zeros(R, C)
    k(a, out, config=cfg)
    assert torch.equal(out, a[:R] * 4 + a[32:48])


def test_a_name_bound_only_in_one_branch_does_not_fall_back_to_the_module_constant():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            if s > 0:
                R = 32
            t = pl.load(a, [R, 0], [16, C])  # MARK-if-shadow
            pl.store(t, [0, 0], out)
        return out

    err = error_at(ParseError, k, rows(), torch.zeros(R, C), 1, match="'R' is bound inside the if at line",
                   marker="MARK-if-shadow", token="R, 0")
    assert "give 'R' a value before the if" in str(err)


def test_a_name_bound_only_in_a_loop_does_not_fall_back_to_the_module_constant():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for j in pl.range(1):
                R = 32
            t = pl.load(a, [R, 0], [16, C])  # MARK-loop-shadow
            pl.store(t, [0, 0], out)
        return out

    error_at(ParseError, k, rows(), torch.zeros(R, C), match="'R' is bound inside the loop at line",
             marker="MARK-loop-shadow", token="R, 0")


def test_a_local_read_before_it_is_assigned_does_not_read_the_module_constant():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [R, 0], [16, C])  # MARK-local-later
            R = 32  # noqa: F841
            pl.store(t, [0, 0], out)
        return out

    err = error_at(ParseError, k, rows(), torch.zeros(R, C), match="'R' has no value here: it is assigned at line",
                   marker="MARK-local-later", token="R, 0")
    assert "hiding the module-level 'R'" in str(err)


def test_a_loop_header_name_is_not_the_pre_loop_value_after_the_loop():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.load(a, [0, 0], [R, C])
            for i, (acc,) in pl.range(2, init_values=(acc,)):
                res = pl.yield_(pl.add(acc, acc))
            pl.store(acc, [0, 0], out)  # MARK-header-after
        return out

    err = error_at(ParseError, k, rows(), torch.zeros(R, C), match="'acc' names a carried value in the header",
                   marker="MARK-header-after", token="acc, [0")
    assert "('res')" in str(err)


# ----------------------------------------------------------------------------- item 6: yield placement and count


def test_a_yield_in_the_middle_of_a_loop_body():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t0 = pl.load(a, [0, 0], [R, C])
            for i, (acc,) in pl.range(2, init_values=(t0,)):
                acc2 = pl.add(acc, acc)
                r = pl.yield_(acc2)  # MARK-mid-yield
                pl.store(acc2, [0, 0], out)
        return out

    error_at(UnsupportedSyntaxError, k, rows(32), torch.zeros(R, C),
             match="pl.yield_ must be the last statement of its loop body", marker="MARK-mid-yield", token="pl.yield_")


def test_two_yields_in_one_branch():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            if s > 0:
                u = pl.yield_(t)  # MARK-first-yield
                u = pl.yield_(pl.neg(t))
            else:
                u = pl.yield_(t)
            pl.store(u, [0, 0], out)
        return out

    error_at(UnsupportedSyntaxError, k, rows(32), torch.zeros(R, C), 1,
             match="pl.yield_ must be the last statement of its branch", marker="MARK-first-yield", token="pl.yield_")


def test_a_yield_in_a_branch_a_constant_condition_picks_is_checked_too():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            if R > 0:
                u = pl.yield_(t)  # MARK-static-yield
                v = pl.yield_(t)
            else:
                v = pl.yield_(t)
            pl.store(v, [0, 0], out)
        return out

    error_at(UnsupportedSyntaxError, k, rows(32), torch.zeros(R, C),
             match="pl.yield_ must be the last statement of its branch", marker="MARK-static-yield", token="pl.yield_")


def test_bare_yields_of_values_need_names():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            if s > 0:
                pl.yield_(t)  # MARK-bare-yield
            else:
                pl.yield_(t)
            pl.store(t, [0, 0], out)
        return out

    err = error_at(UnsupportedSyntaxError, k, rows(32), torch.zeros(R, C), 1,
                   match="pl.yield_ hands 1 value out of the if, and it needs a name", marker="MARK-bare-yield",
                   token="pl.yield_")
    assert "x = pl.yield_(t)" in str(err)


def test_yielding_more_values_than_the_loop_carries():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t0 = pl.load(a, [0, 0], [R, C])
            t1 = pl.load(a, [R, 0], [R, C])
            for i, (acc,) in pl.range(2, init_values=(t0,)):
                x, y = pl.yield_(t1, acc)  # MARK-count
            pl.store(x, [0, 0], out)
        return out

    error_at(TypeCheckError, k, rows(32), torch.zeros(R, C), match=r"pl.yield_ hands on 2 values, but the loop "
                                                                   r"carries 1 \(acc\)",
             marker="MARK-count", token="pl.yield_")


def test_only_one_branch_yielding_is_reported_at_the_if():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            if s > 0:  # MARK-one-yield
                u = pl.neg(t)
            else:
                u = pl.yield_(t)
            pl.store(u, [0, 0], out)
        return out

    error_at(TypeCheckError, k, rows(32), torch.zeros(R, C), 1,
             match="both branches of an if that yields must yield the same names", marker="MARK-one-yield", token="if")


def test_an_int_scalar_before_a_dynamic_loop_becomes_its_index(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            i: pl.Scalar[pl.INT32] = 2
            for i in pl.range(n):
                pass
            pl.store(pl.load(a, [i * R, 0], [R, C]), [0, 0], out)
        return out

    a = rows()
    roundtrips(k.specialize(a, torch.zeros(R, C), 1))
    for n, first in ((1, 0), (0, 32)):
        out = torch.zeros(R, C)
        k(a, out, n, config=cfg)
        assert torch.equal(out, a[first:first + R])


def test_a_carried_value_that_changes_type_names_the_user_variable():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            for i in pl.range(2):  # MARK-type-change
                t = pl.load(a, [0, 0], [8, C])
            pl.store(t, [0, 0], out)
        return out

    error_at(TypeCheckError, k, rows(32), torch.zeros(R, C),
             match=r"loop-carried value 't' is Tile\[16x128 fp32 Vec\] before the loop and Tile\[8x128 fp32 Vec\] "
                   "at the end of its body", marker="MARK-type-change", token="for")
