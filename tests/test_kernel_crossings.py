"""A kernel written by hand (an InCore function) whose cube and vector work cross — a
matmul of a vector result, vector work on a matmul's, a tile moved between the sides —
is staged as a pl.at scope is: each crossing value goes through a GM buffer, a new Out
parameter of the kernel that each call of it creates. ref and a2a3sim give the same bits."""

import inspect

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import PyptoError
from pypto.runtime import RunConfig, run


def mixed_program(rows: int, inner: int, cols: int, b_trans: bool, after: str):
    """``c = a @ (b0 + b1)`` (``b_trans``: against its transpose), then ``after`` on the
    product: "none", "exp" (vector work on the cube's result) or "add" (with ``b0``'s
    first rows, as a second crossing each way)."""
    bshape = [cols, inner] if b_trans else [inner, cols]
    a_shape, c_shape = [rows, inner], [rows, cols]

    @pl.program
    class Mixed:
        @pl.function(type=pl.FunctionType.InCore)
        def kern(self, a: pl.Tensor[a_shape, pl.FP32], b0: pl.Tensor[bshape, pl.FP32],
                 b1: pl.Tensor[bshape, pl.FP32], c: pl.Out[pl.Tensor[c_shape, pl.FP32]]) -> pl.Tensor[c_shape, pl.FP32]:
            bt = pl.add(b0, b1)  # vector work a matmul reads
            cm = pl.matmul(a, bt, b_trans=b_trans, out_dtype=pl.FP32)
            if after == "exp":
                cm = pl.exp(cm)  # vector work on the cube's result
            if after == "add":
                cm = pl.add(cm, pl.slice(bt, c_shape, [0, 0]))
            out_c = pl.assemble(c, cm, offset=[0, 0])
            return out_c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[a_shape, pl.FP32], b0: pl.Tensor[bshape, pl.FP32],
                 b1: pl.Tensor[bshape, pl.FP32], c: pl.Out[pl.Tensor[c_shape, pl.FP32]]) -> pl.Tensor[c_shape, pl.FP32]:
            for _ in pl.range(2):  # a call in a loop creates its buffers on each trip
                c = self.kern(a, b0, b1, c)
            return c

    return Mixed


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.sampled_from([16, 32]), k=st.sampled_from([32, 64]), n=st.sampled_from([32, 64]),
       b_trans=st.booleans(), after=st.sampled_from(["none", "exp", "add"]))
def test_a_kernel_whose_cube_and_vector_work_cross_runs_with_the_bits_of_ref(m, k, n, b_trans, after):
    bshape = (n, k) if b_trans else (k, n)
    if after == "add" and (m > bshape[0] or n > bshape[1]):
        after = "exp"  # the slice must fit in b's shape
    program = mixed_program(m, k, n, b_trans, after)
    g = torch.Generator().manual_seed(m + k + n)
    a = torch.randn(m, k, generator=g) * 0.1
    b0, b1 = torch.randn(*bshape, generator=g), torch.randn(*bshape, generator=g)
    got = []
    for platform in ("ref", "a2a3sim"):
        c = torch.zeros(m, n)
        run(program, a, b0, b1, c, config=RunConfig(platform=platform))
        got.append(c)
    assert torch.equal(got[0], got[1])
    bt = b0 + b1
    want = a @ (bt.T if b_trans else bt)
    if after == "exp":
        want = want.exp()
    if after == "add":
        want = want + bt[:m, :n]
    torch.testing.assert_close(got[1], want, rtol=1e-3, atol=1e-3)


def test_a_hand_written_kernel_stages_its_split_aiv_regions_crossing():
    @pl.program
    class Hand:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 32], pl.FP32], b: pl.Tensor[[32, 48], pl.FP32],
              out: pl.Out[pl.Tensor[[64, 48], pl.FP32]]) -> pl.Tensor[[64, 48], pl.FP32]:
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                g = pl.aic_gather(pl.exp(pl.load(a, [aiv_id * 32, 0], [32, 32])))
            lhs = pl.move(g, target_memory=pl.Mem.Left)
            rhs = pl.move(pl.load(b, [0, 0], [32, 48], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            out = pl.store(pl.matmul(lhs, rhs), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 32], pl.FP32], b: pl.Tensor[[32, 48], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 48], pl.FP32]]) -> pl.Tensor[[64, 48], pl.FP32]:
            out = self.k(a, b, out)
            return out

    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(64, 32, generator=g) * 0.3, torch.randn(32, 48, generator=g)
    got = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(64, 48)
        run(Hand, a, b, out, config=RunConfig(platform=platform))
        got.append(out)
    assert torch.equal(got[0], got[1])
    torch.testing.assert_close(got[1], a.exp() @ b, rtol=1e-3, atol=1e-3)


def test_a_crossing_in_a_kernel_nothing_calls_is_refused_where_it_is_written():
    """An entry kernel's parameters are the caller's tensors: there is no orchestration to
    create the GM buffer a crossing goes through."""
    @pl.program
    class Entry:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[32, 32], pl.FP32], out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
            t = pl.exp(pl.load(a, [0, 0], [32, 32]))
            lhs = pl.move(t, target_memory=pl.Mem.Mat)  # MARK-entry
            rhs = pl.move(pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            out = pl.store(pl.matmul(pl.move(lhs, target_memory=pl.Mem.Left), rhs), [0, 0], out)
            return out

    with pytest.raises(PyptoError, match=r"crosses from the vector cores to the cube, through GM") as info:
        run(Entry, torch.randn(32, 32), torch.zeros(32, 32), config=RunConfig(platform="ref"))
    lines = inspect.getsource(test_a_crossing_in_a_kernel_nothing_calls_is_refused_where_it_is_written).splitlines()
    first = test_a_crossing_in_a_kernel_nothing_calls_is_refused_where_it_is_written.__code__.co_firstlineno
    assert info.value.span.line == first + next(i for i, t in enumerate(lines) if t.endswith("# MARK-entry"))


@pytest.mark.parametrize("implicit", [False, True])
@pytest.mark.parametrize("blocks", [1, 2, 4])
def test_an_spmd_launch_of_a_crossing_kernel_gives_each_block_a_window_of_the_buffer(blocks, implicit):
    """``implicit``: the vector op reads the Acc tile as it is, and the front end makes the
    move (the reference's ExpandMixedKernel inserts it)."""
    rows = 128 // blocks

    @pl.program
    class Spmd:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, a: pl.Tensor[[128, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
                   bias: pl.Tensor[[128, 16], pl.FP32], out: pl.Out[pl.Tensor[[128, 16], pl.FP32]]) \
                -> pl.Tensor[[128, 16], pl.FP32]:
            r0 = pl.tile.get_block_idx() * rows
            left = pl.move(pl.load(a, [r0, 0], [rows, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            right = pl.move(pl.load(b, [0, 0], [16, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.matmul(left, right)
            if not implicit:
                acc = pl.move(acc, target_memory=pl.Mem.Vec)  # Acc -> Vec, through GM
            out = pl.store(pl.add(acc, pl.load(bias, [r0, 0], [rows, 16])), [r0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[128, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
                 bias: pl.Tensor[[128, 16], pl.FP32], out: pl.Out[pl.Tensor[[128, 16], pl.FP32]]) \
                -> pl.Tensor[[128, 16], pl.FP32]:
            with pl.spmd(blocks):
                out = self.kernel(a, b, bias, out)
            return out

    g = torch.Generator().manual_seed(blocks)
    a, b, bias = torch.randn(128, 16, generator=g), torch.randn(16, 16, generator=g), torch.randn(128, 16, generator=g)
    got = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(128, 16)
        run(Spmd, a, b, bias, out, config=RunConfig(platform=platform))
        got.append(out)
    assert torch.equal(got[0], got[1])
    torch.testing.assert_close(got[1], a @ b + bias, rtol=1e-4, atol=1e-4)


def test_a_vector_op_on_a_cube_tile_in_a_kernel_nothing_calls_is_refused_at_the_op():
    @pl.program
    class Entry:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[32, 32], pl.FP32], out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
            left = pl.move(pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            right = pl.move(pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            t = pl.exp(pl.matmul(left, right))  # MARK-op
            out = pl.store(t, [0, 0], out)
            return out

    with pytest.raises(PyptoError, match=r"crosses from the cube to the vector cores, through GM") as info:
        run(Entry, torch.randn(32, 32), torch.zeros(32, 32), config=RunConfig(platform="ref"))
    lines, first = inspect.getsourcelines(test_a_vector_op_on_a_cube_tile_in_a_kernel_nothing_calls_is_refused_at_the_op)
    assert info.value.span.line == first + next(i for i, t in enumerate(lines) if t.rstrip().endswith("# MARK-op"))
