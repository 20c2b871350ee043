"""What a pass receives besides the program (``PassContext``) and what it returns
(``PassResult``): the new program and its diagnostics, as data."""

from __future__ import annotations

import enum

import attrs

from pypto.errors import ConfigError, Span
from pypto.ir import nodes as n
from pypto.backend import SoC


class Severity(enum.Enum):
    Error = "error"
    Warning = "warning"
    PerfHint = "perf_hint"


class Planner(enum.Enum):
    PYPTO = "PYPTO"  # the compiler merges buffers (MemoryReuse) and assigns addresses (AllocateMemoryAddr)
    # the compiler places every buffer itself, capacity first, then fewest cross-pipe
    # reuses of one buffer's bytes by another (dynamic storage allocation with reuse
    # penalties: AllocateMemoryAddr alone, ``passes.dsa_plan``)
    DSA_RP = "DSA_RP"
    PTOAS = "PTOAS"  # the assembler plans memory; slots become multi-tile regions

    @classmethod
    def coerce(cls, value) -> Planner:
        if isinstance(value, cls):
            return value
        name = getattr(value, "value", value)  # the reference's MemoryPlanner member, or its name
        if isinstance(name, str) and name.upper().replace("-", "_") in cls.__members__:
            return cls[name.upper().replace("-", "_")]
        raise ConfigError(f"unknown memory_planner {value!r}",
                          hint="use \"PYPTO\" (default), \"DSA_RP\" or \"PTOAS\" (pypto.pypto_core.passes.MemoryPlanner)")


@attrs.frozen
class Diagnostic:
    severity: Severity
    rule: str  # the check's name, e.g. TileInnermostDimGranularity
    code: str  # e.g. PH001
    message: str
    span: Span | None = None
    count: int = 1  # identical sites collapsed into one

    def line(self) -> str:
        """The reference compiler's one-line form."""
        where = f" at {self.span}" if self.span is not None else ""
        text = self.message
        if self.count > 1:
            text += f" ({self.count} occurrences at this source location)"
        if self.severity is Severity.PerfHint:
            tag = f"[perf_hint {self.code}]" if self.code else "[perf_hint]"
            return f"{tag} {self.rule}: {text}{where}"
        return f"[{self.severity.value}] [{self.rule}] {text}{where}"


# Checks a user can switch off with RunConfig(disabled_diagnostics=...), by name or code.
CHECKS = {
    "TileInnermostDimGranularity": "PH001",
    "PipelineDepth": "PH-MR-001",
    "PipelineSeparation": "PH-DSA-001",  # DSA_RP let pipeline stages share bytes to fit
}


def resolve_disabled(names) -> frozenset[str]:
    """Check names from names or codes; unknown ones are a config error."""
    by_code = {code: name for name, code in CHECKS.items()}
    out = set()
    for item in names or ():
        key = getattr(item, "name", item)
        if key in CHECKS:
            out.add(key)
        elif key in by_code:
            out.add(by_code[key])
        elif key in ("MemoryReuse", "PlanPtoasMemory"):  # the rule names PH-MR-001 lines carry
            out.add("PipelineDepth")
        else:
            known = ", ".join(f"{name} ({code})" for name, code in CHECKS.items())
            raise ConfigError(f"unknown diagnostic check {key!r}", hint=f"known checks: {known}")
    return frozenset(out)


@attrs.frozen(kw_only=True)
class PassContext:
    soc: SoC  # the backend in force: RunConfig.backend
    planner: Planner = Planner.PYPTO
    disabled: frozenset = frozenset()
    # RunConfig(unsafe_allow_colive_slots=True): PlanPtoasMemory lets two co-live slots of
    # one PTOAS region through, so the simulator can show the corruption ptoas would cause.
    unsafe_colive_slots: bool = False

    def enabled(self, check: str) -> bool:
        return check not in self.disabled


@attrs.frozen
class PassResult:
    program: n.Program
    diagnostics: tuple = ()


def result(program: n.Program, diagnostics=()) -> PassResult:
    return PassResult(program, tuple(diagnostics))
