"""Batched matmuls: ``pl.batch_matmul`` / ``pl.tile.batch_matmul_acc`` on stacks of pages in
L0, and the tensor-level ``pl.matmul`` / ``pl.matmul_acc`` past rank 2 (computed a page and
a cube block at a time, the batch axes broadcasting as torch's) — the same bits on both
platforms, torch's values, and the refusals at the user's line."""

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


def _both(fn, *args, outs):
    """Each platform's outputs (fresh zeros of the shapes ``outs``)."""
    got = []
    for platform in PLATFORMS:
        o = [torch.zeros(s) for s in outs]
        fn(*args, *o, config=RunConfig(platform=platform))
        got.append(o)
    for a, b in zip(*got):
        assert torch.equal(a, b)  # bit for bit
    return got[0]


@pl.jit
def tile_bmm(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        left = pl.move(pl.load(a, [0, 0, 0], [pl.dim(a, 0), pl.dim(a, 1), pl.dim(a, 2)], target_memory=pl.Mem.Mat),
                       target_memory=pl.Mem.Left)
        right = pl.move(pl.load(b, [0, 0, 0], [pl.dim(b, 0), pl.dim(b, 1), pl.dim(b, 2)], target_memory=pl.Mem.Mat,
                                transpose=True), target_memory=pl.Mem.Right)
        c = pl.batch_matmul(left, right)
        c = pl.tile.batch_matmul_acc(c, left, right)
        pl.store(c, [0, 0, 0], out)
    return out


@pytest.mark.parametrize("rhs_batch", [1, 3])
def test_tile_batch_matmul_multiplies_page_by_page_and_accumulates(rhs_batch):
    g = torch.Generator().manual_seed(rhs_batch)
    a, b = torch.randn(3, 32, 64, generator=g).half(), torch.randn(rhs_batch, 48, 64, generator=g).half()
    (out,) = _both(tile_bmm, a, b, outs=[(3, 32, 48)])
    want = 2 * (a.double() @ b.double().transpose(-1, -2))
    torch.testing.assert_close(out.double(), want, rtol=1e-3, atol=1e-3)


def test_the_cube_pays_one_mmad_per_page():
    g = torch.Generator().manual_seed(0)
    b = torch.randn(1, 48, 64, generator=g).half()

    def cube_cycles(pages):
        a, out = torch.randn(pages, 32, 64, generator=g).half(), torch.zeros(pages, 32, 48)
        report = tile_bmm.compile(a, b, out).run(a, b, out)
        mmads = [e for e in report.events if e.name.startswith("MMAD")]
        assert len(mmads) == 2  # batch_matmul, batch_matmul_acc
        return sum(e.end - e.start for e in mmads)

    assert cube_cycles(4) == 4 * cube_cycles(1)


def _tensor_bmm(a_trans, b_trans, rank):
    origin = [0] * rank

    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.assemble(out, pl.matmul(a, b, a_trans=a_trans, b_trans=b_trans), origin)
        return out
    return k


TENSOR_BMM = {(ta, tb, r): _tensor_bmm(ta, tb, r) for ta in (False, True) for tb in (False, True) for r in (3, 4)}
tensor_bmm = TENSOR_BMM[False, False, 3]


def _oracle(a, b, a_trans, b_trans):
    a, b = a.double(), b.double()
    return (a.transpose(-1, -2) if a_trans else a) @ (b.transpose(-1, -2) if b_trans else b)


@settings(max_examples=max(settings().max_examples // 5, 4), deadline=None)
@given(batch=st.sampled_from([((2,), (2,)), ((3,), ()), ((), (2,)), ((2, 1), (3,)), ((1, 2), (2, 1))]),
       m=st.sampled_from([16, 48]), k=st.sampled_from([32, 80]), nn=st.sampled_from([16, 64]),
       a_trans=st.booleans(), b_trans=st.booleans(), dtype=st.sampled_from([torch.float16, torch.float32]),
       seed=st.integers(0, 2 ** 16))
def test_property_a_tensor_matmul_past_rank_2_is_torch_s_batched_product(batch, m, k, nn, a_trans, b_trans, dtype,
                                                                         seed):
    g = torch.Generator().manual_seed(seed)
    (ba, bb) = batch
    a = torch.randn(*ba, *((k, m) if a_trans else (m, k)), generator=g).to(dtype)
    b = torch.randn(*bb, *((nn, k) if b_trans else (k, nn)), generator=g).to(dtype)
    want = _oracle(a, b, a_trans, b_trans)
    (out,) = _both(TENSOR_BMM[a_trans, b_trans, want.dim()], a, b, outs=[tuple(want.shape)])
    torch.testing.assert_close(out.double(), want, rtol=1e-3, atol=1e-3)


@pl.jit
def bmm_acc(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, out: pl.Out[pl.Tensor], lo: pl.Out[pl.Tensor]):
    """acc = a @ b, then acc += c @ b; and the accumulator narrowed to BF16 by the fixpipe."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(a, b)
        acc = pl.matmul_acc(acc, c, b)
        out = pl.assemble(out, acc, [0, 0, 0])
        lo = pl.assemble(lo, pl.matmul(a, b, out_dtype=pl.BF16), [0, 0, 0])
    return out, lo


def test_a_batched_accumulation_and_a_narrowed_result():
    g = torch.Generator().manual_seed(3)
    a, c = torch.randn(2, 32, 64, generator=g).half(), torch.randn(2, 32, 64, generator=g).half()
    b = torch.randn(2, 64, 32, generator=g).half()
    got = []
    for platform in PLATFORMS:
        out, lo = torch.zeros(2, 32, 32), torch.zeros(2, 32, 32, dtype=torch.bfloat16)
        bmm_acc(a, b, c, out, lo, config=RunConfig(platform=platform))
        got.append((out, lo))
    assert all(torch.equal(x, y) for x, y in zip(*got))
    out, lo = got[0]
    torch.testing.assert_close(out.double(), a.double() @ b.double() + c.double() @ b.double(), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(lo.double(), (a.double() @ b.double()).bfloat16().double(), rtol=1e-2, atol=1e-2)


@pl.jit
def partial_rows(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """M cut by valid_shape, as pl.matmul allows (K stays whole)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        left = pl.move(pl.load(a, [0, 0, 0], [2, 16, 32], valid_shape=[2, 10, 32], target_memory=pl.Mem.Mat),
                       target_memory=pl.Mem.Left)
        right = pl.move(pl.load(b, [0, 0, 0], [2, 32, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.batch_matmul(left, right), [0, 0, 0], out)
    return out


def test_a_partial_m_is_multiplied_as_pl_matmul_does():
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(2, 16, 32, generator=g).half(), torch.randn(2, 32, 16, generator=g).half()
    (out,) = _both(partial_rows, a, b, outs=[(2, 16, 16)])
    torch.testing.assert_close(out[:, :10].double(), a[:, :10].double() @ b.double(), rtol=1e-3, atol=1e-3)


P3 = "a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]"
LEFT = "l = pl.move(pl.load(a, [0, 0, 0], [2, 16, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)"
RIGHT = "r = pl.move(pl.load(b, [0, 0, 0], [3, 32, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)"


@pytest.mark.parametrize("body, shapes, match", [
    ("out = pl.assemble(out, pl.matmul(a, b), [0, 0, 0])", [(2, 16, 32), (3, 32, 16), (2, 16, 16)],
     r"tensor.matmul requires batch axes that broadcast \(equal, or one of them 1\), but got lhs batch \[2\] and "
     r"rhs batch \[3\][\s\S]*pair up from the right"),
    ("out = pl.assemble(out, pl.matmul(a, b), [0, 0, 0])", [(2, 0, 32), (32, 16), (2, 0, 16)],
     r"tensor.matmul requires non-empty operands"),
    (f"{LEFT}\n{RIGHT}\npl.store(pl.matmul(l, r), [0, 0, 0], out)", [(2, 16, 32), (3, 32, 16), (2, 16, 16)],
     r"tile.matmul requires 2D lhs and rhs[\s\S]*pl.batch_matmul"),
    ("out = pl.assemble(out, pl.matmul(a, b), [0, 0])", [(32,), (32, 16), (1, 16)],
     r"tensor.matmul requires lhs of at least 2 dimensions"),
    ("out = pl.assemble(out, pl.batch_matmul(a, b), [0, 0, 0])", [(2, 16, 32), (2, 32, 16), (2, 16, 16)],
     r"tile.batch_matmul requires 'lhs' to be a Tile[\s\S]*on tensors use pl.matmul"),
    (f"{LEFT}\n{RIGHT}\npl.store(pl.batch_matmul(l, r), [0, 0, 0], out)", [(2, 16, 32), (3, 32, 16), (2, 16, 16)],
     r"tile.batch_matmul requires batch axes that broadcast"),
    (f"{LEFT}\n{RIGHT.replace('3, 32', '2, 32')}\nacc = pl.tile.create([2, 16, 32], dtype=pl.FP32, "
     "target_memory=pl.Mem.Acc)\npl.store(pl.tile.batch_matmul_acc(acc, l, r), [0, 0, 0], out)",
     [(2, 16, 32), (2, 32, 16), (2, 16, 16)], r"batch_matmul_acc requires an accumulator of shape \[2, 16, 16\]"),
])
def test_refusals_name_the_line(tmp_path, body, shapes, match):
    k = scope_kernel(tmp_path, body, P3)
    args = [torch.zeros(s).half() for s in shapes[:2]] + [torch.zeros(shapes[2])]
    with pytest.raises(PyptoError, match=match) as info:
        k(*args)
    assert "k.py:" in str(info.value)


def test_the_message_points_at_the_bad_call():
    lines, start = inspect.getsourcelines(tensor_bmm.fn)
    row = start + next(i for i, line in enumerate(lines) if "pl.matmul(" in line)
    with pytest.raises(PyptoError, match=r"matching inner dimensions") as info:
        tensor_bmm(torch.zeros(2, 16, 32).half(), torch.zeros(2, 48, 16).half(), torch.zeros(2, 16, 16))
    assert f":{row}:" in str(info.value)
