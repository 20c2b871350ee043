"""The reference's compile-and-run entry points over a Program: ``pypto.ir.compile`` (which
this layer provides: the IR below it compiles nothing) and ``pypto.runtime.run``.

    compiled = ir.compile(kernel.lower(a, b, out), platform="a2a3sim")
    compiled(a, b, out)
"""

from __future__ import annotations

from pypto.backend import backend
from pypto.errors import ConfigError, SpecializationError
from pypto.ir import nodes as n
from pypto.lang.program import GenericProgram
from pypto.runtime.arguments import arg_type
from pypto.runtime.callsite import call_span, located
from pypto.runtime.compiled import CompiledProgram, compile_program
from pypto.runtime.config import RunConfig


def compile(program: n.Program, output_dir=None, strategy=None, dump_passes=True, backend_type=None,  # noqa: A001
            skip_ptoas: bool = False, verification_level=None, diagnostic_phase=None, disabled_diagnostics=None,
            memory_planner=None, enable_pypto_l0c_double_buffer=None, profiling: bool = False, platform=None,
            distributed_config=None, analyze_auto_scopes_for_deps: bool = False, emit_source_loc=None,
            dump_ptoas_passes: bool = False, runtime=None) -> CompiledProgram:
    """``program`` through the pass pipeline and codegen for ``platform`` (a2a3sim by
    default), its output directory written (pass dumps unless ``dump_passes=False``). A
    program already lowered is lowered again as it is. Options that steer the vendor
    toolchain (``strategy``, ``backend_type``, ``skip_ptoas``,
    ``enable_pypto_l0c_double_buffer``, ``emit_source_loc``, ``dump_ptoas_passes``,
    ``runtime``) are accepted and change nothing here; ``profiling`` writes each pass's time
    to report/pipeline_profile.{txt,json}, ``diagnostic_phase=NONE`` drops the diagnostics;
    ``distributed_config`` is refused (no distributed runtime here)."""
    if not isinstance(program, (n.Program, GenericProgram)):
        raise ConfigError(f"ir.compile takes a Program, got {type(program).__name__}",
                          hint="compile kernel.lower(*samples), or call kernel.compile(*samples)")
    if distributed_config is not None:
        raise ConfigError("distributed_config: this runtime has no distributed (L3+) workers",
                          hint="compile for one chip (leave distributed_config unset)")
    fields = {"platform": platform or "a2a3sim", "dump_passes": dump_passes, "output_dir": output_dir,
              "compile_profiling": profiling}
    for name, value in (("verification_level", verification_level), ("memory_planner", memory_planner),
                        ("disabled_diagnostics", disabled_diagnostics), ("diagnostic_phase", diagnostic_phase)):
        if value is not None:
            fields[name] = value
    config = RunConfig(**fields)
    if isinstance(program, GenericProgram):
        return GenericCompiled(program, config)
    return compile_program(program, entry_params(program), config, write=True)


def entry_params(program: n.Program) -> list:
    """The parameters a compiled program is called with: its entry's (the last function)."""
    return [p.name for p in program.functions[-1].params]


def run(program, *tensors, config: RunConfig | None = None) -> CompiledProgram:
    """``program`` compiled with ``config``'s fields, then run once on ``tensors`` if any are
    given and ``config.codegen_only`` is not set (Out tensors are written in place): the
    compiled program, to run again. A program with ``pl.dynamic`` axes is compiled for the
    extents of ``tensors``."""
    config = config if config is not None else RunConfig()
    if isinstance(program, GenericProgram):
        if not tensors:
            program.unspecialized()  # says which axis no tensor gave
        compiled = GenericCompiled(program, config).compiled_for(*tensors)
    else:
        compiled = compile_program(program, entry_params(program), config, write=True)
    if tensors and not config.codegen_only:
        compiled(*tensors)
    return compiled


class GenericCompiled:
    """A program with ``pl.dynamic`` axes, compiled: each call compiles it for its tensors'
    extents (once per set of extents, kept) and runs that. What a compiled program does
    with one set, it does with each (``compiled_for`` gives that CompiledProgram)."""

    def __init__(self, program: GenericProgram, config: RunConfig):
        self.program = program
        self.config = config
        self.name = program.name
        self._compiled: dict[tuple, CompiledProgram] = {}

    @property
    def param_names(self) -> list:
        return self.program.param_names

    def compiled_for(self, *args) -> CompiledProgram:
        names = self.param_names
        if len(args) != len(names):
            raise SpecializationError(f"'{self.name}' takes {len(names)} arguments ({', '.join(names)}), got "
                                      f"{len(args)}", span=call_span(argument=min(len(args), len(names))),
                                      hint="pass every tensor, Out ones included: their extents specialize it")
        types = tuple(arg_type(name, a, k) for k, (name, a) in enumerate(zip(names, args)))
        if types not in self._compiled:
            try:
                program = self.program.specialize_types(types, backend(self.config.backend))
            except SpecializationError as err:  # an argument's mistake: at the user's argument
                if getattr(err, "param", None) not in names:
                    raise
                raise SpecializationError(err.message, span=call_span(argument=names.index(err.param)),
                                          hint=err.hint).with_note(f"the parameter is declared at {err.span}") from None
            self._compiled[types] = compile_program(program, entry_params(program), self.config, write=True)
        return self._compiled[types]

    @located
    def run(self, *args, config: RunConfig | None = None):
        """``CompiledProgram.run`` of the program compiled for these arguments."""
        return self.compiled_for(*args).run(*args, config=config)

    @located
    def __call__(self, *args, config: RunConfig | None = None):
        return self.compiled_for(*args)(*args, config=config)

    def __repr__(self) -> str:
        return f"<compiled {self.name}: pl.dynamic axes, {len(self._compiled)} specialization(s) so far>"
