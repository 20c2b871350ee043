"""``pl.arange`` / ``pl.tensor.ci``: consecutive integers along a row, a tensor the compiler
computes window by window — each window a ``tile.ci`` starting where the window sits — so
any block, slice or offset of the sequence holds the integers torch.arange gives, on both
platforms; and its refusals at the user's line."""

import inspect

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.errors import TypeCheckError
from pypto.runtime import RunConfig

PLATFORMS = ("ref", "a2a3sim")
TORCH = {pl.INT16: torch.int16, pl.INT32: torch.int32}


def _sequence(start: int, n: int, descending: bool, dtype) -> torch.Tensor:
    k = torch.arange(n, dtype=torch.int64)
    return (start - k if descending else start + k).to(TORCH[dtype]).reshape(1, n)  # wrapping as the dtype does


def _windowed(n: int, offset: int, width: int, start: int, descending: bool, dtype):
    @pl.jit
    def window(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            s = pl.arange(start, [1, n], dtype=dtype, descending=descending)
            out = pl.assemble(out, pl.add(a, pl.slice(s, [1, width], [0, offset])), [0, 0])
        return out
    return window


@settings(max_examples=12, deadline=None)
@given(n=st.sampled_from([64, 256, 1024]), data=st.data(), start=st.integers(-40000, 40000),
       descending=st.booleans(), dtype=st.sampled_from([pl.INT16, pl.INT32]))
def test_a_window_of_the_sequence_holds_torch_aranges_integers(n, data, start, descending, dtype):
    width = data.draw(st.sampled_from([w for w in (16, 64, 256) if w <= n]))
    offset = data.draw(st.integers(0, (n - width) // 16)) * 16
    kernel = _windowed(n, offset, width, start, descending, dtype)
    a = torch.randint(-50, 50, (1, width), dtype=TORCH[dtype])
    want = a + _sequence(start, n, descending, dtype)[:, offset:offset + width]
    for platform in PLATFORMS:
        out = torch.zeros(1, width, dtype=TORCH[dtype])
        kernel(a, out, config=RunConfig(platform=platform))
        assert torch.equal(out, want), platform


N = 65536  # 256 KiB of INT32: more than Vec holds, so the compiler blocks it


@pl.jit
def long_sequence(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.add(a, pl.tensor.ci(-7, [1, N], descending=True)), [0, 0])
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_sequence_longer_than_vec_is_computed_block_by_block(platform):
    a = torch.randint(0, 9, (1, N), dtype=torch.int32)
    out = torch.zeros(1, N, dtype=torch.int32)
    compiled = long_sequence.compile(a, out, config=RunConfig(platform=platform))
    if platform == "a2a3sim":
        assert "pl.tile.ci(-7 - c" in compiled.lowered.as_python()  # each block's part of the sequence
    long_sequence(a, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a + _sequence(-7, N, True, pl.INT32))


@pl.jit
def two_rows(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.arange(0, [2, 64]), [0, 0])  # arange: two rows
    return out


@pl.jit
def floats(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.arange(0, [1, 64], dtype=pl.FP32), [0, 0])  # arange: FP32
    return out


@pytest.mark.parametrize("kernel, args, marker, match", [
    (two_rows, (torch.zeros(2, 64, dtype=torch.int32),), "arange: two rows", r"a shape \[1, N\] with N > 1"),
    (floats, (torch.zeros(1, 64),), "arange: FP32", r"dtype to be one of \{INT16, INT32, UINT16, UINT32\}, but got FP32"),
])
def test_refusals_name_the_line(kernel, args, marker, match):
    with pytest.raises(TypeCheckError, match=match) as info:
        kernel(*args, config=RunConfig(platform="ref"))
    lines, _ = inspect.getsourcelines(inspect.getmodule(test_refusals_name_the_line))
    line = next(k for k, text in enumerate(lines, start=1) if marker in text and "(two_rows" not in text
                and "(floats" not in text)
    assert info.value.span.file == __file__ and info.value.span.line == line
