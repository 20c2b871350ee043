"""A tile-level ``pl.move`` between the cube and the vector cores inside a mixed ``pl.at``
scope (Acc or Mat to Vec, Vec to Mat) goes the way the a2a3 hardware makes it: a store into
a GM ring the orchestration creates and a load on the other side; a move the compiler cannot
stage is refused where it is written."""

import pytest
import torch

import pypto.language as pl
from pypto.errors import MemorySpaceError, PyptoError
from pypto.ir.nodes import walk_stmts
from pypto.runtime import RunConfig

MAT, LEFT, RIGHT, VEC = pl.MemorySpace.Mat, pl.MemorySpace.Left, pl.MemorySpace.Right, pl.MemorySpace.Vec


@pl.jit
def acc_to_vec(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        al = pl.move(pl.load(a, [0, 0], [32, 16], target_memory=MAT), target_memory=LEFT)
        bl = pl.move(pl.load(b, [0, 0], [16, 32], target_memory=MAT), target_memory=RIGHT)
        v = pl.move(pl.matmul(al, bl), target_memory=VEC)
        pl.store(pl.add(v, v), [0, 0], y)
    return y


@pl.jit
def mat_to_vec(x: pl.Tensor, a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        target = pl.load(x, [0, 0], [32, 32], target_memory=MAT)
        al = pl.move(pl.load(a, [0, 0], [32, 16], target_memory=MAT), target_memory=LEFT)
        bl = pl.move(pl.load(b, [0, 0], [16, 16], target_memory=MAT), target_memory=RIGHT)
        assembled = pl.tile.assemble(target, pl.matmul(al, bl), [0, 16])
        pl.store(pl.move(assembled, target_memory=VEC), [0, 0], y)
    return y


@pl.jit
def vec_to_mat(x: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 16])
        doubled = pl.add(t, t)
        lhs = pl.move(pl.move(doubled, target_memory=MAT), target_memory=LEFT)
        bl = pl.move(pl.load(b, [0, 0], [16, 32], target_memory=MAT), target_memory=RIGHT)
        pl.store(pl.matmul(lhs, bl), [0, 0], y)
    return y


@pl.jit
def per_trip(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        bl = pl.move(pl.load(b, [0, 0], [16, 32], target_memory=MAT), target_memory=RIGHT)
        for i in pl.range(4):
            al = pl.move(pl.load(a, [i * 16, 0], [16, 16], target_memory=MAT), target_memory=LEFT)
            v = pl.move(pl.matmul(al, bl), target_memory=VEC)
            pl.store(pl.mul(v, v), [i * 16, 0], y)
    return y


def _both(fn, *args):
    """The output on ref and on a2a3sim (the last argument is the Out)."""
    outs = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros_like(args[-1])
        fn(*args[:-1], out, config=RunConfig(platform=platform))
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    return outs[0]


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def test_an_accumulator_moved_to_vec_goes_through_gm():
    g = _g()
    a, b = torch.randn(32, 16, generator=g), torch.randn(16, 32, generator=g)
    out = _both(acc_to_vec, a, b, torch.zeros(32, 32))
    assert torch.allclose(out, 2 * (a @ b), rtol=1e-4, atol=1e-4)
    kernel = acc_to_vec.compile(a, b, torch.zeros(32, 32), config=RunConfig(platform="a2a3sim"))
    ops = [getattr(getattr(s, "value", None), "op", None) for f in kernel.lowered.functions for s in walk_stmts(f.body)]
    assert "tensor.create" in ops  # the ring, created by the orchestration
    assert "system.reserve_buffer" not in ops  # the load lands in the vector core's own tile


def test_a_mat_tile_moved_to_vec_is_stored_from_l1():
    g = _g(1)
    x, a, b = torch.randn(32, 32, generator=g), torch.randn(32, 16, generator=g), torch.randn(16, 16, generator=g)
    out = _both(mat_to_vec, x, a, b, torch.zeros(32, 32))
    want = x.clone()
    want[:, 16:] = a @ b
    assert torch.allclose(out, want, rtol=1e-4, atol=1e-4)


def test_vector_work_moved_to_mat_feeds_a_matmul():
    g = _g(2)
    x, b = torch.randn(32, 16, generator=g), torch.randn(16, 32, generator=g)
    out = _both(vec_to_mat, x, b, torch.zeros(32, 32))
    assert torch.allclose(out, (2 * x) @ b, rtol=1e-4, atol=1e-4)


def test_a_move_on_every_trip_takes_its_slot_of_the_ring():
    g = _g(3)
    a, b = torch.randn(64, 16, generator=g), torch.randn(16, 32, generator=g)
    out = _both(per_trip, a, b, torch.zeros(64, 32))
    assert torch.allclose(out, (a @ b) ** 2, rtol=1e-4, atol=1e-3)


def test_a_mat_tile_stores_to_gm_on_a2a3():
    @pl.jit
    def copy(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(x, [0, 0], [16, 32], target_memory=MAT), [0, 0], y)
        return y

    x = torch.randn(16, 32, generator=_g(4))
    assert torch.equal(_both(copy, x, torch.zeros(16, 32)), x)


def test_a_vec_tile_does_not_reach_l0_in_one_move():
    with pytest.raises(MemorySpaceError, match=r"cannot move a Vec tile to Left on Ascend910B \(a2a3\)") as e:
        @pl.jit
        def bad(x: pl.Tensor, y: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.move(pl.load(x, [0, 0], [16, 16]), target_memory=LEFT)
            return y

        bad(torch.zeros(16, 16), torch.zeros(16, 16))
    assert "test_tile_crossings.py" in str(e.value)


def test_an_accumulator_error_names_it_with_its_article():
    with pytest.raises(MemorySpaceError, match=r"cannot move an Acc tile to Left"):
        @pl.jit
        def bad(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                al = pl.move(pl.load(a, [0, 0], [16, 16], target_memory=MAT), target_memory=LEFT)
                bl = pl.move(pl.load(b, [0, 0], [16, 16], target_memory=MAT), target_memory=RIGHT)
                pl.move(pl.matmul(al, bl), target_memory=LEFT)
            return y

        bad(torch.zeros(16, 16), torch.zeros(16, 16), torch.zeros(16, 16))


@pl.program
class HandWritten:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) \
            -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 16], target_memory=pl.MemorySpace.Mat)
        v = pl.move(t, target_memory=pl.MemorySpace.Vec)
        y = pl.store(v, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) \
            -> pl.Tensor[[16, 16], pl.FP32]:
        y = self.kernel(a, y)
        return y


def test_a_crossing_in_a_hand_written_kernel_goes_through_a_buffer_its_caller_creates():
    """The kernel's tile.move from L1 to UB is staged as a pl.at scope's is: the caller
    creates the GM buffer, a new Out parameter of the kernel (tests/test_kernel_crossings)."""
    from pypto.runtime import run

    a = torch.randn(16, 16)
    got = []
    for platform in ("ref", "a2a3sim"):
        y = torch.zeros(16, 16)
        run(HandWritten, a, y, config=RunConfig(platform=platform))
        got.append(y)
    assert torch.equal(got[0], got[1]) and torch.equal(got[1], a)
