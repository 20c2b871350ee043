"""Compiling a specialized program: run the pass pipeline, write what was asked for, and
hold the result (``CompiledProgram``) ready to run on its platform."""

from __future__ import annotations

import datetime
import functools
import errno
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import attrs
import torch

from pypto.codegen import generate
from pypto.codegen.listing import listing
from pypto.errors import ConfigError, PyptoError, SpecializationError
from pypto.ir import nodes as n
from pypto.ir.types import ParamDirection, TensorType
from pypto.sim import lacking
from pypto.sim.ops.numerics import TORCH
from pypto.passes.context import PassContext, Severity, resolve_disabled
from pypto.passes.pipeline import Lowering, lower, write_dumps
from pypto.runtime import extraction
from pypto.runtime.arguments import as_declared
from pypto.runtime.callsite import call_span, located
from pypto.chip import barriers, groups
from pypto.runtime import build_dirs, manifest, publish
from pypto.runtime.config import RunConfig
from pypto.runtime.dispatch import execute
from pypto.runtime.worker import RUNTIME, on_device
from pypto.sim.reports.run_report import RunReport
from pypto.sim.reports.run_summary import summary_line
from pypto.backend import BackendType, backend
from pypto.lang.program import GenericProgram
from pypto.lang.text import deserialize, serialize
from pypto.log import logger
from pypto.ir.pass_manager import DiagnosticPhase
from pypto.sim.reports.trace import chrome_trace, instruction_metrics
from pypto.sim.accesses.views import check_call
from pypto.sim.reports.insight_format import API_INSTR, SOURCE, TRACE, encode_block, write_blocks


def pass_context(config: RunConfig) -> PassContext:
    return PassContext(soc=backend(config.backend), planner=config.memory_planner,
                       disabled=resolve_disabled(config.disabled_diagnostics),
                       unsafe_colive_slots=config.unsafe_allow_colive_slots)


def lower_program(program: n.Program, config: RunConfig) -> Lowering:
    return lower(program, pass_context(config), config.verification_level)


@attrs.define(repr=False)
class CompiledProgram:
    name: str
    program: n.Program  # as specialized, before any pass
    lowered: n.Program  # after the pipeline
    param_names: list  # the entry's parameters, in order (a list, as the reference has it)
    platform: str
    config: RunConfig
    diagnostics: tuple
    timings: tuple  # (pass name, seconds)
    output_dir: Path | None = None
    kernels: dict = attrs.Factory(dict)  # InCore function -> codegen Kernel (generated on every platform)
    lease: object = attrs.field(default=None, repr=False, eq=False)  # its build's (build_dirs.Lease): in use

    def __repr__(self) -> str:
        """A line (the programs are ``.program`` / ``.lowered``, printed by ``print``)."""
        kernels = len(self.kernels)
        where = f", output_dir={str(self.output_dir)!r}" if self.output_dir is not None else ", no build"
        return (f"<CompiledProgram {self.name} on {self.platform} ({self.config.memory_planner.value} planner): "
                f"entry {self.entry}({', '.join(self.param_names)}), {len(self.lowered.functions)} functions, "
                f"{kernels} kernel{'s' * (kernels != 1)}, {len(self.perf_hints)} perf hints{where}>")

    @property
    def entry(self) -> str:
        return self.lowered.functions[-1].name

    @property
    def perf_hints(self) -> tuple:
        return tuple(d for d in self.diagnostics if d.severity is Severity.PerfHint)

    @property
    def params(self) -> tuple:
        """The entry's parameters as specialized: the types and directions ``run`` takes."""
        return self.program.function(self.entry).params

    @property
    def output_indices(self) -> list:
        """The positions of the entry's pure ``pl.Out`` tensors: a return-style call leaves
        them out and gets them back, allocated here."""
        return [k for k, p in enumerate(self.params) if p.direction is ParamDirection.Out
                and isinstance(p.type, TensorType)]

    @property
    def has_return(self) -> bool:
        return bool(self.program.function(self.entry).returns)

    @property
    def backend_type(self) -> BackendType:
        return BackendType(self.config.backend)

    runtime_name = RUNTIME

    # the extraction surface (``pypto.runtime.extraction``): what a harness driving the
    # runtime's worker itself needs
    @functools.cached_property
    def chip_callable(self) -> extraction.ChipCallable:
        return extraction.ChipCallable(self, self.name)

    @property
    def runtime_config(self) -> dict:
        return extraction.runtime_config()

    @property
    def orchestration_names(self) -> list:
        """The orchestrations addressable one by one: none, a program has one entry."""
        return []

    def build_orch_args(self, *args, worker=None) -> tuple:
        """(orch_args for ``Worker.run``, the coerced positional list, whether return-style)."""
        return extraction.build_orch_args(self, *args, worker=worker)

    def build_call_config(self, config: RunConfig | None = None, *, aicpu_thread_num: int | None = None,
                          dfx_dir=None) -> extraction.CallConfig:
        """The CallConfig ``Worker.run`` takes, from a RunConfig (default: the compiled one)."""
        return extraction.build_call_config(self, config, aicpu_thread_num=aicpu_thread_num, dfx_dir=dfx_dir)

    @classmethod
    def from_dir(cls, output_dir, *, platform: str | None = None, backend_type: BackendType | None = None):
        """The program a build directory holds, compiled again from its ``compiled_meta.json``
        and the program text beside it (read by the parser, never run): callable and
        benchmarkable like the object that wrote it. ``platform`` / ``backend_type``
        override what was recorded."""
        return replay(Path(output_dir), platform, backend_type)

    def __fspath__(self) -> str:
        if self.output_dir is None:
            raise TypeError(f"'{self.name}' was compiled without an output directory")
        return os.fspath(self.output_dir)

    def _with_outputs(self, args) -> tuple:
        """A return-style call (the inputs only): the Out tensors allocated, zeroed."""
        outs = self.output_indices
        if not outs or len(args) != len(self.param_names) - len(outs):
            return args
        given = iter(args)
        return tuple(torch.zeros(tuple(p.type.shape), dtype=TORCH[p.type.dtype]) if k in outs else next(given)
                     for k, p in enumerate(self.params))

    def _config(self, config) -> RunConfig:
        """The configuration a run uses: the compiled one, or another for the same backend
        (another platform: ``ref`` or ``a2a3sim``, another device)."""
        if config is None:
            return self.config
        if not isinstance(config, RunConfig):
            raise ConfigError(f"config={config!r} is not a RunConfig", hint="config=RunConfig(platform='a2a3sim')")
        if config.backend != self.config.backend:
            raise ConfigError(f"'{self.name}' was compiled for backend {self.config.backend}; this config runs "
                              f"{config.backend}", hint="compile it again with that config")
        return config

    @located
    def run(self, *args, config: RunConfig | None = None, dfx_dir: Path | None = None) -> RunReport:
        """Run on the configured platform (Out tensors are written in place); the report
        has the simulated cycles, busy cycles per pipe and core, and instruction counts
        (zeros on ``ref``), and ``outputs``, what the entry returned. The arguments are
        what it was compiled for; a tensor it writes shares no memory with another.
        ``config``: run with another configuration of the same backend. ``dfx_dir``: where
        the chip's artifacts go instead of the build's ``dfx_outputs/`` (a rank's dispatch
        of a program of many ranks: ``dfx_outputs/rank{r}/d{k}`` of that program's build)."""
        run_config = self._config(config)
        names = self.param_names
        args = on_device(args, self)
        if len(args) != len(names):
            raise SpecializationError(f"'{self.name}' was compiled for {len(names)} arguments ({', '.join(names)}), "
                                      f"got {len(args)}", span=call_span(argument=min(len(args), len(names))))
        args = as_declared(self.params, names, args, lambda k: k)
        # unlocated: @located puts the user's call on it, finding the caller only on error
        check_call(self.name, tuple(attrs.evolve(p, name=x) for p, x in zip(self.params, names)), args, None)
        on_launch = self._write_l0_trace if run_config.enable_l0_trace and self.output_dir is not None else None
        if run_config.check_uninitialized_reads and run_config.platform == "ref":
            logger.warning("[uninitialized] check_uninitialized_reads: the ref platform holds tiles as values, not "
                           "bytes, so it checks nothing; run on platform='a2a3sim' for the check")
        if run_config.enable_l0_trace and run_config.platform == "ref":
            logger.warning("[l0_trace] enable_l0_trace: the ref platform interprets the IR and issues no "
                           "instructions, so it writes no L0 trace; run on platform='a2a3sim' for one")
        # the chip's artifacts are written aside and moved in once the run is done (_deliver)
        dfx = Path(tempfile.mkdtemp(prefix="pypto_dfx_")) if (self.output_dir is not None or dfx_dir is not None) \
            and run_config.any_dfx_enabled() and run_config.platform != "ref" else None
        try:
            values, report = execute(self.lowered, self.entry, args, run_config, self.kernels, on_launch, dfx)
            if dfx is not None and report.dfx_files:
                report.dfx_files = _copied(dfx, report.dfx_files, Path(dfx_dir)) if dfx_dir is not None else \
                    self._deliver("dfx_outputs", lambda into: _copied(dfx, report.dfx_files, into))
        finally:
            if dfx is not None:
                shutil.rmtree(dfx, ignore_errors=True)
        report.outputs = values
        for shown in report.prints:  # what the kernel's pl.debug_prints saw, in the order they ran
            print(shown)
        return report

    def _deliver(self, what: str, write):
        """``write(directory)`` for ``<output_dir>/<what>``, while no other build replaces the
        build there; if the build cannot be written into (removed by hand, say), into a
        temporary directory instead, said in a warning — a run never fails for its artifacts.
        What ``write`` returned."""
        try:
            with publish.writing_into(self.output_dir):
                if not self.output_dir.is_dir():  # (not made again: it would be a build with no build in it)
                    raise FileNotFoundError(errno.ENOENT, "the build directory is gone", str(self.output_dir))
                return write(self.output_dir / what)
        except OSError as exc:
            elsewhere = Path(tempfile.mkdtemp(prefix=f"pypto_{self.name}_")) / what
            logger.warning(f"[build] cannot write {what}/ into {self.output_dir} ({exc.strerror or exc}); "
                           f"written to {elsewhere} instead")
            return write(elsewhere)

    def _write_l0_trace(self, kernel, launch) -> None:
        trace = chrome_trace(launch, backend(self.config.backend))
        blocks = [encode_block(SOURCE, path.read_bytes(), path=str(path))
                  for path in sorted({Path(e.span.file) for e in launch.events if e.span is not None})
                  if path.is_file()]
        blocks.append(encode_block(TRACE, trace))
        blocks.append(encode_block(API_INSTR, instruction_metrics(launch)))
        data = write_blocks(blocks)

        def write(sim: Path) -> Path:
            directory = build_dirs.fresh_dir(sim / f"OPPROF_{kernel.name}_{_stamp()}") / "simulator"
            directory.mkdir()
            (directory / "visualize_data.bin").write_bytes(data)
            (directory / "trace.json").write_text(json.dumps(trace))
            return directory

        directory = self._deliver("sim", write)
        launch.trace_dirs.append(directory.parent)
        logger.info(f"[l0_trace] {kernel.name}: wrote {directory / 'visualize_data.bin'}")

    @located
    def __call__(self, *args, config: RunConfig | None = None):
        """Run in place (every argument given: None, as the reference's — the Out tensors
        are written) or return-style (the inputs only: the Out tensors are allocated, and
        what the entry returns is returned). ``config`` as for ``run``."""
        full = self._with_outputs(on_device(args, self))
        run_config = self._config(config)
        report = self.run(*full, config=config)
        values = report.outputs
        if run_config.report or os.environ.get("PYPTO_REPORT", "0") not in ("", "0"):
            print(summary_line(report, self.name), file=sys.stderr)
        if os.environ.get("PYPTO_BENCH", "0") not in ("", "0"):
            from pypto.runtime.bench import bench_line

            print(bench_line(self, full, run_config, os.environ), file=sys.stderr)
        if len(full) == len(args) and self.output_indices:  # in place: the Out tensors hold it
            return None
        if not values:
            values = tuple(full[k] for k in self.output_indices)
        if not values:
            return None
        return values[0] if len(values) == 1 else values


def compile_program(program: n.Program, param_names, config: RunConfig, *, write: bool) -> CompiledProgram:
    if isinstance(program, GenericProgram):  # without tensors to give its pl.dynamic extents
        program = program.unspecialized(backend(config.backend))
    logger.debug(f"[compile] {program.name}: the pass pipeline ({config.memory_planner.value} planner)")
    lowering = lower_program(program, config)
    diagnostics = () if config.diagnostic_phase is DiagnosticPhase.NONE else lowering.diagnostics
    compiled = CompiledProgram(program.name, program, lowering.program, list(param_names), config.platform,
                               config, diagnostics, lowering.timings)
    # Code is generated on every platform, so that a program codegen refuses is refused on
    # `ref` too; `ref` then interprets the IR instead of running the kernels.
    began = time.perf_counter()
    compiled.kernels = generate(lowering.program, pass_context(config))
    soc = backend(config.backend)
    groups.check(lowering.program, compiled.kernels, soc)  # each pl.cluster() fits a cluster
    barriers.check(lowering.program, compiled.kernels, soc)  # each syncall's launch lets it release
    if config.platform != "ref":  # before any task runs: an instruction this chip does not have
        for kernel in compiled.kernels.values():
            lacking.refuse(kernel, soc)
    codegen = time.perf_counter() - began
    if write:
        # read before anything is written: a bad $PYPTO_KEEP_BUILDS leaves no build behind
        keep = build_dirs.keep_count(config.keep_builds) if chosen_dir(config) is None else 0
        compiled.output_dir, lease = write_build(compiled, lowering, config)
        compiled.lease = build_dirs.hold(compiled.output_dir, compiled, lease)
        build_dirs.prune(compiled.output_dir, keep)  # (keep 0: a directory of the user's, or keep all)
    report(compiled)
    logger.debug(f"[compile] {program.name}: {len(lowering.timings)} passes in "
                 f"{1000 * sum(t for _, t in lowering.timings):.2f} ms, codegen {1000 * codegen:.2f} ms"
                 + (f"; the build: {compiled.output_dir}" if compiled.output_dir is not None else ""))
    return compiled


# the RunConfig fields a rebuild keeps besides the platform and planner (what codegen checks)
_KEPT = ("unsafe_allow_colive_slots", "unsafe_allow_task_races", "enable_l0_trace")
META = "compiled_meta.json"
META_SCHEMA = 1
PROGRAM_TEXT = "program.pypto"  # the specialized program's IR text (``pypto.ir.serialize``)


def write_meta(compiled: CompiledProgram, out: Path) -> None:
    """What ``CompiledProgram.from_dir`` rebuilds the build from, into ``out``."""
    (out / PROGRAM_TEXT).write_bytes(serialize(compiled.program))
    params = [{"name": name, "direction": p.direction.value,
               **({"shape": list(p.type.shape), "dtype": p.type.dtype.name} if isinstance(p.type, TensorType) else {})}
              for name, p in zip(compiled.param_names, compiled.params)]
    meta = {"schema": META_SCHEMA, "name": compiled.name, "entry": compiled.entry, "platform": compiled.platform,
            "backend": compiled.config.backend, "memory_planner": compiled.config.memory_planner.value,
            "param_infos": params, "program": PROGRAM_TEXT,
            "config": {k: getattr(compiled.config, k) for k in _KEPT}}
    (out / META).write_text(json.dumps(meta, indent=1) + "\n")


def replay(output_dir: Path, platform, backend_type) -> CompiledProgram:
    path = output_dir.resolve() / META
    if not path.exists():
        raise FileNotFoundError(f"{path} not found — cannot rebuild a compiled program from this directory: it was "
                                "not written by a compile with an output directory. Recompile via ir.compile().")
    try:
        meta = json.loads(path.read_text())
        if not isinstance(meta, dict) or meta.get("schema") != META_SCHEMA:
            raise ValueError(f"schema {meta.get('schema') if isinstance(meta, dict) else None!r}, "
                             f"this pypto reads {META_SCHEMA}")
        program = deserialize((output_dir / PROGRAM_TEXT).read_bytes())
        names = [p["name"] for p in meta["param_infos"]]
        fields = {"platform": platform or meta["platform"], "memory_planner": meta["memory_planner"],
                  "output_dir": output_dir.resolve(), **{k: v for k, v in meta.get("config", {}).items() if k in _KEPT}}
        if backend_type is not None:
            fields["backend_type"] = backend_type
        config = RunConfig(**fields)
    except (OSError, KeyError, TypeError, ValueError, PyptoError) as exc:
        raise ValueError(f"{path} cannot be read back: {exc}") from None
    compiled = compile_program(program, names, config, write=False)
    compiled.output_dir = config.output_dir
    try:
        compiled.lease = build_dirs.hold(compiled.output_dir, compiled)
    except FileNotFoundError:
        raise FileNotFoundError(f"{output_dir} was removed while it was read back") from None
    return compiled


def write_profile(report_dir: Path, timings) -> None:
    """``report/pipeline_profile.{txt,json}``: the wall-clock time of each pass, in order."""
    total = sum(t for _, t in timings)
    rows = [{"stage": name, "seconds": t, "percent": 100 * t / total if total else 0.0} for name, t in timings]
    (report_dir / "pipeline_profile.json").write_text(json.dumps({"total_seconds": total, "stages": rows}, indent=1))
    width = max((len(name) for name, _ in timings), default=5)
    lines = [f"{'stage':<{width}}  {'ms':>9}  {'%':>5}"]
    lines += [f"{r['stage']:<{width}}  {1000 * r['seconds']:9.3f}  {r['percent']:5.1f}" for r in rows]
    lines.append(f"{'total':<{width}}  {1000 * total:9.3f}  100.0")
    (report_dir / "pipeline_profile.txt").write_text("\n".join(lines) + "\n")


def _stamp() -> str:
    return datetime.datetime.now().strftime("%Y%m%d_%H%M%S")


def chosen_dir(config: RunConfig) -> Path | None:
    """The output directory the user chose, or None: a default one, made per build."""
    return config.output_dir if config.output_dir is not None else config.save_kernels_dir


def write_build(compiled: CompiledProgram, lowering: Lowering, config: RunConfig):
    """The build written aside and moved into place whole (``build_dirs``): (where it is, the
    lease its program holds)."""
    chosen = chosen_dir(config)
    try:
        if chosen is not None:
            place = _named_place(chosen)
        else:
            place = (build_dirs.default_root() / f"{compiled.name}_{_stamp()}").resolve()
        staged = publish.Staged(place)
    except OSError as exc:
        raise ConfigError(f"cannot create the output directory {exc.filename or chosen}: {exc.strerror or exc}",
                          hint="pass RunConfig(output_dir=...) a directory you can write, or set "
                               "$PYPTO_PROG_BUILD_DIR") from None
    with staged:
        out = staged.path
        (out / "report").mkdir()
        write_dumps(lowering, out / "passes_dump", config.dump_passes,
                    notes=(f"memory_planner: {config.memory_planner.value}", f"backend: {config.backend}"))
        for kernel in compiled.kernels.values():
            for p in kernel.programs:
                path = out / "kernels" / p.core.value / f"{kernel.name}.pto"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(listing(kernel, p, backend=config.backend, planner=config.memory_planner))
        if config.compile_profiling:
            write_profile(out / "report", lowering.timings)
        # this build's hints alone; an empty log says it had none
        (out / "report" / "perf_hints.log").write_text("".join(d.line() + "\n" for d in compiled.perf_hints))
        (out / manifest.NAME).write_text(manifest.manifest(compiled, compiled.runtime_config))
        write_meta(compiled, out)  # last: a directory holding it is a whole build
        try:
            return staged.publish(replace=chosen is not None), staged.lease
        except OSError as exc:
            raise ConfigError(f"cannot put the build in place at {place}: {exc.strerror or exc}"
                              + (f" ({exc.filename})" if exc.filename else ""),
                              hint="the build is written beside its output directory and moved into it: "
                                   "give RunConfig(output_dir=...) a directory whose parent you can write") from None


def _named_place(chosen: Path) -> Path:
    """Where a build into the user's ``output_dir`` goes: the directory it names, which each
    build replaces as a whole — so never one a process is in, nor the home directory."""
    place = chosen.resolve()
    try:
        here = Path.cwd().resolve()
    except OSError:  # (a current directory removed under us holds nothing)
        here = place / "_"
    home = Path.home().resolve()
    if place == here or place in here.parents or place == home:
        what = "the home directory" if place == home else "the current directory" if place == here \
            else "a directory holding the current one"
        raise ConfigError(f"output_dir {str(chosen)!r} is {what}: each build replaces its output directory as a "
                          "whole (files of yours in it are kept, but a process inside it would be left in a removed "
                          "directory)", hint="give builds a directory of their own: RunConfig(output_dir='build')")
    if place.exists() and not place.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(chosen))
    return place


def _copied(source: Path, files, into: Path) -> list[Path]:
    """``files`` (under ``source``) copied to the same places under ``into``: their new paths."""
    copies = []
    for path in files:
        there = into / Path(path).relative_to(source)
        there.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, there)
        copies.append(there)
    return copies


def report(compiled: CompiledProgram) -> None:
    """One summary line of the perf hints in the log (``report/perf_hints.log`` of a build has
    each); with no build the same line, each hint at DEBUG (``pypto.log``: INFO is the
    default; WARN and above keep it quiet)."""
    hints = compiled.perf_hints
    if not hints:
        return
    sites = len({str(d.span) for d in hints if d.span is not None})
    where = f" across {sites} site{'s' if sites != 1 else ''}" if sites else ""
    summary = f"[perf_hint] {len(hints)} hint{'s' if len(hints) != 1 else ''}{where}"
    if compiled.output_dir is None:  # one line, as a build's; each hint at DEBUG
        for d in hints:
            logger.debug(d.line())
        logger.info(f"{summary}; each with PYPTO_LOG_LEVEL=DEBUG, or in report/perf_hints.log of a build "
                    "(RunConfig(output_dir=...) or kernel.compile(...))")
        return
    logger.info(f"{summary}; see {compiled.output_dir / 'report' / 'perf_hints.log'}")
