"""``PassManager``: the reference's handle on the pass pipeline, for code that lowers a
Program by hand — ``PassManager.get_strategy(OptimizationStrategy.Default).run_passes(p)`` —
and reads the pass list. It runs this package's one pipeline (``pypto.passes.pipeline``)
for the config's planner, as a compile does; ``pypto.ir.pass_manager.PassManager`` is this
class (the runtime installs it there: the IR layer runs no pass)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pypto.errors import ConfigError
from pypto.ir import nodes as n
from pypto.ir.levels import PassDumpLevel
from pypto.ir.pass_manager import OptimizationStrategy
from pypto.runtime.config import RunConfig


class PassManager:
    def __init__(self, strategy: OptimizationStrategy = OptimizationStrategy.Default, *,
                 analyze_auto_scopes_for_deps: bool = False, config: RunConfig | None = None):
        """``config`` picks the planner and the checks (``RunConfig()`` by default)."""
        self.config = dataclasses.replace(config if config is not None else RunConfig(), strategy=strategy,
                                          analyze_auto_scopes_for_deps=analyze_auto_scopes_for_deps)
        self.strategy = strategy

    @classmethod
    def get_strategy(cls, strategy: OptimizationStrategy = OptimizationStrategy.Default, *,
                     analyze_auto_scopes_for_deps: bool = False) -> PassManager:
        return cls(strategy, analyze_auto_scopes_for_deps=analyze_auto_scopes_for_deps)

    @property
    def pass_names(self) -> list[str]:
        from pypto.backend import backend
        from pypto.passes.pipeline import passes_for

        return [p.name for p in passes_for(self.config.memory_planner, backend(self.config.backend))]

    def get_pass_names(self) -> list[str]:
        return self.pass_names

    def run_passes(self, program: n.Program, dump_ir=False, output_dir=None, prefix: str = "pl") -> n.Program:
        """``program`` after every pass; with ``dump_ir`` (True, or a PassDumpLevel) each
        stage is written to ``<output_dir>/passes_dump/``, as a compile writes it."""
        from pypto.passes.pipeline import write_dumps
        from pypto.runtime.compiled import lower_program

        if not isinstance(program, n.Program):
            raise ConfigError(f"run_passes takes a Program (a @pl.program), got {type(program).__name__}",
                              hint="lower a @pl.jit kernel with kernel.lower(*samples)")
        level = PassDumpLevel.coerce(dump_ir)
        if level is not PassDumpLevel.NONE and output_dir is None:
            raise ValueError("run_passes: dumping the passes needs an output_dir")
        lowering = lower_program(program, self.config)
        if level is not PassDumpLevel.NONE:
            write_dumps(lowering, Path(output_dir) / "passes_dump", level)
        return lowering.program
