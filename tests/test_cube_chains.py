"""A matmul whose result another matmul reads keeps it the cube's: the copy goes to GM and
back without a vector ring in UB, and a narrowing the fixpipe makes (FP32 to BF16/FP16,
``mode="rint"``) is made on the accumulator's way out instead of on the vector cores."""

import pytest
import torch

import pypto.language as pl
from pypto.ir.nodes import walk_stmts
from pypto.ir.types import DataType as D
from pypto.runtime import RunConfig
from pypto.sim.ops import numerics as num


@pl.jit
def chain(a: pl.Tensor, b: pl.Tensor, e: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.matmul(a, b, out_dtype=pl.FP32)
        out = pl.assemble(out, pl.matmul(c, e, out_dtype=pl.FP32), [0, 0])
    return out


@pl.jit
def chain_cast(a: pl.Tensor, b: pl.Tensor, e: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.matmul(a, b, out_dtype=pl.FP32)
        cb = pl.cast(c, pl.BF16, mode="rint")
        out = pl.assemble(out, pl.matmul(cb, e, out_dtype=pl.FP32), [0, 0])
    return out


@pl.jit
def chain_cast_round(a: pl.Tensor, b: pl.Tensor, e: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.matmul(a, b, out_dtype=pl.FP32)
        cb = pl.cast(c, pl.BF16)  # ties away from zero: not the fixpipe's rule, so the vector cores cast
        out = pl.assemble(out, pl.matmul(cb, e, out_dtype=pl.FP32), [0, 0])
    return out


def _operands(m, k, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(m, k, generator=g).to(dtype), torch.randn(k, 256, generator=g).to(dtype),
            torch.randn(256, 64, generator=g).to(dtype))


def test_an_intermediate_larger_than_the_accumulator_stays_on_the_cube():
    a, b, e = _operands(256, 128, torch.float32)
    outs = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(256, 64)
        chain(a, b, e, out, config=RunConfig(platform=platform))
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    assert torch.allclose(outs[0], (a @ b) @ e, rtol=1e-3, atol=1e-2)
    kernel = chain.compile(a, b, e, torch.zeros(256, 64), config=RunConfig(platform="a2a3sim"))
    assert not any(getattr(getattr(x, "value", None), "op", None) == "system.reserve_buffer"
                   for f in kernel.lowered.functions for x in walk_stmts(f.body))  # no vector ring: only the cube reads it


@pytest.mark.parametrize("k", [32, 192])
def test_a_rint_narrowing_is_the_fixpipe_s(k):
    a, b, e = _operands(256, k, torch.bfloat16)
    # the cube's own fp32 product (not torch's: its K order rounds elsewhere), narrowed ties-to-even
    golden = num.matmul(num.cast(num.matmul(a, b), D.BF16, "rint"), e)
    outs = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(256, 64)
        chain_cast(a, b, e, out, config=RunConfig(platform=platform))
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    assert torch.equal(outs[0], golden)


def test_another_rounding_still_casts_on_the_vector_cores():
    a, b, e = _operands(64, 32, torch.bfloat16)
    outs = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(64, 64)
        chain_cast_round(a, b, e, out, config=RunConfig(platform=platform))
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    kernel = chain_cast_round.compile(a, b, e, torch.zeros(64, 64), config=RunConfig(platform="a2a3sim"))
    assert any(k.programs and len(k.programs) == 2 for k in kernel.kernels.values())  # cube and vector programs


@pytest.mark.parametrize("mode", ["UP_DOWN", "LEFT_RIGHT"])
def test_the_fixpipe_narrowing_stays_the_cube_s_in_a_split_scope(mode):
    split = getattr(pl.SplitMode, mode)

    @pl.jit
    def split_chain(a: pl.Tensor, b: pl.Tensor, e: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(split)]):
            c = pl.matmul(a, b, out_dtype=pl.FP32)
            cb = pl.cast(c, pl.BF16, mode="rint")
            out[:] = pl.muls(pl.matmul(cb, e, out_dtype=pl.FP32), 0.5)  # vector work the lanes split
        return out

    a, b, e = (x[:64] if k == 0 else x for k, x in enumerate(_operands(64, 32, torch.bfloat16)))
    outs = []
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(64, 64)
        split_chain(a, b, e, out, config=RunConfig(platform=platform))
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    golden = ((a.float() @ b.float()).to(torch.bfloat16).float() @ e.float()) * 0.5
    assert ((outs[0] - golden).norm() / golden.norm()).item() < 1e-5
