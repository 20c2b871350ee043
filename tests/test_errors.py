"""Every user mistake is a pypto error naming the user's file:line:col, quoting the line,
and saying what to do."""

import inspect

import pytest
import torch

import pypto.language as pl
from pypto.errors import (
    MemorySpaceError,
    OutOfBoundsError,
    ParseError,
    PyptoError,
    SpecializationError,
    TypeCheckError,
    UnsupportedSyntaxError,
)
from pypto.ir import parse
from pypto.runtime import RunConfig

REF = RunConfig(platform="ref")
UB_DECL = pl.MemRef("ub", slots=2)  # module-level declarations: the mistake under test
TILE_T = pl.Tile[[64, 128], pl.FP32]


def a_out(rows=128, cols=128, dtype=torch.float32):
    return torch.zeros(rows, cols, dtype=dtype), torch.zeros(rows, cols, dtype=dtype)


def where(marker: str, token: str):
    """(line, col) of ``token`` on the line of this file that carries ``marker``."""
    lines, _ = inspect.getsourcelines(inspect.getmodule(where))
    for number, text in enumerate(lines, start=1):
        if marker in text and "where(" not in text:
            return number, text.index(token) + 1
    raise AssertionError(marker)


def raises(cls, kernel, *args, match: str):
    with pytest.raises(cls, match=match) as info:
        kernel(*args, config=REF)
    err = info.value
    assert isinstance(err, PyptoError)
    return err


def located(err, marker: str, token: str):
    line, col = where(marker, token)
    assert err.span is not None, err
    assert err.span.file == __file__
    assert (err.span.line, err.span.col) == (line, col), (err.span, line, col)
    text = str(err)
    assert f"{__file__}:{line}:{col}" in text
    assert marker in text  # the source line is quoted
    return text


def test_op_outside_pl_at_is_misplaced():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        t = pl.load(a, [0, 0], [64, 128])  # MARK-misplaced
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(t, [0, 0], out)
        return out

    err = raises(ParseError, k, *a_out(), match=r"Misplaced tensor op 'tile\.load' in Orchestration function "
                                                 r"\(should be inside InCore block\)")
    text = located(err, "MARK-misplaced", "pl.load")
    assert "with pl.at(level=pl.Level.CORE_GROUP)" in text


def test_parameter_without_annotation():
    @pl.jit
    def k(a, out: pl.Out[pl.Tensor]):  # MARK-noann
        return out

    err = raises(TypeCheckError, k, *a_out(), match="Parameter 'a' missing type annotation")
    located(err, "MARK-noann", "a,")
    assert "Add a type annotation like" in str(err)


def test_unknown_op_suggests_the_close_name():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.lod(a, [0, 0], [64, 128])  # MARK-unknown
        return out

    err = raises(ParseError, k, *a_out(), match=r"Unknown operation: pl\.lod")
    assert "did you mean pl.load?" in located(err, "MARK-unknown", "pl.lod")


def test_unknown_tile_namespace_op():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.tile.lod(a, [0, 0], [64, 128])  # MARK-unknown-tile
        return out

    err = raises(ParseError, k, *a_out(), match=r"Unknown tile operation: lod")
    located(err, "MARK-unknown-tile", "pl.tile.lod")


def test_unknown_keyword_suggests_the_close_name():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [64, 128], target=pl.Mem.Vec)  # MARK-kw
        return out

    err = raises(TypeCheckError, k, *a_out(), match=r"tile\.load got an unexpected keyword 'target'")
    assert "did you mean 'target_memory'?" in located(err, "MARK-kw", "target=")


@pytest.mark.parametrize("space", ["Left", "Right", "Acc"])
def test_ddr_load_into_l0_is_rejected(space):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [64, 128], target_memory=SPACE)  # MARK-ddr
        return out

    k.fn.__globals__["SPACE"] = getattr(pl.Mem, space)
    try:
        err = raises(MemorySpaceError, k, *a_out(dtype=torch.float16),
                     match=f"tile.load cannot land a GM tensor in {space}: a load from DDR reaches only Vec or Mat")
    finally:
        del k.fn.__globals__["SPACE"]
    text = located(err, "MARK-ddr", "pl.load")
    assert "help:" in text


def test_matmul_operands_must_be_in_left_and_right():
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            y = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            c = pl.matmul(x, y)  # MARK-mm
            pl.store(c, [0, 0], out)
        return out

    a = torch.zeros(64, 64, dtype=torch.float16)
    err = raises(MemorySpaceError, k, a, a, torch.zeros(64, 64),
                 match=r"The operator tile\.matmul requires its 'lhs' operand in Left, but got a tile in Mat")
    assert "pl.move(tile, target_memory=pl.Mem.Left)" in located(err, "MARK-mm", "pl.matmul")


def test_shape_mismatch():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [64, 128])
            y = pl.load(a, [64, 0], [32, 128])
            pl.store(pl.add(x, y), [0, 0], out)  # MARK-shape
        return out

    err = raises(TypeCheckError, k, *a_out(),
                 match=r"The operator tile\.add requires compatible shapes, but got \[64, 128\] and \[32, 128\]")
    located(err, "MARK-shape", "pl.add")


def test_dtype_mismatch_names_the_cast():
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [64, 128])
            y = pl.load(b, [0, 0], [64, 128])
            pl.store(pl.add(x, y), [0, 0], out)  # MARK-dtype
        return out

    err = raises(TypeCheckError, k, torch.zeros(64, 128), torch.zeros(64, 128, dtype=torch.float16),
                 torch.zeros(64, 128),
                 match=r"requires identical lhs and rhs data types, but got FP32 and FP16")
    assert "pl.cast" in located(err, "MARK-dtype", "pl.add")


def test_constant_region_out_of_range():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [96, 0], [64, 128])  # MARK-oob
            pl.store(t, [0, 0], out)
        return out

    err = raises(OutOfBoundsError, k, *a_out(),
                 match=r"tile\.load region \[96, 160\) on axis 0 is outside the tensor's \[0, 128\)")
    located(err, "MARK-oob", "pl.load")


def test_loop_driven_region_out_of_range():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(3):
                t = pl.load(a, [i * 64, 0], [64, 128])  # MARK-oob-loop
                pl.store(t, [0, 0], out)
        return out

    err = raises(OutOfBoundsError, k, *a_out(),
                 match=r"tile\.load region on axis 0 reaches \[128, 192\) but the tensor's axis is \[0, 128\)")
    assert "0..128 over the loop" in located(err, "MARK-oob-loop", "pl.load")


def test_store_region_out_of_range():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [64, 128])
            pl.store(t, [0, 64], out)  # MARK-oob-store
        return out

    err = raises(OutOfBoundsError, k, *a_out(), match=r"tile\.store region \[64, 192\) on axis 1")
    located(err, "MARK-oob-store", "pl.store")


def test_memref_through_a_module_level_alias():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(2):
                t: pl.Tile[[64, 128], pl.FP32, UB_DECL[i % 2], pl.Mem.Vec] = pl.load(a, [i * 64, 0], [64, 128])  # MARK-alias
                pl.store(t, [i * 64, 0], out)
        return out

    err = raises(ParseError, k, *a_out(), match=r"'UB_DECL' is a pl\.MemRef declaration bound at module level")
    assert 'pl.MemRef("ub", slots=2)[i % 2]' in located(err, "MARK-alias", "UB_DECL")


def test_tile_type_through_a_module_level_alias():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t: TILE_T = pl.load(a, [0, 0], [64, 128])  # MARK-tile-alias
            pl.store(t, [0, 0], out)
        return out

    err = raises(ParseError, k, *a_out(), match=r"'TILE_T' is a type annotation bound at module level")
    located(err, "MARK-tile-alias", "TILE_T")


@pytest.mark.parametrize("construct", ["while", "try", "lambda", "range"])
def test_unsupported_python_constructs(construct):
    @pl.jit
    def k_while(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            while True:  # MARK-while
                pass
        return out

    @pl.jit
    def k_try(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        try:  # MARK-try
            pass
        except ValueError:
            pass
        return out

    @pl.jit
    def k_lambda(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        f = lambda x: x  # MARK-lambda  # noqa: E731
        return out

    @pl.jit
    def k_range(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in range(4):  # MARK-range
                pass
        return out

    cases = {
        "while": (k_while, UnsupportedSyntaxError, "Unsupported statement type: While", "while"),
        "try": (k_try, UnsupportedSyntaxError, "Unsupported statement type: Try", "try"),
        "lambda": (k_lambda, TypeCheckError, "is not a scalar expression", "lambda"),
        "range": (k_range, UnsupportedSyntaxError, r"Python's range\(\) is not a kernel loop", "range("),
    }
    kernel, cls, match, token = cases[construct]
    err = raises(cls, kernel, *a_out(), match=match)
    located(err, f"MARK-{construct}", token)


def test_loop_local_name_used_after_the_loop():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(2):
                t = pl.load(a, [i * 64, 0], [64, 128])
            pl.store(t, [0, 0], out)  # MARK-dropped
        return out

    err = raises(ParseError, k, *a_out(), match=r"'t' is bound inside the loop at line \d+ and is not available after it")
    located(err, "MARK-dropped", "t,")


def test_specialization_mismatch_with_declared_shape():
    @pl.jit
    def k(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor]):  # MARK-spec
        return out

    err = raises(SpecializationError, k, *a_out(),
                 match=r"argument 'a' is Tensor\[128x128 fp32\] but the kernel declares Tensor\[64x64 fp32\]")
    located(err, "MARK-spec", "pl.Tensor[")


def test_wrong_argument_count():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        return out

    with pytest.raises(SpecializationError, match=r"takes 2 arguments \(a, out\), got 1"):
        k(torch.zeros(4, 4), config=REF)


def test_unknown_platform_lists_the_available_ones():
    from pypto.errors import ConfigError

    with pytest.raises(ConfigError, match="Invalid platform 'npu'") as info:
        RunConfig(platform="npu")
    assert "'ref'" in str(info.value)


def test_malformed_dump_text_names_line_and_column():
    with pytest.raises(ParseError) as info:
        parse("import pypto.language as pl\n\n@pl.program\nclass P:\n    def f(self:\n")
    assert info.value.span.line == 5
    assert "<string>:5:" in str(info.value)


def test_dump_text_is_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    text = (
        "import pypto.language as pl\n\n\n@pl.program\nclass P:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        f"    def f(self, a: pl.Tensor[[4, 4], pl.FP32]):\n"
        f"        x = __import__('pathlib').Path({str(marker)!r}).touch()\n"
    )
    with pytest.raises(PyptoError):
        parse(text)
    assert not marker.exists()


def test_calling_an_op_outside_a_kernel_explains_itself():
    with pytest.raises(PyptoError, match="only has meaning inside a @pl.jit"):
        pl.exp(torch.zeros(2))
