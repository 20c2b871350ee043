"""The reference's text forms: ``pl.parse`` / ``pl.loads`` (one function, or a program),
``pl.parse_program`` / ``pl.loads_program``, ``pypto.ir.serialize`` / ``deserialize`` (the
IR's text, read back as it was), and the error classes a reference user catches."""

import pytest
import torch

import pypto
import pypto.language as pl
from pypto import ir
from pypto.errors import CodegenError, TypeCheckError, UnwrittenOutputError, VerificationError
from pypto.runtime import RunConfig

FUNCTION = """
@pl.function
def vector_add(x: pl.Tensor[[128], pl.FP32], y: pl.Tensor[[128], pl.FP32]) -> pl.Tensor[[128], pl.FP32]:
    result: pl.Tensor[[128], pl.FP32] = pl.add(x, y)
    return result
"""

PROGRAM = """
import pypto.language as pl

@pl.program
class Twice:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        out = pl.store(pl.muls(pl.load(x, [0, 0], [16, 64]), 2.0), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        out = self.k(x, out)
        return out
"""


def test_parse_reads_one_function_without_an_import():
    fn = pl.parse(FUNCTION)
    assert isinstance(fn, ir.Function) and fn.name == "vector_add"
    assert len(fn.params) == 2 and len(fn.return_types) == 1 and fn.func_type is fn.type
    assert "pl.tensor.add(x, y)" in fn.as_python()


def test_parse_and_loads_read_a_program(tmp_path):
    program = pl.parse(PROGRAM)
    assert isinstance(program, ir.Program) and program == pl.parse_program(PROGRAM)
    path = tmp_path / "twice.py"
    path.write_text(PROGRAM)
    assert pl.loads_program(path) == program and pl.loads(path) == program
    x, out = torch.randn(16, 64), torch.zeros(16, 64)
    ir.compile(program, platform="ref", output_dir=tmp_path / "b")(x, out)
    assert torch.equal(out, x * 2)


def test_parse_errors_are_the_reference_s_kinds_and_located():
    with pytest.raises(ValueError, match="expected one @pl.function, found 0"):
        pl.parse("x = 42\n")
    with pytest.raises(ValueError, match="found 2 functions") as info:
        pl.parse(FUNCTION + FUNCTION.replace("vector_add", "other"))
    assert info.value.span.line == 8  # the second def
    with pytest.raises(SyntaxError) as info:
        pl.parse("@pl.function\ndef f(x: pl.Tensor[[64], pl.FP32]):\n    return x +\n")
    assert isinstance(info.value, pypto.Error) and info.value.span.line == 3
    with pytest.raises(pypto.Error, match="cannot read"):
        pl.loads("/nonexistent/kernel.py")


def test_serialized_ir_reads_back_as_it_was():
    program = pl.parse(PROGRAM)
    data = ir.serialize(program)
    assert isinstance(data, bytes) and ir.deserialize(data) == program
    fn = pl.parse(FUNCTION)
    assert ir.deserialize(ir.serialize(fn)).as_python() == fn.as_python()
    with pytest.raises(pypto.Error, match="not pypto IR"):
        ir.deserialize(b"\x93\x01\x02")


def test_the_error_classes_users_catch():
    assert issubclass(VerificationError, pypto.InternalError) and issubclass(CodegenError, pypto.PartialCodegenError)
    from pypto.backend.pto_backend import PartialCodegenError

    assert PartialCodegenError is pypto.PartialCodegenError and pypto.Error is pypto.PyptoError


@pl.jit
def rebinds(x: pl.Tensor, result: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        result = pl.mul(x, 2.0)  # MARK-rebind
        result = pl.add(x, 1.0)
    return result


@pl.jit
def writes(x: pl.Tensor, result: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        result[:] = pl.add(x, 1.0)
    return result


def test_an_out_parameter_rebound_and_never_written_is_named_at_the_rebinding():
    import inspect

    with pytest.raises(UnwrittenOutputError, match="'result' is an Out parameter, and this binds the name") as info:
        rebinds(torch.randn(64), torch.zeros(64), config=RunConfig(platform="ref"))
    assert isinstance(info.value, TypeCheckError) and isinstance(info.value, pypto.PartialCodegenError)
    lines, start = inspect.getsourcelines(rebinds.fn)
    assert info.value.span.line == start + next(k for k, t in enumerate(lines) if "MARK-rebind" in t)
    assert "result[:] = value" in info.value.hint
    x, out = torch.randn(64), torch.zeros(64)
    writes(x, out, config=RunConfig(platform="ref"))
    assert torch.equal(out, x + 1)


def test_parsed_source_is_checked_as_kernel_source_is():
    text = PROGRAM.replace("out = pl.store(pl.muls(pl.load(x, [0, 0], [16, 64]), 2.0), [0, 0], out)",
                           "x = pl.store(pl.muls(pl.load(x, [0, 0], [16, 64]), 2.0), [0, 0], x)")
    with pytest.raises(TypeCheckError, match="the input parameter 'x'"):
        pl.parse_program(text)
    with pytest.raises(UnwrittenOutputError, match="'out' is an Out parameter"):
        pl.parse_program(PROGRAM.replace("out = self.k(x, out)", "out = self.k(x, pl.create_tensor([16, 64], "
                                                                 "dtype=pl.FP32))"))
    with pytest.raises(pypto.Error, match="duplicate argument 'x'") as info:
        pl.parse("@pl.function\ndef f(x: pl.Tensor[[64], pl.FP32], x: pl.Tensor[[64], pl.FP32]):\n    return x\n")
    assert info.value.span.line == 2


def test_what_does_not_read_back_is_refused(tmp_path):
    program = pl.parse(PROGRAM)
    with pytest.raises(pypto.Error, match="function 'main' calls k: on its own it does not read back"):
        ir.serialize(program.function("main"))
    with pytest.raises(pypto.Error, match="its text is UTF-8"):
        ir.deserialize(b"pypto-ir 1 program\n\xff\xfe")
    path = tmp_path / "latin.py"
    path.write_bytes(b"# \xe9\n")
    with pytest.raises(pypto.Error, match="is not UTF-8 text"):
        pl.loads(path)
    deep = "@pl.function\ndef f(x: pl.Tensor[[64], pl.FP32]):\n    y = x" + " + x" * 400 + "\n    return y\n"
    with pytest.raises(pypto.Error, match="nested too deeply"):
        pl.parse(deep)


@pytest.mark.parametrize("limit", [None, 20_000])
def test_how_deep_a_text_may_nest_does_not_depend_on_the_process_recursion_limit(limit):
    """A notebook raises Python's recursion limit (IPython sets 3000): a text reads, or is
    refused at its line, the same there as in a script."""
    import sys

    from pypto.lang.text import MAX_NESTING

    body = lambda terms: "@pl.function\ndef f(x: pl.Tensor[[64], pl.FP32]):\n    y = x" + " + x" * terms + "\n    return y\n"
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit or before)
    try:
        assert pl.parse(body(MAX_NESTING - 1)) is not None  # MAX_NESTING levels: the sums and the name
        err = pytest.raises(pypto.Error, pl.parse, body(MAX_NESTING)).value
    finally:
        sys.setrecursionlimit(before)
    assert f"nested too deeply to read (over {MAX_NESTING} levels)" in str(err) and err.span.line == 3
