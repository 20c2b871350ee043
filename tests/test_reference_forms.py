"""Smaller forms a reference user writes: ``program.functions`` read as a mapping, a store's
result bound in a loop read after it, ``pypto.ir.OptimizationStrategy``."""

import pytest
import torch

import pypto.errors
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


@pl.program
class ClusteredSpmd:
    @pl.function(type=pl.FunctionType.AIV)
    def rows(self, x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
             scale: pl.Scalar[pl.FP32], blocks: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 64], pl.FP32]:
        i = pl.tile.get_block_idx()
        if i < blocks:
            out = pl.store(pl.mul(pl.load(x, [i * 16, 0], [16, 64]), scale), [i * 16, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], cfg: pl.Tensor[[2], pl.INT64], scale: pl.Tensor[[1], pl.FP32],
             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        blocks = pl.tensor.read(cfg, [0])  # an INT64 handed to an INDEX parameter: renamed on the way in
        factor: pl.Scalar[pl.FP32] = pl.tensor.read(scale, [0])
        with pl.cluster():
            with pl.spmd(core_num=4):
                out = self.rows(x, out, factor, blocks)
        return out


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
def test_an_spmd_call_in_a_cluster_with_its_arguments_renamed(platform, tmp_path):
    import pypto.runtime  # noqa: F401  (installs pypto.ir.compile)

    x, out = torch.randn(64, 64), torch.zeros(64, 64)
    compiled = ir.compile(ClusteredSpmd, output_dir=str(tmp_path), platform="a2a3sim")
    compiled(x, torch.tensor([3, 0]), torch.tensor([0.5]), out, config=pypto.runtime.RunConfig(platform=platform))
    want = torch.zeros(64, 64)
    want[:48] = x[:48] * 0.5
    assert torch.equal(out, want)


def test_a_run_config_for_the_call_is_checked(tmp_path):
    import pypto.runtime  # noqa: F401

    compiled = ir.compile(ClusteredSpmd, output_dir=str(tmp_path))
    with pytest.raises(pypto.errors.ConfigError, match="is not a RunConfig"):
        compiled(torch.randn(64, 64), torch.tensor([3, 0]), torch.tensor([0.5]), torch.zeros(64, 64), config="ref")


def test_tensor_specs_make_the_inputs():
    from pypto.errors import ConfigError
    from pypto.runtime import ScalarSpec, TensorSpec

    assert torch.equal(TensorSpec("a", [2, 3], torch.float32).create_tensor(), torch.zeros(2, 3))
    assert torch.equal(TensorSpec("a", [2], torch.int32, init_value=7).create_tensor(), torch.tensor([7, 7],
                                                                                                      dtype=torch.int32))
    t = TensorSpec("q", [4, 8], torch.bfloat16, init_value=torch.randn, is_output=False).create_tensor()
    assert t.shape == (4, 8) and t.dtype == torch.bfloat16
    made = TensorSpec("t", [3], torch.int64, init_value=lambda: [1, 2, 3]).create_tensor()
    assert made.tolist() == [1, 2, 3] and made.dtype == torch.int64
    assert TensorSpec("o", [1], torch.float32, is_output=True).is_output
    with pytest.raises(ConfigError, match="has shape \\[2\\], not \\[3\\]"):
        TensorSpec("t", [3], torch.float32, init_value=torch.ones(2)).create_tensor()
    with pytest.raises(ConfigError, match="not a number, a tensor or a callable"):
        TensorSpec("t", [3], torch.float32, init_value="ones").create_tensor()
    assert ScalarSpec("n", 4).ctype == "int64"
    with pytest.raises(ConfigError, match="is not a torch dtype"):
        TensorSpec("t", [3], "float32").create_tensor()
    with pytest.raises(ConfigError, match="is not a value of torch.uint8"):
        TensorSpec("t", [3], torch.uint8, init_value=300).create_tensor()
    source = torch.ones(3)
    assert TensorSpec("t", [3], torch.float32, init_value=source).create_tensor() is not source
    with pytest.raises(ConfigError, match="ctype 'long'"):
        ScalarSpec("n", 4, ctype="long")
