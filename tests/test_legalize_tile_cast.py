"""LegalizeTileCast: on Ascend950 a ``tile.cast`` its vector unit cannot do in one
instruction runs as the chain of ones it can (INT32 -> FP16 through FP32, the reference's
feature matrix), charged per hop on a5sim, with the direct conversion's bits everywhere; a2a3
keeps the cast whole. Every chain the pass takes gives the direct conversion's bits (a
property over every pair and rounding mode, on values at each format's edges)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.backend import A5
from pypto.ir.ops.tile import CAST_MODES
from pypto.ir.types import DataType
from pypto.passes.legalize_tile_cast import chain
from pypto.runtime import RunConfig
from pypto.sim.ops import numerics

DTYPES = (DataType.FP32, DataType.FP16, DataType.BF16, DataType.INT64, DataType.INT32, DataType.INT16,
          DataType.INT8, DataType.UINT8, DataType.UINT16, DataType.UINT32)
EDGES = [0.0, 0.5, 1.5, 2.5, -2.5, 127.0, 127.5, 128.0, -128.5, 255.5, 256.0, 2047.0, 2049.0, 32767.5, 65504.0,
         65519.0, 65520.0, 65535.5, 2.0**24 + 1, 2.0**24 + 2.0**16 + 1, 2.0**31, -2.0**31 - 1, 1e20, -1e20, 1e-6, float("inf"),
         float("-inf")]


def _values(dtype: DataType, draw_floats) -> torch.Tensor:
    x = torch.tensor(EDGES + draw_floats, dtype=torch.float64)
    if dtype.is_int:
        lo, hi = dtype.int_range
        x = torch.nan_to_num(x, posinf=hi, neginf=lo).clamp(lo, hi).round()
        return x.to(torch.int64).to(numerics.TORCH[dtype])
    return x.to(numerics.TORCH[dtype])


@pytest.mark.parametrize("dst", DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("src", DTYPES, ids=lambda d: d.short)
@settings(deadline=None, max_examples=8)
@given(floats=st.lists(st.floats(-1e10, 1e10, allow_nan=False), max_size=20))
def test_property_every_chain_taken_gives_the_direct_conversions_bits(src, dst, floats):
    hops = chain(src, dst, A5.native_casts) if src.short in A5.native_casts else (src, dst)
    assert hops is not None and hops[0] is src and hops[-1] is dst
    assert all(b.short in A5.native_casts.get(a.short, ()) for a, b in zip(hops, hops[1:])) or len(hops) == 2
    x = _values(src, floats)
    for mode in CAST_MODES:
        want = numerics.cast(x, dst, mode)
        got = x
        for mid in hops[1:]:
            got = numerics.cast(got, mid, mode)
        assert torch.equal(got, want), (mode, hops)


def test_the_reference_chains_of_a5_are_taken():
    f = {d.short: d for d in DTYPES}
    assert chain(f["int32"], f["fp16"], A5.native_casts) == (f["int32"], f["fp32"], f["fp16"])
    assert chain(f["fp16"], f["bf16"], A5.native_casts) == (f["fp16"], f["fp32"], f["bf16"])
    assert chain(f["int32"], f["fp32"], A5.native_casts) == (f["int32"], f["fp32"])
    # a chain that would round twice keeps the one rounding the program defines
    assert chain(f["int32"], f["bf16"], A5.native_casts) == (f["int32"], f["bf16"])


@pl.jit
def to_fp16(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, target_type=pl.FP16, mode="rint")
    return out


@pl.jit
def to_fp32(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, target_type=pl.FP32, mode="rint")
    return out


def _run(kernel, x, dtype, platform):
    out = torch.zeros(x.shape, dtype=dtype)
    compiled = kernel.compile(x, out, config=RunConfig(platform=platform))
    report = compiled.run(x, out)
    return out, report, compiled.lowered.as_python().count("pl.tile.cast(")


def test_int32_to_fp16_is_two_hops_on_a5sim_and_one_on_a2a3sim_with_the_same_bits():
    g = torch.Generator().manual_seed(3)
    x = torch.randint(-100000, 100000, (32, 64), generator=g, dtype=torch.int32)
    x[0, :8] = torch.tensor([65504, 65519, 65520, 65521, -65520, 2**24 + 1, 2**31 - 1, -2**31], dtype=torch.int32)
    ref, _, _ = _run(to_fp16, x, torch.float16, "ref")
    a2, _, a2_casts = _run(to_fp16, x, torch.float16, "a2a3sim")
    a5, a5_report, a5_casts = _run(to_fp16, x, torch.float16, "a5sim")
    assert torch.equal(ref, x.to(torch.float16)) and torch.equal(a2, ref) and torch.equal(a5, ref)
    assert (a2_casts, a5_casts) == (1, 2)
    _, one_hop, _ = _run(to_fp32, x, torch.float32, "a5sim")
    two, one = (sum(p.get("VECTOR", 0) for c, p in r.pipe_cycles.items() if c.startswith("aiv"))
                for r in (a5_report, one_hop))
    assert two > one  # a hop more of the vector unit's work


@pytest.mark.parametrize(("backend", "casts"), [("a5", 2), ("a2a3", 1)])
def test_ref_interprets_the_chain_its_chip_runs(backend, casts):
    x = torch.zeros(16, 64, dtype=torch.int32)
    compiled = to_fp16.compile(x, torch.zeros(16, 64, dtype=torch.float16),
                               config=RunConfig(platform="ref", backend=backend))
    assert compiled.lowered.as_python().count("pl.tile.cast(") == casts
