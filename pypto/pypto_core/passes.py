"""The reference's ``pypto.pypto_core.passes`` names its users write: ``MemoryPlanner``.

``MemoryPlanner`` is the reference's list of planners, as ``RunConfig(memory_planner=...)``
takes them (by name, onto ``pypto.passes.context.Planner``, the planners there are here):
``PYPTO`` and ``PTOAS`` run; ``DSA_RP``, the reference's capacity-constrained planner, is a
name here, refused where a config chooses it."""

import enum

__all__ = ["MemoryPlanner"]


class MemoryPlanner(str, enum.Enum):
    PYPTO = "PYPTO"
    DSA_RP = "DSA_RP"
    PTOAS = "PTOAS"

    def __repr__(self) -> str:
        return f"MemoryPlanner.{self.name}"

    __str__ = __repr__
