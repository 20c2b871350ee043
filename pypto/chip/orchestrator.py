"""One run of an orchestration on the simulated chip: the interpreter walks the
orchestration in source order and hands each kernel call here as a task submission; each
task's timeline is simulated on its own (pure, reused for a task like an earlier one), the
tracker derives its edges, and at the end the scheduler places every task, the race check
runs, and the tasks' data effects are applied in the order they started — a linear
extension of the edges, so a race-free graph computes what program order does.

    run = ChipRun(program, soc, kernels, config)
    values = interpreter.run(program, entry, args, run)   # run.submit, run.scope
    report = run.finish()
"""

from __future__ import annotations

import time

import attrs

from pypto.backend import CoreId, CoreKind, SoC
from pypto.chip import barriers, groups, races
from pypto.chip.atomics import AtomicAdds
from pypto.chip.deps import Tracker
from pypto.chip.rings import RINGS, Rings
from pypto.chip.scheduler import Chip
from pypto.chip.settling import Settling
from pypto.chip.tasks import Edge, Task, TaskArg, task_id
from pypto.errors import ExecutionError, PyptoError
from pypto.ir import nodes as n
from pypto.ir.directions import call_directions, kernel_call
from pypto.ir.printer import expr
from pypto.ir.types import ArgDirection, ParamDirection, TensorType
from pypto.sim.reports import progress
from pypto.sim.data import ranks
from pypto.sim.ops.comm import PORT
from pypto.sim.simulator import Launch, simulate, simulate_together
from pypto.sim.reports.run_report import RunReport

@attrs.frozen
class TaskRecord:
    """One task as it ran (``RunReport.tasks``); times in core cycles from the start of
    the orchestration."""

    task_id: str  # r<ring>t<local>
    kernel: str
    core: int  # the core's id on the chip (a mix task: its cluster's cube core)
    core_type: str  # "aic", "aiv" or "mix"
    block: int  # which block of an SPMD task (0 otherwise)
    dispatch: int
    start: int
    end: int
    finish: int
    deps: tuple = ()  # the task_ids it waited for
    pipe_cycles: dict = attrs.Factory(dict)  # core name -> pipe -> cycles, this task's alone
    retired: bool = False  # its dispatch predicate was false: it ran nothing, on no core
    # its timeline's items and {simulated core name: the core it ran on}: what the PMU rows read
    issued: tuple = attrs.field(default=(), eq=False, repr=False)


class ChipRun(Settling):
    def __init__(self, program: n.Program, soc: SoC, kernels: dict, *, unsafe_colive: bool = False,
                 unsafe_races: bool = False, on_launch=None, entry: str | None = None, rings: tuple = (None,) * 3,
                 atomic_seed: int | None = None):
        self.program = program
        self.soc = soc
        self.kernels = kernels
        self.unsafe_colive = unsafe_colive
        self.unsafe_races = unsafe_races
        self.on_launch = on_launch
        entry_fn = program.function(entry) if entry is not None else None
        self.directions = (call_directions(program, entry_fn)
                           if entry_fn is not None and not entry_fn.type.is_kernel else {})
        self.tracker = Tracker()
        self.tasks: list[Task] = []
        self.edges: list[Edge] = []
        self.launches: list[list] = []  # per task: (Launch, Timeline) of each block (a dummy: none)
        self.locals = [0] * RINGS
        self.numbers: dict[int, int] = {}  # task id -> its number
        self.open_scopes: list = []  # per open runtime scope: its tasks when manual, else None
        self.untracked: dict[int, object] = {}  # storage address -> a tensor created with manual_dep=True
        self.unapplied: list[Task] = []  # the tasks whose data is not in place yet (a read places those started)
        self.unfinished: list[Task] = []  # the tasks not finished by the orchestrator's clock (as far as known)
        self.footprints: dict = {}  # (task number, writes only) -> its GM bytes as strided runs (``_touches``)
        self.chip = Chip(soc, self._decide)  # decided as far as the orchestrator has had to know
        self.atomics = AtomicAdds(atomic_seed)  # atomic adds kept until their stores complete
        self.clock = 0  # the orchestrator's
        self.began = time.perf_counter()
        self.rings = Rings(*rings)
        self.members: list | None = None  # inside a pl.cluster(): the kernel calls of its Group task
        self.cluster_depth = 0  # the runtime scope depth the open cluster's Group task is submitted at
        self.rings.open(0, _site(entry_fn.span if entry_fn is not None else None), 0)  # the function body's scope

    def creating(self, nbytes: int, span=None) -> None:
        """The orchestration is about to create a tensor: room for it in its scope's ring heap."""
        self.rings.create(nbytes, span)

    def created(self, tensor, manual_dep: bool, span=None) -> None:
        """The orchestration created a tensor; ``manual_dep``: no task's use of it is
        tracked. Kept alive for the run, so no later tensor takes its address."""
        if manual_dep:
            self.untracked[tensor.untyped_storage().data_ptr()] = tensor

    def scope(self, opening: bool, manual: bool, depth: int = 0, span=None) -> None:
        """A runtime scope opens or closes; a manual one's tasks, tracked by nobody while it
        was open, register what they wrote as it closes — tasks after it see their data."""
        if opening:
            self.open_scopes.append([] if manual else None)
            self.rings.open(depth, _site(span), self.tracker.entries())
            return
        self.rings.close(self.clock, self.tracker.entries())
        tasks = self.open_scopes.pop()
        for task in tasks or ():
            self.tracker.register(task)
        if tasks and self.open_scopes and self.open_scopes[-1] is not None:  # an enclosing manual scope
            self.open_scopes[-1].extend(tasks)

    def submit(self, fn: n.Function, args: tuple, site) -> tuple:
        """Take one kernel call as a task: (what the call returns — the tensors it hands
        back, which are its arguments —, the task's id). ``site``: where the call is
        (``sim.tasks.Site``: its statement, scope depth, manual scope, Submit)."""
        stmt, depth, submit = site.stmt, site.depth, site.submit
        kernel = self.kernels[fn.name]
        if self.members is not None:  # a member of the Group task the cluster closes with: its id is the Group's
            self.members.append((fn, args, site))
            ring = min(self.cluster_depth, RINGS - 1)
            return _returned(fn, kernel, args), task_id(ring, self.locals[ring])
        if kernel.pipes:  # its peer is nowhere: nothing would pop what it pushes
            raise ExecutionError(f"'{fn.name}' moves tiles through a cross-core pipe, and this call runs it outside "
                                 "a Group", span=getattr(stmt, "span", None),
                                 hint="call it with its peer from a @pl.function(type=pl.FunctionType.Group)")
        spmd = submit is not None and submit.blocks is not None
        blocks = submit.blocks if spmd else 1
        core_type = _core_type(kernel)
        if spmd and submit.sync_start:
            self._admit_together(blocks, core_type, getattr(stmt, "span", None))
        barriers.check_launch(kernel, blocks, spmd and submit.sync_start, barriers.capacity(kernel, self.soc),
                              self.soc, getattr(stmt, "span", None))
        self.wait_for_scalar_reads(kernel, args, getattr(stmt, "span", None))
        if ranks.crosses(kernel):
            self.wait_for_all()
            port = PORT.get()
            if port is not None:
                port.launching(self.clock)
        timelines = barriers.held(kernel, lambda b, holds: simulate(kernel, args, self.soc, unsafe=self.unsafe_colive,
                                                                   block=b, blocks=blocks, holds=holds),
                                  blocks, barriers.release_cost(kernel, self.soc.costs))
        runs = [(Launch(kernel, args, block=b, blocks=blocks), timeline) for b, timeline in enumerate(timelines)]
        targs = self._task_args(fn, args, site)
        ring = min(depth, RINGS - 1)
        cycles = tuple(timeline.cycles for _, timeline in runs)
        arrivals = tuple(timeline.arrivals for _, timeline in runs)
        task = Task(len(self.tasks), ring, self.locals[ring], fn.name, core_type, tuple(targs),
                    getattr(stmt, "span", None), 0, max(cycles),
                    early=submit is not None and submit.allow_early_resolve, durations=cycles if spmd else (),
                    sync_start=spmd and submit.sync_start, predicate=submit.predicate if submit is not None else None,
                    slots=groups.slots([kernel], [0], self.soc) if core_type == "mix" else (),
                    arrivals=arrivals if any(arrivals) else ())
        self.locals[ring] += 1
        self._enter(task, submit.deps if submit is not None else (), runs)
        progress.step("tasks")  # (a long run's progress line)
        return _returned(fn, kernel, args), task.id

    def _task_args(self, fn: n.Function, args: tuple, site, prefix: str = "") -> list:
        """The call's tensor arguments with their directions at its site."""
        directions = self.directions.get(site.key) if site.stmt is not None else None
        call = kernel_call(site.stmt) if site.stmt is not None else None
        written = [expr(a) for a in call.args] if call is not None else [p.name for p in fn.params]
        out = []
        for k, (p, a) in enumerate(zip(fn.params, args)):
            if not isinstance(p.type, TensorType):
                continue
            d = directions[k] if directions is not None else _direction(p.direction)
            if a.untyped_storage().data_ptr() in self.untracked:  # manual_dep: its whole life
                d = ArgDirection.NoDep
            out.append(TaskArg(k, prefix + p.name, d, a, written[k]))
        return out

    def cluster(self, opening: bool, span=None, depth: int = 0, blocks: int | None = None,
                sync_start: bool = False, name: str = "") -> int | None:
        """A ``pl.cluster()`` opens (its kernel calls collect) or closes: its members as one
        Group task on one cluster (``blocks`` of them, one cluster each, for an unwrapped
        ``pl.spmd``); the task's id."""
        if opening:  # (the interpreter refuses a nested one)
            self.members, self.cluster_depth = [], depth
            return None
        members, self.members = self.members, None
        if not members:  # every call it holds was skipped: nothing to dispatch
            return None
        kernels = [self.kernels[fn.name] for fn, _, _ in members]
        lanes = groups.place(kernels, self.soc, span)
        count = blocks or 1
        if sync_start:
            self._admit_together(count, "mix", span)
        for kernel, (_, args, _) in zip(kernels, members):
            self.wait_for_scalar_reads(kernel, args, span)
        runs = []
        for b in range(count):
            shared = groups.pipes(kernels, lanes, span)  # each block's own pipe rings
            launch = groups.GroupLaunch(tuple(Launch(k, args, lane=lane, block=b, blocks=count, scratch=scratch,
                                                     peer_lanes=peers)
                                              for k, (_, args, _), lane, (scratch, peers)
                                              in zip(kernels, members, lanes, shared)), name)
            runs.append((launch, simulate_together(launch.launches, self.soc, unsafe=self.unsafe_colive)))
        targs = [a for m, (fn, args, site) in enumerate(members)
                 for a in self._task_args(fn, args, site, prefix=groups.member_prefix(m, fn.name))]
        targs = [attrs.evolve(a, index=k) for k, a in enumerate(targs)]
        ring = min(depth, RINGS - 1)
        cycles = tuple(timeline.cycles for _, timeline in runs)
        task = Task(len(self.tasks), ring, self.locals[ring], name, "mix", tuple(targs), span, 0, max(cycles),
                    durations=cycles if blocks is not None else (), sync_start=sync_start,
                    slots=groups.slots(kernels, lanes, self.soc))
        self.locals[ring] += 1
        self._enter(task, (), runs)
        return task.id

    def dummy(self, deps: tuple, site) -> int:
        """``pl.system.task_dummy(deps=[...])``: a task with no work, on no core, that
        finishes when what it waits for has — one edge for its consumers instead of many."""
        ring = min(site.depth, RINGS - 1)
        task = Task(len(self.tasks), ring, self.locals[ring], "task_dummy", "dummy", (),
                    getattr(site.stmt, "span", None), 0, 0)
        self.locals[ring] += 1
        self._enter(task, deps, [])
        return task.id

    def _enter(self, task: Task, deps: tuple, runs: list) -> None:
        """Derive the task's edges (none in a manual scope: only its deps=), wait for room in
        its ring, submit it, and keep it."""
        manual = next((s for s in reversed(self.open_scopes) if s is not None), None)
        edges = [] if manual is not None else self.tracker.lookup(task)  # a manual scope: only deps= order
        for dep in deps:
            for tid in dep if isinstance(dep, tuple) else (dep,):  # an array: every slot
                if tid is not None:  # None: no producer
                    edges.append(Edge(self.numbers[tid], task.number, -1, "explicit"))
        task.preds = tuple(sorted({e.pred for e in edges}))
        self.clock = max(self.clock, self.rings.admit(task.ring, len(task.preds), self._finish_of, task.span))
        self.clock += self.soc.chip.submit
        task.submitted = self.clock
        task.manual = manual is not None
        if manual is not None:
            manual.append(task)
        else:
            self.tracker.register(task)
        self.rings.submitted(task.number, task.ring, len(task.preds))
        self.numbers[task.id] = task.number
        self.tasks.append(task)
        self.edges.extend(edges)
        self.launches.append(runs)
        self.unapplied.append(task)
        self.unfinished.append(task)
        self.chip.add(task)

    def scope_stats(self) -> list[dict]:
        return self.rings.stats(self.tracker.entries())

    def finish(self) -> RunReport:
        """Schedule the tasks, check them for races, apply their data; the report."""
        self.rings.close(self.clock, self.tracker.entries())  # the function body's scope
        makespan = max(self.chip.drain(), self.clock)
        if not self.unsafe_races:
            races.check(self.tasks, self._accesses, self._windows)
        self._apply(self.unapplied)
        self.atomics.flush()
        report = RunReport(cycles=makespan)
        for t in sorted(self.tasks, key=lambda t: (t.start, t.number)):
            deps = tuple(self.tasks[p].name for p in t.preds)
            if not self.launches[t.number]:  # a dummy, or retired by its predicate: on no core
                report.tasks.append(TaskRecord(t.name, t.kernel, -1, t.core_type, 0, t.dispatch, t.start, t.end,
                                               t.finish, deps, retired=t.retired))
                continue
            for p, (launch, timeline) in zip(t.placements, self.launches[t.number]):
                cores = self._cores(t, p.core)
                own = timeline.report()
                pipes = {cores.get(c, c): dict(x) for c, x in own.pipe_cycles.items()}
                for core, per in pipes.items():
                    mine = report.pipe_cycles.setdefault(core, {})
                    for pipe, cycles in per.items():
                        mine[pipe] = mine.get(pipe, 0) + cycles
                report.instructions += timeline.instructions
                report.sync_instructions += timeline.sync_instructions
                report.launches += 1
                report.timelines.append((p.start, timeline.items, self._core_ids(t, p.core)))
                report.prints.extend(x.at(p.start, cores.get(x.core, x.core)) for x in timeline.prints)
                if self.on_launch is not None:
                    self.on_launch(launch.kernel, own)
                    report.trace_dirs.extend(own.trace_dirs)
                report.tasks.append(TaskRecord(t.name, t.kernel, self.soc.core_number(p.core), t.core_type, p.block,
                                               p.dispatch, p.start, p.end, p.finish, deps, pipes,
                                               issued=(timeline.items, cores)))
        report.tasks.sort(key=lambda r: (r.start, r.task_id, r.block))
        report.prints.sort(key=lambda x: (x.cycle, x.core))
        report.wall_seconds = time.perf_counter() - self.began
        return report

    def _core_ids(self, t: Task, core: CoreId) -> dict:
        """The cores a block's timeline was simulated on (cluster 0's) -> the ones it ran on
        (``core``: the block's; a mix task's, its cluster's cube core)."""
        if t.core_type == "mix":
            return dict(zip(self.soc.cluster_cores(0), self.soc.cluster_cores(core.cluster)))
        return {_canonical(core.kind): core}

    def _cores(self, t: Task, core: CoreId) -> dict:
        """Core name in a block's timeline -> the name of the core it ran on."""
        return {a.name: b.name for a, b in self._core_ids(t, core).items()}

    def _admit_together(self, blocks: int, core_type: str, span) -> None:
        """``sync_start=True``: all the blocks must fit the chip's cores of the kind at once."""
        if blocks > self._capacity(core_type):
            raise PyptoError(f"sync_start=True admits all {blocks} blocks at once, and {self.soc.name} has "
                             f"{self._capacity(core_type)} {_KINDS[core_type]}", span=span,
                             hint=f"launch at most {self._capacity(core_type)} blocks (pl.system."
                                  f"{'available_aiv_count' if core_type == 'aiv' else 'available_cluster_count'}()"
                                  "), or drop sync_start so blocks reuse cores")

    def _capacity(self, core_type: str) -> int:
        """How many blocks of ``core_type`` the chip holds at once."""
        if core_type == "aiv":
            return len(self.soc.cores(CoreKind.AIV))
        return len(self.soc.cores(CoreKind.AIC))  # a cube core, or a whole cluster



def _site(span) -> str:
    return f"{span.file}:{span.line}" if span is not None else "?"



_KINDS = {"aic": "cube cores", "aiv": "vector cores", "mix": "clusters"}






def _returned(fn: n.Function, kernel, args: tuple) -> tuple:
    """What a kernel call hands back: the tensors it returns, which are its arguments."""
    by_name = {p.name: v for p, v in zip(fn.params, args)}
    return tuple(by_name[name] for name in kernel.returns)


def _canonical(kind: CoreKind) -> CoreId:
    return CoreId(kind, 0, 0)


def _core_type(kernel) -> str:
    kinds = {p.core for p in kernel.programs}
    if kinds == {CoreKind.AIC}:
        return "aic"
    # a kernel split over both vector cores takes their cluster, as a cube-and-vector one does
    return "mix" if CoreKind.AIC in kinds or kernel.lanes > 1 else "aiv"


def _direction(d: ParamDirection) -> ArgDirection:
    """A kernel run as the entry itself: its parameters' own directions."""
    return {ParamDirection.In: ArgDirection.Input, ParamDirection.Out: ArgDirection.OutputExisting,
            ParamDirection.InOut: ArgDirection.InOut}[d]
