"""The reference's ``@pl.jit`` forms for what an annotation does not say: ``x.bind_dynamic(axis,
M)`` (with ``M = pl.dynamic("M")`` in the body or at module level), ``pl.Array[n, dtype]`` as a
type, and a constant yielded as an annotated scalar."""

import pytest
import torch

import pypto.language as pl
from pypto.errors import PyptoError, SpecializationError, TypeCheckError
from pypto.runtime import RunConfig

CG = pl.Level.CORE_GROUP
PLATFORMS = ("ref", "a2a3sim")
B_DYN = pl.dynamic("B_DYN")


def _line_of(err) -> str:
    with open(err.span.file) as f:
        return f.read().splitlines()[err.span.line - 1]


@pl.jit
def rows_of_bare(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    M = pl.dynamic("M")
    x.bind_dynamic(0, M)
    out.bind_dynamic(0, M)
    for i in pl.parallel(M // 16):  # M: x's extent on axis 0
        with pl.at(level=CG):
            out[i * 16:(i + 1) * 16, :] = pl.adds(pl.exp(x[i * 16:(i + 1) * 16, :]), M)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("rows", [16, 48])
def test_bind_dynamic_gives_a_bare_parameters_axis_the_calls_extent(platform, rows):
    x, out = torch.randn(rows, 64), torch.zeros(rows, 64)
    rows_of_bare(x, out, config=RunConfig(platform=platform))
    assert torch.equal(out, torch.exp(x) + rows)


@pl.jit
def cast_rows(x: pl.Tensor[[B_DYN, 64, 64], pl.BF16], out: pl.Out[pl.Tensor[[B_DYN, 64, 64], pl.FP32]]):
    x.bind_dynamic(0, B_DYN)
    out.bind_dynamic(0, B_DYN)
    cores = pl.tensor.dim(x, 0) * 3 // 4
    for idx in pl.spmd(cores, name_hint="cast"):
        out[idx:idx + 1, :, :] = pl.cast(x[idx:idx + 1, :, :], target_type=pl.FP32)
    return out


@pl.jit
def pinned(x: pl.Tensor[[8, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]):
    x.bind_dynamic(0, B_DYN)  # the written 8 is a placeholder: axis 0 is B_DYN (the union, as the reference)
    out.bind_dynamic(0, B_DYN)
    with pl.at(level=CG):
        out[:] = pl.neg(x)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_bind_dynamic_with_an_annotation_that_names_or_writes_the_axis(platform):
    x, out = torch.randn(8, 64, 64, dtype=torch.bfloat16), torch.zeros(8, 64, 64)
    cast_rows(x, out, config=RunConfig(platform=platform))
    assert torch.equal(out[:6], x[:6].float()) and not out[6:].any()
    y, got = torch.randn(24, 64), torch.zeros(24, 64)
    pinned(y, got, config=RunConfig(platform=platform))
    assert torch.equal(got, -y)


def _refused(fn, *args, cls=PyptoError):
    with pytest.raises(cls) as info:
        pl.jit(fn)(*args)
    return info.value


def test_bind_dynamic_mistakes_are_located():
    def not_a_param(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        y = x
        y.bind_dynamic(0, B_DYN)  # MARK
        return out

    err = _refused(not_a_param, torch.zeros(16, 64), torch.zeros(16, 64))
    assert "'y' is not one of not_a_param's (x, out)" in err.message and "MARK" in _line_of(err)

    def past_rank(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        x.bind_dynamic(2, B_DYN)  # MARK
        return out

    err = _refused(past_rank, torch.zeros(16, 64), torch.zeros(16, 64), cls=SpecializationError)
    assert "'x' has 2 axes, so it has no axis 2 to bind" in err.message and "MARK" in _line_of(err)

    def not_an_axis(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        x.bind_dynamic(0, 16)  # MARK
        return out

    err = _refused(not_an_axis, torch.zeros(16, 64), torch.zeros(16, 64))
    assert "binds an axis to a pl.dynamic, and '16' is not one" in err.message and "MARK" in _line_of(err)

    def twice(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        M = pl.dynamic("M")
        x.bind_dynamic(0, M)
        x.bind_dynamic(0, B_DYN)  # MARK
        return out

    err = _refused(twice, torch.zeros(16, 64), torch.zeros(16, 64))
    assert "axis 0 of 'x' is bound to 'M' already" in err.message and "MARK" in _line_of(err)

    def of_a_scalar(x: pl.Tensor, n: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
        n.bind_dynamic(0, B_DYN)  # MARK
        return out

    err = _refused(of_a_scalar, torch.zeros(16, 64), 3, torch.zeros(16, 64))
    assert "marks an axis of a tensor, and 'n' is Scalar" in err.message and "MARK" in _line_of(err)

    def bad_name(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        M = pl.dynamic("2M")  # MARK
        x.bind_dynamic(0, M)
        return out

    err = _refused(bad_name, torch.zeros(16, 64), torch.zeros(16, 64))
    assert "pl.dynamic takes the axis's name" in err.message and "MARK" in _line_of(err)


N = 4


@pl.jit.inline
def double_after(out: pl.InOut[pl.Tensor], tids: pl.Array[N, pl.TASK_ID]):
    for i in pl.range(N):
        with pl.at(level=CG, deps=[tids[i]]):
            pl.store(pl.muls(pl.load(out, [i, 0], [1, 64]), 2.0), [i, 0], out)
    return out


@pl.jit
def double_later(out: pl.InOut[pl.Tensor], tids: pl.Array[N, pl.TASK_ID]):
    for i in pl.range(N):
        with pl.at(level=CG, deps=[tids[i]]):
            pl.store(pl.adds(pl.load(out, [i, 0], [1, 64]), 1.0), [i, 0], out)
    return out


@pl.jit
def with_arrays(a: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[4, 64], pl.FP32]]):
    tids: pl.Array[N, pl.TASK_ID] = pl.array.create(N, pl.TASK_ID)
    for i in pl.range(N):
        with pl.at(level=CG) as tid:
            pl.store(pl.exp(pl.load(a, [i, 0], [1, 64])), [i, 0], out)
        tids[i] = tid
    out = double_after(out, tids)
    out = double_later(out, tids)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_array_is_a_type_of_locals_and_of_the_orchestrations_helpers(platform):
    from pypto.lang import parse

    a, out = torch.randn(4, 64), torch.zeros(4, 64)
    compiled = with_arrays.compile(a, out, config=RunConfig(platform=platform))
    compiled.run(a, out)
    assert torch.equal(out, torch.exp(a) * 2 + 1)
    text = compiled.program.as_python()
    assert "tids: pl.Array[4, pl.TASK_ID]" in text and parse(text) == compiled.program


def test_an_array_parameter_of_a_kernel_and_bad_array_types_are_refused():
    @pl.jit.incore
    def kernel(out: pl.Out[pl.Tensor], tids: pl.Array[N, pl.TASK_ID]):  # MARK
        return out

    def calls(out: pl.Out[pl.Tensor[[4, 64], pl.FP32]]):
        tids = pl.array.create(N, pl.TASK_ID)
        out = kernel(out, tids)
        return out

    err = _refused(calls, torch.zeros(4, 64), cls=TypeCheckError)
    assert "parameter 'tids' is an ArrayType" in err.message and "MARK" in _line_of(err)

    for ann, want in [("pl.Array[4]", "Array subscript requires [extent, dtype]"),
                      ("pl.Array[0, pl.INT32]", "an Array's extent is a positive int, not 0"),
                      ("pl.Array[4, pl.FP32]", "an Array holds TaskIds or integers, not FP32")]:
        src = (f"import pypto.language as pl\n\n\n@pl.program\nclass P:\n    @pl.function\n"
               f"    def k(self, a: pl.Tensor[[4, 64], pl.FP32]) -> pl.Tensor[[4, 64], pl.FP32]:\n"
               f"        arr: {ann} = pl.array.create(4, pl.INT32)\n        return a\n")
        with pytest.raises(TypeCheckError, match=want.replace("[", r"\[")) as info:
            pl.parse_program(src)
        assert info.value.span.line == 8

    @pl.jit
    def wrong_size(out: pl.Out[pl.Tensor[[4, 64], pl.FP32]]):
        tids = pl.array.create(2, pl.TASK_ID)
        out = double_later(out, tids)
        return out

    with pytest.raises(PyptoError, match=r"argument 'tids' is Array\[2, task_id\] but the parameter is "
                                         r"declared Array\[4, task_id\]") as info:
        wrong_size(torch.zeros(4, 64))
    assert "double_later(out, tids)" in _line_of(info.value)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_constant_yielded_as_an_annotated_scalar_takes_its_type(platform):
    @pl.jit
    def flags(a: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[4, 64], pl.FP32]]):
        for i in pl.range(4):
            if i == 0:
                first: pl.Scalar[pl.INT64] = pl.yield_(pl.const(1, pl.INT64))
            else:
                first: pl.Scalar[pl.INT64] = pl.yield_(0)
            with pl.at(level=CG):
                pl.store(pl.adds(pl.load(a, [i, 0], [1, 64]), first), [i, 0], out)
        return out

    a, out = torch.randn(4, 64), torch.zeros(4, 64)
    flags(a, out, config=RunConfig(platform=platform))
    want = a.clone()
    want[0] += 1
    assert torch.equal(out, want)


M_ADD = pl.dynamic("M_ADD")


@pl.jit
def add_rows(a: pl.Tensor[[M_ADD, 64], pl.FP32], b: pl.Tensor[[M_ADD, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[M_ADD, 64], pl.FP32]]):
    with pl.at(level=CG):
        out[:] = pl.add(a, b)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_compile_with_no_arguments_leaves_dynamic_axes_to_each_call(platform):
    """compile() reads the signature; a pl.dynamic axis has no extent there, so the artifact
    compiles once per set of extents the calls bring (one artifact for the kernel)."""
    compiled = add_rows.compile(config=RunConfig(platform=platform))
    assert add_rows.compile(config=RunConfig(platform=platform)) is compiled
    for rows in (16, 48, 16):
        a, b, out = torch.randn(rows, 64), torch.randn(rows, 64), torch.zeros(rows, 64)
        compiled(a, b, out)
        assert torch.equal(out, a + b)
    assert "2 specialization(s)" in repr(compiled)


def test_compile_with_no_arguments_still_needs_every_other_annotation():
    @pl.jit
    def half_annotated(a: pl.Tensor[[M_ADD, 64], pl.FP32], out):
        with pl.at(level=CG):
            out[:] = pl.neg(a)
        return out

    with pytest.raises(SpecializationError, match="parameter 'out' has no annotation"):
        half_annotated.compile()
