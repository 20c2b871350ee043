"""Smaller forms a reference user writes: ``program.functions`` read as a mapping, a store's
result bound in a loop read after it, ``pypto.ir.OptimizationStrategy``."""

import pytest
import torch

import pypto.ir as ir
import pypto.language as pl


@pl.program
class TwoKernels:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        for i in pl.range(2):
            tile = pl.load(x, [i * 16, 0], [16, 64])
            stored = pl.store(pl.mul(tile, 2.0), [i * 16, 0], out)
        return stored  # bound in the loop: the tensor the stores went into

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        out = self.scale(x, out)
        return out


def test_functions_read_as_a_mapping_and_as_a_tuple():
    fns = TwoKernels.functions
    assert [f.name for f in fns.values()] == ["scale", "main"] == fns.keys() == [f.name for f in fns]
    assert fns["main"] is fns[1] and dict(fns.items())["scale"] is fns[0]
    assert "scale" in fns and "other" not in fns and fns.get("other") is None
    with pytest.raises(KeyError):
        fns["other"]
    assert len(fns) == 2 and fns[:1].keys() == ["scale"]


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_a_store_result_bound_in_a_loop_names_the_tensor_after_it(platform, tmp_path):
    import pypto.runtime  # noqa: F401  (installs pypto.ir.compile)

    x = torch.randn(32, 64)
    out = torch.zeros(32, 64)
    ir.compile(TwoKernels, output_dir=str(tmp_path), platform=platform)(x, out)
    assert torch.equal(out, x * 2)


def test_the_strategy_enum_is_where_the_reference_has_it():
    from pypto.ir.pass_manager import OptimizationStrategy

    assert ir.OptimizationStrategy is OptimizationStrategy and ir.OptimizationStrategy.Default.name == "Default"
