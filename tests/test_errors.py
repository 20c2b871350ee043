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
from pypto.lang import parse
from pypto.runtime import RunConfig

REF = RunConfig(platform="ref")
UB_DECL = pl.MemRef("ub", slots=2)  # module-level declarations: the mistakes under test
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
    assert err.span is not None, f"{type(err).__name__} names no place: {err}"
    assert f"{err.span.file}:{err.span.line}:" in str(err), err  # and the message says it
    assert err.hint, f"{type(err).__name__} says no fix: {err}"
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


def test_matmul_operands_must_be_in_left_or_mat():
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Vec)
            y = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            c = pl.matmul(x, y)  # MARK-mm
            pl.store(c, [0, 0], out)
        return out

    a = torch.zeros(64, 64, dtype=torch.float16)
    err = raises(MemorySpaceError, k, a, a, torch.zeros(64, 64),
                 match=r"The operator tile\.matmul requires its 'lhs' operand in Left/Mat, but got a tile in Vec")
    assert "pl.load(..., target_memory=pl.Mem.Mat)" in located(err, "MARK-mm", "pl.matmul")


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


def test_memref_declaration_used_as_a_value():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [64, 128])
            pl.store(pl.add(t, UB_DECL), [0, 0], out)  # MARK-alias
        return out

    err = raises(ParseError, k, *a_out(), match=r"'UB_DECL' is a pl\.MemRef declaration: it says where a tile lives")
    assert "UB_DECL[i % 2], pl.Mem.Vec]" in located(err, "MARK-alias", "UB_DECL")


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
        "while": (k_while, UnsupportedSyntaxError, "'True' always holds and nothing breaks out of the loop", "True"),
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


# ----------------------------------------------------------------------------- indices are integers


def test_float_offsets_are_rejected_where_written():
    @pl.jit
    def literal(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0.0, 0], [16, 128])  # MARK-float-literal
            pl.store(t, [0, 0], out)
        return out

    @pl.jit
    def scalar(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            pl.store(t, [s // 2, 0], out)  # MARK-float-floordiv
        return out

    err = raises(TypeCheckError, literal, *a_out(), match=r"tile.load's 'offsets' must be integers, but '0.0' is Scalar\[fp32\]")
    located(err, "MARK-float-literal", "0.0")
    with pytest.raises(TypeCheckError, match=r"tile.store's 'offsets' must be integers, but 's // 2'") as info:
        scalar(torch.zeros(128, 128), 1.5, torch.zeros(128, 128), config=REF)
    located(info.value, "MARK-float-floordiv", "s // 2")


def test_float_valid_extents_are_rejected_where_written():
    @pl.jit
    def valid(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128], valid_shape=[s, 128])  # MARK-float-valid
            pl.store(t, [0, 0], out)
        return out

    @pl.jit
    def rows(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            u = pl.set_validshape(t, s, 128)  # MARK-float-rows
            pl.store(u, [0, 0], out)
        return out

    for kernel, marker, match in ((valid, "MARK-float-valid", "tile.load's 'valid_shape' must be integers"),
                                  (rows, "MARK-float-rows", "tile.set_validshape's 'valid_rows' must be an integer")):
        with pytest.raises(TypeCheckError, match=match) as info:
            kernel(torch.zeros(16, 128), 1.5, torch.zeros(16, 128), config=REF)
        located(info.value, marker, "s,")


def test_integer_scalar_floor_division_is_an_offset():
    @pl.jit
    def k(a: pl.Tensor, n: pl.Scalar[pl.INT64], out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [n // 2, 0], [8, 128])
            pl.store(t, [0, 0], out)
        return out

    a, out = torch.randn(16, 128), torch.zeros(8, 128)
    for platform in ("ref", "a2a3sim"):
        k(a, 9, out, config=RunConfig(platform=platform))
        assert torch.equal(out, a[4:12])


# ----------------------------------------------------------------------------- statements that do nothing


@pytest.mark.parametrize("op", ["exp", "row_sum", "load"])
def test_a_discarded_op_result_is_rejected(op):
    @pl.jit
    def k_exp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            pl.exp(t)  # MARK-discard-exp
            pl.store(t, [0, 0], out)
        return out

    @pl.jit
    def k_row_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            pl.row_sum(t)  # MARK-discard-row_sum
            pl.store(t, [0, 0], out)
        return out

    @pl.jit
    def k_load(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.load(a, [0, 0], [16, 128])  # MARK-discard-load
        return out

    kernel = {"exp": k_exp, "row_sum": k_row_sum, "load": k_load}[op]
    err = raises(UnsupportedSyntaxError, kernel, torch.zeros(16, 128), torch.zeros(16, 128),
                 match=f"the result of pl.{op} is discarded; assign it to a name")
    located(err, f"MARK-discard-{op}", f"pl.{op}(")


def test_ops_with_effects_stay_statements():
    from pypto.ir.ops import all_ops

    from pypto.ir.ops.pipes import PIPE_OPS

    effects = {op.name for op in all_ops() if op.has_effect}
    assert effects == {"tile.store", "tile.mscatter", "tensor.assemble", "tensor.write", "tensor.expand_clone",
                       "tile.debug_print", *PIPE_OPS,  # GM writes, a pipe's moves, and what a print shows
                       "system.syncall",  # the launch's blocks meeting
                       # and a rank's acts on its peers
                       "system.notify", "system.wait", "tile.remote_store", "tensor.remote_store",
                       *(f"system.{c}" for c in ("allreduce", "barrier", "broadcast", "allgather", "reduce_scatter",
                                                 "all_to_all", "all_to_all_v", "put", "get"))}

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(a, [0, 0], [16, 128]), [0, 0], out)
            pl.assemble(out, pl.exp(a[0:8, :]), [8, 0])
        return out

    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    k(a, out, config=REF)
    assert torch.equal(out, torch.cat([a[:8], torch.exp(a[:8])]))


def test_a_kernel_that_calls_itself_is_reported():
    @pl.jit
    def again(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        out = again(a, out)  # MARK-recursion
        return out

    err = raises(UnsupportedSyntaxError, again, *a_out(), match=r"function 'again' calls itself \(recursion is not supported\)")
    located(err, "MARK-recursion", "again(a")


@pl.jit.inline
def _spliced_forever(t: pl.Tile):
    u = _spliced_forever(t)  # MARK-inline-recursion
    return u


def test_an_inline_kernel_that_calls_itself_is_reported():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(_spliced_forever(pl.load(a, [0, 0], [16, 128])), [0, 0], out)
        return out

    err = raises(UnsupportedSyntaxError, k, *a_out(16), match="function '_spliced_forever' calls itself")
    located(err, "MARK-inline-recursion", "_spliced_forever(t)")


# ----------------------------------------------------------------------------- config


def test_config_may_be_a_mapping_of_run_config_fields():
    from pypto.errors import ConfigError

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.exp(pl.load(a, [0, 0], [16, 128])), [0, 0], out)
        return out

    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    k(a, out, config={"platform": "ref"})
    assert torch.equal(out, torch.exp(a))
    with pytest.raises(ConfigError, match="config has no field 'platfrom'"):
        k(a, out, config={"platfrom": "ref"})
    with pytest.raises(ConfigError, match="is not a RunConfig"):
        k(a, out, config="ref")
    with pytest.raises(ConfigError, match="Invalid platform 'npu'"):
        k.lower(a, out, config={"platform": "npu"})


# ----------------------------------------------------------------------------- parameter directions


def test_storing_into_an_input_parameter_names_it_and_the_fix():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            pl.store(pl.exp(t), [0, 0], a)  # MARK-store-input
        return out

    err = raises(TypeCheckError, k, *a_out(16), match="tile.store writes its 'output_tensor', which is the input parameter 'a'")
    text = located(err, "MARK-store-input", "pl.store(")
    assert "pl.Out[" in text and "pl.InOut[" in text


def test_an_input_carried_through_a_loop_is_still_read_only():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(2):
                t = pl.load(a, [i * 8, 0], [8, 128])
                a = pl.store(t, [i * 8, 0], a)  # MARK-store-carried-input
            pl.store(pl.load(a, [0, 0], [16, 128]), [0, 0], out)
        return out

    err = raises(TypeCheckError, k, *a_out(16), match="which is the input parameter 'a'")
    located(err, "MARK-store-carried-input", "pl.store(")


@pl.jit.incore
def _writes_second(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    pl.store(pl.load(a, [0, 0], [16, 128]), [0, 0], o)
    return o


def test_passing_an_input_where_the_callee_writes_is_reported():
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        b = _writes_second(a, b)  # MARK-call-writes-input
        return b

    with pytest.raises(TypeCheckError, match=r"'_writes_second' writes its parameter 'o' \(pl.Out\), and this argument "
                                             "is the input parameter 'b'") as info:
        k(torch.zeros(16, 128), torch.zeros(16, 128), torch.zeros(16, 128), config=REF)
    located(info.value, "MARK-call-writes-input", "b)")


def test_inout_and_out_parameters_are_written():
    @pl.jit
    def k(a: pl.InOut[pl.Tensor], out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            pl.store(pl.exp(t), [0, 0], a)
            pl.store(t, [0, 0], out)
        return out

    a = torch.randn(16, 128)
    a0, out = a.clone(), torch.zeros(16, 128)
    k(a, out, config=REF)
    assert torch.equal(a, torch.exp(a0)) and torch.equal(out, a0)


def test_nested_directions_are_rejected():
    @pl.jit
    def k(a: pl.Out[pl.Out[pl.Tensor]]):  # MARK-out-out
        return a

    err = raises(TypeCheckError, k, torch.zeros(4, 4), match=r"'pl.Out\[pl.Out\[pl.Tensor\]\]' nests two parameter directions")
    located(err, "MARK-out-out", "pl.Out[pl.Out")


# ----------------------------------------------------------------------------- names a kernel cannot bind


def test_a_local_named_like_the_language_module_is_rejected():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):  # noqa: F823  (the kernel is parsed, never run)
            pl = 3  # MARK-shadow-pl
            t = pl.load(a, [0, 0], [16, 128])
            pl.store(t, [0, 0], out)
        return out

    err = raises(ParseError, k, *a_out(16), match="'pl' is the kernel language module here")
    located(err, "MARK-shadow-pl", "pl = 3")


def test_a_local_named_self_is_a_front_end_error():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            self = pl.load(a, [0, 0], [16, 128])  # MARK-self-local
            pl.store(self, [0, 0], out)
        return out

    err = raises(ParseError, k, *a_out(16), match="'self' cannot name a value in a kernel")
    located(err, "MARK-self-local", "self =")



# ----------------------------------------------------------------------------- unified op keywords


def _mm_kernel_args():
    return torch.randn(32, 64).half(), torch.randn(64, 32).half(), torch.zeros(32, 32)


def test_tile_matmul_out_dtype_must_be_the_accumulators():
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.move(pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            y = pl.move(pl.load(b, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            c = pl.matmul(x, y, out_dtype=pl.FP16)  # MARK-mm-out-dtype
            pl.store(c, [0, 0], out)
        return out

    err = raises(TypeCheckError, k, *_mm_kernel_args(),
                 match="pl.matmul: out_dtype=pl.FP16 on Tile operands, but the Cube accumulator fixes the result dtype to FP32")
    located(err, "MARK-mm-out-dtype", "out_dtype=")


def test_tile_matmul_transposes_are_explained():
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.move(pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            y = pl.move(pl.load(b, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            c = pl.matmul(x, y, b_trans=True)  # MARK-mm-b-trans
            pl.store(c, [0, 0], out)
        return out

    err = raises(TypeCheckError, k, *_mm_kernel_args(), match="pl.matmul: b_trans=True is not supported for Tile operands")
    text = located(err, "MARK-mm-b-trans", "b_trans=")
    assert "transpose=True" in text


def test_a_gm_tensor_is_not_an_on_chip_accumulator():
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, acc: pl.InOut[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc[:] = pl.matmul_acc(acc, a, b)  # MARK-mm-acc-tensor
        return acc

    err = raises(UnsupportedSyntaxError, k, *_mm_kernel_args(), match="'acc' is GM storage")
    text = located(err, "MARK-mm-acc-tensor", "pl.matmul_acc(")
    assert "pl.create_tensor" in text and "pl.matmul(" in text


# ----------------------------------------------------------------------------- names and operators


@pytest.mark.parametrize("case", ["level", "mem", "dtype"])
def test_unknown_members_of_the_language_list_the_known_ones(case):
    @pl.jit
    def k_level(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.FOO):  # MARK-unknown-level
            pl.store(pl.load(a, [0, 0], [16, 128]), [0, 0], out)
        return out

    @pl.jit
    def k_mem(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Foo)  # MARK-unknown-mem
            pl.store(t, [0, 0], out)
        return out

    @pl.jit
    def k_dtype(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.cast(pl.load(a, [0, 0], [16, 128]), target_type=pl.FP64), [0, 0], out)  # MARK-unknown-dtype
        return out

    kernel, match, token = {
        "level": (k_level, r"unknown member 'FOO' of pl.Level \(known: AIV, AIC, CORE_GROUP", "pl.Level.FOO"),
        "mem": (k_mem, r"unknown member 'Foo' of pl.Mem \(known: DDR, Vec, Mat", "pl.Mem.Foo"),
        "dtype": (k_dtype, r"unknown dtype pl.FP64 \(known: BOOL, INT8", "pl.FP64"),
    }[case]
    err = raises(ParseError, kernel, *a_out(16), match=match)
    located(err, f"MARK-unknown-{case}", token)


@pytest.mark.parametrize("case", ["neg", "pow"])  # (1 - t, 2.0 / t: tests/test_kernel_forms.py)
def test_operator_forms_with_no_tile_op_say_what_to_write(case):
    @pl.jit
    def k_neg(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            pl.store(-t, [0, 0], out)  # MARK-op-neg
        return out

    @pl.jit
    def k_pow(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            pl.store(t ** 2, [0, 0], out)  # MARK-op-pow
        return out

    kernel, match, token, fix = {
        "neg": (k_neg, "unary '-' on a tile or tensor is not supported", "-t", "pl.neg(t)"),
        "pow": (k_pow, r"operator '\*\*' is not an op on tiles", "t ** 2", "pl.mul(t, t)"),
    }[case]
    err = raises(UnsupportedSyntaxError, kernel, *a_out(16), match=match)
    assert fix in located(err, f"MARK-op-{case}", token)


def test_scalar_on_the_left_of_a_commutative_operator():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 128])
            pl.store(2.0 * (1.0 + t), [0, 0], out)
        return out

    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    for platform in ("ref", "a2a3sim"):
        k(a, out, config=RunConfig(platform=platform))
        assert torch.equal(out, (a + 1.0) * 2.0)


def test_a_zero_extent_load_prints_the_shape_as_written():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [0, 128])  # MARK-zero-extent
            pl.store(t, [0, 0], out)
        return out

    err = raises(TypeCheckError, k, *a_out(16), match=r"requires static positive tile shapes, but got \[0, 128\]\n")
    located(err, "MARK-zero-extent", "pl.load(")


def test_a_kernel_cannot_return_a_scalar():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(a, [0, 0], [16, 128]), [0, 0], out)
        return 3  # MARK-return-scalar

    err = raises(TypeCheckError, k, *a_out(16), match="A task cannot return a scalar")
    located(err, "MARK-return-scalar", "3")


# ----------------------------------------------------------------------------- external kernels


@pl.function(type=pl.FunctionType.AIV, external_source="kernels/my_kernel.cpp")
def my_kernel(x: pl.Tensor[[128, 128], pl.FP16], out: pl.Out[pl.Tensor[[128, 128], pl.FP16]]):  # ext-def
    ...


def test_an_external_kernel_is_declared_with_its_source_beside_the_defining_file():
    from pathlib import Path

    assert my_kernel.external_source == Path(__file__).resolve().parent / "kernels" / "my_kernel.cpp"
    assert my_kernel.type is pl.FunctionType.AIV


def test_an_external_kernel_cannot_run_here_and_says_so():
    from pypto.errors import ExecutionError

    with pytest.raises(ExecutionError, match=r"external kernel .*my_kernel.cpp.*no vendor toolkit") as info:
        my_kernel(torch.zeros(128, 128), torch.zeros(128, 128))
    assert info.value.span.file == __file__ and info.value.span.line == where("# ext-def", "def")[0]


def test_an_external_kernel_body_is_a_bare_ellipsis():
    with pytest.raises(ParseError, match="its body is a bare '...'") as info:
        @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
        def body(x: pl.Tensor[[16, 16], pl.FP16]):
            return x  # ext-body
    located(info.value, "# ext-body", "return")


def test_an_external_kernel_in_a_program_is_refused_at_the_keyword():
    with pytest.raises(UnsupportedSyntaxError, match="external kernels") as info:
        @pl.program
        class WithExternal:
            @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")  # ext-prog
            def k(self, x: pl.Tensor[[16, 16], pl.FP16]):
                ...
    located(info.value, "# ext-prog", '"k.cpp"')


def test_a_program_method_called_on_its_own_says_how_to_run_it():
    from pypto.errors import ExecutionError

    @pl.function(type=pl.FunctionType.InCore)
    def lone(x: pl.Tensor[[16, 16], pl.FP32]):  # lone-def
        return x

    with pytest.raises(ExecutionError, match="runs as a method of a @pl.program class") as info:
        lone(torch.zeros(16, 16))
    assert info.value.span.line == where("# lone-def", "def")[0]


def test_a_carried_tile_that_changes_slot_says_where_it_is_placed():
    @pl.jit
    def window(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            prev: pl.Tile[[16, 128], pl.FP32, pl.MemRef("w", slots=2)[0], pl.Mem.Vec] = pl.load(a, [0, 0], [16, 128])
            for i in pl.range(1, 4):  # slot-carry
                cur: pl.Tile[[16, 128], pl.FP32, pl.MemRef("w", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * 16, 0], [16, 128])  # noqa: E501
                pl.store(pl.sub(cur, prev), [i * 16, 0], out)
                prev = cur
        return out

    err = raises(TypeCheckError, window, torch.randn(64, 128), torch.zeros(64, 128),
                 match=r"'prev' is Tile\[16x128 fp32 Vec\] in pl.MemRef\(\"w\", slots=2\)\[0\] before the loop and "
                       r"Tile\[16x128 fp32 Vec\] in pl.MemRef\(\"w\", slots=2\)\[i % 2\] at the end of its body")
    text = located(err, "# slot-carry", "for")
    assert "a carried tile keeps one place" in text
