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

import attrs
import torch

from pypto.codegen.isa import Instr, Kernel, SetFlag, TensorArg, WaitFlag
from pypto.errors import ExecutionError, Span
from pypto.ir.types import TensorType
from pypto.sim import numerics as num
from pypto.sim.hazards import SimulatorHazard, check_races, clocks
from pypto.sim.issue import ConcreteBuf, Dyn, Issuer, SimulatorError
from pypto.sim.semantics import IMPLS, OutOfRange, TileVal
from pypto.backend import CoreKind, Pipe, SoC

__all__ = ["RunReport", "SimulatorDeadlock", "SimulatorError", "SimulatorHazard", "TraceEvent", "run_kernel"]


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
    events: list = attrs.Factory(list)  # TraceEvent, every launch, shifted to its start
    wall_seconds: float = 0.0
    trace_dirs: list = attrs.Factory(list)  # OPPROF_* directories of the L0 traces written
    outputs: tuple = ()  # what the entry function returned

    @property
    def trace_dir(self):
        """The last launch's L0 trace directory (``RunConfig(enable_l0_trace=True)``)."""
        return self.trace_dirs[-1] if self.trace_dirs else None

    def merge(self, other: RunReport) -> None:
        shift = self.cycles
        self.events.extend(attrs.evolve(e, start=e.start + shift, end=e.end + shift) for e in other.events)
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


def run_kernel(kernel: Kernel, args: tuple, soc: SoC, *, unsafe: bool = False) -> tuple[tuple, RunReport]:
    """Run one launch of ``kernel`` on one cluster; GM tensors are written in place."""
    began = time.perf_counter()
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
    memories = {(names[c], space): torch.zeros(spec.physical or spec.capacity, dtype=torch.uint8)
                for space, spec in soc.spaces.items() for c in streams if spec.core is c}
    _execute(dyns, memories, tensors, names)
    report.wall_seconds = time.perf_counter() - began
    return (), report


def _schedule(streams: dict, soc: SoC, names: dict, report: RunReport) -> None:
    """Start and end times: scalar issue into bounded in-order pipe queues; flags as tokens."""
    depth = soc.costs.queue_depth
    cursor = {c: 0 for c in streams}  # next item to issue, per core
    scalar_time = {c: 0 for c in streams}
    queues: dict[tuple, collections.deque] = collections.defaultdict(collections.deque)
    busy = collections.defaultdict(int)  # when each pipe can start its next instruction
    landed = collections.defaultdict(int)  # when everything each pipe started has landed
    tokens: dict[tuple, collections.deque] = collections.defaultdict(collections.deque)
    events = report.events
    while True:
        best = None  # (time, rank, kind, key)
        for c, stream in streams.items():
            if cursor[c] < len(stream):
                d = stream[cursor[c]]
                if len(queues[(c, d.pipe)]) < depth:
                    t = scalar_time[c] + d.scalar_cost
                    cand = (t, 1, _PIPE_RANK[Pipe.SCALAR], c.value, "issue", c)
                    best = cand if best is None or cand < best else best
        for key, q in queues.items():
            if not q:
                continue
            d = q[0]
            t = max(d.issue, busy[key])
            if isinstance(d.node, SetFlag):
                t = max(t, landed[key])
            elif isinstance(d.node, WaitFlag):
                pending = tokens[d.flag]
                if not pending:
                    continue
                t = max(t, pending[0][0])
            cand = (t, 0, _PIPE_RANK[key[1]], key[0].value, "start", key)
            best = cand if best is None or cand < best else best
        if best is None:
            stuck = [q[0] for q in queues.values() if q]
            if stuck or any(cursor[c] < len(s) for c, s in streams.items()):
                raise _deadlock(stuck, names)
            break
        t, _, _, _, kind, key = best
        if kind == "issue":
            d = streams[key][cursor[key]]
            cursor[key] += 1
            d.issue = t
            events.append(TraceEvent(names[key], Pipe.SCALAR.value, f"issue {d.name()}", t - d.scalar_cost, t,
                                     getattr(d.node, "span", None), kind="issue", pos=d.node.pos))
            scalar_time[key] = t
            queues[(key, d.pipe)].append(d)
        else:
            d = queues[key].popleft()
            d.start, d.end = t, t + d.cost + d.latency
            busy[key] = t + d.cost
            landed[key] = max(landed[key], d.end)
            if isinstance(d.node, SetFlag):
                tokens[d.flag].append((d.end, d))
            elif isinstance(d.node, WaitFlag):
                d.token_from = tokens[d.flag].popleft()[1]
            kind = "set_flag" if isinstance(d.node, SetFlag) else "wait_flag" if isinstance(d.node, WaitFlag) \
                else "instr"
            flag = () if d.flag is None else (names[d.flag[0]], d.flag[1].value, names[d.flag[2]], d.flag[3].value,
                                              d.flag[4])
            events.append(TraceEvent(names[key[0]], key[1].value, d.name(), d.start, d.end,
                                     getattr(d.node, "span", None), d.detail, kind, d.node.pos, flag))
    report.cycles = max([e.end for e in events] + [0])
    for s in streams.values():
        for d in s:
            core = report.pipe_cycles.setdefault(names[d.core], {})
            core[d.pipe.value] = core.get(d.pipe.value, 0) + d.cost
    report.instructions = sum(1 for s in streams.values() for d in s if isinstance(d.node, Instr))
    report.sync_instructions = sum(1 for s in streams.values() for d in s if not isinstance(d.node, Instr))
    return [(k, len(v)) for k, v in tokens.items() if v]


_PIPE_RANK = {p: k for k, p in enumerate(Pipe)}


def _deadlock(stuck, names) -> SimulatorDeadlock:
    waits = ", ".join(f"{names[d.core]}.{d.pipe.value} {d.name()}" for d in stuck[:4])
    return SimulatorDeadlock(f"the kernel deadlocks: {waits} wait(s) for flags nobody sets",
                             hint="a wait_flag without its set_flag: the sync program is broken")


def _execute(dyns: list, memories: dict, tensors: dict, names: dict) -> None:
    """Data effects in simulated time: operands read at start, results written at end."""
    points = []
    for d in dyns:
        if isinstance(d.node, Instr):
            points.append((d.start, 1, d.order, d, "begin"))
            points.append((d.end, 0, d.order, d, "end"))
    points.sort(key=lambda p: p[:3])
    pending: dict[int, object] = {}
    for _, _, _, d, phase in points:
        core = names[d.core]
        if phase == "begin":
            pending[id(d)] = _begin(d, memories, tensors, core)
        else:
            _commit(pending.pop(id(d)), memories, core)


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

