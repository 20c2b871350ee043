"""The cycle-level simulator of an AI-core cluster (one AIC and one AIV core here).

Each core's scalar unit walks its program in order, evaluating scalars and issuing every
instruction into its pipe's queue; each pipe runs its queue in order, one instruction at
a time, concurrently with the other pipes and cores, held back only by wait_flag. Costs
come from the SoC table. Then the data: every instruction reads its operands when it
starts and writes its result when it ends, in simulated-time order, on byte-addressed
on-chip memories and the GM tensors — with the op semantics the interpreter uses, so a
race-free program computes the interpreter's bits.

Hazards: two instructions on different pipes that touch the same bytes (one writing),
which the flags do not order, are a ``SimulatorHazard`` — whether or not this run's
timing happened to overlap them — unless ``unsafe``, where the data corrupts as hardware
would. Vector clocks carried through the flags decide "ordered".
"""

from __future__ import annotations

import collections
import time
import weakref

import attrs
import torch

from pypto.codegen.isa import Instr, Kernel, SetFlag, TensorArg, WaitFlag
from pypto.errors import ExecutionError, Span
from pypto.ir.types import TensorType
from pypto.sim import numerics as num
from pypto.sim.hazards import SimulatorHazard, check_races, clocks
from pypto.sim.issue import ConcreteBuf, Dyn, Issuer, SimulatorError, item_name
from pypto.sim.semantics import IMPLS, OutOfRange, TileVal
from pypto.backend import CoreKind, Pipe, SoC

__all__ = ["RunReport", "SimulatorDeadlock", "SimulatorError", "SimulatorHazard", "Timeline", "TraceEvent", "apply",
           "run_kernel", "simulate"]


class SimulatorDeadlock(SimulatorError):
    """Pipes wait for flags nobody will set."""


# ----------------------------------------------------------------------------- results


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


@attrs.define
class RunReport:
    cycles: int = 0  # simulated cycles, all launches
    # core -> pipe -> cycles the pipe was occupied. A transfer holds its pipe for its bytes;
    # its landing latency overlaps the next transfer, so trace slices (issue to landing) are longer.
    pipe_cycles: dict = attrs.Factory(dict)
    instructions: int = 0  # executed compute/transfer instructions
    sync_instructions: int = 0  # executed set_flag / wait_flag
    launches: int = 0
    # Each launch's timeline: (cycle it starts at, core names, its issued items). The trace
    # slices are built from it only when asked (``events``).
    timelines: list = attrs.Factory(list)
    wall_seconds: float = 0.0
    trace_dirs: list = attrs.Factory(list)  # OPPROF_* directories of the L0 traces written
    outputs: tuple = ()  # what the entry function returned
    _events: list | None = attrs.field(default=None, init=False, repr=False, eq=False)

    @property
    def events(self) -> list:
        """TraceEvent of every launch, shifted to its start: the scalar unit's issue slices
        and every pipe's, in start order."""
        if self._events is None:
            out = []
            for shift, names, items in self.timelines:
                out.extend(_trace_events(items, names, shift))
            out.sort(key=lambda e: e.start)
            self._events = out
        return self._events

    @property
    def trace_dir(self):
        """The last launch's L0 trace directory (``RunConfig(enable_l0_trace=True)``)."""
        return self.trace_dirs[-1] if self.trace_dirs else None

    def merge(self, other: RunReport) -> None:
        shift = self.cycles
        self.timelines.extend((s + shift, names, items) for s, names, items in other.timelines)
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

    def busy(self, pipe: str) -> list[tuple[int, int]]:
        """(start, end) of every instruction on a pipe, all cores."""
        return [(e.start, e.end) for e in self.events if e.pipe == pipe and e.kind == "instr"]


# ----------------------------------------------------------------------------- machine


@attrs.frozen(eq=False)
class Timeline:
    """One launch in simulated time, before any data moves: what each pipe does when, the
    trace items, and the data effects in time order (each instruction reads its operands
    at its start and writes its result at its end). Pure: a function of the kernel, its
    scalar arguments and where its tensors lie, so a launch like an earlier one reuses it."""

    names: dict  # core kind -> the core's name in traces
    effects: tuple  # (time, 0 end / 1 begin, program order, item), sorted
    items: list  # the trace items: (node, core, pipe, flag, issue, scalar cost, start, end, detail)
    cycles: int
    pipe_cycles: dict
    instructions: int
    sync_instructions: int
    memories: tuple  # (core name, space, bytes) of the on-chip memories it uses

    def report(self) -> RunReport:
        return RunReport(cycles=self.cycles, pipe_cycles={c: dict(p) for c, p in self.pipe_cycles.items()},
                         instructions=self.instructions, sync_instructions=self.sync_instructions, launches=1,
                         timelines=[(0, self.names, self.items)])


def run_kernel(kernel: Kernel, args: tuple, soc: SoC, *, unsafe: bool = False) -> tuple[tuple, RunReport]:
    """Run one launch of ``kernel`` on one cluster; GM tensors are written in place."""
    began = time.perf_counter()
    timeline = simulate(kernel, args, soc, unsafe=unsafe)
    apply(timeline, {name: value for (name, t), value in zip(kernel.params, args) if isinstance(t, TensorType)})
    report = timeline.report()
    report.wall_seconds = time.perf_counter() - began
    return (), report


def simulate(kernel: Kernel, args: tuple, soc: SoC, *, unsafe: bool = False) -> Timeline:
    """The launch's Timeline (a hazard or deadlock raises here), remembered per kernel for
    the same scalar arguments and tensor layouts: control flow reads no tensor data."""
    key = (id(soc), unsafe) + tuple(
        (value.data_ptr(), tuple(value.shape), value.stride(), value.dtype) if isinstance(t, TensorType) else value
        for (_, t), value in zip(kernel.params, args))
    cache = _timelines(kernel)
    if key not in cache:
        if len(cache) >= _KEPT:
            cache.pop(next(iter(cache)))
        cache[key] = _simulate(kernel, args, soc, unsafe)
    return cache[key]


_KEPT = 4  # timelines remembered per kernel (the sizes and placements a program calls it with)
_CACHES: dict[int, tuple] = {}  # id(kernel) -> (weak reference, {key: Timeline})


def _timelines(kernel: Kernel) -> dict:
    entry = _CACHES.get(id(kernel))
    if entry is None or entry[0]() is not kernel:
        ident = id(kernel)
        entry = (weakref.ref(kernel, lambda _: _CACHES.pop(ident, None)), {})
        _CACHES[ident] = entry
    return entry[1]


def _simulate(kernel: Kernel, args: tuple, soc: SoC, unsafe: bool) -> Timeline:
    scalars, tensors = {}, {}
    for (name, t), value in zip(kernel.params, args):
        if isinstance(t, TensorType):
            tensors[name] = value
        else:
            scalars[name] = value
    names = {CoreKind.AIC: "aic0", CoreKind.AIV: "aiv0"}
    streams = {}
    for program in kernel.programs:
        streams[program.core] = Issuer(program, scalars, tensors, soc, names[program.core]).run()
    report = RunReport(launches=1)
    leftover = _schedule(streams, soc, names, report)
    if leftover and not unsafe:
        (src_core, src, dst_core, dst, event), count = leftover[0]
        raise SimulatorError(f"flag {names[src_core]}.{src.value} -> {names[dst_core]}.{dst.value} event {event} is "
                             f"set {count} more time(s) than waited for when the kernel ends",
                             hint="every set_flag needs its wait_flag: the sync program is unbalanced")
    dyns = [d for s in streams.values() for d in s]
    clocks(dyns)
    if not unsafe:
        check_races(dyns, names)
    effects = []
    for d in dyns:
        if isinstance(d.node, Instr):
            effects.append((d.start, 1, d.order, d))
            effects.append((d.end, 0, d.order, d))
    effects.sort(key=lambda p: p[:3])
    items = [(d.node, d.core, d.pipe, d.flag, d.issue, d.scalar_cost, d.start, d.end, d.detail) for d in dyns]
    memories = tuple((names[c], space, spec.physical or spec.capacity)
                     for space, spec in soc.spaces.items() for c in streams if spec.core is c)
    return Timeline(names, tuple(effects), items, report.cycles, report.pipe_cycles, report.instructions,
                    report.sync_instructions, memories)


def apply(timeline: Timeline, tensors: dict) -> None:
    """Perform a timeline's data effects, in time order, on fresh on-chip memories and on
    the GM tensors (by parameter name), which are written in place."""
    memories = {(core, space): torch.zeros(size, dtype=torch.uint8) for core, space, size in timeline.memories}
    names = timeline.names
    pending: dict[int, object] = {}
    for _, phase, _, d in timeline.effects:
        core = names[d.core]
        if phase:
            pending[id(d)] = _begin(d, memories, tensors, core)
        else:
            _commit(pending.pop(id(d)), memories, core)


def _schedule(streams: dict, soc: SoC, names: dict, report: RunReport) -> list:
    """Start and end times in one pass over each core's stream, in issue order.

    The scalar unit issues in order, ``scalar_cost`` after its previous issue, and stalls
    while its pipe's queue holds ``queue_depth`` issued instructions that have not started.
    A pipe starts its queue in order: when the instruction is issued, the pipe is free, and
    — a set_flag — everything the pipe started has landed, or — a wait_flag — its token
    (the matching set_flag's landing) exists. Each time is a function of earlier ones, so
    the pass only waits where a wait_flag's token comes from a stream not yet that far; it
    switches to the stream that sets it. Returns the flags set more often than waited for."""
    depth = soc.costs.queue_depth
    cursor = dict.fromkeys(streams, 0)  # next item to issue, per core
    scalar_time = dict.fromkeys(streams, 0)
    pending: dict[tuple, collections.deque] = collections.defaultdict(collections.deque)  # issued, not started
    starts: dict[tuple, list] = collections.defaultdict(list)  # start times, in issue order, per pipe
    issued: dict[tuple, int] = collections.defaultdict(int)
    busy = collections.defaultdict(int)  # when each pipe can start its next instruction
    landed = collections.defaultdict(int)  # when everything each pipe started has landed
    tokens: dict[tuple, collections.deque] = collections.defaultdict(collections.deque)
    waiting: dict[tuple, tuple] = {}  # flag -> the pipe whose head waits for it

    def start(key) -> None:
        """Start what the pipe can, in order; a set_flag may let its waiting pipe go on."""
        q = pending[key]
        while q:
            d = q[0]
            t = d.issue if d.issue > busy[key] else busy[key]
            node = d.node
            if isinstance(node, SetFlag):
                t = max(t, landed[key])
            elif isinstance(node, WaitFlag):
                got = tokens[d.flag]
                if not got:
                    waiting[d.flag] = key
                    return
                t = max(t, got[0][0])
                d.token_from = got.popleft()[1]
            q.popleft()
            d.start, d.end = t, t + d.cost + d.latency
            busy[key] = t + d.cost
            if d.end > landed[key]:
                landed[key] = d.end
            starts[key].append(t)
            if isinstance(node, SetFlag):
                tokens[d.flag].append((d.end, d))
                other = waiting.pop(d.flag, None)
                if other is not None:
                    ready.append(other)

    def issue(c) -> None:
        """Issue what the core can; stop where a full queue's head has not started yet."""
        stream, k = streams[c], cursor[c]
        t_scalar = scalar_time[c]
        while k < len(stream):
            d = stream[k]
            key = (c, d.pipe)
            t = t_scalar + d.scalar_cost
            n = issued[key]
            if n >= depth:
                free = starts[key]
                if len(free) <= n - depth:  # the queue is full of what has not started
                    break
                t = max(t, free[n - depth])
            d.issue = t_scalar = t
            issued[key] = n + 1
            k += 1
            pending[key].append(d)
            start(key)
        cursor[c], scalar_time[c] = k, t_scalar

    ready: list = []
    progress = True
    while progress:
        progress = False
        for c in streams:
            before = cursor[c]
            issue(c)
            progress = progress or cursor[c] != before
        while ready:
            start(ready.pop())
            progress = True
    stuck = [q[0] for q in pending.values() if q]
    if stuck or any(cursor[c] < len(s) for c, s in streams.items()):
        raise _deadlock(stuck, names)
    report.cycles = max((d.end for s in streams.values() for d in s), default=0)
    for s in streams.values():
        for d in s:
            core = report.pipe_cycles.setdefault(names[d.core], {})
            core[d.pipe.value] = core.get(d.pipe.value, 0) + d.cost
    report.instructions = sum(1 for s in streams.values() for d in s if isinstance(d.node, Instr))
    report.sync_instructions = sum(1 for s in streams.values() for d in s if not isinstance(d.node, Instr))
    return [(k, len(v)) for k, v in tokens.items() if v]


def _trace_events(items, names: dict, shift: int):
    """The trace slices of one launch's timeline: each item's issue on the scalar unit, and
    its run on its pipe."""
    scalar = Pipe.SCALAR.value
    for node, core, pipe, flag, issue, scalar_cost, start, end, detail in items:
        span = getattr(node, "span", None)
        name = item_name(node, flag)
        yield TraceEvent(names[core], scalar, f"issue {name}", issue - scalar_cost + shift, issue + shift, span,
                         kind="issue", pos=node.pos)
        kind = "set_flag" if isinstance(node, SetFlag) else "wait_flag" if isinstance(node, WaitFlag) else "instr"
        shown = () if flag is None else (names[flag[0]], flag[1].value, names[flag[2]], flag[3].value, flag[4])
        yield TraceEvent(names[core], pipe.value, name, start + shift, end + shift, span, detail, kind, node.pos,
                         shown)



def _deadlock(stuck, names) -> SimulatorDeadlock:
    waits = ", ".join(f"{names[d.core]}.{d.pipe.value} {d.name()}" for d in stuck[:4])
    return SimulatorDeadlock(f"the kernel deadlocks: {waits} wait(s) for flags nobody sets",
                             hint="a wait_flag without its set_flag: the sync program is broken")


def _read(memories, core, b: ConcreteBuf) -> TileVal:
    mem = memories[(core, b.space)]
    raw = mem[b.addr: b.addr + b.nbytes].clone()
    data = raw.view(num.TORCH[b.dtype]).reshape(b.shape)
    return TileVal(data, tuple(b.valid))


def _begin(d: Dyn, memories, tensors, core):
    ins: Instr = d.node
    kwargs = {}
    for name, v in d.args.items():
        if name == "__dst__":
            continue
        if isinstance(v, ConcreteBuf):
            kwargs[name] = _read(memories, core, v)
        elif isinstance(v, TensorArg):
            kwargs[name] = tensors[v.name]
        else:
            kwargs[name] = v
    try:
        if ins.op == "tile.store":
            tile = kwargs["tile"]
            region = tile.region()
            out = kwargs["output_tensor"]
            if region.dtype != out.dtype:
                region = num.cast(region, num.FROM_TORCH[out.dtype], "rint")
            index = tuple(slice(o, o + e) for o, e in zip(kwargs["offsets"], region.shape))
            for axis, (o, e, dim) in enumerate(zip(kwargs["offsets"], region.shape, out.shape)):
                if o < 0 or o + e > dim:
                    raise OutOfRange(f"store region [{o}, {o + e}) on axis {axis} is outside the tensor's [0, {dim})")
            return ("gm", out, index, region.clone())
        data = IMPLS[ins.op](**kwargs)
    except (OutOfRange, num.ArithmeticError_) as exc:
        raise ExecutionError(f"{ins.op}: {exc}", span=ins.span) from None
    return ("buf", d.args["__dst__"], data)


def _commit(write, memories, core) -> None:
    if write[0] == "gm":
        _, tensor, index, data = write
        tensor[index] = data
        return
    _, b, data = write
    # flattened first: torch calls an [N, 1] tensor with a long stride contiguous, and will
    # not reinterpret it as bytes
    raw = data.contiguous().reshape(-1).view(torch.uint8)
    memories[(core, b.space)][b.addr: b.addr + raw.numel()] = raw

