"""``pl.dynamic`` axes in ``@pl.program`` signatures: the program is compiled for the
extents of the tensors it runs on (once per set, kept), ``pl.tensor.dim`` reads them as
constants, and the ``@pl.function`` kernels it calls by name — at module level, or made by
a builder function — are converted for the types each call passes. An orchestration's
slice may overhang its tensor at run time, as long as no kernel addresses the overhang."""

import inspect

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import ExecutionError, PyptoError, SpecializationError, TypeCheckError
from pypto.runtime import RunConfig, run

R = pl.dynamic("R")
C = pl.dynamic("C")
TILE = 16


@pl.function(type=pl.FunctionType.InCore)
def doubled(x: pl.Tensor[[TILE, C], pl.FP32], out: pl.Out[pl.Tensor[[TILE, C], pl.FP32]]) -> pl.Tensor[[TILE, C], pl.FP32]:
    out = pl.store(pl.muls(pl.load(x, [0, 0], [TILE, C]), 2.0), [0, 0], out)
    return out


@pl.program
class RowTiles:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:  # MARK-entry
        cols = pl.tensor.dim(x, 1)
        for i in pl.range(pl.tensor.dim(x, 0) // TILE):
            oi = doubled(pl.slice(x, [TILE, cols], [i * TILE, 0]), pl.slice(out, [TILE, cols], [i * TILE, 0]))
        return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_program_runs_on_every_extent(platform):
    for shape in [(32, 64), (48, 128), (16, 16)]:
        x, out = torch.randn(*shape), torch.zeros(*shape)
        compiled = run(RowTiles, x, out, config=RunConfig(platform=platform))
        assert torch.equal(out, x * 2), shape
        kernel = compiled.program.function("doubled")
        assert kernel.params[0].type.shape == (TILE, shape[1])  # the kernel, as this call typed it


def test_compiled_once_per_set_of_extents():
    compiled = ir.compile(RowTiles, platform="ref", dump_passes=False)
    assert compiled.param_names == ["x", "out"]
    for rows in (32, 64):
        x, out = torch.randn(rows, 16), torch.zeros(rows, 16)
        compiled(x, out)
        assert torch.equal(out, x * 2)
    first = compiled.compiled_for(torch.zeros(32, 16), torch.zeros(32, 16))
    assert compiled.compiled_for(torch.ones(32, 16), torch.ones(32, 16)) is first
    assert compiled.compiled_for(torch.ones(48, 16), torch.ones(48, 16)) is not first
    assert "3 specialization(s)" in repr(compiled)


def test_without_tensors_the_missing_extent_is_named():
    with pytest.raises(TypeCheckError, match="'x' has a pl.dynamic axis \\(\\[R, C\\]\\), whose extent a call's "
                                             "tensor gives") as info:
        run(RowTiles, config=RunConfig(platform="ref"))
    lines, _ = inspect.getsourcelines(inspect.getmodule(test_without_tensors_the_missing_extent_is_named))
    assert info.value.span.line == next(k for k, t in enumerate(lines, start=1) if t.rstrip().endswith("MARK-entry"))


def test_a_call_that_disagrees_with_the_kernel_is_located():
    with pytest.raises(SpecializationError, match="takes 2 arguments"):
        run(RowTiles, torch.zeros(16, 16), config=RunConfig(platform="ref"))
    with pytest.raises(SpecializationError, match="argument .x. is .*fp16.* but the kernel declares"):
        run(RowTiles, torch.zeros(16, 16, dtype=torch.float16), torch.zeros(16, 16), config=RunConfig(platform="ref"))


# ------------------------------------------------------------------ kernels a builder makes


def make_kernel(rows: int, width: int, factor: float):
    """The sizes the kernel's annotations name (``width``) are the builder's locals, which
    Python evaluates when it defines the function and no closure keeps."""

    @pl.function(type=pl.FunctionType.InCore)
    def scaled(x: pl.Tensor[[rows, width], pl.FP32], out: pl.Out[pl.Tensor[[rows, width], pl.FP32]]):
        out = pl.store(pl.muls(pl.load(x, [0, 0], [rows, 64]), factor), [0, 0], out)
        return out

    return scaled


def build(rows: int, width: int, factor: float):
    kernel = make_kernel(rows, width, factor)

    @pl.program
    class Built:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[rows, width], pl.FP32], out: pl.Out[pl.Tensor[[rows, width], pl.FP32]]):
            out = kernel(x, out)
            return out

    return Built


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_builder_made_kernel_is_called_by_name(platform):
    program = build(16, 64, 3.0)
    assert isinstance(program, ir.Program) and [f.name for f in program.functions] == ["scaled", "main"]
    x, out = torch.randn(16, 64), torch.zeros(16, 64)
    run(program, x, out, config=RunConfig(platform=platform))
    assert torch.equal(out, x * 3.0)


@pl.function(type=pl.FunctionType.InCore)
def fixed(x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    out = pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)
    return out


def test_a_mismatched_call_of_a_module_kernel_is_an_error_at_the_call():
    with pytest.raises(TypeCheckError, match="'fixed': argument 'x' is Tensor\\[32x16 fp32\\] but the kernel declares") as info:
        @pl.program
        class Wrong:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[32, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
                out = fixed(x, out)  # MARK-call
                return out
    lines, start = inspect.getsourcelines(test_a_mismatched_call_of_a_module_kernel_is_an_error_at_the_call)
    assert info.value.span.line == start + next(k for k, t in enumerate(lines) if "MARK-call" in t)


def test_a_module_kernel_is_not_called_directly():
    with pytest.raises(ExecutionError, match="is a @pl.function"):
        fixed(torch.zeros(16, 16), torch.zeros(16, 16))


# ------------------------------------------------------------------ overhanging views


@pl.function(type=pl.FunctionType.InCore)
def gather_last(idx: pl.Tensor[[8], pl.INT32], n: pl.Scalar[pl.INDEX], x: pl.Tensor[[64, 16], pl.FP32],
                out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
    for i in pl.range(n):
        out = pl.store(pl.load(x, [pl.read(idx, i), 0], [16, 16]), [0, 0], out)  # MARK-read
    return out


@pl.program
class Paged:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, table: pl.Tensor[[12], pl.INT32], start: pl.Scalar[pl.INDEX], n: pl.Scalar[pl.INDEX],
             x: pl.Tensor[[64, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = gather_last(pl.slice(table, [8], [start]), n, x, out)  # a fixed-width window of the table
        return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_an_overhang_no_kernel_addresses_runs(platform):
    table = torch.tensor([0, 16, 32, 48] * 3, dtype=torch.int32)
    x, out = torch.randn(64, 16), torch.zeros(16, 16)
    run(Paged, table, 8, 3, x, out, config=RunConfig(platform=platform))  # [8, 16) overhangs [0, 12)
    assert torch.equal(out, x[32:48])


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_an_access_of_the_overhang_is_located(platform):
    table = torch.tensor([0, 16, 32, 48] * 3, dtype=torch.int32)
    with pytest.raises(PyptoError, match=r"index \[4\] is outside") as info:
        run(Paged, table, 8, 6, torch.randn(64, 16), torch.zeros(16, 16), config=RunConfig(platform=platform))
    lines, start = inspect.getsourcelines(gather_last.fn)
    assert info.value.span.line == start + next(k for k, t in enumerate(lines) if "MARK-read" in t)


def test_an_offset_past_the_end_is_still_an_error():
    table = torch.zeros(12, dtype=torch.int32)
    with pytest.raises(ExecutionError, match="slice window"):
        run(Paged, table, 13, 1, torch.randn(64, 16), torch.zeros(16, 16), config=RunConfig(platform="ref"))


@pl.program
class TwoWidths:
    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, x: pl.Tensor[[TILE, C], pl.FP32], out: pl.Out[pl.Tensor[[TILE, C], pl.FP32]]):
        out = pl.store(pl.adds(pl.load(x, [0, 0], [TILE, C]), pl.tensor.dim(x, 1)), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP32], b: pl.Tensor[[16, 64], pl.FP32],
             oa: pl.Out[pl.Tensor[[16, 32], pl.FP32]], ob: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        oa = self.copy(a, oa)
        ob = self.copy(b, ob)
        return oa, ob


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_dynamic_method_is_converted_per_call(platform):
    assert [f.name for f in TwoWidths.functions] == ["copy", "copy_1", "main"]
    a, b = torch.randn(16, 32), torch.randn(16, 64)
    oa, ob = torch.zeros(16, 32), torch.zeros(16, 64)
    run(TwoWidths, a, b, oa, ob, config=RunConfig(platform=platform))
    assert torch.equal(oa, a + 32) and torch.equal(ob, b + 64)


# ------------------------------------------------------------------ slice forms, flags


@pl.function(type=pl.FunctionType.InCore)
def flagged(x: pl.Tensor[[16, 16], pl.FP32], first: pl.Scalar[pl.BOOL], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 16])
    if first:
        t = pl.yield_(pl.adds(t, 1.0))
    else:
        t = pl.yield_(t)
    out = pl.store(t, [0, 0], out)
    return out


@pl.program
class Windows:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, 16], pl.FP32], n: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[48, 16], pl.FP32]]):
        for i in pl.range(3):
            if i == 0:
                first = pl.yield_(1)
            else:
                first = pl.yield_(0)
            xi = pl.slice(x, [16, 16], [i * 16, 0], valid_shape=[pl.min(16, n - i * 16), 16], clamp=True)
            oi = flagged(xi, first, pl.slice(out, [16, 16], [i * 16, 0]))
        return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_flag_computed_as_an_int_is_a_bool_argument_and_a_clamped_view_runs(platform):
    x, out = torch.randn(48, 16), torch.zeros(48, 16)
    run(Windows, x, 40, out, config=RunConfig(platform=platform))
    assert torch.equal(out[:16], x[:16] + 1) and torch.equal(out[16:], x[16:])  # the flag is set on the first only
    short = torch.randn(40, 16)  # the last window runs past the tensor: clamp=True sanctions it ...
    with pytest.raises(PyptoError, match="load region"):  # ... and loading the overhang is the error
        run(Windows, short, 40, torch.zeros(48, 16), config=RunConfig(platform=platform))


def test_a_static_overhang_needs_clamp():
    with pytest.raises(PyptoError, match=r"tensor.slice window \[32, 48\) on axis 0 is outside the tensor's \[0, 40\)"):
        @pl.program
        class Over:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[40, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
                out = fixed(pl.slice(x, [16, 16], [32, 0]), out)
                return out


# ------------------------------------------------------------------ from the adversarial review


@pl.function(type=pl.FunctionType.Orchestration)
def ping(x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    out = pong(x, out)  # MARK-ping
    return out


@pl.function(type=pl.FunctionType.Orchestration)
def pong(x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    out = ping(x, out)  # MARK-pong
    return out


def test_recursion_between_module_kernels_is_located_at_the_call():
    from pypto.errors import UnsupportedSyntaxError

    with pytest.raises(UnsupportedSyntaxError, match="function 'ping' calls itself") as info:
        @pl.program
        class Loop:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
                out = ping(x, out)
                return out
    lines, start = inspect.getsourcelines(pong.fn)
    assert info.value.span.line == start + next(k for k, t in enumerate(lines) if "MARK-pong" in t)


FACTOR = 2.0


@pl.function(type=pl.FunctionType.InCore)
def by_factor(x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    out = pl.store(pl.muls(pl.load(x, [0, 0], [16, 16]), FACTOR), [0, 0], out)
    return out


@pl.program
class LateRun:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        out = by_factor(pl.slice(x, [16, 16], [0, 0]), out)
        return out


FACTOR = 3.0  # noqa: F811  (after the kernel and the program are defined)


def test_a_module_kernel_sees_the_names_as_they_were_when_it_was_defined():
    x, out = torch.ones(16, 16), torch.zeros(16, 16)
    run(LateRun, x, out, config=RunConfig(platform="ref"))
    assert torch.equal(out, x * 2.0)


def test_two_programs_of_one_name_in_a_file_are_each_their_own():
    @pl.program
    class Scale:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            out = fixed(pl.tensor.slice(x, [16, 16], [0, 0]), out)
            return out

    first = Scale

    @pl.program
    class Scale:  # noqa: F811
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            out = doubled(x, out)
            return out

    x = torch.randn(16, 16)
    a, b = torch.zeros(16, 16), torch.zeros(16, 16)
    run(first, x, a, config=RunConfig(platform="ref"))
    run(Scale, x, b, config=RunConfig(platform="ref"))
    assert torch.equal(a, x) and torch.equal(b, x * 2)


def test_each_set_of_extents_builds_in_a_directory_of_its_own(tmp_path):
    compiled = ir.compile(RowTiles, output_dir=tmp_path, platform="ref")
    for rows in (16, 32):
        compiled(torch.randn(rows, 16), torch.zeros(rows, 16))
    dirs = sorted(p.name for p in tmp_path.iterdir())
    assert dirs == ["RowTiles_16x16_16x16", "RowTiles_32x16_32x16"]
    assert compiled.compiled_for(torch.zeros(32, 16), torch.zeros(32, 16)).output_dir == \
        (tmp_path / "RowTiles_32x16_32x16").resolve()


def test_what_belongs_to_one_set_of_extents_says_how_to_get_it():
    from pypto.debug import torch_codegen

    with pytest.raises(PyptoError, match="has pl.dynamic axes: it is a Program per set of extents"):
        RowTiles.as_python()
    with pytest.raises(PyptoError, match="program.specialize\\(\\*tensors\\)"):
        torch_codegen(RowTiles)
    program = RowTiles.specialize(torch.zeros(32, 16), torch.zeros(32, 16))
    assert program.function("main").params[0].type.shape == (32, 16)
    compiled = ir.compile(RowTiles, platform="ref", dump_passes=False)
    with pytest.raises(PyptoError, match="'lowered' belongs to one of those"):
        compiled.lowered


def test_a_dynamic_program_runs_on_a_chip_worker():
    from pypto.runtime import ChipWorker

    compiled = ir.compile(RowTiles, platform="a2a3sim", dump_passes=False)
    x = torch.randn(16, 16)
    with ChipWorker(config=RunConfig(platform="a2a3sim")) as worker:
        dx = worker.alloc_tensor((16, 16), torch.float32, init=x)
        dout = worker.alloc_tensor((16, 16), torch.float32)
        compiled(dx, dout)
        out = torch.zeros(16, 16)
        worker.run(compiled, x, out)
        assert torch.equal(out, x * 2) and torch.equal(worker.storage(dout), x * 2)


def test_run_refuses_what_is_not_a_program_and_takes_a_config_dict():
    from pypto.errors import ConfigError

    with pytest.raises(ConfigError, match="pypto.runtime.run takes a @pl.program"):
        run(fixed, torch.zeros(16, 16), torch.zeros(16, 16))
    x, out = torch.randn(16, 16), torch.zeros(16, 16)
    run(RowTiles, x, out, config={"platform": "ref"})
    assert torch.equal(out, x * 2)
    with pytest.raises(PyptoError, match="is already a @pl.function"):
        pl.jit(fixed)


def test_a_return_axis_no_parameter_has_is_named_as_such():
    with pytest.raises(TypeCheckError, match="the return type has a pl.dynamic axis \\(\\[K, 16\\]\\) that no "
                                             "parameter has"):
        K = pl.dynamic("K")

        @pl.program
        class Ret:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> \
                    pl.Tensor[[K, 16], pl.FP32]:
                out = fixed(x, out)
                return out


@pl.program
class Doubled:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, 16], pl.FP32], out: pl.Out[pl.Tensor[[R * 2, 16], pl.FP32]]):  # axis arithmetic
        out = doubled(x, pl.slice(out, [TILE, 16], [0, 0]))
        return out


def test_axis_arithmetic_in_an_annotation_is_read_from_the_source():
    x, out = torch.randn(16, 16), torch.zeros(32, 16)
    run(Doubled, x, out, config=RunConfig(platform="ref"))
    assert torch.equal(out[:16], x * 2)
    with pytest.raises(SpecializationError, match=r"argument 'out' is Tensor\[16x16 fp32\] but the kernel declares "
                                                  r"Tensor\[32x16 fp32\]"):
        run(Doubled, x, torch.zeros(16, 16), config=RunConfig(platform="ref"))


def test_an_incore_function_calling_a_module_kernel_is_pointed_at_the_orchestration():
    with pytest.raises(PyptoError, match="cannot call the kernel 'fixed'") as info:
        @pl.program
        class Nested:
            @pl.function(type=pl.FunctionType.InCore)
            def inner(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
                out = fixed(x, out)
                return out

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
                out = self.inner(x, out)
                return out
    assert "program's orchestration" in info.value.hint
