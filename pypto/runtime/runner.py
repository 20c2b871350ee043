"""The reference's ``pypto.runtime.runner``: ``RunConfig`` and ``run`` (the same objects as
``pypto.runtime``'s), ``RunResult`` (what a test harness reports of one case), and the two
halves of a run over a build directory, ``compile_program`` and ``execute_compiled``.

    compile_program(MyProgram, "build/my", strategy=OptimizationStrategy.Default,
                    backend_type=BackendType.Ascend910B)
    execute_compiled("build/my", [a, b, out], platform="a2a3sim", device_id=0)  # out written in place
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pypto.backend import BackendType
from pypto.errors import ConfigError
from pypto.ir.pass_manager import OptimizationStrategy
from pypto.runtime.build import compile as _compile
from pypto.runtime.build import run
from pypto.runtime.config import RunConfig

__all__ = ["RunConfig", "RunResult", "compile_program", "execute_compiled", "run"]


@dataclasses.dataclass
class RunResult:
    """One case's outcome as a harness reports it: ``PASS: name (0.42s)`` or
    ``FAIL: name - why``."""

    passed: bool
    test_name: str | None = None
    error: str | None = None
    execution_time: float | None = None  # seconds, compile and run together
    profile: dict | None = None

    def __str__(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        head = f"{verdict}: {self.test_name}" if self.test_name else verdict
        if not self.passed and self.error:
            head += f" - {self.error}" if self.test_name else f": {self.error}"
        return head + (f" ({self.execution_time:.2f}s)" if self.execution_time else "")


def compile_program(program, work_dir, *, strategy: OptimizationStrategy = OptimizationStrategy.Default,
                    backend_type: BackendType = BackendType.Ascend910B, dump_passes=False,
                    dump_ptoas_passes: bool = False, diagnostic_phase=None, disabled_diagnostics=None,
                    profiling: bool = False, analyze_auto_scopes_for_deps: bool = False, memory_planner=None,
                    enable_pypto_l0c_double_buffer=None, platform: str = "a2a3sim"):
    """``program`` (a ``@pl.program`` or a Program) compiled into ``work_dir`` exactly, as
    ``pypto.ir.compile`` writes a build; returns the ``CompiledProgram`` (the reference
    returns nothing: its build is read back by ``execute_compiled``, as this one can be).
    ``platform`` is the one the build records for ``execute_compiled``."""
    return _compile(program, output_dir=Path(work_dir), strategy=strategy, dump_passes=dump_passes,
                    backend_type=backend_type, dump_ptoas_passes=dump_ptoas_passes, diagnostic_phase=diagnostic_phase,
                    disabled_diagnostics=disabled_diagnostics, profiling=profiling,
                    analyze_auto_scopes_for_deps=analyze_auto_scopes_for_deps, memory_planner=memory_planner,
                    enable_pypto_l0c_double_buffer=enable_pypto_l0c_double_buffer, platform=platform)


def execute_compiled(work_dir, args, *, platform: str, device_id: int = 0, level: int = 2,
                     aicpu_thread_num: int | None = None, analyze_auto_scopes_for_deps: bool = False) -> None:
    """Run the build in ``work_dir`` (written by ``compile_program`` or ``ir.compile``) on
    ``args`` in its entry's parameter order, on ``platform``: its outputs are written into
    the tensors given for them. A chip-level (2) run only: there are no L3 workers here."""
    if level != 2:
        raise ConfigError(f"execute_compiled(level={level!r}): this runtime runs one chip (level 2)",
                          hint="leave level at 2")
    from pypto.runtime.compiled import CompiledProgram

    compiled = CompiledProgram.from_dir(work_dir, platform=platform)
    config = dataclasses.replace(compiled.config, device_id=device_id, aicpu_thread_num=aicpu_thread_num,
                                 analyze_auto_scopes_for_deps=analyze_auto_scopes_for_deps)
    compiled(*args, config=config)
