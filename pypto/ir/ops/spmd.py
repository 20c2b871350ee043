"""The registers a kernel reads to find its share of the work: which block of how many of
an SPMD task it is (``pl.spmd(n)``; outside one they read 0 and 1), and which of its
cluster's two vector cores runs it (a ``pl.split_aiv`` region's lane; 0 elsewhere)."""

from __future__ import annotations

from pypto.backend import SoC
from pypto.ir.ops.registry import Kind, OpArgs, ParamSpec as P, register, unify
from pypto.ir.types import DataType, ScalarType

# what the code generator and the simulator call the registers (not names a program can bind)
BLOCK_REGISTERS = {"tile.get_block_idx": "%block_idx", "tile.get_block_num": "%block_num"}
LANE_REGISTER = "%subblock_idx"
CORE_REGISTERS = {**BLOCK_REGISTERS, "tile.get_subblock_idx": LANE_REGISTER}


def _index(a: OpArgs, soc: SoC) -> ScalarType:
    return ScalarType(DataType.INDEX)


register("tile.get_block_idx", [], _index, doc="this block's index in its SPMD task, 0..get_block_num() - 1")
register("tile.get_block_num", [], _index, doc="how many blocks the SPMD task running this kernel has")
register("tile.get_subblock_idx", [], _index,
         doc="which vector core of its cluster runs this code: 0 or 1 in a pl.split_aiv region, else 0")


def _shard(a: OpArgs, soc: SoC):
    return a.type("x")


# Names a cube value a pl.split_aiv region reads (the crossing the compiler stages); a
# data-parallel region halves it like any operand it reads from GM.
register("tensor.aiv_shard", [P("x", Kind.TENSOR)], _shard,
         doc="the cube value x, read on the vector lane: names a crossing into a pl.split_aiv region")
unify("aiv_shard", tensor="tensor.aiv_shard")
# Names a vector value the cube reads after the pl.split_aiv region that computes it: the
# lanes' halves rejoined (the crossing the compiler stages: each lane stores its half of the
# cube's GM copy).
register("tensor.aic_gather", [P("x", Kind.TENSOR)], _shard,
         doc="the vector value x, handed to the cube after its pl.split_aiv region: names a crossing out of it")
unify("aic_gather", tensor="tensor.aic_gather")
