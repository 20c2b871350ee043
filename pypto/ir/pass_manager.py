"""The reference's ``pypto.ir.pass_manager`` names: the optimization strategy a compile
runs (one: ``Default``, the pass pipeline of ``pypto.passes.pipeline``), the dump levels
and when diagnostics are gathered; and ``PassManager``, which runs the passes, so is the
runtime's (``pypto.runtime.pass_manager``): importing the runtime (``import pypto.language``
does) installs the name here, as it installs ``pypto.ir.compile``."""

from __future__ import annotations

import enum

from pypto.ir.levels import PassDumpLevel

__all__ = ["DiagnosticPhase", "OptimizationStrategy", "PassDumpLevel"]


def __getattr__(name: str):
    if name == "PassManager":
        raise ImportError("pypto.ir.pass_manager.PassManager is the runtime's: import pypto.language (or "
                          "pypto.runtime) first, which installs it", name=name)
    raise AttributeError(f"module 'pypto.ir.pass_manager' has no attribute {name!r}")


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
