"""``pl.set_validshape`` of a tensor in a kernel (the reference's form): the narrowed tensor
is its valid part — what an assemble of it writes and what elementwise ops of it compute —
and ``pl.fillpad`` grows it back to its full shape with the pad value past that part. Each
against torch, on the interpreter and the simulated core alike; a non-constant extent is
refused where it is written."""

from __future__ import annotations

import functools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.errors import PyptoError
from pypto.runtime import RunConfig
from kernel_files import kernel_module, on_both

PADS = {"zero": 0.0, "max": float("inf"), "min": float("-inf")}


@functools.lru_cache(maxsize=None)
def fillpad_kernel(rows: int, cols: int, pad: str, through_add: bool):
    value = "pl.adds(narrowed, 1.0)" if through_add else "narrowed"
    module, _ = kernel_module(f"""
        @pl.jit
        def k(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                narrowed = pl.set_validshape(x, {rows}, {cols})
                v = {value}
                out = pl.assemble(out, pl.fillpad(v, pad_value=pl.PadValue.{pad}), [0, 0])
            return out
    """)
    return module.k


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(1, 32), cols=st.sampled_from([8, 16, 40, 64]), pad=st.sampled_from(sorted(PADS)),
       through_add=st.booleans())
def test_fillpad_of_a_narrowed_tensor_pads_past_its_valid_part(rows, cols, pad, through_add):
    x = torch.randn(32, 64)
    got = on_both(fillpad_kernel(rows, cols, pad, through_add), x, torch.zeros(32, 64))[1]
    want = torch.full((32, 64), PADS[pad])
    want[:rows, :cols] = x[:rows, :cols] + (1.0 if through_add else 0.0)
    assert torch.equal(got, want)


@pytest.mark.parametrize("write", ["pl.assemble(out, narrowed, [8, 0])", "subscript"])
def test_an_assemble_of_a_narrowed_tensor_writes_its_valid_part_only(write):
    stmt = "out[8:24, 0:4] = narrowed" if write == "subscript" else f"out = {write}"
    module, _ = kernel_module(f"""
        @pl.jit
        def k(src: pl.Tensor[[16, 8], pl.FP32], out: pl.InOut[pl.Tensor[[64, 32], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                narrowed = pl.set_validshape(src, 16, 4)
                {stmt}
            return out
    """)
    src = torch.randn(16, 8)
    src[:, 4:] = -1000.0  # past the valid part: must not reach the output
    got = on_both(module.k, src, torch.zeros(64, 32))[1]
    want = torch.zeros(64, 32)
    want[8:24, :4] = src[:, :4]
    assert torch.equal(got, want)


def test_a_set_validshape_extent_known_only_at_run_time_is_refused_where_it_is_written():
    module, path = kernel_module("""
        @pl.jit
        def k(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]], n: pl.Scalar[pl.INDEX]):
            with pl.at(level=pl.Level.CORE_GROUP):
                narrowed = pl.set_validshape(x, n, 16)  # MARK
                out = pl.assemble(out, pl.fillpad(narrowed), [0, 0])
            return out
    """)
    with pytest.raises(PyptoError, match="takes constant extents") as info:
        module.k(torch.zeros(32, 64), torch.zeros(32, 64), 8, config=RunConfig(platform="ref"))
    lines = open(path).read().splitlines()
    line = next(i for i, x in enumerate(lines, 1) if "MARK" in x)
    assert f"{path}:{line}:" in str(info.value) and info.value.hint
