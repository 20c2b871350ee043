"""The reference's other names of ops: the cross-core pipe under ``pl.system``, the block
registers under ``pl.tensor``, the scalar ``min``/``max`` under ``pl.tile``, the dependency
opt-out under ``pl.tensor``, and the long spellings of ``create``. Source written with
either name builds the same program; dumps print the canonical one."""

import pytest
import torch

import pypto.language as pl
from pypto.lang import parse
from pypto.runtime import RunConfig, run
from test_pipes import MULTI

SPMD = '''
import pypto.language as pl


@pl.program
class Blocks:
    @pl.function(type=pl.FunctionType.InCore)
    def body(self, a: pl.Tensor[[64, 32], pl.FP32], n: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
        i = pl.tile.get_block_idx()
        rows = pl.max(pl.min(n, 16), 8)
        t = pl.tile.create([16, 32], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        t = pl.load(a, [i * 16, 0], [16, 32])
        pl.store(pl.exp(t), [i * 16, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
        pl.spmd_submit(self.body, a, 16, pl.no_dep(out), core_num=4)
'''

RENAMES = {
    MULTI: [("pl.tpush_to_aic(", "pl.system.tpush_to_aic("), ("pl.tpop_from_aiv(", "pl.system.tpop_from_aiv(")],
    SPMD: [("pl.tile.get_block_idx(", "pl.tensor.get_block_idx("), ("pl.max(", "pl.tile.max("),
           ("pl.min(", "pl.tile.min("), ("pl.tile.create(", "pl.tile.create_tile("), ("pl.no_dep(", "pl.tensor.no_dep(")],
}


@pytest.mark.parametrize("canonical", list(RENAMES), ids=["pipes", "spmd"])
def test_an_aliased_spelling_builds_the_canonical_program(canonical):
    aliased = canonical
    for old, new in RENAMES[canonical]:
        assert old in aliased
        aliased = aliased.replace(old, new)
    program = parse(aliased)
    assert program == parse(canonical)
    assert not any(new in program.as_python() for _, new in RENAMES[canonical])


def test_an_aliased_kernel_runs_on_both_platforms():
    program = parse(SPMD.replace("pl.tile.get_block_idx(", "pl.tensor.get_block_idx(").replace("pl.no_dep(", "pl.tensor.no_dep("))
    a = torch.randn(64, 32)
    for platform in ("ref", "a2a3sim"):
        out = torch.zeros(64, 32)
        run(program, a, out, config=RunConfig(platform=platform))
        assert torch.equal(out, torch.exp(a)), platform


@pytest.mark.parametrize("namespace, name", [("system", "tpush_to_aiv"), ("system", "tpop_from_aic"),
                                             ("tensor", "get_block_num"), ("tensor", "get_subblock_idx"),
                                             ("tile", "max"), ("tensor", "no_dep"), ("tensor", "create_tensor"),
                                             ("array", "get_element"), ("array", "update_element")])
def test_aliases_are_attributes_of_the_namespaces(namespace, name):
    assert getattr(getattr(pl, namespace), name) is not None


@pytest.mark.parametrize("namespace, name", [("system", "tpush"), ("tensor", "get_block"), ("tile", "no_dep"),
                                             ("tensor", "max")])
def test_a_name_no_namespace_files_is_no_attribute(namespace, name):
    with pytest.raises(AttributeError, match=f"pl.{namespace} has no operation '{name}'"):
        getattr(getattr(pl, namespace), name)
