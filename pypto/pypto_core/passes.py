"""The reference's ``pypto.pypto_core.passes`` names its users write: ``MemoryPlanner``.

``MemoryPlanner`` is the reference's list of planners, as ``RunConfig(memory_planner=...)``
takes them (by name, onto ``pypto.passes.context.Planner``, where each is implemented):
``PYPTO`` (MemoryReuse merges buffers, AllocateMemoryAddr places them first fit),
``DSA_RP`` (AllocateMemoryAddr alone: capacity-constrained placement with reuse penalties)
and ``PTOAS`` (the assembler places the tiles)."""

import enum

__all__ = ["MemoryPlanner"]


class MemoryPlanner(str, enum.Enum):
    PYPTO = "PYPTO"
    DSA_RP = "DSA_RP"
    PTOAS = "PTOAS"

    def __repr__(self) -> str:
        return f"MemoryPlanner.{self.name}"

    __str__ = __repr__
