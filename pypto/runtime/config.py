"""``RunConfig``: how a kernel is compiled and where it runs. Passed, never ambient."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from os import PathLike
from pathlib import Path

from pypto.errors import ConfigError, PyptoError
from pypto.ir.levels import PassDumpLevel, VerificationLevel
from pypto.passes.context import Planner, resolve_disabled
from pypto.runtime.callsite import call_span
from pypto.console import filtered
from pypto.backend import BACKENDS, BackendType, backend
from pypto.ir.pass_manager import DiagnosticPhase, OptimizationStrategy

# platform -> what runs the program
PLATFORMS = {
    "a2a3sim": "the cycle-level simulator of an a2a3 (Ascend910B) chip (codegen, then simulation)",
    "a5sim": "the cycle-level simulator of an a5 (Ascend950) chip (codegen, then simulation)",
    "ref": "the reference interpreter (executes the IR with torch)",
}

# a simulated platform's chip, as the reference ties them: the platform chooses the backend
SIM_BACKENDS = {"a2a3sim": "a2a3", "a5sim": "a5"}

# the reference's platforms this package does not run: real NPUs
DEVICES = frozenset({"a2a3", "a5"})


def _platform(value) -> str:
    if isinstance(value, str) and value in DEVICES:
        raise ConfigError(f"platform {value!r} runs on an Ascend NPU, and this package simulates one: use "
                          f"platform='{value}sim' (or 'ref')", hint=f"RunConfig(platform='{value}sim')")
    if not isinstance(value, str) or value not in PLATFORMS:
        raise ConfigError(f"Invalid platform {value!r}",
                          hint=f"Expected one of: {', '.join(repr(p) for p in PLATFORMS)}")
    return value


def _strategy(value):
    if not isinstance(value, OptimizationStrategy):
        raise ConfigError(f"strategy={value!r} is not an OptimizationStrategy",
                          hint="strategy=OptimizationStrategy.Default (from pypto.ir.pass_manager)")
    return value


def _backend_type(value):
    if value is not None and not isinstance(value, BackendType):
        raise ConfigError(f"backend_type={value!r} is not a BackendType",
                          hint="backend_type=BackendType.Ascend910B (from pypto.backend)")
    if value is not None:
        backend(value)  # a chip the reference names and this package does not model yet is refused here
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
    if value is None:
        return ()
    if not isinstance(value, (tuple, list, set, frozenset)) or not all(isinstance(x, str) for x in value):
        raise ConfigError(f"disabled_diagnostics={value!r} is not a list of check names",
                          hint='e.g. disabled_diagnostics=["PH001"]')
    names = tuple(value)
    resolve_disabled(names)  # unknown names fail here, where the user wrote them
    return names


def _backend(value) -> str:
    if isinstance(value, BackendType):  # the reference's spelling: BackendType.Ascend910B
        value = value.value
    if not isinstance(value, str) or value not in BACKENDS:
        backend(value)  # says which: a chip not modeled yet, or a name of none
    return value


def _path(name: str):
    def check(value):
        if value is None:
            return None
        if not isinstance(value, (str, PathLike)):
            raise ConfigError(f"{name}={value!r} is not a path", hint=f'e.g. {name}="build/my_kernel"')
        return Path(value)
    return check


def _tolerance(name: str):
    def check(value) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
            raise ConfigError(f"{name}={value!r} is not a tolerance (a finite number >= 0)", hint=f"{name}=1e-5")
        return float(value)
    return check


def _level(name: str, example: int):
    def check(value) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{name}={value!r} is not a level (an int >= 0; 0 is off)", hint=f"{name}={example}")
        return value
    return check


def _keep(value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ConfigError(f"keep_builds={value!r} is not a count of builds (an int >= 0; 0 keeps them all)",
                          hint="keep_builds=5 keeps the newest 5 builds of each kernel (None: $PYPTO_KEEP_BUILDS or 5)")
    return value


def _threads(value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"aicpu_thread_num={value!r} is not a thread count", hint="aicpu_thread_num=4 (or None)")
    return value


def _phase(value):
    if value is None or isinstance(value, DiagnosticPhase):
        return value
    if isinstance(value, str) and value.upper() in DiagnosticPhase.__members__:
        return DiagnosticPhase[value.upper()]
    raise ConfigError(f"diagnostic_phase={value!r} is not a DiagnosticPhase",
                      hint="diagnostic_phase=DiagnosticPhase.NONE (from pypto.ir.pass_manager), or None")


def _distributed(value):
    from pypto.runtime.distributed.config import DistributedConfig

    if value is not None and not isinstance(value, DistributedConfig):
        raise ConfigError(f"distributed_config={value!r} is not a DistributedConfig",
                          hint="distributed_config=DistributedConfig(device_ids=[0, 1]) (from "
                               "pypto.ir.distributed_compiled_program or pypto.runtime)")
    return value


def _flag(name: str):
    def check(value) -> bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{name}={value!r} is not a bool", hint=f"{name}=True or {name}=False")
        return value
    return check


def _swimlane(value) -> int:
    if isinstance(value, bool):
        return 4 if value else 0
    if not isinstance(value, int):
        raise ConfigError(f"enable_chip_swimlane must be an int collection level (0-4) or a bool, got "
                          f"{type(value).__name__}", hint="e.g. enable_chip_swimlane=True (level 4)")
    if not 0 <= value <= 4:
        raise ConfigError("enable_chip_swimlane must be a collection level in [0, 4] (0=off, 1=AICore timing, "
                          f"2=+dispatch/finish, 3=+sched phases, 4=+orch phases), got {value}",
                          hint="enable_chip_swimlane=2 (task times with dispatch and finish), or True for all")
    return value


def _seed(value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"atomic_order_seed={value!r} is not an int", hint="atomic_order_seed=1 (or None: in order)")
    return value


def _uninitialized(value):
    if value in ("zero", "nan") or (not isinstance(value, bool) and isinstance(value, int) and 0 <= value <= 255):
        return value
    raise ConfigError(f"uninitialized_memory={value!r} is not 'zero', 'nan' or a byte 0-255",
                      hint='uninitialized_memory="nan" (every float reads NaN), or a byte such as 0xA5')


def fresh_byte(config) -> int:
    """The byte on-chip memory nothing has written holds, under ``config``."""
    value = config.uninitialized_memory
    return {"zero": 0, "nan": 0xFF}.get(value, value)


def _device_id(value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"device_id={value!r} is not a device number", hint="device_id=0")
    return value


def _ring(name: str, ok, rule: str, example: int):
    """A ring size: None (the default), one int for all four rings, or exactly four (0 keeps
    that ring's default); four either way, as a tuple (a config is a cache key)."""
    def check(value):
        if value is None:
            return None
        if isinstance(value, (list, tuple)):
            if len(value) != 4:
                raise ConfigError(f"{name} must have exactly 4 entries (one per scope-depth ring), got {len(value)}",
                                  hint=f"{name}=[{example}, 0, 0, 0] (0 keeps a ring's default), or one size for all")
            for v in value:
                if isinstance(v, bool) or not isinstance(v, int) or not (v == 0 or ok(v)):
                    raise ConfigError(f"{name} entries must be {rule} (or 0 to keep default), got {v!r}",
                                      hint=f"e.g. {name}=[{example}, 0, 0, 0]")
            return tuple(value)
        if isinstance(value, bool) or not isinstance(value, int) or not ok(value):
            raise ConfigError(f"{name} must be {rule}, got {value!r}", hint=f"e.g. {name}={example}")
        return (value,) * 4
    return check


def _power_of_two(least: int):
    return lambda v: v >= least and v & (v - 1) == 0


@dataclasses.dataclass(frozen=True, kw_only=True, init=False, slots=True)
class RunConfig:
    """Built as ``RunConfig(platform="ref", ...)``: fields by name, each checked where it is
    written (a bad value names the user's line). Immutable and hashable (a compile cache
    key); a frozen dataclass, as the reference's code expects of it:
    ``dataclasses.replace(config, platform="ref")`` is a new config, checked alike."""

    platform: str = "a2a3sim"
    device_id: int = 0
    # the reference's compile options with one choice here (the pass pipeline), and the chip:
    # a simulated platform's own (a5sim: Ascend950), else the one named (``backend`` names it
    # too; a backend_type given wins), else a2a3
    strategy: OptimizationStrategy = OptimizationStrategy.Default
    backend_type: BackendType | None = None  # which device a ChipWorker stands for (one simulated device each)
    dump_passes: PassDumpLevel = PassDumpLevel.NONE
    memory_planner: Planner = Planner.PYPTO
    disabled_diagnostics: tuple = ()
    verification_level: VerificationLevel = VerificationLevel.BASIC
    # Where compile() writes: this directory exactly; by default
    # $PYPTO_PROG_BUILD_DIR (or ./build_output)/<kernel>_<timestamp>, where the newest
    # keep_builds builds of each kernel are kept (None: $PYPTO_KEEP_BUILDS, else 5; 0: all),
    # never one a live CompiledProgram holds (pypto.runtime.build_dirs).
    output_dir: Path | None = None
    keep_builds: int | None = None
    backend: str = "a2a3"
    # UNSAFE, for demonstrating what the check prevents: codegen accepts two co-live slots
    # of one PTOAS region, and the simulator reports no hazards, so the data races
    # corrupt the result the way the hardware would.
    unsafe_allow_colive_slots: bool = False
    # UNSAFE, likewise for tasks: two tasks that race over GM bytes (unordered by any
    # dependency) are not refused; their data is applied in the order they started.
    unsafe_allow_task_races: bool = False
    # Write each simulated launch's L0 instruction trace to
    # <output_dir>/sim/OPPROF_<fn>_<timestamp>/simulator/ (visualize_data.bin, trace.json).
    enable_l0_trace: bool = False
    # The chip's artifacts under <output_dir>/dfx_outputs/: the swimlane records
    # (chip_swimlane_records.json) at a collection level 0-4 (True: 4), the task graph
    # (deps.json), each runtime scope's ring use (scope_stats/scope_stats.jsonl).
    enable_chip_swimlane: int = 0
    enable_dep_gen: bool = False
    enable_scope_stats: bool = False
    # The PMU counters per task and core, as dfx_outputs/pmu.csv (0: off; the reference's
    # event types, 2 PIPE_UTILIZATION and 4 MEMORY, both give the pipes' busy cycles here).
    enable_pmu: int = 0
    # The runtime's rings, per scope depth 0..3 (None: the runtime's defaults): in-flight
    # task slots, heap bytes for the tensors a scope creates, dependency-edge entries.
    # Validated as the reference validates them; the chip runs out of them as it would.
    ring_task_window: tuple | None = None
    ring_heap: tuple | None = None
    ring_dep_pool: tuple | None = None
    # Atomic adds commit in the order their stores complete (cycle, then core); with a seed,
    # those in flight at once commit in an order the seed picks — the last-bit differences
    # between runs that hardware shows.
    atomic_order_seed: int | None = None
    # pypto.runtime.run and a @pl.jit call: compile only (codegen_only); write the build to save_kernels_dir
    # when output_dir is unset (a build is always kept here, so save_kernels changes nothing);
    # with compile_profiling, the time of each pass in report/pipeline_profile.{txt,json}.
    save_kernels: bool = False
    save_kernels_dir: Path | None = None
    codegen_only: bool = False
    compile_profiling: bool = False
    # On-chip bytes nothing has written yet — a fresh buffer, the padding past a load's
    # valid shape — read as zeros ("zero"), as NaN in every float dtype ("nan": each byte
    # 0xFF), or as a byte pattern (an int 0-255), on both platforms: a kernel that computes
    # the same bits whatever they are reads none of them. check_uninitialized_reads: on
    # a2a3sim, an instruction reading bytes of its operand's valid region that nothing wrote
    # is an error at its source line (ref has tiles, not bytes: it checks nothing).
    uninitialized_memory: object = "zero"
    check_uninitialized_reads: bool = False
    # After each kernel call, one line on stderr: the kernel's cycles and the makespan, with
    # µs (also with $PYPTO_REPORT=1, read at the call).
    report: bool = False
    # platform="ref" only: run the kernel as host Python over torch (pypto.debug), so that
    # breakpoint() in it stops at its line with its tiles as torch tensors, and print() prints.
    debug: bool = False
    # diagnostic_phase=NONE gathers no warnings or hints; the other phases gather them all
    diagnostic_phase: DiagnosticPhase | None = None
    # Accepted, with no effect here: the reference harness compares against a golden it
    # writes (rtol, atol, golden_data_dir), which run() here does not; tensor dumps and PMU
    # of a real device (enable_dump_args, and so pl.dump_tag / dumps=), its AICPU thread count
    # (aicpu_thread_num: the simulated chip schedules as one scheduler), the vendor PTOAS
    # passes' dumps (dump_ptoas_passes), and dependency analysis of auto scopes, always on
    # here (analyze_auto_scopes_for_deps). distributed_config names the devices of a @pl.jit.host orchestrator (a single-chip program ignores it).
    rtol: float = 1e-5
    atol: float = 1e-5
    golden_data_dir: Path | None = None
    enable_dump_args: int = 0
    aicpu_thread_num: int | None = None
    dump_ptoas_passes: bool = False
    analyze_auto_scopes_for_deps: bool = False
    distributed_config: object = None  # a DistributedConfig: a @pl.jit.host orchestrator's devices

    def __init__(self, *args, **fields):
        try:
            if args:
                raise ConfigError(f"RunConfig takes its fields by name, not {len(args)} positional "
                                  f"argument{'s' * (len(args) != 1)}", hint='e.g. RunConfig(platform="ref")')
            _fill(self, converted(fields))
        except PyptoError as err:
            err = err.with_span(call_span(argument=getattr(err, "field", None)))
            raise filtered(err) from None  # pypto's frames left out: PYPTO_TRACEBACK=full shows them

    @property
    def writes_artifacts(self) -> bool:
        """Whether a plain kernel call writes an output directory (compile() always does)."""
        return (self.dump_passes is not PassDumpLevel.NONE or self.output_dir is not None or self.enable_l0_trace
                or self.any_dfx_enabled())

    def any_dfx_enabled(self) -> bool:
        """Whether a run writes anything under dfx_outputs/."""
        return bool(self.enable_chip_swimlane or self.enable_dep_gen or self.enable_scope_stats or self.enable_pmu)


def _fill(config: RunConfig, fields: dict) -> None:
    """Set every field of a new ``config``: the converted ``fields``, the defaults elsewhere.
    A simulated platform chooses its chip, as the reference's ``RunConfig`` has it (a5sim:
    Ascend950, whatever backend_type says: the platform is what runs) unless the table named
    is one that platform simulates; a chip named with no platform runs on its simulator;
    ``ref`` interprets for the chip named (a2a3 unless one is)."""
    if fields.get("backend_type") is not None and "backend" not in fields:
        fields["backend"] = fields["backend_type"].value
    named = fields.get("backend")
    if "platform" not in fields and named is not None:
        fields["platform"] = BACKENDS[named].platform
    chip = SIM_BACKENDS.get(fields.get("platform", _DEFAULT_PLATFORM))
    if chip is not None and (named is None or BACKENDS[named].platform != fields.get("platform", _DEFAULT_PLATFORM)):
        fields["backend"] = chip
        fields["backend_type"] = BackendType(chip)
    # the chip's reference name, as the config holds it (None for a table the reference lacks)
    fields["backend_type"] = BackendType._value2member_map_.get(fields.get("backend", "a2a3"))
    for f in dataclasses.fields(RunConfig):
        object.__setattr__(config, f.name, fields[f.name] if f.name in fields else f.default)
    if config.debug and config.platform != "ref":
        err = ConfigError(f"debug=True runs the kernel as host Python, which is platform='ref', not "
                          f"{config.platform!r}", hint='RunConfig(platform="ref", debug=True)')
        err.field = "debug"
        raise err


_DEFAULT_PLATFORM = next(f.default for f in dataclasses.fields(RunConfig) if f.name == "platform")

_CONVERTERS = {
    "platform": _platform, "device_id": _device_id, "strategy": _strategy, "backend_type": _backend_type, "dump_passes": _dump_level, "memory_planner": Planner.coerce,
    "disabled_diagnostics": _disabled, "verification_level": _verification, "output_dir": _path("output_dir"),
    "keep_builds": _keep,
    "backend": _backend, "unsafe_allow_colive_slots": _flag("unsafe_allow_colive_slots"),
    "enable_l0_trace": _flag("enable_l0_trace"), "unsafe_allow_task_races": _flag("unsafe_allow_task_races"),
    "enable_chip_swimlane": _swimlane, "enable_dep_gen": _flag("enable_dep_gen"),
    "enable_scope_stats": _flag("enable_scope_stats"),
    "ring_task_window": _ring("ring_task_window", _power_of_two(4), "a power of 2 >= 4", 16384),
    "ring_heap": _ring("ring_heap", _power_of_two(1024), "a power of 2 >= 1024 (bytes per ring)", 268435456),
    "ring_dep_pool": _ring("ring_dep_pool", lambda v: 4 <= v <= 2**31 - 1, "in [4, INT32_MAX]", 16384),
    "atomic_order_seed": _seed,
    "save_kernels": _flag("save_kernels"), "save_kernels_dir": _path("save_kernels_dir"),
    "codegen_only": _flag("codegen_only"), "compile_profiling": _flag("compile_profiling"),
    "uninitialized_memory": _uninitialized,
    "check_uninitialized_reads": _flag("check_uninitialized_reads"),
    "report": _flag("report"), "debug": _flag("debug"),
    "diagnostic_phase": _phase, "rtol": _tolerance("rtol"), "atol": _tolerance("atol"),
    "golden_data_dir": _path("golden_data_dir"), "enable_dump_args": _level("enable_dump_args", 1),
    "enable_pmu": _level("enable_pmu", 2), "aicpu_thread_num": _threads,
    "dump_ptoas_passes": _flag("dump_ptoas_passes"), "analyze_auto_scopes_for_deps":
        _flag("analyze_auto_scopes_for_deps"), "distributed_config": _distributed,
}


_RING_ENV = {"ring_task_window": "PTO2_RING_TASK_WINDOW", "ring_heap": "PTO2_RING_HEAP",
             "ring_dep_pool": "PTO2_RING_DEP_POOL"}


def ring_sizes(config: RunConfig, environ=None) -> tuple:
    """(task window, heap, dep pool) sizes per ring: the config's; where it leaves one unset,
    the ``PTO2_RING_*`` variable's (checked as the field is); else None (the defaults)."""
    import os

    environ = os.environ if environ is None else environ
    out = []
    for field, var in _RING_ENV.items():
        value = getattr(config, field)
        text = environ.get(var)
        if value is None and text:
            try:
                number = int(text)
            except ValueError:
                raise ConfigError(f"{var}={text!r} is not an integer",
                                  hint=f"set {var} to a size (e.g. 16384), or unset it") from None
            try:
                value = _CONVERTERS[field](number)
            except ConfigError as err:
                raise ConfigError(f"{var}: {err.message}", hint=f"set {var} to a valid size, or unset it") from None
        out.append(value)
    return tuple(out)


def converted(fields: Mapping) -> dict:
    """RunConfig field values as the class holds them; an unknown name or a bad value is a
    ConfigError (with ``field`` naming the one at fault), not yet located."""
    out = {}
    for key, value in fields.items():
        if key not in _CONVERTERS:
            close = difflib.get_close_matches(str(key), _CONVERTERS, n=1)
            err = ConfigError(f"config has no field {str(key)!r}",
                              hint=f"did you mean {close[0]!r}?" if close
                              else f"RunConfig fields: {', '.join(sorted(_CONVERTERS))}")
            err.field = key
            raise err
        try:
            out[key] = _CONVERTERS[key](value)
        except PyptoError as err:
            err.field = key
            raise
    return out


def coerce_config(value) -> RunConfig:
    """``config=`` as a kernel call takes it: a RunConfig, a mapping of its fields, or None.
    A mistake is a ConfigError without a place: the caller names its ``config=``."""
    if value is None:
        return RunConfig()
    if isinstance(value, RunConfig):
        return value
    if isinstance(value, Mapping):
        config = RunConfig.__new__(RunConfig)
        _fill(config, converted(value))
        return config
    raise ConfigError(f"config={value!r} is not a RunConfig",
                      hint='pass config=RunConfig(platform="ref", ...) (or a dict of its fields)')
