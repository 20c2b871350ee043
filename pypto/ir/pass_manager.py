"""The reference's ``pypto.ir.pass_manager`` names: the optimization strategy a compile
runs (one: ``Default``, the pass pipeline of ``pypto.passes.pipeline``) and the dump levels."""

from __future__ import annotations

import enum

from pypto.ir.levels import PassDumpLevel

__all__ = ["OptimizationStrategy", "PassDumpLevel"]


class OptimizationStrategy(enum.Enum):
    Default = "Default"

    def __repr__(self) -> str:
        return f"OptimizationStrategy.{self.name}"
