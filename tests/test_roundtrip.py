"""print -> parse is exact: every Program the printer writes reads back equal, and text the
parser accepts is a program (and nothing else)."""

import math

import pytest
import torch

import pypto.language as pl
from pypto.errors import ParseError, TypeCheckError
from pypto.ir import nodes as n
from pypto.lang import parse
from pypto.ir.verifier import verify
from pypto.runtime import RunConfig
from tests.helpers import program_text
from pypto.backend import A2A3


def exact(program):
    verify(program, A2A3)
    text = program.as_python()
    again = parse(text)
    assert again == program
    assert again.as_python() == text
    return text


def test_float_constants_compare_by_bits():
    assert n.Const(float("nan")) == n.Const(float("nan"))
    assert n.Const(float("nan")) == n.Const(-math.copysign(math.nan, 1.0))
    assert hash(n.Const(float("nan"))) == hash(n.Const(float("nan")))
    assert n.Const(0.0) != n.Const(-0.0)
    assert n.Const(1) != n.Const(1.0) and n.Const(2.5) == n.Const(2.5)


@pytest.mark.parametrize("value", [float("nan"), -0.0, float("inf"), float("-inf"), 1e-45])
def test_special_float_constants_roundtrip(value):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.adds(pl.load(a, [0, 0], [8, 128]), VALUE), [0, 0], out)
        return out

    global VALUE
    VALUE = value
    a, out = torch.randn(8, 128), torch.zeros(8, 128)
    exact(k.specialize(a, out))
    k.lower(a, out, config=RunConfig(verification_level="ROUNDTRIP"))


VALUE = 0.0


def test_an_if_on_a_constant_in_dump_text_stays_an_if():
    text = program_text("""
        @pl.function(type=pl.FunctionType.InCore)
        def f(self, a: pl.Tensor[[8, 128], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]]) -> pl.Tensor[[8, 128], pl.FP32]:
            t = pl.tile.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Vec)
            if True:
                u = pl.tile.exp(t)
                v = pl.yield_(u)
            else:
                w = pl.tile.neg(t)
                v = pl.yield_(w)
            pl.tile.store(v, [0, 0], out)
            return out
    """)
    program = parse(text)
    assert any(isinstance(s, n.If) for s in program.functions[0].body)
    assert exact(program) == text


def test_a_static_if_in_user_code_takes_the_chosen_branchs_yields(cfg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [8, 128])
            if VALUE < 1.0:
                u = pl.exp(t)
                v = pl.yield_(u)
            else:
                w = pl.neg(t)
                v = pl.yield_(w)
            pl.store(v, [0, 0], out)
        return out

    a, out = torch.randn(8, 128), torch.zeros(8, 128)
    text = exact(k.specialize(a, out))
    assert "if " not in text and "neg" not in text
    k(a, out, config=cfg)
    assert torch.equal(out, torch.exp(a))


@pytest.fixture(params=["ref", "a2a3sim"])
def cfg(request):
    return RunConfig(platform=request.param)


@pytest.mark.parametrize("hint", ["bad name", "class", "1st", "pl"])
def test_name_hint_must_be_an_identifier(hint):
    global HINT
    HINT = hint

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint=HINT):
            pl.store(pl.load(a, [0, 0], [8, 128]), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match=f"name_hint={hint!r} must be a Python identifier that is not a keyword") as info:
        k.specialize(torch.zeros(8, 128), torch.zeros(8, 128))
    assert info.value.span.file == __file__ and "name_hint=HINT" in str(info.value)


HINT = "softmax_rows"


def test_a_good_name_hint_names_the_outlined_function():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax_rows"):
            pl.store(pl.load(a, [0, 0], [8, 128]), [0, 0], out)
        return out

    lowered = k.lower(torch.zeros(8, 128), torch.zeros(8, 128), config=RunConfig(verification_level="ROUNDTRIP"))
    assert "softmax_rows" in [f.name for f in lowered.functions]


def test_an_empty_program_prints_as_parseable_text():
    program = parse("import pypto.language as pl\n\n\n@pl.program\nclass p:\n    pass\n")
    assert program == n.Program("p", ())
    exact(program)


@pytest.mark.parametrize("decorators", ["", "@pl.function\n", "@pl.program\n@pl.program\n", "@program\n"])
def test_a_class_that_is_not_a_program_does_not_parse_as_one(decorators):
    with pytest.raises(ParseError, match="class 'p' is not a program"):
        parse(f"import pypto.language as pl\n\n\n{decorators}class p:\n    pass\n")


@pytest.mark.parametrize("shape", ["[-4]", "[0, 4]", "[]"])
def test_non_positive_dims_in_a_tensor_annotation_are_rejected(shape):
    text = program_text(f"""
        @pl.function(type=pl.FunctionType.InCore)
        def f(self, a: pl.Tensor[{shape}, pl.FP32]):
            pass
    """)
    with pytest.raises(TypeCheckError, match="a tensor shape has positive extents") as info:
        parse(text)
    assert f"a: pl.Tensor[{shape}, pl.FP32]" in info.value.span.source_line()


def test_a_placed_tile_joining_an_unplaced_branch_result_reads_back_exactly():
    text = program_text("""
        @pl.function(type=pl.FunctionType.InCore)
        def f(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]], n: pl.Scalar[pl.INT64]):
            t: pl.Tile[[16, 128], pl.FP32, pl.MemRef("pipe_t", slots=2, pipeline=True)[0], pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            if n > 0:
                t_1 = pl.tile.exp(t)
                t_2 = pl.yield_(t_1)
            else:
                t_2: pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec] = pl.yield_(t)
            pl.tile.store(t_2, [0, 0], out)
    """)
    program = parse(text)
    result = next(s for s in program.functions[0].body if isinstance(s, n.If)).results[0]
    assert result.type.memref is None
    assert exact(program) == text
    # Without the annotation the unplaced type is the join of the two.
    assert parse(text.replace(": pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec] = pl.yield_", " = pl.yield_")) == program
    with pytest.raises(TypeCheckError, match="branches of this if yield values of different types"):
        parse(text.replace("t_1 = pl.tile.exp(t)", "t_1 = pl.tile.cast(t, target_type=pl.FP16)"))
