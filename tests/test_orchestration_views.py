"""An orchestration's tensor ops between its tasks: ``pl.reshape`` a view of the same bytes,
``pl.assemble`` the host's copy into a window (or, where a kernel fills a buffer that is then
assembled once, a view of that window: FuseCreateAssembleToSlice), of any rank — on both
platforms, with the chip's edges over the bytes each view really covers."""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import ExecutionError, PyptoError, TypeCheckError
from pypto.runtime import RunConfig

CG = pl.Level.CORE_GROUP
PLATFORMS = ("ref", "a2a3sim")


def _orchestration(compiled):
    return next(f for f in compiled.lowered.functions if not f.type.is_kernel)


def _ops(fn) -> list[str]:
    from pypto.ir import nodes as n

    return [s.value.op for s in n.walk_stmts(fn.body) if isinstance(getattr(s, "value", None), n.Call)]


@st.composite
def reshaped_windows(draw):
    """A tensor of rank 1 to 4 (2**k elements), two 2-D row-major views of it, a row window
    of each: the first a task writes, the second a later task reads."""
    k = draw(st.integers(6, 9))
    rank = draw(st.integers(1, 4))
    cuts = sorted(draw(st.lists(st.integers(0, k), min_size=rank - 1, max_size=rank - 1)))
    shape = [2 ** (b - a) for a, b in zip([0, *cuts], [*cuts, k])]
    views = []
    for _ in range(2):
        c = draw(st.integers(4, k - 1))  # 16..2**(k-1) columns (a vector row of 64 B or more)
        rows = 2 ** (k - c)
        lo = draw(st.integers(0, rows - 1))
        hi = draw(st.integers(lo + 1, rows))
        views.append((rows, 2 ** c, lo, hi))
    return shape, views


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reshaped_windows())
def test_a_reshape_is_a_view_whose_tasks_meet_where_their_bytes_do(case):
    shape, ((r1, c1, lo1, hi1), (r2, c2, lo2, hi2)) = case

    @pl.jit
    def k(x: pl.InOut[pl.Tensor], out: pl.Out[pl.Tensor]):
        v = pl.reshape(x, [r1, c1])
        with pl.at(level=CG):
            v[lo1:hi1, :] = pl.muls(v[lo1:hi1, :], 2.0)
        w = pl.reshape(x, [r2, c2])
        with pl.at(level=CG):
            out[:] = pl.exp(w[lo2:hi2, :])
        return out

    x = torch.randn(shape)
    want = x.clone().reshape(r1, c1)
    want[lo1:hi1] *= 2
    want = torch.exp(want.reshape(r2, c2)[lo2:hi2])
    for platform in PLATFORMS:
        data, out = x.clone(), torch.zeros(hi2 - lo2, c2)
        report = k.compile(data, out, config=RunConfig(platform=platform)).run(data, out)
        assert torch.equal(out, want), platform
    meet = lo1 * c1 < hi2 * c2 and lo2 * c2 < hi1 * c1  # the element ranges, in x's own order
    assert [t.deps for t in sorted(report.tasks, key=lambda t: t.task_id)] == [(), ("r0t0",) if meet else ()]


def test_a_reshape_the_strides_do_not_allow_is_refused_where_it_is_written():
    @pl.jit
    def k(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]):
        v = pl.reshape(a[:, 0:32], [32, 16])  # MARK
        with pl.at(level=CG):
            out[:] = pl.exp(v)
        return out

    for platform in PLATFORMS:
        with pytest.raises(ExecutionError, match=r"a \[16, 32\] view with strides \[64, 1\] cannot be seen as "
                                                 r"\[32, 16\] without copying it") as info:
            k(torch.randn(16, 64), torch.zeros(32, 16), config=RunConfig(platform=platform))
        with open(info.value.span.file) as f:
            assert "MARK" in f.read().splitlines()[info.value.span.line - 1]
        assert "reshape the tensor before slicing" in info.value.hint


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_buffer_a_kernel_fills_and_assembles_once_is_a_view_of_the_window(platform):
    @pl.jit
    def k(a: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[4, 4, 64], pl.FP32]]):
        for b in pl.parallel(4):
            with pl.at(level=CG):
                t = pl.exp(pl.adds(a, b))
            out = pl.assemble(out, t, [b, 0, 0])  # a [4, 64] source into a [4, 4, 64] target: led by a 1
        return out

    a, out = torch.randn(4, 64), torch.zeros(4, 4, 64)
    compiled = k.compile(a, out, config=RunConfig(platform=platform))
    report = compiled.run(a, out)
    assert all(torch.equal(out[b], torch.exp(a + b)) for b in range(4))
    ops = _ops(_orchestration(compiled))
    assert "tensor.assemble" not in ops and "tensor.create" not in ops and ops.count("tensor.slice") == 1
    if platform == "a2a3sim":  # the kernels write the target in place: nothing holds the next one back
        starts = sorted(t.start for t in report.tasks)
        assert max(t.end for t in report.tasks) > starts[-1] and not any(t.deps for t in report.tasks)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_assemble_the_pass_cannot_prove_is_the_hosts_copy_after_the_kernel(platform):
    @pl.jit.incore
    def rows(a: pl.Tensor[[64, 64], pl.FP32], t: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        for r in pl.range(0, 64, 16):  # a loop of stores: the pass does not prove it fills t
            pl.store(pl.exp(pl.load(a, [r, 0], [16, 64])), [r, 0], t)
        return t

    @pl.jit
    def k(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[2, 64, 64], pl.FP32]]):
        for b in pl.range(2):
            t = pl.create_tensor([64, 64], dtype=pl.FP32)
            t = rows(a, t)
            out = pl.assemble(out, t, [b, 0, 0])
        out = pl.assemble(out, pl.slice(a, [32, 64], [0, 0]), [1, 0, 0])  # a view's copy
        return out

    a, out = torch.randn(64, 64), torch.zeros(2, 64, 64)
    compiled = k.compile(a, out, config=RunConfig(platform=platform))
    report = compiled.run(a, out)
    want = torch.exp(a).expand(2, 64, 64).clone()
    want[1, :32] = a[:32]
    assert torch.equal(out, want)
    assert _ops(_orchestration(compiled)).count("tensor.assemble") == 2  # (the loop's, and the view's)
    if platform == "a2a3sim":  # the host copies once the kernel has finished: the second waits for it
        first, second = sorted(report.tasks, key=lambda t: t.start)
        assert second.dispatch >= first.finish


def test_an_assemble_of_a_source_of_greater_rank_is_refused_where_it_is_written():
    def k(a: pl.Tensor[[2, 4, 64], pl.FP32], out: pl.Out[pl.Tensor[[4, 64], pl.FP32]]):
        out = pl.assemble(out, a, [0, 0])
        return out

    with pytest.raises(TypeCheckError, match="requires a source of at most the target's rank 2, but got a source "
                                             "of rank 3") as info:
        pl.jit(k)(torch.randn(2, 4, 64), torch.zeros(4, 64))
    assert "pl.reshape the source" in info.value.hint and info.value.span.line > 0


def test_an_orchestrations_views_and_copies_print_and_read_back():
    from pypto.lang import parse

    @pl.jit
    def k(x: pl.Tensor[[2, 3, 64], pl.FP32], out: pl.Out[pl.Tensor[[4, 6, 64], pl.FP32]]):
        flat = pl.reshape(x, [6, 64])
        with pl.at(level=CG):
            y = pl.exp(flat)
        out = pl.assemble(out, y, [1, 0, 0])
        out = pl.assemble(out, pl.reshape(flat, [1, 6, 64]), [3, 0, 0])
        return out

    x, out = torch.randn(2, 3, 64), torch.zeros(4, 6, 64)
    program = k.lower(x, out)
    assert parse(program.as_python()) == program
    for platform in PLATFORMS:
        got = torch.zeros(4, 6, 64)
        k(x, got, config=RunConfig(platform=platform))
        assert torch.equal(got[1], torch.exp(x.reshape(6, 64))) and torch.equal(got[3], x.reshape(6, 64))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_scalar_index_drops_its_axis_from_a_view_and_from_a_window_written(platform):
    @pl.jit
    def k(a: pl.Tensor[[2, 4, 64], pl.FP32], out: pl.Out[pl.Tensor[[4, 2, 64], pl.FP32]]):
        for b in pl.range(2):
            xa = a[b]  # a [4, 64] view in the orchestration
            with pl.at(level=CG):
                out[:, b, :] = pl.exp(xa)  # a middle axis dropped, in a kernel
        with pl.at(level=CG):
            out[0, 0] = pl.neg(a[1, 2])  # rank-1 windows
        out[3, 1:2, :] = a[0, 0:1]  # the host's copy, into a window led by 1s
        return out

    a, out = torch.randn(2, 4, 64), torch.zeros(4, 2, 64)
    k(a, out, config=RunConfig(platform=platform))
    want = torch.exp(a).permute(1, 0, 2).clone()
    want[0, 0] = -a[1, 2]
    want[3, 1] = a[0, 0]
    assert torch.equal(out, want)


def test_an_index_on_every_axis_of_a_window_written_is_refused():
    def k(a: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[4, 64], pl.FP32]]):
        with pl.at(level=CG):
            out[1, 2] = pl.exp(a)
        return out

    with pytest.raises(TypeCheckError, match="an index on every axis is one element, not a window"):
        pl.jit(k)(torch.randn(4, 64), torch.zeros(4, 64))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_kernels_assemble_of_a_lower_rank_source_writes_the_window_led_by_1s(platform):
    @pl.jit
    def k(a: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[2, 4, 64], pl.FP32]]):
        with pl.at(level=CG):
            out = pl.assemble(out, pl.exp(a), [1, 0, 0])
        return out

    a, out = torch.randn(4, 64), torch.zeros(2, 4, 64)
    k(a, out, config=RunConfig(platform=platform))
    assert torch.equal(out[1], torch.exp(a)) and not out[0].any()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_set_validshape_of_a_tensor_in_an_orchestration_is_a_view_its_kernel_loads(platform):
    @pl.jit
    def k(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        v = pl.set_validshape(a, 8, 32)
        with pl.at(level=CG):
            t = pl.load(v, [0, 0], [16, 64], valid_shape=[8, 32])
            pl.store(pl.fillpad(t, pad_value=pl.PadValue.zero), [0, 0], out)
        return out

    a, out = torch.randn(16, 64), torch.zeros(16, 64)
    k(a, out, config=RunConfig(platform=platform))
    want = torch.zeros(16, 64)
    want[:8, :32] = a[:8, :32]
    assert torch.equal(out, want)

    def on_core(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=CG):
            out[:] = pl.fillpad(pl.set_validshape(a, 8, 32))
        return out

    out = torch.zeros(16, 64)  # in a kernel: the tensor's valid part, which fillpad pads back
    pl.jit(on_core)(a, out, config=RunConfig(platform=platform))
    assert torch.equal(out, want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_store_of_a_tile_of_lower_rank_writes_the_region_led_by_1s(platform):
    @pl.jit.incore
    def kernel(a: pl.Tensor[[4, 16], pl.FP32], out: pl.InOut[pl.Tensor[[2, 4, 16], pl.FP32]]):
        out = pl.store(pl.exp(pl.load(a, [1, 0], [1, 16])), [1, 2, 0], out)
        return out

    @pl.jit
    def k(a: pl.Tensor[[4, 16], pl.FP32], out: pl.InOut[pl.Tensor[[2, 4, 16], pl.FP32]]):
        out = kernel(a, out)
        return out

    a, out = torch.randn(4, 16), torch.zeros(2, 4, 16)
    k(a, out, config=RunConfig(platform=platform))
    want = torch.zeros(2, 4, 16)
    want[1, 2] = torch.exp(a[1])
    assert torch.equal(out, want)
