"""``RunConfig``: how a kernel is compiled and where it runs. Passed, never ambient."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from pypto.errors import ConfigError
from pypto.ir.levels import PassDumpLevel, VerificationLevel
from pypto.passes.context import Planner, resolve_disabled
from pypto.sim.soc import BACKENDS

# platform -> what runs the program
PLATFORMS = {
    "a2a3sim": "the cycle-level simulator of an a2a3 AI-core cluster (codegen, then simulation)",
    "ref": "the reference interpreter (executes the IR with torch)",
}


def _platform(value) -> str:
    if value not in PLATFORMS:
        raise ConfigError(f"Invalid platform {value!r}",
                          hint=f"Expected one of: {', '.join(repr(p) for p in PLATFORMS)}")
    return value


def _dump_level(value) -> PassDumpLevel:
    try:
        return PassDumpLevel.coerce(value)
    except ValueError:
        raise ConfigError(f"dump_passes={value!r} is not a dump level",
                          hint="use True/False or pypto.ir.PassDumpLevel.NONE/CONCISE/EXPLICIT") from None


def _verification(value) -> VerificationLevel:
    try:
        return VerificationLevel.coerce(value)
    except ValueError:
        raise ConfigError(f"verification_level={value!r} is not a verification level",
                          hint="use \"NONE\", \"BASIC\" or \"ROUNDTRIP\" (pypto.ir.VerificationLevel)") from None


def _disabled(value) -> tuple:
    if isinstance(value, str):
        value = (value,)
    names = tuple(value or ())
    resolve_disabled(names)  # unknown names fail here, where the user wrote them
    return names


def _backend(value) -> str:
    if value not in BACKENDS:
        raise ConfigError(f"unknown backend {value!r}", hint=f"use one of: {', '.join(sorted(BACKENDS))}")
    return value


def _path(value):
    return None if value is None else Path(value)


@attrs.frozen(kw_only=True)
class RunConfig:
    platform: str = attrs.field(default="a2a3sim", converter=_platform)
    dump_passes: PassDumpLevel = attrs.field(default=PassDumpLevel.NONE, converter=_dump_level)
    memory_planner: Planner = attrs.field(default=Planner.PYPTO, converter=Planner.coerce)
    disabled_diagnostics: tuple = attrs.field(default=(), converter=_disabled)
    verification_level: VerificationLevel = attrs.field(default=VerificationLevel.BASIC, converter=_verification)
    # Where compile() writes: this directory exactly; by default
    # $PYPTO_PROG_BUILD_DIR (or ./build_output)/<kernel>_<timestamp>.
    output_dir: Path | None = attrs.field(default=None, converter=_path)
    backend: str = attrs.field(default="a2a3", converter=_backend)
    # UNSAFE, for demonstrating what the check prevents: codegen accepts two co-live slots
    # of one PTOAS region, and the simulator reports no hazards, so the data races
    # corrupt the result the way the hardware would.
    unsafe_allow_colive_slots: bool = False
    # Write each simulated launch's L0 instruction trace to
    # <output_dir>/sim/OPPROF_<fn>_<timestamp>/simulator/ (visualize_data.bin, trace.json).
    enable_l0_trace: bool = False

    @property
    def writes_artifacts(self) -> bool:
        """Whether a plain kernel call writes an output directory (compile() always does)."""
        return self.dump_passes is not PassDumpLevel.NONE or self.output_dir is not None or self.enable_l0_trace


def coerce_config(value) -> RunConfig:
    """``config=`` as a kernel call takes it: a RunConfig, a mapping of its fields, or None."""
    if value is None:
        return RunConfig()
    if isinstance(value, RunConfig):
        return value
    if isinstance(value, Mapping):
        fields = {f.name for f in attrs.fields(RunConfig)}
        unknown = sorted(str(k) for k in value if k not in fields)
        if unknown:
            raise ConfigError(f"config has no field {unknown[0]!r}",
                              hint=f"RunConfig fields: {', '.join(sorted(fields))}")
        return RunConfig(**value)
    raise ConfigError(f"config={value!r} is not a RunConfig",
                      hint='pass config=RunConfig(platform="ref", ...) (or a dict of its fields)')
