"""What a run reports (``RunReport``): its cycles, each pipe's busy cycles, what it executed,
its launches' timelines and the trace slices they show when asked (``TraceEvent``) — the
record the runtime hands back from a kernel run on either platform, and the chip's too."""

from __future__ import annotations

import attrs

from pypto.backend import Pipe
from pypto.codegen.isa import SetFlag, WaitFlag
from pypto.errors import Span
from pypto.sim.reports.run_summary import summary_fields


@attrs.frozen
class TraceEvent:
    """One slice of a pipe's timeline (or of the scalar unit's issuing)."""

    core: str  # "aic0", "aiv0"
    pipe: str
    name: str
    start: int
    end: int
    span: Span | None = attrs.field(default=None, eq=False)
    detail: tuple = ()  # (key, value) pairs: address, bytes, repeats, utilization, ...
    kind: str = "instr"  # "instr", "set_flag", "wait_flag" or "issue"
    pos: int = -1  # the instruction's position in its kernel's program
    flag: tuple = ()  # (src core, src pipe, dst core, dst pipe, event) of a flag


@attrs.define(repr=False)
class RunReport:
    cycles: int = 0  # simulated cycles, all launches
    # core -> pipe -> cycles the pipe was occupied. A transfer holds its pipe for its bytes;
    # its landing latency overlaps the next transfer, so trace slices (issue to landing) are longer.
    pipe_cycles: dict = attrs.Factory(dict)
    instructions: int = 0  # executed compute/transfer instructions
    sync_instructions: int = 0  # executed set_flag / wait_flag
    launches: int = 0
    # Each launch's timeline: (cycle it starts at, its issued items[, the cores it ran on
    # by those it was simulated on]). The trace slices are built from it only when asked
    # (``events``).
    timelines: list = attrs.Factory(list)
    wall_seconds: float = 0.0
    trace_dirs: list = attrs.Factory(list)  # OPPROF_* directories of the L0 traces written
    outputs: tuple = ()  # what the entry function returned
    tasks: list = attrs.Factory(list)  # on the chip: each task as it ran (``pypto.chip.orchestrator.TaskRecord``)
    dfx_files: list = attrs.Factory(list)  # the chip's artifacts written (dfx_outputs/)
    prints: list = attrs.Factory(list)  # what each pl.debug_print saw (``pypto.sim.reports.prints.Print``)
    platform: str = ""  # what ran it ("ref" keeps no time)
    clock_hz: int = 0  # the cores' clock, for µs (0: unknown)
    _events: list | None = attrs.field(default=None, init=False, repr=False, eq=False)

    def __repr__(self) -> str:
        """A line, not the timelines: the kernel's cycles first (what tuning shrinks), then
        the makespan, each with µs, then what was executed."""
        return f"RunReport({', '.join(summary_fields(self))})"

    def summary(self) -> str:
        """One line for a log or a notebook cell: the two times and the task count."""
        from pypto.sim.reports.run_summary import summary_line

        return summary_line(self)

    def _repr_html_(self) -> str:
        from pypto.sim.reports.run_summary import html_table

        return html_table(self)

    @property
    def events(self) -> list:
        """TraceEvent of every launch, shifted to its start: the scalar unit's issue slices
        and every pipe's, in start order."""
        if self._events is None:
            out = []
            for shift, items, *cores in self.timelines:
                out.extend(_trace_events(items, shift, cores[0] if cores else None))
            out.sort(key=lambda e: e.start)
            self._events = out
        return self._events

    @property
    def kernel_cycles(self) -> int:
        """Cycles the cores spent running the tasks, start to end, summed (one task: its
        run — what tuning the InCore function shrinks); ``cycles`` is the makespan, which
        on the chip adds the orchestration, dispatch and pickup around them."""
        if self.tasks:
            return sum(t.end - t.start for t in self.tasks)
        return self.cycles

    @property
    def trace_dir(self):
        """The last launch's L0 trace directory (``RunConfig(enable_l0_trace=True)``)."""
        return self.trace_dirs[-1] if self.trace_dirs else None

    def merge(self, other: RunReport) -> None:
        shift = self.cycles
        self.timelines.extend((s + shift, *rest) for s, *rest in other.timelines)
        self._events = None
        self.cycles += other.cycles
        for core, pipes in other.pipe_cycles.items():
            mine = self.pipe_cycles.setdefault(core, {})
            for pipe, c in pipes.items():
                mine[pipe] = mine.get(pipe, 0) + c
        self.instructions += other.instructions
        self.sync_instructions += other.sync_instructions
        self.launches += other.launches
        self.wall_seconds += other.wall_seconds
        self.trace_dirs.extend(other.trace_dirs)
        self.prints.extend(p.at(shift) for p in other.prints)

    def busy(self, pipe: str) -> list[tuple[int, int]]:
        """(start, end) of every instruction on a pipe, all cores."""
        return [(e.start, e.end) for e in self.events if e.pipe == pipe and e.kind == "instr"]


def item_name(node, flag) -> str:
    """How an issued item is named in traces and messages."""
    if isinstance(node, (SetFlag, WaitFlag)):
        kind = "set_flag" if isinstance(node, SetFlag) else "wait_flag"
        return f"{kind}({node.src.value}->{node.dst.value}, {flag[4]})"
    return f"{node.mnemonic} {node.note}".strip()


def _trace_events(items, shift: int, cores: dict | None = None):
    """The trace slices of one launch's timeline: each item's issue on the scalar unit, and
    its run on its pipe (on ``cores[core]`` for each core it was simulated on, if given)."""
    scalar = Pipe.SCALAR.value
    for node, core, pipe, flag, issue, scalar_cost, start, end, detail in items:
        if cores is not None:
            core = cores.get(core, core)
            if flag is not None:
                flag = (cores.get(flag[0], flag[0]), flag[1], cores.get(flag[2], flag[2]), flag[3], flag[4])
        span = getattr(node, "span", None)
        name = item_name(node, flag)
        yield TraceEvent(core.name, scalar, f"issue {name}", issue - scalar_cost + shift, issue + shift, span,
                         kind="issue", pos=node.pos)
        kind = "set_flag" if isinstance(node, SetFlag) else "wait_flag" if isinstance(node, WaitFlag) else "instr"
        shown = () if flag is None else (flag[0].name, flag[1].value, flag[2].name, flag[3].value, flag[4])
        yield TraceEvent(core.name, pipe.value, name, start + shift, end + shift, span, detail, kind, node.pos,
                         shown)
