"""The reference's ``pypto.ir.pass_manager`` names: the optimization strategy a compile
runs (one: ``Default``, the pass pipeline of ``pypto.passes.pipeline``), the dump levels
and when diagnostics are gathered."""

from __future__ import annotations

import enum

from pypto.ir.levels import PassDumpLevel

__all__ = ["DiagnosticPhase", "OptimizationStrategy", "PassDumpLevel"]


class OptimizationStrategy(enum.Enum):
    Default = "Default"

    def __repr__(self) -> str:
        return f"OptimizationStrategy.{self.name}"


class DiagnosticPhase(enum.Enum):
    """When a compile gathers its warnings and performance hints. Here every check reads the
    pipeline's result, so the phases that run checks report the same set; ``NONE`` gathers
    none (no warnings, no hints)."""

    NONE = "NONE"
    PRE_PIPELINE = "PRE_PIPELINE"
    POST_PASS = "POST_PASS"
    POST_PIPELINE = "POST_PIPELINE"

    def __repr__(self) -> str:
        return f"DiagnosticPhase.{self.name}"
