"""A program is accepted or refused alike on every platform: `ref` compiles through
codegen too, and only then interprets the IR instead of running the kernels."""

import pytest
import torch

import pypto.language as pl
from pypto.codegen import CodegenError
from pypto.runtime import RunConfig


@pl.jit
def switch_source(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        src = a
        if n > 0:
            src = b
        pl.store(pl.load(src, [0, 0], [16, 128]), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_what_codegen_refuses_is_refused_on_every_platform(platform):
    a, b, out = torch.randn(16, 128), torch.randn(16, 128), torch.zeros(16, 128)
    with pytest.raises(CodegenError, match="is not one GM tensor throughout") as info:
        switch_source(a, b, out, 1, config=RunConfig(platform=platform))
    assert info.value.span is not None


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_ref_build_lists_the_kernels_it_checked(platform, tmp_path):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(a)
        return out

    a = torch.randn(16, 128)
    compiled = k.compile(a, a, config=RunConfig(platform=platform, output_dir=tmp_path / platform))
    assert (compiled.output_dir / "kernels" / "aiv" / "k_incore_0.pto").is_file()
