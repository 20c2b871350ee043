"""A split mixed scope whose vector work folds away: the fixpipe's narrowing of the
accumulator (an FP32 -> FP16/BF16 cast with mode "rint"), or a store of the accumulator
alone, is the cube's however the accumulator was computed (one matmul, a K loop peeled,
from a created accumulator or under ``if k == 0``, per row band, viewed in pieces). The
split has nothing left to share: the kernel is the one ``SplitMode.NONE`` makes, every
element stored, on both platforms. Vector work beside the cast still splits."""

import tempfile
from pathlib import Path

import attrs
import pytest
import torch
from hypothesis import given, settings

import pypto.language as pl
from pypto.backend import CoreKind, Pipe
from pypto.codegen import _refuse_laned_cube
from pypto.codegen.isa import Cond, Instr, Loop, ScalarAssign
from pypto.errors import CodegenError, UnsupportedSyntaxError
from pypto.fuzz.data import sentinel
from pypto.fuzz.graphs import kernel_from
from pypto.fuzz.lanes import Chain, cast_scopes
from pypto.fuzz.properties import PROPERTIES, Example
from pypto.ir import nodes as n
from pypto.ir.ops.spmd import LANE_REGISTER
from pypto.passes.outlining.lane_rules import is_region
from pypto.ir.types import DataType
from pypto.runtime import RunConfig

SPLITS = ["UP_DOWN", "LEFT_RIGHT"]


def _chain(form, bands=0, views=1, cast=("FP16", "rint"), dtype="FP16", out_dtype="FP32", blocks=2):
    return Chain(m=32, n=32, kc=32, blocks=1 if form in ("one", "acc") else blocks, form=form, bands=bands, dtype=dtype,
                 out_dtype=out_dtype, cast=cast, views=views, seed=7)


# every way the accumulator reaches the fixpipe's cast (or a store, with no cast at all)
SHAPES = {
    "one matmul": _chain("one"),
    "two matmuls": _chain("two"),
    "one matmul onto a created accumulator": _chain("acc", blocks=1),
    "K loop after a first matmul": _chain("peeled"),
    "K loop from a created accumulator": _chain("created", cast=("BF16", "rint")),
    "K loop under if k == 0": _chain("first"),
    "K loop in a row band loop": _chain("peeled", bands=2, blocks=3),
    "column halves of a K loop's accumulator": _chain("peeled", views=2, cast=("BF16", "rint")),
    "K loop stored as it is": _chain("created", cast=()),
    "INT32 K loop stored as it is": _chain("peeled", cast=(), dtype="INT8", out_dtype="INT32"),
    "the matmul's own FP16 result": _chain("one", cast=(), out_dtype="FP16"),
}


def _lowered(chain: Chain, mode: str, tmp_path):
    a, b = chain.inputs()
    tmp_path.mkdir()
    kernel = kernel_from(chain.source(mode), "chain", tmp_path)
    return kernel.compile(a, b, sentinel((chain.m, chain.n), DataType[chain.output()]),
                          config=RunConfig(platform="a2a3sim"))


@pytest.mark.parametrize("mode", SPLITS)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_split_scope_of_cube_work_alone_is_the_unsplit_kernel_on_the_cube(shape, mode, tmp_path):
    chain = SHAPES[shape]
    PROPERTIES["mixed"].check(Example(source=chain.source(mode), detail=(mode, "cast", *attrs.astuple(chain))))
    split, whole = (_lowered(chain, m, tmp_path / m) for m in (mode, "NONE"))
    text = split.lowered.as_python()
    assert "split_aiv" not in text and text == whole.lowered.as_python()
    a, b = chain.inputs()
    report = split.run(a, b, sentinel((chain.m, chain.n), DataType[chain.output()]))
    assert [t.core_type for t in report.tasks] == ["aic"]  # no vector core has anything to do


@pytest.mark.parametrize("mode", SPLITS)
@pytest.mark.parametrize("cast", [("FP16", "round"), ("BF16", "floor"), ("FP16", "none"), ("INT32", "trunc")])
def test_a_cast_the_fixpipe_does_not_make_stays_vector_work_and_splits(cast, mode, tmp_path):
    chain = _chain("peeled", cast=cast)
    PROPERTIES["mixed"].check(Example(source=chain.source(mode), detail=(mode, "cast", *attrs.astuple(chain))))
    assert "pl.split_aiv(2" in _lowered(chain, mode, tmp_path / mode).lowered.as_python()


def _both(kernel, *args):
    got = []
    for platform in ("ref", "a2a3sim"):
        copies = [x.clone() for x in args]
        kernel(*copies, config=RunConfig(platform=platform))
        got.append(copies[-1])
    assert torch.equal(got[0].view(torch.int16), got[1].view(torch.int16))
    return got[1]


@pytest.mark.parametrize("mode", [pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT])
def test_vector_work_after_the_fixpipe_cast_splits_reading_the_narrowed_value(mode):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)]):
            c = pl.create_tensor([32, 32], dtype=pl.FP32)
            for kb in pl.range(2):
                if kb == 0:
                    c = pl.matmul(a[:, 0:64], b[0:64, :], out_dtype=pl.FP32)
                else:
                    c = pl.matmul_acc(c, a[:, kb * 64:(kb + 1) * 64], b[kb * 64:(kb + 1) * 64, :])
            h = pl.cast(c, target_type=pl.FP16, mode="rint")
            out[:, :] = pl.add(h, bias)
        return out

    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(32, 128, generator=g).half(), torch.randn(128, 32, generator=g).half()
    bias = torch.randn(32, 32, generator=g).half()
    out = _both(k, a, b, bias, sentinel((32, 32), DataType.FP16))
    want = ((a.float() @ b.float()).half() + bias)
    torch.testing.assert_close(out, want, rtol=1e-2, atol=1e-1)
    text = k.lower(a, b, bias, out).as_python()
    assert "pl.split_aiv(2" in text  # the add: halved between the lanes


@pytest.mark.parametrize("mode", [pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT])
def test_vector_work_before_a_k_loop_and_its_fixpipe_cast_splits_and_the_cast_stays_on_the_cube(mode):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, x: pl.Tensor, out: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)]):
            y[:, :] = pl.exp(x)
            c = pl.matmul(a[:, 0:64], b[0:64, :], out_dtype=pl.FP32)
            for kb in pl.range(1, 2):
                c = pl.matmul_acc(c, a[:, kb * 64:(kb + 1) * 64], b[kb * 64:(kb + 1) * 64, :])
            out[:, :] = pl.cast(c, target_type=pl.BF16, mode="rint")
        return out, y

    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(32, 128, generator=g).half(), torch.randn(128, 32, generator=g).half()
    x = torch.randn(32, 32, generator=g)
    got = []
    for platform in ("ref", "a2a3sim"):
        out, y = sentinel((32, 32), DataType.BF16), sentinel((32, 32), DataType.FP32)
        k(a, b, x, out, y, config=RunConfig(platform=platform))
        got.append((out, y))
    assert torch.equal(got[0][0].view(torch.int16), got[1][0].view(torch.int16))
    assert torch.equal(got[0][1], got[1][1])
    torch.testing.assert_close(got[1][0].float(), (a.float() @ b.float()), rtol=1e-2, atol=1e-1)


@pytest.mark.parametrize("mode", [pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT])
def test_a_vector_loop_carrying_vector_work_beside_the_cubes_accumulator_splits(mode):
    """The loop's carried value starts as vector work (not the cube's, as an accumulator a
    K loop starts from is) and stays in the lanes' region with the loop."""
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)]):
            c = pl.create_tensor([32, 32], dtype=pl.FP32)
            c = pl.matmul_acc(c, a, b)
            s = pl.exp(bias)
            for j in pl.range(2):
                s = pl.add(s, c)
            out[:, :] = s
        return out

    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(32, 64, generator=g).half(), torch.randn(64, 32, generator=g).half()
    bias = torch.randn(32, 32, generator=g)
    got = []
    for platform in ("ref", "a2a3sim"):
        out = sentinel((32, 32), DataType.FP32)
        k(a, b, bias, out, config=RunConfig(platform=platform))
        got.append(out)
    assert torch.equal(got[0], got[1])
    torch.testing.assert_close(got[1], torch.exp(bias) + 2 * (a.float() @ b.float()), rtol=1e-3, atol=1e-2)
    (region,) = [s for s in n.walk_stmts(k.lower(a, b, bias, got[1]).functions[0].body) if is_region(s)]
    assert [s for s in n.walk_stmts(region.body) if isinstance(getattr(s, "value", None), n.Call)
            and s.value.op == "tile.exp"]  # halved with the rest, not computed whole outside


@pytest.mark.parametrize("mode", [pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT])
def test_a_loop_carrying_vector_work_around_the_cubes_accumulation_is_refused_naming_it(mode):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, x: pl.Tensor, out: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)]):
            c = pl.matmul(a, b, out_dtype=pl.FP32)
            s = pl.exp(x)
            for kb in pl.range(2):
                c = pl.matmul_acc(c, a, b)
                s = pl.add(s, x)
            out[:, :] = c
            y[:, :] = s
        return out, y

    g = torch.Generator().manual_seed(5)
    a, b, x = torch.randn(32, 64, generator=g).half(), torch.randn(64, 32, generator=g).half(), torch.randn(32, 32)
    with pytest.raises(UnsupportedSyntaxError, match="'s' is vector work .* and cube or control work after it reads "
                                                     "it whole") as info:
        k(a, b, x, torch.zeros(32, 32), torch.zeros(32, 32), config=RunConfig(platform="ref"))
    assert info.value.span is not None and "NONE" in info.value.hint


@pytest.mark.parametrize("mode", [pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT])
def test_a_k_loop_doing_vector_work_of_its_own_each_trip_splits_inside_the_loop(mode):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, x: pl.Tensor, out: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)]):
            c = pl.create_tensor([32, 32], dtype=pl.FP32)
            for kb in pl.range(2):
                c = pl.matmul_acc(c, a[:, kb * 64:(kb + 1) * 64], b[kb * 64:(kb + 1) * 64, :])
                y[:, kb * 16:(kb + 1) * 16] = pl.exp(x[:, kb * 16:(kb + 1) * 16])
            out[:, :] = pl.cast(c, target_type=pl.FP16, mode="rint")
        return out, y

    g = torch.Generator().manual_seed(4)
    a, b = torch.randn(32, 128, generator=g).half(), torch.randn(128, 32, generator=g).half()
    x = torch.randn(32, 32, generator=g)
    got = []
    for platform in ("ref", "a2a3sim"):
        out, y = sentinel((32, 32), DataType.FP16), sentinel((32, 32), DataType.FP32)
        k(a, b, x, out, y, config=RunConfig(platform=platform))
        got.append((out, y))
    assert torch.equal(got[0][0].view(torch.int16), got[1][0].view(torch.int16)) and torch.equal(got[0][1], got[1][1])
    torch.testing.assert_close(got[1][1], torch.exp(x))
    text = k.lower(a, b, x, *got[1]).as_python()
    assert text.count("pl.split_aiv(2") == 1  # the exp, in the loop; the cast stays the cube's


LANE = n.Var("aiv_id")


def _cube(*args):
    return Instr("TLOAD", Pipe.MTE2, CoreKind.AIC, "tile.load", args)


def _vector(*args):
    return Instr("TLOAD", Pipe.MTE2, CoreKind.AIV, "tile.load", args)


@pytest.mark.parametrize("body, refused", [
    ([_cube(LANE)], True),  # an operand
    ([ScalarAssign("row", n.BinOp("*", LANE, n.Const(8))), _cube((n.Var("row"), n.Const(0)))], True),  # through a scalar
    ([Loop("i", n.Const(0), LANE, n.Const(1), [_cube(n.Const(0))])], True),  # a trip count
    ([Loop("i", n.Const(0), LANE, n.Const(1), [ScalarAssign("t", n.Var("i"))]), _cube(n.Var("t"))], True),
    ([Cond(n.BinOp("==", LANE, n.Const(0)), [_cube(n.Const(0))])], True),  # a branch
    ([Cond(n.BinOp("==", LANE, n.Const(0)), [], [_cube(n.Const(0))])], True),
    ([Cond(n.BinOp("==", LANE, n.Const(0)), [ScalarAssign("t", n.Const(1))]), _cube(n.Var("t"))], True),
    ([_vector(LANE), Cond(n.BinOp("==", LANE, n.Const(0)), [_vector(n.Const(0))]), _cube(n.Const(0))], False),
    ([Loop("i", n.Const(0), n.Const(2), n.Const(1), [_cube(n.Var("i")), _vector(LANE)])], False),
])
def test_cube_instructions_a_lane_decides_are_refused_and_no_others(body, refused):
    """A lane region's own code: ``aiv_id`` is the lane register (the cube's reads 0)."""
    program = [ScalarAssign("aiv_id", n.Var(LANE_REGISTER)), *body]
    if refused:
        with pytest.raises(CodegenError, match="depends on a vector core's lane"):
            _refuse_laned_cube(program)
    else:
        _refuse_laned_cube(program)


def test_cube_work_a_lane_places_is_refused_at_codegen_not_run_for_lane_0_alone(monkeypatch):
    """If the lane split ever leaves cube work in a region again (as it did the fixpipe cast
    of a K loop's accumulator, taking it for vector work), the cube would run it once, for
    lane 0: codegen refuses it instead of leaving half of the result unwritten."""
    from pypto.passes.outlining import lanes

    monkeypatch.setattr(lanes, "cube_values", lambda body, types: set())  # the old, narrower rule
    chain = _chain("peeled")
    a, b = chain.inputs()
    with tempfile.TemporaryDirectory() as d:
        kernel = kernel_from(chain.source("UP_DOWN"), "chain", Path(d))
        with pytest.raises(CodegenError, match="depends on a vector core's lane; the cube runs it once") as info:
            kernel(a, b, torch.zeros(32, 32).half(), config=RunConfig(platform="a2a3sim"))
    assert info.value.span is not None and "compiler fault" in info.value.hint


@settings(deadline=None)
@given(case=cast_scopes())
def test_property_a_matmul_chain_and_only_a_cast_gives_the_unsplit_bits(case):
    mode, chain = case
    PROPERTIES["mixed"].check(Example(source=chain.source(mode), detail=(mode, "cast", *attrs.astuple(chain))))
