"""``pl.tile.gather`` (index form): ``dst[i, j] = src[indices[i, j]]``, the index into src's
elements in row-major order — the same bits on both platforms as torch's, an index outside
src a located run-time error, and its operands' rules refused where they are written."""

import inspect

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import PyptoError, TypeCheckError
from pypto.runtime import RunConfig


@pl.jit
def gathered(x: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        src = pl.load(x, [0, 0], [pl.dim(x, 0), pl.dim(x, 1)])
        picks = pl.load(idx, [0, 0], [pl.dim(idx, 0), pl.dim(idx, 1)])
        tmp = pl.tile.create([pl.dim(idx, 0), pl.dim(idx, 1)], dtype=pl.INT32)
        pl.store(pl.tile.gather(src, picks, tmp), [0, 0], out)  # MARK-gather
    return out


DTYPES = {torch.float32: torch.int32, torch.float16: torch.int16, torch.int32: torch.int32}


@settings(max_examples=settings().max_examples // 4)
@given(rows=st.sampled_from([1, 8, 16]), cols=st.sampled_from([16, 32, 64]), out_cols=st.sampled_from([16, 32]),
       dtype=st.sampled_from(sorted(DTYPES, key=str)), seed=st.integers(0, 2 ** 16))
def test_property_gather_is_torch_s_on_both_platforms(rows, cols, out_cols, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(rows, cols, generator=g) * 100).to(dtype)
    idx = torch.randint(0, rows * cols, (rows, out_cols), generator=g, dtype=torch.int32).to(DTYPES[dtype])
    want = x.reshape(-1)[idx.long()]
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(rows, out_cols, dtype=dtype)
        gathered(x, idx, out, config=RunConfig(platform=platform))
        assert torch.equal(out, want), platform


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_an_index_outside_src_is_located(platform):
    idx = torch.zeros(8, 16, dtype=torch.int32)
    idx[3, 5] = 8 * 32
    with pytest.raises(PyptoError, match=r"index 256 at \[3, 5\] is outside the src tile's 256 elements") as info:
        gathered(torch.randn(8, 32), idx, torch.zeros(8, 16), config=RunConfig(platform=platform))
    lines, start = inspect.getsourcelines(gathered.fn)
    assert info.value.span.line == start + next(k for k, t in enumerate(lines) if "MARK-gather" in t)


def test_the_operands_rules():
    with pytest.raises(TypeCheckError, match="indices of INT32 for a FP32 src"):
        gathered(torch.randn(8, 32), torch.zeros(8, 16, dtype=torch.int16), torch.zeros(8, 16),
                 config=RunConfig(platform="ref"))
    with pytest.raises(TypeCheckError, match="a dtype the gather moves"):
        gathered(torch.randn(8, 32).bfloat16(), torch.zeros(8, 16, dtype=torch.int32),
                 torch.zeros(8, 16, dtype=torch.bfloat16), config=RunConfig(platform="ref"))


@pl.jit
def scattered(base: pl.Tensor, x: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        dst = pl.load(base, [0, 0], [pl.dim(base, 0), pl.dim(base, 1)])
        src = pl.load(x, [0, 0], [pl.dim(x, 0), pl.dim(x, 1)])
        where = pl.load(idx, [0, 0], [pl.dim(idx, 0), pl.dim(idx, 1)])
        pl.store(pl.tile.scatter(dst, src, where), [0, 0], out)  # MARK-scatter
    return out


def _scatter_oracle(base, x, idx):
    out = base.clone().reshape(-1)
    for v, k in zip(x.reshape(-1).tolist(), idx.reshape(-1).tolist()):  # in row-major order: the later wins
        out[k] = v
    return out.reshape(base.shape)


@settings(max_examples=settings().max_examples // 4)
@given(rows=st.sampled_from([1, 8]), cols=st.sampled_from([16, 32]), dst_cols=st.sampled_from([16, 64]),
       dtype=st.sampled_from(sorted(DTYPES, key=str)), seed=st.integers(0, 2 ** 16))
def test_property_scatter_writes_each_position_s_last_element_on_both_platforms(rows, cols, dst_cols, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    base = (torch.randn(rows, dst_cols, generator=g) * 100).to(dtype)
    x = (torch.randn(rows, cols, generator=g) * 100).to(dtype)
    idx = torch.randint(0, rows * dst_cols, (rows, cols), generator=g, dtype=torch.int32)  # with repeats
    idx = idx.to(torch.int32 if dtype.itemsize == 4 else torch.int16)
    want = _scatter_oracle(base, x, idx)
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(rows, dst_cols, dtype=dtype)
        scattered(base, x, idx, out, config=RunConfig(platform=platform))
        assert torch.equal(out, want), platform


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_scatter_outside_dst_is_located(platform):
    idx = torch.zeros(8, 16, dtype=torch.int32)
    idx[2, 7] = -1
    with pytest.raises(PyptoError, match=r"index -1 at \[2, 7\] is outside the dst tile's 256 elements") as info:
        scattered(torch.zeros(8, 32), torch.randn(8, 16), idx, torch.zeros(8, 32), config=RunConfig(platform=platform))
    lines, start = inspect.getsourcelines(scattered.fn)
    assert info.value.span.line == start + next(k for k, t in enumerate(lines) if "MARK-scatter" in t)


def test_the_scatter_s_rules():
    with pytest.raises(TypeCheckError, match="INT32 indexes for a 4-byte dst"):
        scattered(torch.zeros(8, 32), torch.randn(8, 16), torch.zeros(8, 16, dtype=torch.int16), torch.zeros(8, 32),
                  config=RunConfig(platform="ref"))
    with pytest.raises(TypeCheckError, match="indexes of src's shape"):
        scattered(torch.zeros(8, 32), torch.randn(8, 16), torch.zeros(8, 8, dtype=torch.int32), torch.zeros(8, 32),
                  config=RunConfig(platform="ref"))


def test_a_scatter_s_indexes_cover_its_src():
    @pl.jit
    def partial(base: pl.Tensor, x: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            dst = pl.load(base, [0, 0], [8, 32])
            where = pl.load(idx, [0, 0], [8, 16], valid_shape=[8, 4])
            pl.store(pl.tile.scatter(dst, pl.load(x, [0, 0], [8, 16]), where), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="operands with the same valid shape"):
        partial(torch.zeros(8, 32), torch.randn(8, 16), torch.zeros(8, 16, dtype=torch.int32), torch.zeros(8, 32),
                config=RunConfig(platform="ref"))


@pl.jit
def blocks_of(x: pl.Tensor, offsets: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        src = pl.load(x, [0, 0], [pl.dim(x, 0), pl.dim(x, 1)])
        at = pl.load(offsets, [0, 0], [pl.dim(offsets, 0), pl.dim(offsets, 1)])
        pl.store(pl.gatherb(src, at), [0, 0], out)  # MARK-gatherb
    return out


@settings(max_examples=settings().max_examples // 4, deadline=None)
@given(dtype=st.sampled_from([torch.float32, torch.float16, torch.int8, torch.int32]), rows=st.sampled_from([1, 4]),
       seed=st.integers(0, 2 ** 16))
def test_property_gatherb_moves_32_byte_blocks_on_both_platforms(dtype, rows, seed):
    g = torch.Generator().manual_seed(seed)
    per = 32 // torch.empty((), dtype=dtype).element_size()
    x = (torch.randn(rows, 8 * per, generator=g) * 50).to(dtype)
    picks = torch.randint(0, rows * 8, (rows, 8), generator=g)
    offsets = (picks * 32).to(torch.int32).view(torch.uint32)
    want = x.reshape(-1, per)[picks.reshape(-1)].reshape(rows, 8 * per)
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(rows, 8 * per, dtype=dtype)
        blocks_of(x, offsets, out, config=RunConfig(platform=platform))
        assert torch.equal(out, want), platform


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_gatherb_offset_off_a_block_start_is_located(platform):
    offsets = (torch.arange(8, dtype=torch.int32) * 32).reshape(1, 8)
    offsets[0, 3] = 40
    with pytest.raises(PyptoError, match=r"byte offset 40 at \[0, 3\] is not the start") as info:
        blocks_of(torch.randn(1, 64), offsets.view(torch.uint32), torch.zeros(1, 64), config=RunConfig(platform=platform))
    lines, start = inspect.getsourcelines(blocks_of.fn)
    assert f":{start + next(k for k, line in enumerate(lines) if 'MARK-gatherb' in line)}:" in str(info.value)


def test_gatherb_offsets_are_uint32_bytes():
    with pytest.raises(TypeCheckError, match="offset dtype to be UINT32") as info:
        blocks_of(torch.randn(1, 64), torch.zeros(1, 8, dtype=torch.int32), torch.zeros(1, 64))
    assert "MARK-gatherb" in str(info.value) or "test_gathers.py" in str(info.value)


@pl.jit
def rows_updated(x: pl.Tensor, idx: pl.Tensor, src: pl.Tensor, out: pl.Out[pl.Tensor], put: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [pl.dim(x, 0), pl.dim(x, 1)])
        i = pl.load(idx, [0, 0], [pl.dim(idx, 0), pl.dim(idx, 1)])
        s = pl.load(src, [0, 0], [pl.dim(src, 0), pl.dim(src, 1)])
        pl.store(pl.tile.scatter_update(t, dim=-2, index=i, src=s), [0, 0], out)  # MARK-update
        put = pl.assemble(put, pl.scatter_update(x, -2, idx, src), [0, 0])
    return out, put


@settings(max_examples=settings().max_examples // 4, deadline=None)
@given(rows=st.sampled_from([8, 32]), b=st.integers(1, 3), s=st.sampled_from([1, 4, 8]), seed=st.integers(0, 2 ** 16))
def test_property_scatter_update_replaces_rows_later_wins(rows, b, s, seed):
    g = torch.Generator().manual_seed(seed)
    x, src = torch.randn(rows, 32, generator=g), torch.randn(b * s, 32, generator=g)
    idx = torch.randint(0, rows, (b, s), generator=g, dtype=torch.int32)
    want = x.clone()
    for k, r in enumerate(idx.reshape(-1).tolist()):
        want[r] = src[k]
    for platform in ("ref", "a2a3sim"):
        out, put = torch.zeros(rows, 32), torch.zeros(rows, 32)
        rows_updated(x, idx, src, out, put, config=RunConfig(platform=platform))
        assert torch.equal(out, want) and torch.equal(put, want), platform


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_scatter_update_row_outside_input_is_located(platform):
    idx = torch.tensor([[0, 8]], dtype=torch.int32)
    with pytest.raises(PyptoError, match=r"index 8 at \[0, 1\] is outside input's 8 rows") as info:
        rows_updated(torch.randn(8, 32), idx, torch.randn(2, 32), torch.zeros(8, 32), torch.zeros(8, 32),
                     config=RunConfig(platform=platform))
    assert "test_gathers.py:" in str(info.value)


def test_scatter_update_takes_one_src_row_per_index():
    with pytest.raises(TypeCheckError, match=r"a src of shape \[4, 32\] and dtype FP32 \(one row per index\)") as info:
        rows_updated(torch.randn(8, 32), torch.zeros(2, 2, dtype=torch.int32), torch.randn(3, 32),
                     torch.zeros(8, 32), torch.zeros(8, 32))
    lines, start = inspect.getsourcelines(rows_updated.fn)
    assert f":{start + next(k for k, line in enumerate(lines) if 'MARK-update' in line)}:" in str(info.value)
