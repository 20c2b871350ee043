"""Tensors a kernel holds whole on chip: ``pl.paged_gather`` (a paged KV pool's rows through
a block table, into Mat or Vec), ``pl.create_l1`` filled with tensor-level ``pl.gather_row``
— each the same bits as torch on both platforms, composing with tensor code (the cube takes a
Mat one as its operand, vector ops and stores a Vec one, in blocks), kernels that return
what they computed, and the refusals at the user's line."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.ir
import pypto.language as pl
from pypto.errors import PyptoError
from pypto.runtime import RunConfig

from helpers import scope_kernel

PLATFORMS = ("ref", "a2a3sim")
BLOCK = 16


def physical(idx: torch.Tensor, table: torch.Tensor, block: int) -> list[int]:
    return [int(table.reshape(-1)[i // block]) * block + i % block for i in idx.reshape(-1).tolist()]


@pl.jit
def paged_qk(src: pl.Tensor, idx: pl.Tensor, bt: pl.Tensor, eye: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        gathered = pl.paged_gather(src, idx, bt, block_size=BLOCK, size=pl.dim(src, 1), max_indices=pl.dim(eye, 1),
                                   space=pl.MemorySpace.Mat, is_b_matrix=True)
        out = pl.assemble(out, pl.matmul(eye, gathered, out_dtype=pl.FP32), [0, 0])
    return out


@settings(max_examples=max(3, settings().max_examples // 5), deadline=None)
@given(pages=st.integers(2, 8), rows=st.sampled_from([8, 16, 32]), cols=st.sampled_from([32, 128]),
       spare=st.integers(0, 16), two_d=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_property_a_paged_gather_into_l1_feeds_the_cube(pages, rows, cols, spare, two_d, seed):
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(pages * BLOCK, cols, generator=g).half()
    table = torch.randperm(pages, generator=g).to(torch.int32)
    idx = torch.randint(0, pages * BLOCK, (rows,), generator=g, dtype=torch.int32)
    if two_d:
        table, idx = table.reshape(1, -1), idx.reshape(1, -1)
    width = rows + spare  # max_indices past the indices: the rows past them stay zero
    eye = torch.eye(width).half()
    want = torch.zeros(width, cols)
    want[:rows] = src[physical(idx, table, BLOCK)].float()
    outs = []
    for platform in PLATFORMS:
        out = torch.zeros(width, cols)
        paged_qk(src, idx, table, eye, out, config=RunConfig(platform=platform))
        outs.append(out)
    assert torch.equal(outs[0], want)
    assert torch.equal(outs[0], outs[1])


@pl.jit
def paged_vec(src: pl.Tensor, idx: pl.Tensor, x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        g = pl.paged_gather(src, idx, idx, block_size=4, size=pl.dim(x, 1), max_indices=pl.dim(x, 0),
                            space=pl.Mem.Vec, col_off=8)
        out = pl.assemble(out, pl.add(pl.exp(g), x), [0, 0])
    return out


@pytest.mark.parametrize("rows", [16, 256])  # 256 x 96 FP32: the sum is computed in blocks, beside the buffer
def test_a_paged_gather_into_vec_is_read_by_vector_ops_window_by_window(rows):
    g = torch.Generator().manual_seed(rows)
    src, x = torch.randn(4 * rows, 128, generator=g), torch.randn(rows, 96, generator=g)
    idx = torch.randint(0, rows, (rows,), generator=g, dtype=torch.int32)  # its own block table too
    want = src[physical(idx, idx, 4), 8:104].exp() + x
    for platform in PLATFORMS:
        out = torch.zeros(rows, 96)
        paged_vec(src, idx, x, out, config=RunConfig(platform=platform))
        assert torch.equal(out, want), platform


@pl.jit
def paged_transposed(src: pl.Tensor, idx: pl.Tensor, q: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        kt = pl.paged_gather(src, idx, idx, block_size=8, size=pl.dim(q, 1), max_indices=pl.dim(idx, 0),
                             is_trans=True)
        out = pl.assemble(out, pl.matmul(q, kt), [0, 0])
    return out


def test_is_trans_lays_the_rows_out_as_the_columns_of_b():
    g = torch.Generator().manual_seed(3)
    src, q = torch.randn(64, 64, generator=g).half(), torch.randn(16, 64, generator=g).half()
    idx = torch.randint(0, 8, (32,), generator=g, dtype=torch.int32)
    want = q.float() @ src[physical(idx, idx, 8)].float().T
    outs = []
    for platform in PLATFORMS:
        out = torch.zeros(16, 32)
        paged_transposed(src, idx, q, out, config=RunConfig(platform=platform))
        outs.append(out)
    torch.testing.assert_close(outs[0], want, rtol=1e-3, atol=1e-3)
    assert torch.equal(outs[0], outs[1])


@pl.jit
def l1_rows(src: pl.Tensor, q: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        kv = pl.create_l1([pl.dim(q, 1), pl.dim(out, 1)], pl.FP16, transpose=True)
        for r in pl.range(pl.dim(out, 1)):
            kv = pl.gather_row(kv, src, [0, r], [2 * r + 1, 0], [1, pl.dim(q, 1)], transpose=True)
        out = pl.assemble(out, pl.matmul(q, kv), [0, 0])
    return out


def test_create_l1_filled_by_the_kernel_s_own_row_choices_feeds_the_cube():
    g = torch.Generator().manual_seed(4)
    src, q = torch.randn(64, 128, generator=g).half(), torch.randn(32, 128, generator=g).half()
    want = q.float() @ src[1:32:2].float().T
    outs = []
    for platform in PLATFORMS:
        out = torch.zeros(32, 16)
        l1_rows(src, q, out, config=RunConfig(platform=platform))
        outs.append(out)
    torch.testing.assert_close(outs[0], want, rtol=1e-3, atol=1e-3)
    assert torch.equal(outs[0], outs[1])


@pl.program
class ReturnsL1:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, src: pl.Tensor[[256, 128], pl.BF16]) -> pl.Tensor[[16, 128], pl.BF16]:
        kv = pl.create_l1([16, 128], pl.BF16)
        for r in pl.range(16):
            kv = pl.gather_row(kv, src, [r, 0], [r * 3, 0], [1, 128])
        return kv

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, src: pl.Tensor[[256, 128], pl.BF16]) -> pl.Tensor[[16, 128], pl.BF16]:
        r = self.kernel(src)
        return r


@pl.program
class ReturnsSum:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[64, 128], pl.FP32]) -> pl.Tensor[[64, 128], pl.FP32]:
        y = pl.add(x, pl.exp(x))
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 128], pl.FP32]) -> pl.Tensor[[64, 128], pl.FP32]:
        a = self.kernel(x)
        b = self.kernel(a)
        return b


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_kernel_returning_what_it_computed_gets_an_output_its_caller_allocates(platform):
    src = torch.randn(256, 128).bfloat16()
    assert torch.equal(pypto.ir.compile(ReturnsL1, platform=platform).run(src).outputs[0], src[0:48:3])
    x = torch.randn(64, 128)
    once = x + x.exp()
    assert torch.equal(pypto.ir.compile(ReturnsSum, platform=platform).run(x).outputs[0], once + once.exp())


@pl.program
class RunTimeRows:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, src: pl.Tensor[[64, 128], pl.FP16], n: pl.Tensor[[1], pl.INT32],
               eye: pl.Tensor[[16, 16], pl.FP16],
               output: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
        rows = pl.cast(pl.read(n, [0]), pl.INDEX)
        kv = pl.create_l1([16, 128], pl.FP16)
        kv = pl.gather_row(kv, src, [0, 0], [32, 0], [16, 128])
        kv = pl.gather_row(kv, src, [0, 0], [0, 0], [16, 128], valid_shape=[rows, 128])
        output = pl.assemble(output, pl.matmul(eye, kv, out_dtype=pl.FP32), [0, 0])
        return output

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, src: pl.Tensor[[64, 128], pl.FP16], n: pl.Tensor[[1], pl.INT32],
             eye: pl.Tensor[[16, 16], pl.FP16],
             output: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
        output = self.kernel(src, n, eye, output)
        return output


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("rows", [0, 5, 16])
def test_a_run_time_valid_shape_overwrites_only_the_rows_read(platform, rows):
    src = torch.randn(64, 128).half()
    out = torch.zeros(16, 128)
    pypto.ir.compile(RunTimeRows, platform=platform).run(src, torch.tensor([rows], dtype=torch.int32),
                                                         torch.eye(16).half(), out)
    assert torch.equal(out, torch.cat([src[:rows], src[32 + rows:48]]).float())


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_index_past_the_block_table_is_a_run_time_error(platform):
    src, eye = torch.randn(64, 32).half(), torch.eye(8).half()
    idx = torch.tensor([0, 1, 2, 3, 4, 5, 6, 70], dtype=torch.int32)  # page 4 of a 4-page table
    with pytest.raises(PyptoError, match="outside"):
        paged_qk(src, idx, torch.arange(4, dtype=torch.int32), eye, torch.zeros(8, 32),
                 config=RunConfig(platform=platform))


PARAMS = "x: pl.Tensor, idx: pl.Tensor, q: pl.Tensor, out: pl.Out[pl.Tensor]"


@pytest.mark.parametrize("body, match, q", [
    ("g = pl.paged_gather(x, idx, idx, block_size=4, size=32, max_indices=8)\nout = pl.assemble(out, pl.add(g, g), "
     "[0, 0])", r"'g' is held in Mat \(L1\), where the cube reads it; vector ops read Vec", (8, 8)),
    ("g = pl.paged_gather(x, idx, idx, block_size=4, size=32, max_indices=8)\n"
     "out = pl.assemble(out, pl.matmul(q, g, b_trans=True), [0, 0])", "b_trans would transpose it", (8, 32)),
    ("g = pl.paged_gather(x, idx, idx, block_size=4, size=32, max_indices=8)\n"
     "out = pl.assemble(out, pl.matmul(q, pl.slice(g, [4, 32], [0, 0])), [0, 0])",
     "a window of 'g', which is held whole in Mat", (8, 4)),
    ("g = pl.paged_gather(x, idx, idx, block_size=4, size=32, max_indices=4)\nout = pl.assemble(out, g, [0, 0])",
     r"max_indices >= the 8 indices", (8, 8)),
    ("g = pl.paged_gather(x, idx, idx, block_size=4, size=32, max_indices=8, space=pl.Mem.Vec, is_trans=True)\n"
     "out = pl.assemble(out, g, [0, 0])", "requires space=MemorySpace::Mat", (8, 8)),
    ("g = pl.paged_gather(x, idx, idx, block_size=4, size=32, max_indices=8, col_off=4)\n"
     "out = pl.assemble(out, g, [0, 0])", r"col_off \+ size \(36\) <= src columns \(32\)", (8, 8)),
    ("g = pl.paged_gather(x, q, idx, block_size=4, size=32, max_indices=8)\nout = pl.assemble(out, g, [0, 0])",
     "requires indices dtype to be INT32", (8, 8)),
    ("kv = pl.create_l1([8, 32], pl.BF16)\nkv = pl.gather_row(kv, x, [0, 0], [0, 0], [1, 32])\n"
     "out = pl.assemble(out, kv, [0, 0])", "requires acc and src to share dtype", (8, 8)),
    ("kv = pl.create_l1([8, 32], pl.FP16)\nkv = pl.gather_row(kv, x, [8, 0], [0, 0], [1, 32])\n"
     "out = pl.assemble(out, kv, [0, 0])", r"a dst window inside its \[8, 32\]", (8, 8)),
])
def test_refusals_name_the_line(body, match, q, tmp_path):
    k = scope_kernel(tmp_path, body, PARAMS)
    out = torch.zeros(8, 32) if "matmul" in body else torch.zeros(8, 32).half()
    with pytest.raises(PyptoError, match=match) as info:
        k(torch.zeros(32, 32).half(), torch.arange(8, dtype=torch.int32), torch.zeros(q).half(), out,
          config=RunConfig(platform="a2a3sim"))
    assert "k.py:" in str(info.value) and "k.py:5:" not in str(info.value)


def test_help_documents_the_forms():
    assert "block_table" in str(pl.paged_gather.__signature__)
    assert "held whole in L1" in pl.create_l1.__doc__
    assert "tensor.gather_row" in pl.gather_row.__doc__ and "tile.gather_row" in pl.gather_row.__doc__


# ----------------------------------------------------------------------------- review findings


def test_held_tensors_alias_read_and_widen_the_cube_block(tmp_path):
    """Another name of a held tensor is it; pl.read of a held Vec one reads its tile; a held
    rhs of 512 columns makes the result one 16 x 512 block (Acc holds it)."""
    body = ("g = pl.paged_gather(x, idx, idx, block_size=4, size=32, max_indices=8, space=pl.Mem.Vec)\n"
            "h = g\n"
            "v = pl.read(h, [1, 2])\n"
            "out = pl.assemble(out, pl.adds(h, v), [0, 0])")
    k = scope_kernel(tmp_path, body, "x: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]")
    x, idx = torch.randn(32, 32), torch.arange(8, dtype=torch.int32)
    want = x[physical(idx, idx, 4)]
    for platform in PLATFORMS:
        out = torch.zeros(8, 32)
        k(x, idx, out, config=RunConfig(platform=platform))
        assert torch.equal(out, want + want[1, 2]), platform
    q, w = torch.randn(16, 64).half(), torch.randn(512, 64).half()
    outs = []
    for platform in PLATFORMS:
        out = torch.zeros(16, 512)
        paged_transposed(w, torch.arange(512, dtype=torch.int32) % 64, q, out, config=RunConfig(platform=platform))
        outs.append(out)
    assert torch.equal(outs[0], outs[1])


@pl.jit
def regather(x: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    """The old tile read after a gather_row into a Vec one: copied first, and the copy is filled."""
    with pl.at(level=pl.Level.CORE_GROUP):
        g = pl.paged_gather(x, idx, idx, block_size=4, size=32, max_indices=8, space=pl.Mem.Vec)
        h = pl.add(g, g)
        g = pl.gather_row(g, x, [0, 0], [3, 0], [1, 32])
        out = pl.assemble(out, pl.add(g, h), [0, 0])
    return out


def test_a_gather_row_into_a_held_vec_tensor_read_again_fills_a_copy():
    x, idx = torch.randn(32, 32), torch.arange(8, dtype=torch.int32)
    g = x[physical(idx, idx, 4)]
    new = g.clone()
    new[0] = x[3]
    for platform in PLATFORMS:
        out = torch.zeros(8, 32)
        regather(x, idx, out, config=RunConfig(platform=platform))
        assert torch.equal(out, new + 2 * g), platform


@pytest.mark.parametrize("body, match", [
    ("g = pl.full([8, 32], dtype=pl.FP16, value=0.0)\nfor i in pl.range(2):\n"
     "    g = pl.paged_gather(x, idx, idx, block_size=4, size=32, max_indices=8)\nout = pl.assemble(out, g, [0, 0])",
     "'g' is a tensor held on chip .* on one path of this loop and a tensor computed otherwise"),
    ("kv = pl.gather_row(x, x, [0, 0], [1, 0], [1, 32])\nout = pl.assemble(out, kv[0:8, :], [0, 0])",
     "pl.gather_row fills an L1 tensor from pl.create_l1, and 'x' is not one"),
    ("g = pl.paged_gather(x, idx, idx, block_size=4, size=32, max_indices=8)\nv = pl.read(g, [0, 0])\n"
     "out = pl.assemble(out, pl.adds(x[0:8, :], v), [0, 0])", "'g' is held on chip, in Mat, and tensor.read"),
    ("a = pl.paged_gather(x, idx, idx, block_size=4, size=32, max_indices=4096, space=pl.Mem.Vec)\n"
     "out = pl.assemble(out, pl.exp(a[0:8, :]), [0, 0])",
     r"the tensors this kernel holds in Vec take 262144 B \('a' 262144 B\), more than Vec's 188416 B"),
])
def test_more_refusals_name_the_line(body, match, tmp_path):
    k = scope_kernel(tmp_path, body, "x: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]")
    with pytest.raises(PyptoError, match=match) as info:
        k(torch.zeros(32, 32).half(), torch.arange(8, dtype=torch.int32), torch.zeros(8, 32).half(),
          config=RunConfig(platform="a2a3sim"))
    assert "k.py:" in str(info.value) and "k.py:5:" not in str(info.value)
