"""A tensor-level ``pl.slice(x, shape, offset, valid_shape=...)`` of GM in a kernel: its
producer filled only the valid region of the window, so each load of it moves just that
(``tile.load(valid_shape=...)``) and what is computed from it is valid there; a store
writes only the valid region. ref and a2a3sim give the same bits."""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import PyptoError
from pypto.runtime import RunConfig


def elementwise(rows, cols, r0, c0, vr, vc):
    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            s = pl.slice(x, [rows, cols], [r0, c0], valid_shape=[vr, vc])
            out[:] = pl.add(s, 1.0)
        return out

    return k


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.sampled_from([8, 16]), cols=st.sampled_from([16, 32]), r0=st.integers(0, 8), c0=st.sampled_from([0, 8]),
       data=st.data())
def test_a_valid_slice_computes_and_stores_its_valid_region(rows, cols, r0, c0, data):
    vr, vc = data.draw(st.integers(1, rows)), data.draw(st.integers(1, cols))
    x = torch.randn(rows + 8, cols + 8, generator=torch.Generator().manual_seed(rows * cols + r0))
    kernel = elementwise(rows, cols, r0, c0, vr, vc)
    got = []
    for platform in ("ref", "a2a3sim"):
        out = torch.full((rows, cols), -7.0)
        kernel(x, out, config=RunConfig(platform=platform))
        got.append(out)
    assert torch.equal(got[0], got[1])
    want = torch.full((rows, cols), -7.0)  # past the valid region nothing is stored
    want[:vr, :vc] = x[r0:r0 + vr, c0:c0 + vc] + 1.0
    assert torch.equal(got[1], want)


@pytest.mark.parametrize("valid_rows", [24, 9, 32])
def test_a_matmul_of_a_valid_slice_is_right_where_its_operand_is_valid(valid_rows):
    m, k, n, sub = 16, 64, 32, 8

    @pl.jit
    def kern(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            w_s = pl.slice(w, [n, k], [0, 0], valid_shape=[valid_rows, k])
            acc = pl.matmul(x, w_s, b_trans=True, out_dtype=pl.FP32)
            out[:] = pl.mul(acc[0:m, 0:sub], 2.0)
        return out

    g = torch.Generator().manual_seed(valid_rows)
    x, w = torch.randn(m, k, generator=g), torch.randn(n, k, generator=g)
    got = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(m, sub)
        kern(x, w, out, config=RunConfig(platform=platform))
        got.append(out)
    assert torch.equal(got[0], got[1])
    torch.testing.assert_close(got[1], 2.0 * (x @ w.T)[:, :sub], rtol=1e-4, atol=1e-4)


def test_a_valid_slice_of_a_value_computed_on_chip_is_refused_where_it_is_written():
    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            e = pl.exp(x)
            s = pl.slice(e, [8, 16], [0, 0], valid_shape=[4, 16])  # MARK
            out[:] = pl.add(s, 1.0)
        return out

    with pytest.raises(PyptoError, match=r"a window's valid region is its load's") as info:
        k(torch.zeros(8, 16), torch.zeros(8, 16), config=RunConfig(platform="ref"))
    import inspect

    lines, first = inspect.getsourcelines(test_a_valid_slice_of_a_value_computed_on_chip_is_refused_where_it_is_written)
    assert info.value.span.line == first + next(i for i, t in enumerate(lines) if t.rstrip().endswith("# MARK"))


BATCH = pl.dynamic("BATCH")


@pl.jit
def batch_copy(a: pl.Tensor[[BATCH, 32], pl.FP32], out: pl.Out[pl.Tensor[[BATCH, 32], pl.FP32]]):
    """Copies a [BATCH, 32] tensor in [8, 32] windows over a capacity of 32 rows: past the
    batch a window runs off the tensor, and only its valid region must lie inside."""
    batch = pl.tensor.dim(a, 0)
    for b0 in pl.parallel(0, 32, 8):
        rows = pl.max(pl.min(8, batch - b0), 0)
        with pl.at(level=pl.Level.CORE_GROUP):
            chunk = pl.slice(a, [8, 32], [b0, 0], valid_shape=[rows, 32])
            out = pl.assemble(out, chunk, [b0, 0])
    return out


@pl.jit
def whole_windows(a: pl.Tensor[[BATCH, 32], pl.FP32], out: pl.Out[pl.Tensor[[BATCH, 32], pl.FP32]]):
    for b0 in pl.parallel(0, 32, 8):
        with pl.at(level=pl.Level.CORE_GROUP):
            chunk = pl.slice(a, [8, 32], [b0, 0], valid_shape=[8, 32])  # MARK-window
            out = pl.assemble(out, chunk, [b0, 0])
    return out


@pytest.mark.parametrize("batch", [32, 28, 25])  # (no window starts past the end)
def test_a_window_past_the_tensor_is_read_where_its_valid_region_lies_inside(batch):
    a = torch.randn(batch, 32, generator=torch.Generator().manual_seed(batch))
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(batch, 32)
        batch_copy(a, out, config=RunConfig(platform=platform))
        assert torch.equal(out, a)


def test_a_valid_region_past_the_tensor_is_refused_where_the_window_is_written():
    with pytest.raises(PyptoError, match=r"tensor.slice region on axis 0 reaches \[24, 32\) but the tensor's axis is "
                                         r"\[0, 16\)") as info:
        whole_windows(torch.zeros(16, 32), torch.zeros(16, 32), config=RunConfig(platform="ref"))
    import inspect

    lines, first = inspect.getsourcelines(whole_windows)
    assert info.value.span.line == first + next(i for i, t in enumerate(lines) if t.rstrip().endswith("# MARK-window"))
