"""A build's ``kernel_config.py``: the reference's manifest of a build's kernels, whose
entries name every listing the build holds, by the scope's ``name_hint`` and core."""

import importlib.util

import pypto.language as pl
from pypto import ir


@pl.program
class Named:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[64, 32], pl.FP32], bias: pl.Tensor[[32, 32], pl.FP32],
             out: pl.Out[pl.Tensor[[32, 32], pl.FP32]], out2: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="GetKVCache"):
            out = pl.assemble(out, pl.matmul(a, b), [0, 0])
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="Mixed"):
            out2 = pl.assemble(out2, pl.add(pl.matmul(a, b), bias), [0, 0])
        return out, out2


def test_the_manifest_names_each_listing_of_the_build_by_its_scope_and_core(tmp_path):
    ir.compile(Named, output_dir=str(tmp_path), dump_passes=False)
    spec = importlib.util.spec_from_file_location("kernel_config", tmp_path / "kernel_config.py")
    config = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(config)
    entries = {(k["name"], k["core_type"]): k for k in config.KERNELS}
    listings = {(p.stem, p.parent.name) for p in (tmp_path / "kernels").rglob("*.pto")}
    assert set(entries) == listings
    assert ("GetKVCache", "aic") in entries and {("Mixed", "aic"), ("Mixed", "aiv")} <= set(entries)
    assert sorted(k["func_id"] for k in config.KERNELS) == list(range(len(config.KERNELS)))
    assert all((tmp_path / "kernels" / core / f"{name}.pto").samefile(k["source"]) for (name, core), k in entries.items())
    assert config.ORCHESTRATION["function_name"] == "main" and '"name": "GetKVCache"' in \
        (tmp_path / "kernel_config.py").read_text()
