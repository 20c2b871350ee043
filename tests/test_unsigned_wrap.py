"""add, sub and mul in UINT16 and UINT32 (the words pl.tile.random makes: the reference's
tests subtract two streams) wrap at the dtype's width, with one definition
(``numerics.modular``) for ref and both simulators: a property against Python's integers
modulo 2**width, the tile op and its scalar form."""

import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.runtime import RunConfig

R, C = 8, 64
TORCH = {"UINT16": (torch.uint16, 16), "UINT32": (torch.uint32, 32)}


def _kernel(op: str, scalar: int | None, where: Path):
    from pypto.fuzz.graphs import kernel_from

    value = f"pl.{op}(a, b)" if scalar is None else f"pl.{op}s(a, {scalar})"
    source = ("import pypto.language as pl\n\n\n@pl.jit\n"
              "def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):\n"
              "    with pl.at(level=pl.Level.CORE_GROUP):\n"
              f"        out[:] = {value}\n"
              "    return out\n")
    where = where / f"{op}_{scalar}"  # (a module of its own each)
    where.mkdir()
    return kernel_from(source, "k", where)


_DIR = tempfile.TemporaryDirectory()
KERNELS = {(op, s): _kernel(op, s, Path(_DIR.name)) for op in ("add", "sub", "mul") for s in (None, 3, 65535)}


@pytest.mark.parametrize("platform", ["ref", "a2a3sim", "a5sim"])
@settings(deadline=None, max_examples=6)
@given(dtype=st.sampled_from(sorted(TORCH)), op=st.sampled_from(["add", "sub", "mul"]),
       scalar=st.sampled_from([None, 3, 65535]), seed=st.integers(0, 2**16))
def test_property_unsigned_arithmetic_wraps_at_its_width(platform, dtype, op, scalar, seed):
    tdtype, width = TORCH[dtype]
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(0, 2**width, (R, C), generator=g, dtype=torch.int64)
    b = torch.randint(0, 2**width, (R, C), generator=g, dtype=torch.int64)
    a[0, :4] = torch.tensor([0, 2**width - 1, 0, 2**width - 1])
    b[0, :4] = torch.tensor([2**width - 1, 2**width - 1, 1, 0])
    rhs = b if scalar is None else torch.full_like(b, scalar)
    want = {"add": a + rhs, "sub": a - rhs, "mul": a * rhs}[op] % 2**width
    out = torch.zeros(R, C, dtype=tdtype)
    KERNELS[(op, scalar)](a.to(tdtype), b.to(tdtype), out, config=RunConfig(platform=platform))
    assert torch.equal(out.to(torch.int64), want)
