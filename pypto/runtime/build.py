"""The reference's compile-and-run entry points over a Program: ``pypto.ir.compile`` (which
this layer provides: the IR below it compiles nothing) and ``pypto.runtime.run``.

    compiled = ir.compile(kernel.lower(a, b, out), platform="a2a3sim")
    compiled(a, b, out)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pypto.errors import ConfigError
from pypto.ir import nodes as n
from pypto.lang.program import GenericProgram, HostProgram
from pypto.runtime.callsite import call_span
from pypto.runtime.config import RunConfig, coerce_config
from pypto.console import boundary

if TYPE_CHECKING:
    from pypto.runtime.compiled import CompiledProgram

# (the compiler and the simulator behind ``compiled``/``generic`` load on the first compile:
# this module is imported with pypto.runtime, to install ``pypto.ir.compile``)


@boundary
def compile(program: n.Program, output_dir=None, strategy=None, dump_passes=True, backend_type=None,  # noqa: A001
            skip_ptoas: bool = False, verification_level=None, diagnostic_phase=None, disabled_diagnostics=None,
            memory_planner=None, enable_pypto_l0c_double_buffer=None, profiling: bool = False, platform=None,
            distributed_config=None, analyze_auto_scopes_for_deps: bool = False, emit_source_loc=None,
            dump_ptoas_passes: bool = False, runtime=None) -> CompiledProgram:
    """``program`` through the pass pipeline and codegen for ``platform`` (a2a3sim by
    default), its output directory written (pass dumps unless ``dump_passes=False``). A
    program already lowered is lowered again as it is. Options that steer the vendor
    toolchain (``strategy``, ``skip_ptoas``,
    ``enable_pypto_l0c_double_buffer``, ``emit_source_loc``, ``dump_ptoas_passes``,
    ``runtime``) are accepted and change nothing here; ``profiling`` writes each pass's time
    to report/pipeline_profile.{txt,json}, ``diagnostic_phase=NONE`` drops the diagnostics;
    ``distributed_config`` names the devices of a program with a host orchestrator (one of many
    ranks: a ``DistributedProgram``, called with the host function's arguments), and is
    refused for a program of one chip. ``backend_type`` picks the SoC table (the platform's own
    when it is a simulator: a5sim compiles for Ascend950)."""
    if not isinstance(program, (n.Program, GenericProgram, HostProgram)):
        raise ConfigError(f"ir.compile takes a Program, got {type(program).__name__}",
                          hint="compile kernel.lower(*samples), or call kernel.compile(*samples)")
    if isinstance(program, HostProgram) and distributed_config is None:
        raise ConfigError(f"program '{program.name}' has a host orchestrator ('{program.host_name}'): it runs on a "
                          "cluster of devices, and no distributed_config names them", span=call_span(argument=0),
                          hint="ir.compile(program, platform=..., distributed_config=DistributedConfig("
                               "device_ids=[0, 1]))")
    if distributed_config is not None and not isinstance(program, HostProgram):
        raise ConfigError(f"distributed_config: program '{program.name}' runs on one chip (it has no "
                          "@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator) to dispatch to the ranks)",
                          span=call_span(argument=0), hint="compile it for one chip (leave distributed_config unset)")
    fields = {"dump_passes": dump_passes, "output_dir": output_dir,
              "compile_profiling": profiling}
    if platform is not None:  # else the backend's simulator (a2a3sim when neither is named)
        fields["platform"] = platform
    for name, value in (("verification_level", verification_level), ("memory_planner", memory_planner),
                        ("disabled_diagnostics", disabled_diagnostics), ("diagnostic_phase", diagnostic_phase),
                        ("backend_type", backend_type)):
        if value is not None:
            fields[name] = value
    if distributed_config is not None:
        fields["distributed_config"] = distributed_config
    config = RunConfig(**fields)
    if isinstance(program, HostProgram):
        from pypto.runtime.distributed.host import ProgramHost
        from pypto.runtime.distributed.program import DistributedProgram

        return DistributedProgram(ProgramHost(program), config, write=True)
    from pypto.runtime.compiled import compile_program
    from pypto.runtime.generic import GenericCompiled

    if isinstance(program, GenericProgram):
        return GenericCompiled(program, config)
    return compile_program(program, entry_params(program), config, write=True)


def entry_params(program: n.Program) -> list:
    """The parameters a compiled program is called with: its entry's (the last function)."""
    return [p.name for p in program.functions[-1].params]


@boundary
def run(program, *tensors, config: RunConfig | None = None) -> CompiledProgram:
    """``program`` compiled with ``config``'s fields, then run once on ``tensors`` if any are
    given and ``config.codegen_only`` is not set (Out tensors are written in place): the
    compiled program, to run again. A program with ``pl.dynamic`` axes is compiled for the
    extents of ``tensors``."""
    if not isinstance(program, (n.Program, GenericProgram)):
        raise ConfigError(f"pypto.runtime.run takes a @pl.program (or a Program), got {type(program).__name__}",
                          span=call_span(argument=0),
                          hint="call a @pl.jit kernel directly: kernel(*tensors, config=...); run a @pl.function "
                               "kernel from a @pl.program's orchestration")
    try:
        config = coerce_config(config)
    except ConfigError as err:
        raise err.with_span(call_span(argument="config")) from None
    from pypto.runtime.compiled import compile_program
    from pypto.runtime.generic import GenericCompiled

    if isinstance(program, GenericProgram):
        if not tensors:
            program.unspecialized()  # says which axis no tensor gave
        compiled = GenericCompiled(program, config).compiled_for(*tensors)
    else:
        compiled = compile_program(program, entry_params(program), config, write=True)
    if tensors and not config.codegen_only:
        compiled(*tensors)
    return compiled
