"""Running a compiled program on its platform: the reference interpreter, or the
orchestration on the simulated chip — each kernel call a task, scheduled on the chip's
cores and simulated on its own (``pypto.chip``)."""

from __future__ import annotations

from pathlib import Path

from pypto.backend import backend
from pypto.chip import records
from pypto.chip.orchestrator import ChipRun
from pypto.ir import nodes as n
from pypto.runtime.config import RunConfig, fresh_byte, ring_sizes
from pypto.sim.reference import interpreter
from pypto.sim.reports import progress
from pypto.sim.ops.numerics import one_thread
from pypto.ir.collector import collector_paused
from pypto.sim.reports.run_report import RunReport
from pypto.sim.ops.fresh import fresh_memory


def execute(program: n.Program, entry: str, args, config: RunConfig, kernels: dict | None = None,
            on_launch=None, dfx: Path | None = None):
    """(values the entry returns, RunReport). ``on_launch(kernel, report)`` sees each
    task's own report (the L0 trace writer does); the chip's artifacts the config asks
    for go under ``dfx``."""
    with one_thread(), fresh_memory(fresh_byte(config), config.check_uninitialized_reads):
        if config.platform == "ref":
            prints: list = []
            with progress.run(f"{entry} on ref"):  # (a long loop's trips, and the time it has left)
                values = interpreter.run(program, entry, args, prints=prints)
            return values, RunReport(prints=prints, platform="ref")
        # the whole run, not each launch: a collection after every task walks them all; a
        # progress line on stderr once it has taken a few seconds
        with collector_paused(), progress.run(f"{entry} on {config.platform}") as meter:
            values, report = _on_chip(program, entry, args, config, kernels, on_launch, dfx)
            meter.reached(report.instructions, report.sync_instructions, report.cycles)  # (the done line's)
            report.platform, report.clock_hz = config.platform, backend(config.backend).chip.core_hz
            return values, report


def _on_chip(program: n.Program, entry: str, args, config: RunConfig, kernels, on_launch, dfx):
    run = ChipRun(program, backend(config.backend), kernels, unsafe_colive=config.unsafe_allow_colive_slots,
                  unsafe_races=config.unsafe_allow_task_races, on_launch=on_launch, entry=entry,
                  rings=ring_sizes(config), atomic_seed=config.atomic_order_seed)
    values = interpreter.run(program, entry, args, run)
    report = run.finish()
    if dfx is not None and config.any_dfx_enabled():
        report.dfx_files = records.write(dfx, entry, run.tasks, run.edges, run.soc,
                                         swimlane_level=config.enable_chip_swimlane,
                                         dep_gen=config.enable_dep_gen,
                                         scope_stats=run.scope_stats() if config.enable_scope_stats else None,
                                         pmu=report.tasks if config.enable_pmu else None)
    return values, report
