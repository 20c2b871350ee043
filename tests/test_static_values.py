"""Compile-time values: integer constants checked against their dtype, the static bounds
check decided on the iterations that reach an op, and the small static forms (``2 ** 4``,
``min`` of several, ``(i > 0) * 16``, a constant both branches agree on, numpy scalars)."""

import inspect

import numpy as np
import pytest
import torch

import pypto.language as pl
from pypto.errors import (
    ExecutionError,
    OutOfBoundsError,
    PyptoError,
    SpecializationError,
    TypeCheckError,
    UnsupportedSyntaxError,
)
from pypto.lang import parse
from pypto.ir.verifier import verify
from pypto.runtime import RunConfig
from pypto.sim.ops import numerics as num
from pypto.backend import A2A3

R, C = 16, 128
NPV = np.float32(2.0)
NPI = np.int64(16)


@pytest.fixture(params=["ref", "a2a3sim"])
def cfg(request):
    return RunConfig(platform=request.param, verification_level="ROUNDTRIP")


def rows(n=64):
    return torch.arange(n, dtype=torch.float32).repeat_interleave(C).reshape(n, C)


def error_at(cls, kernel, *args, match: str, marker: str, token: str):
    with pytest.raises(cls, match=match) as info:
        kernel(*args, config=RunConfig(platform="ref"))
    err = info.value
    assert err.hint, f"{type(err).__name__} says no fix (hint=): {err}"
    lines, _ = inspect.getsourcelines(inspect.getmodule(error_at))
    line = next(k for k, text in enumerate(lines, start=1) if marker in text and "marker=" not in text)
    assert (err.span.file, err.span.line, err.span.col) == (__file__, line, lines[line - 1].index(token) + 1), err.span
    return err


def roundtrips(program):
    verify(program, A2A3)
    assert parse(program.as_python()) == program
    return program


# ----------------------------------------------------------------------------- item 5: integer ranges


def test_an_annotated_int_constant_out_of_its_dtype_range():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x: pl.Scalar[pl.INT8] = 300  # MARK-int8
            t = pl.load(a, [0, 0], [R, C])
            pl.store(pl.muls(t, x), [0, 0], out)
        return out

    err = error_at(TypeCheckError, k, torch.ones(R, C), torch.zeros(R, C), match=r"300 does not fit INT8 \(-128..127\)",
                   marker="MARK-int8", token="x:")
    assert "pl.INT16" in str(err)


def test_an_op_constant_out_of_the_tile_dtype_range():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            pl.store(pl.adds(t, 2147483648), [0, 0], out)  # MARK-int32-const
        return out

    a = torch.ones(R, C, dtype=torch.int32)
    error_at(TypeCheckError, k, a, torch.zeros_like(a),
             match=r"tile.adds's 'rhs' is 2147483648, which does not fit the INT32 values",
             marker="MARK-int32-const", token="pl.adds")


def test_a_narrowing_annotation_is_checked_against_the_values_range():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(3):
                y: pl.Scalar[pl.INT8] = i * 100  # MARK-narrow
                t = pl.load(a, [0, 0], [R, C])
                pl.store(pl.muls(t, y), [0, 0], out)
        return out

    error_at(TypeCheckError, k, torch.ones(R, C), torch.zeros(R, C),
             match=r"'i \* 100' is Scalar\[index\] and may not fit INT8 \(-128..127\): it ranges over 0..200",
             marker="MARK-narrow", token="y:")


def test_a_narrowing_annotation_whose_values_fit(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(3):
                y: pl.Scalar[pl.INT8] = i * 40
                t = pl.load(a, [0, 0], [R, C])
                pl.store(pl.adds(t, y), [i * R, 0], out)
        return out

    a, out = torch.ones(R, C, dtype=torch.int32), torch.zeros(3 * R, C, dtype=torch.int32)
    k(a, out, config=cfg)
    assert out[:, 0].tolist() == [1] * R + [41] * R + [81] * R


def test_a_python_int_argument_out_of_the_parameters_range():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT8]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.adds(pl.load(a, [0, 0], [R, C]), s), [0, 0], out)
        return out

    a = torch.ones(R, C, dtype=torch.int32)
    with pytest.raises(SpecializationError, match=r"argument 's' is 300, which does not fit the parameter's INT8"):
        k(a, torch.zeros_like(a), 300, config=RunConfig(platform="ref"))


def test_a_runtime_integer_scalar_wraps_as_torch_narrows_it(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.adds(pl.load(a, [0, 0], [R, C]), s), [0, 0], out)
        return out

    a = torch.ones(R, C, dtype=torch.int32)
    out = torch.zeros_like(a)
    k(a, out, 2**31 - 1, config=cfg)
    assert torch.equal(out, a + (2**31 - 1))
    assert num.scalar(2**31, pl.INT32).item() == (torch.ones(1, dtype=torch.int32) + 2**31 - 1).item()
    assert num.scalar(300, pl.INT8).item() == torch.tensor(300).to(torch.int8).item()


# ----------------------------------------------------------------------------- item 8: guarded bounds


def test_a_load_guarded_by_the_loop_index_is_not_out_of_bounds(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(5):
                if i < 4:
                    t = pl.load(a, [i * R, 0], [R, C])
                    pl.store(pl.exp(t), [i * R, 0], out)
        return out

    a, out = torch.randn(64, C), torch.zeros(64, C)
    k(a, out, config=cfg)
    assert torch.equal(out, torch.exp(a))


def test_the_else_branch_sees_the_negated_guard(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(5):
                if i == 0:
                    t = pl.load(a, [0, 0], [R, C])
                    pl.store(t, [0, 0], out)
                else:
                    t = pl.load(a, [(i - 1) * R, 0], [R, C])
                    pl.store(pl.neg(t), [(i - 1) * R, 0], out)
        return out

    a, out = torch.randn(64, C), torch.zeros(64, C)
    k(a, out, config=cfg)
    assert torch.equal(out, -a)


def test_a_guard_that_lets_the_bad_iteration_through_is_still_reported():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(6):
                if i < 5:
                    t = pl.load(a, [i * R, 0], [R, C])  # MARK-guard-oob
                    pl.store(t, [0, 0], out)
        return out

    err = error_at(OutOfBoundsError, k, torch.randn(64, C), torch.zeros(R, C),
                   match=r"tile.load region on axis 0 reaches \[64, 80\) but the tensor's axis is \[0, 64\) "
                         r"\(when i = 4\)", marker="MARK-guard-oob", token="pl.load")
    assert "on the iterations that reach it" in str(err)


def test_a_runtime_guard_defers_the_check_to_the_run(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(5):
                if i < n:
                    t = pl.load(a, [i * R, 0], [R, C])
                    pl.store(t, [i * R, 0], out)
        return out

    a, out = torch.randn(64, C), torch.zeros(64, C)
    k(a, out, 4, config=cfg)
    assert torch.equal(out, a)
    with pytest.raises(ExecutionError):
        k(a, torch.zeros(64, C), 5, config=cfg)


# ----------------------------------------------------------------------------- item 9: small static forms


def test_power_min_of_several_and_bool_arithmetic_as_offsets(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                t = pl.load(a, [min(i, 2, 1) * R + (i > 2) * 2 ** 4, 0], [R, C])
                pl.store(t, [i * R, 0], out)
        return out

    a, out = rows(), torch.zeros(64, C)
    roundtrips(k.specialize(a, out))
    k(a, out, config=cfg)
    assert torch.equal(out, torch.cat([a[0:16], a[16:32], a[16:32], a[32:48]]))


def test_power_of_a_runtime_value_says_what_to_write():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(2):
                t = pl.load(a, [i ** 2 * R, 0], [R, C])  # MARK-pow
                pl.store(t, [0, 0], out)
        return out

    err = error_at(UnsupportedSyntaxError, k, rows(), torch.zeros(R, C),
                   match=r"'\*\*' is computed only on compile-time values", marker="MARK-pow", token="i ** 2")
    assert "i * i" in str(err)


def test_the_same_constant_in_both_branches_is_a_compile_time_value(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            if s > 0:
                n = 32
            else:
                n = 32
            t = pl.load(a, [0, 0], [n, C])
            pl.store(t, [0, 0], out)
        return out

    a, out = rows(), torch.zeros(64, C)
    roundtrips(k.specialize(a, out, 1))
    k(a, out, 1, config=cfg)
    assert torch.equal(out[:32], a[:32])


def test_numpy_scalar_globals_are_constants(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [NPI, 0], [R, C])
            pl.store(pl.muls(t, NPV), [0, 0], out)
        return out

    a, out = torch.randn(32, C), torch.zeros(R, C)
    k(a, out, config=cfg)
    assert torch.equal(out, a[16:] * 2.0)


TORCH_GLOBAL = torch.zeros(2)


def test_a_global_that_is_not_a_constant_says_what_it_is():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            pl.store(pl.muls(t, TORCH_GLOBAL), [0, 0], out)  # MARK-torch-global
        return out

    error_at(PyptoError, k, torch.zeros(R, C), torch.zeros(R, C),
             match="'TORCH_GLOBAL' is a Tensor, which kernel source cannot use as a value",
             marker="MARK-torch-global", token="TORCH_GLOBAL")


def test_a_stepped_slice_of_a_tile_is_explained():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            u = t[0:8:2, :]  # MARK-tile-slice
            pl.store(u, [0, 0], out)
        return out

    err = error_at(UnsupportedSyntaxError, k, torch.zeros(R, C), torch.zeros(R, C),
                   match=r"tile windows are written with start:stop slices", marker="MARK-tile-slice",
                   token="0:8:2")
    assert "a[i:i + 1, :]" in str(err)


def test_a_tile_in_a_scalar_expression_is_named_as_written():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            t = pl.exp(t)
            if t > 0:  # MARK-tile-cond
                t = pl.neg(t)
            pl.store(t, [0, 0], out)
        return out

    err = error_at(TypeCheckError, k, torch.zeros(R, C), torch.zeros(R, C),
                   match=r"'t' is Tile\[16x128 fp32 Vec\], not a scalar", marker="MARK-tile-cond", token="t > 0")
    assert "t_1" not in str(err) and "pl.cmp" in str(err)


def test_an_spmd_block_index_past_the_tensor_is_reported():
    """The block index of an SPMD launch of constant size is a loop index for the check."""
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        for b in pl.spmd(4):
            t = pl.load(a, [b * R, 0], [R, C])  # MARK-spmd-oob
            pl.store(t, [b * R, 0], out)
        return out

    error_at(OutOfBoundsError, k, torch.randn(3 * R, C), torch.zeros(4 * R, C),
             match=r"tile.load region on axis 0 reaches \[48, 64\) but the tensor's axis is \[0, 48\) \(when b = 3\)",
             marker="MARK-spmd-oob", token="pl.load")


def test_dump_text_is_checked_too():
    """The check runs over the IR, whatever front made it: a pass dump read back included."""
    from pypto.lang import parse

    text = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        for i in pl.range(5):
            j: pl.Scalar[pl.INDEX] = i * 16
            t: pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [j, 0], [16, 128])
        return out
'''
    with pytest.raises(OutOfBoundsError, match=r"reaches \[64, 80\) .* \(when i = 4\)") as info:
        parse(text)
    assert (info.value.span.line, info.value.span.col) == (10, 58)
