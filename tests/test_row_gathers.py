"""``pl.gather_row`` on a tile: a GM window copied by MTE2 into part of a Vec or Mat tile,
the row's offset worked out in the kernel (a paged block-table lookup read with
``pl.read``) — the same bits as torch on both platforms, the old tile kept where it is read
again, and the refusals at the user's line."""

import inspect

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import PyptoError
from pypto.runtime import RunConfig

from helpers import scope_kernel

PLATFORMS = ("ref", "a2a3sim")
BLOCK = 8


@pl.jit
def paged(pool: pl.Tensor, table: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.tile.full([pl.dim(idx, 1), pl.dim(pool, 1)], dtype=pl.FP32, value=-1.0)
        for k in pl.range(pl.dim(idx, 1)):
            logical = pl.read(idx, [0, k])
            phys = pl.read(table, [0, logical // BLOCK]) * BLOCK + logical % BLOCK
            acc = pl.gather_row(acc, pool, [k, 0], [phys, 0], [1, pl.dim(pool, 1)])  # MARK-row
        pl.store(acc, [0, 0], out)
    return out


@settings(max_examples=settings().max_examples // 5, deadline=None)
@given(blocks=st.integers(2, 8), rows=st.sampled_from([4, 16]), cols=st.sampled_from([32, 128]),
       seed=st.integers(0, 2 ** 16))
def test_property_a_paged_gather_reads_each_logical_row_s_page(blocks, rows, cols, seed):
    g = torch.Generator().manual_seed(seed)
    pool = torch.randn(blocks * BLOCK, cols, generator=g)
    table = torch.randperm(blocks, generator=g).to(torch.int32).reshape(1, -1)
    idx = torch.randint(0, blocks * BLOCK, (1, rows), generator=g, dtype=torch.int32)
    want = pool[[int(table[0, i // BLOCK]) * BLOCK + i % BLOCK for i in idx[0].tolist()]]
    for platform in PLATFORMS:
        out = torch.zeros(rows, cols)
        paged(pool, table, idx, out, config=RunConfig(platform=platform))
        assert torch.equal(out, want), platform


@pl.jit
def kv_matmul(pool: pl.Tensor, idx: pl.Tensor, q: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Rows gathered as columns of an L1 tile: the matmul's B operand with no GM round trip."""
    with pl.at(level=pl.Level.CORE_GROUP):
        kv = pl.tile.create([pl.dim(pool, 1), pl.dim(idx, 1)], dtype=pl.FP16, target_memory=pl.Mem.Mat)
        for k in pl.range(pl.dim(idx, 1)):
            kv = pl.gather_row(kv, pool, [0, k], [pl.read(idx, [0, k]), 0], [1, pl.dim(pool, 1)], transpose=True)
        qm = pl.load(q, [0, 0], [pl.dim(q, 0), pl.dim(q, 1)], target_memory=pl.Mem.Mat)
        pl.store(pl.matmul(pl.move(qm, target_memory=pl.Mem.Left), pl.move(kv, target_memory=pl.Mem.Right)),
                 [0, 0], out)
    return out


def test_rows_gathered_as_columns_of_an_l1_tile_feed_the_cube():
    g = torch.Generator().manual_seed(1)
    pool, q = torch.randn(128, 64, generator=g).half(), torch.randn(16, 64, generator=g).half()
    idx = torch.randint(0, 128, (1, 32), generator=g, dtype=torch.int32)
    outs = []
    for platform in PLATFORMS:
        out = torch.zeros(16, 32)
        kv_matmul(pool, idx, q, out, config=RunConfig(platform=platform))
        outs.append(out)
    torch.testing.assert_close(outs[0], q.double().matmul(pool[idx[0].long()].double().T).float(), rtol=1e-3,
                               atol=1e-3)
    assert torch.equal(outs[0], outs[1])


@pl.jit
def kept(x: pl.Tensor, n: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor], old: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [8, 32])
        u = pl.gather_row(t, x, [1, 0], [4, 0], [4, 32], valid_shape=[n, 32])  # the old t is stored after
        pl.store(u, [0, 0], out)
        pl.store(t, [0, 0], old)
    return out, old


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("n", [0, 2, 4])
def test_the_old_tile_lives_on_and_valid_shape_moves_fewer_rows(platform, n):
    x = torch.randn(8, 32)
    want = x.clone()
    want[1:1 + n] = x[4:4 + n]
    out, old = torch.zeros(8, 32), torch.zeros(8, 32)
    kept(x, n, out, old, config=RunConfig(platform=platform))
    assert torch.equal(out, want) and torch.equal(old, x)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_row_past_the_pool_is_located(platform):
    table = torch.tensor([[0, 9]], dtype=torch.int32)  # page 9 of a 2-page pool
    with pytest.raises(PyptoError, match=r"src window \[7\d, 7\d\) on axis 0 is outside the tensor's \[0, 16\)") as info:
        paged(torch.randn(16, 32), table, torch.tensor([[1, 9]], dtype=torch.int32), torch.zeros(2, 32),
              config=RunConfig(platform=platform))
    lines, start = inspect.getsourcelines(paged.fn)
    assert f":{start + next(k for k, line in enumerate(lines) if 'MARK-row' in line)}:" in str(info.value)


@pytest.mark.parametrize("line, match", [
    ("t = pl.gather_row(pl.tile.create([8, 32], dtype=pl.FP16), x, [0, 0], [0, 0], [1, 32])", "dst of src's dtype"),
    ("t = pl.gather_row(pl.tile.create([32, 8], dtype=pl.FP32), x, [0, 0], [0, 0], [1, 32], transpose=True)",
     "a Mat dst for transpose=True"),
    ("t = pl.gather_row(pl.tile.create([8, 32], dtype=pl.FP32), x, [8, 0], [0, 0], [1, 32])",
     r"a dst window inside its \[8, 32\]"),
    ("t = pl.gather_row(pl.tile.create([8, 32], dtype=pl.FP32), x, [0, 0], [0, 0], [1, 64])",
     "extent 64 on axis 1 exceeds the tensor's 32"),
])
def test_gather_row_refusals_name_the_line(line, match, tmp_path):
    k = scope_kernel(tmp_path, line + "\npl.store(t, [0, 0], out)")
    with pytest.raises(PyptoError, match=match) as info:
        k(torch.zeros(8, 32), torch.zeros(8, 32))
    assert "k.py:6:" in str(info.value)


def test_a_mat_tile_read_again_after_a_gather_row_is_refused(tmp_path):
    k = scope_kernel(tmp_path, "m = pl.tile.create([32, 32], dtype=pl.FP32, target_memory=pl.Mem.Mat)\n"
                          "u = pl.gather_row(m, x, [0, 0], [0, 0], [1, 32], transpose=True)\n"
                          "a = pl.matmul(pl.move(u, target_memory=pl.Mem.Left), pl.move(m, target_memory=pl.Mem.Right))\n"
                          "pl.store(a, [0, 0], out)")
    with pytest.raises(PyptoError, match="L1 has no copy to keep the old tile"):
        k(torch.zeros(8, 32), torch.zeros(32, 32), config=RunConfig(platform="a2a3sim"))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_run_time_valid_shape_past_the_window_is_located(platform):
    x = torch.randn(8, 32)
    with pytest.raises(PyptoError, match=r"valid shape \[6, 32\] is outside the window's shapes \[4, 32\]"):
        kept(x, 6, torch.zeros(8, 32), torch.zeros(8, 32), config=RunConfig(platform=platform))


@pl.jit
def through_a_view(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.slice(x, [4, 32], [4, 0])  # a view: rows 4..7 of x
        t = pl.tile.full([8, 32], dtype=pl.FP32, value=0.0)
        t = pl.gather_row(t, v, [0, 0], [1, 0], [2, 32])
        pl.store(pl.adds(t, pl.read(v, [2, 3])), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_slice_of_a_parameter_is_a_source_at_its_offset(platform):
    x, out = torch.randn(8, 32), torch.zeros(8, 32)
    through_a_view(x, out, config=RunConfig(platform=platform))
    want = torch.zeros(8, 32)
    want[0:2] = x[5:7]
    assert torch.equal(out, want + x[6, 3])
