"""The reference's ``pypto.pypto_core.passes`` names its users write: ``MemoryPlanner`` and
``l0_tile_chooser`` (``pypto.passes.l0_tiling.l0_tile_chooser``, the design point AutoTileMatmulL0 takes:
its tests ask the chooser what a matmul should compile to before they run it).

``MemoryPlanner`` is the reference's list of planners, as ``RunConfig(memory_planner=...)``
takes them (by name, onto ``pypto.passes.context.Planner``, where each is implemented):
``PYPTO`` (MemoryReuse merges buffers, AllocateMemoryAddr places them first fit),
``DSA_RP`` (AllocateMemoryAddr alone: capacity-constrained placement with reuse penalties)
and ``PTOAS`` (the assembler places the tiles)."""

import enum

from pypto.passes.l0_tiling import l0_tile_chooser

__all__ = ["MemoryPlanner", "l0_tile_chooser"]


class MemoryPlanner(str, enum.Enum):
    PYPTO = "PYPTO"
    DSA_RP = "DSA_RP"
    PTOAS = "PTOAS"

    def __repr__(self) -> str:
        return f"MemoryPlanner.{self.name}"

    __str__ = __repr__
