"""Cube products over partial valid regions: an MMAD contracts over its left operand's valid
columns (the K TMATMUL reads), so padding past them never reaches the product; a gemv's
result is valid on the rhs's valid columns (a store writes those only); a window of a
product in Acc is stored through the fixpipe. Each against torch over the valid region, on
the interpreter and the simulated core alike, and each misuse located."""

from __future__ import annotations

import functools
import textwrap

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.errors import PyptoError
from pypto.runtime import RunConfig
from kernel_files import kernel_module, on_both

TORCH = {"FP16": torch.float16, "BF16": torch.bfloat16, "FP32": torch.float32, "INT8": torch.int8}


def operand(shape, dtype: str, seed: int) -> torch.Tensor:
    """Small integers: every product and sum is exact in fp32, so torch's order agrees."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-4, 5, shape, generator=g).to(TORCH[dtype])


def acc_of(dtype: str) -> str:
    return "INT32" if dtype == "INT8" else "FP32"


@functools.lru_cache(maxsize=None)
def matmul_kernel(m: int, k: int, n: int, vk: int, dtype: str, form: str):
    acc = acc_of(dtype)
    if form == "gemv":
        call = "pl.tile.gemv(ta, tb)"
    elif form == "acc":
        call = "pl.matmul_acc(pl.matmul(ta, tb), ta, tb)"
    else:
        call = "pl.matmul(ta, tb)"
    module, _ = kernel_module(f"""
        @pl.jit
        def k(a: pl.Tensor[[{m}, {k}], pl.{dtype}], b: pl.Tensor[[{k}, {n}], pl.{dtype}],
              out: pl.Out[pl.Tensor[[{m}, {n}], pl.{acc}]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                ta = pl.load(a, [0, 0], [{m}, {k}], valid_shape=[{m}, {vk}], target_memory=pl.Mem.Mat)
                tb = pl.load(b, [0, 0], [{k}, {n}], valid_shape=[{vk}, {n}], target_memory=pl.Mem.Mat)
                out = pl.store({call}, [0, 0], out)
            return out
    """)
    return module.k


@settings(max_examples=10, deadline=None)
@given(dtype=st.sampled_from(sorted(TORCH)), k=st.sampled_from([32, 64, 128]), data=st.data(),
       form=st.sampled_from(["matmul", "gemv", "acc"]), seed=st.integers(0, 99))
def test_an_mmad_contracts_over_the_lhs_valid_k_only(dtype, k, data, form, seed):
    vk = data.draw(st.integers(1, k), label="valid K")
    m = 1 if form == "gemv" else 16
    n = 32
    a, b = operand((m, k), dtype, seed), operand((k, n), dtype, seed + 1)
    out = torch.zeros(m, n, dtype=torch.int32 if dtype == "INT8" else torch.float32)
    got, = on_both(matmul_kernel(m, k, n, vk, dtype, form), a, b, out)[2:]
    want = (a[:, :vk].to(torch.float64) @ b[:vk].to(torch.float64)) * (2 if form == "acc" else 1)
    assert torch.equal(got, want.to(got.dtype))


def test_garbage_past_the_valid_k_does_not_reach_the_product():
    """The GM bytes past the valid K are loaded as padding on neither operand; filled with
    NaN in GM, the product is still the valid part's."""
    a, b = operand((16, 64), "FP32", 1), operand((64, 32), "FP32", 2)
    a[:, 20:] = float("nan")
    b[20:] = float("nan")
    got = on_both(matmul_kernel(16, 64, 32, 20, "FP32", "matmul"), a, b, torch.zeros(16, 32))[2]
    assert torch.equal(got, a[:, :20] @ b[:20])


def test_a_gemv_is_valid_on_the_rhs_valid_columns_and_stores_them():
    module, _ = kernel_module("""
        @pl.jit
        def k(a: pl.Tensor[[1, 64], pl.FP32], b: pl.Tensor[[64, 30], pl.FP32],
              out: pl.Out[pl.Tensor[[1, 30], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                ta = pl.load(a, [0, 0], [1, 64], target_memory=pl.Mem.Mat)
                tb = pl.load(b, [0, 0], [64, 32], valid_shape=[64, 30], target_memory=pl.Mem.Mat, clamp=True)
                out = pl.store(pl.tile.gemv(ta, tb), [0, 0], out)
            return out
    """)
    a, b = operand((1, 64), "FP32", 3), operand((64, 30), "FP32", 4)
    got = on_both(module.k, a, b, torch.zeros(1, 30))[2]
    assert torch.equal(got, a @ b)


@pytest.mark.parametrize("rows, cols, off", [(16, 32, (0, 0)), (8, 32, (8, 0)), (16, 16, (0, 16))])
def test_a_window_of_a_product_is_stored_valid_where_the_product_is(rows, cols, off):
    module, _ = kernel_module(f"""
        @pl.jit
        def k(a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
              out: pl.Out[pl.Tensor[[{rows}, {cols}], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                ta = pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat)
                tb = pl.load(b, [0, 0], [32, 32], valid_shape=[32, 21], target_memory=pl.Mem.Mat)
                w = pl.tile.slice(pl.matmul(ta, tb), [{rows}, {cols}], [{off[0]}, {off[1]}])
                out = pl.store(w, [0, 0], out)
            return out
    """)
    a, b = operand((16, 32), "FP16", 5), operand((32, 32), "FP16", 6)
    got = on_both(module.k, a, b, torch.zeros(rows, cols))[2]
    want = torch.zeros(rows, cols)
    full = a.float() @ b.float()
    r0, c0 = off
    valid_cols = max(0, min(cols, 21 - c0))
    want[:, :valid_cols] = full[r0:r0 + rows, c0:c0 + valid_cols]
    assert torch.equal(got, want)


REFUSED = [
    ("""
        ta = pl.load(a, [0, 0], [16, 32], valid_shape=[16, 24], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [32, 32], valid_shape=[16, 32], target_memory=pl.Mem.Mat)
        c = pl.matmul(ta, tb)  # MARK
     """, "the rhs valid along the lhs's valid K"),
    ("""
        ta = pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        half = pl.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
        w = pl.tile.slice(pl.matmul(ta, tb), [16, 16], [0, 16])
        w = pl.matmul_acc(w, ta, half)  # MARK
     """, "a window of an Acc tile"),
]


@pytest.mark.parametrize("body, message", REFUSED)
def test_a_product_the_cube_cannot_compute_is_refused_where_it_is_written(body, message):
    module, path = kernel_module(f"""
        @pl.jit
        def k(a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
              out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
{textwrap.indent(textwrap.dedent(body), " " * 16)}
            return out
    """)
    with pytest.raises(PyptoError, match=message) as info:
        module.k(torch.zeros(16, 32, dtype=torch.float16), torch.zeros(32, 32, dtype=torch.float16),
                 torch.zeros(16, 32), config=RunConfig(platform="ref"))
    lines = open(path).read().splitlines()
    line = next(i for i, x in enumerate(lines, 1) if "MARK" in x)
    assert f"{path}:{line}:" in str(info.value), str(info.value)
    assert info.value.hint
