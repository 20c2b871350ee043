import pytest
import torch
from helpers import check_pass, program_text

import pypto.language as pl
from pypto.errors import UnsupportedSyntaxError
from pypto.lang import parse
from pypto.passes.context import PassContext
from pypto.passes.outline_incore_scopes import outline_incore_scopes
from pypto.runtime import RunConfig
from pypto.backend import A2A3


def test_scope_becomes_an_incore_function_with_in_and_out_params():
    check_pass(outline_incore_scopes, """
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                for i in pl.range(4):
                    t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                    pl.tile.store(pl.tile.exp(t), [i * 16, 0], out)
            return out
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def k_incore_0(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
            for i in pl.range(4):
                t = pl.tile.load(a, [i * 16, 0], [16, 128], target_memory=pl.Mem.Vec)
                exp = pl.tile.exp(t)
                pl.tile.store(exp, [i * 16, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
            self.k_incore_0(a, out)  # task args: Input, OutputExisting
            return out
    """)


def test_name_hint_scalars_inout_and_an_exported_tensor():
    check_pass(outline_incore_scopes, """
        @pl.function
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.InOut[pl.Tensor[[16, 128], pl.FP32]], n: pl.Scalar[pl.INT32]) -> pl.Tensor[[16, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="body"):
                old = pl.tile.load(out, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
                t = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
                s = pl.tile.muls(t, n)
                out_1 = pl.tile.store(pl.tile.add(s, old), [0, 0], out)
            return out_1
    """, """
        @pl.function(type=pl.FunctionType.InCore)
        def body(self, out: pl.InOut[pl.Tensor[[16, 128], pl.FP32]], a: pl.Tensor[[16, 128], pl.FP32], n: pl.Scalar[pl.INT32]) -> pl.Tensor[[16, 128], pl.FP32]:
            old = pl.tile.load(out, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            t = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            s = pl.tile.muls(t, n)
            add = pl.tile.add(s, old)
            out_1 = pl.tile.store(add, [0, 0], out)
            return out_1

        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.InOut[pl.Tensor[[16, 128], pl.FP32]], n: pl.Scalar[pl.INT32]) -> pl.Tensor[[16, 128], pl.FP32]:
            out_1 = self.body(out, a, n)  # task args: InOut, Input, Scalar
            return out_1
    """)


def test_a_tile_cannot_leave_its_scope():
    program = parse(program_text("""
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.tile.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Vec)
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.tile.store(t, [0, 0], out)
            return out
    """))
    with pytest.raises(UnsupportedSyntaxError, match=r"'t' \(Tile\[16x128 fp32 Vec\]\) is bound inside a pl.at scope"):
        outline_incore_scopes(program, PassContext(soc=A2A3))


@pl.jit
def scope_per_iteration(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            u = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(pl.exp(u), [i * 16, 0], out)
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_scope_inside_an_orchestration_loop_is_launched_each_iteration(platform):
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    scope_per_iteration(a, out, config=RunConfig(platform=platform))
    assert torch.equal(out, torch.exp(a))


@pl.jit
def store_carried(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            t = pl.load(a, [i * 16, 0], [16, 128])
            out = pl.store(pl.exp(t), [i * 16, 0], out)
    return out


@pl.jit
def store_in_branches(a: pl.Tensor, out: pl.Out[pl.Tensor], s: pl.Scalar[pl.INT64]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 128])
        if s > 0:
            out = pl.store(t, [0, 0], out)
        else:
            out = pl.store(pl.neg(t), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_tensor_threaded_through_a_loop_or_an_if_is_the_one_it_started_as(platform):
    config = RunConfig(platform=platform, verification_level="ROUNDTRIP")
    a, out = torch.randn(64, 128), torch.zeros(64, 128)
    store_carried(a, out, config=config)
    assert torch.equal(out, torch.exp(a))
    assert "out: pl.Out[" in store_carried.lower(a, out).as_python()  # written, so not an In param
    for s, want in ((1, a[:16]), (0, -a[:16])):
        out = torch.zeros(16, 128)
        store_in_branches(a[:16].clone(), out, s, config=config)
        assert torch.equal(out, want)
