"""The block registers of an SPMD task: which block of how many the running kernel is.
One kernel, dispatched as ``pl.spmd(n)`` blocks, reads them to pick its share of the work;
outside an SPMD task they read 0 and 1."""

from __future__ import annotations

from pypto.backend import SoC
from pypto.ir.ops.registry import OpArgs, register
from pypto.ir.types import DataType, ScalarType

# what the code generator and the simulator call the registers (not names a program can bind)
BLOCK_REGISTERS = {"tile.get_block_idx": "%block_idx", "tile.get_block_num": "%block_num"}


def _index(a: OpArgs, soc: SoC) -> ScalarType:
    return ScalarType(DataType.INDEX)


register("tile.get_block_idx", [], _index, doc="this block's index in its SPMD task, 0..get_block_num() - 1")
register("tile.get_block_num", [], _index, doc="how many blocks the SPMD task running this kernel has")
