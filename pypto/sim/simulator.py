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

import bisect
import collections
import math
import time

import attrs
import torch

from pypto.codegen.isa import Buf, Cond, Instr, Kernel, Loop, Program, ScalarAssign, SetFlag, TensorArg, WaitFlag
from pypto.errors import ExecutionError, PyptoError, Span
from pypto.ir import nodes as n
from pypto.ir.simplify import OPERATORS
from pypto.ir.types import TensorType
from pypto.sim import numerics as num
from pypto.sim.semantics import IMPLS, OutOfRange, TileVal
from pypto.sim.soc import CoreKind, MemorySpace, Pipe, SoC


class SimulatorError(PyptoError):
    """A kernel the modeled hardware cannot run as written."""


class SimulatorHazard(SimulatorError):
    """Two pipes touch the same bytes without a sync ordering them."""


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


@attrs.define
class RunReport:
    cycles: int = 0  # simulated cycles, all launches
    pipe_cycles: dict = attrs.Factory(dict)  # core -> pipe -> busy cycles
    instructions: int = 0  # executed compute/transfer instructions
    sync_instructions: int = 0  # executed set_flag / wait_flag
    launches: int = 0
    events: list = attrs.Factory(list)  # TraceEvent, every launch, shifted to its start
    wall_seconds: float = 0.0
    trace_dir: object = None  # set when the L0 trace was written
    outputs: tuple = ()  # what the entry function returned

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

    def busy(self, pipe: str) -> list[tuple[int, int]]:
        """(start, end) of every instruction on a pipe, all cores."""
        return [(e.start, e.end) for e in self.events if e.pipe == pipe and not e.name.startswith(("set_flag",
                                                                                                   "wait_flag"))]


# ----------------------------------------------------------------------------- issue


@attrs.define(eq=False)
class _Dyn:
    """One issued instruction: the static node, and everything the scalar unit evaluated."""

    node: object
    core: CoreKind
    pipe: Pipe
    order: tuple  # program order: (loop pos, iteration, ...) then the node's pos
    scalar_cost: int
    cost: int = 1  # cycles it occupies its pipe
    latency: int = 0  # cycles after that until its data lands
    args: dict = attrs.Factory(dict)
    accesses: list = attrs.Factory(list)  # (space key, lo, hi, write)
    flag: tuple | None = None  # (src core, src pipe, dst core, dst pipe, event)
    detail: tuple = ()
    issue: int = 0
    start: int = 0
    end: int = 0
    seq: int = 0
    vc: dict | None = None
    token_from: _Dyn | None = None


@attrs.frozen
class _ConcreteBuf:
    space: MemorySpace
    addr: int
    shape: tuple
    dtype: object
    valid: tuple
    tile: str

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.nbytes


class _Issuer:
    """A core's scalar unit: runs the control flow and evaluates what each node needs."""

    def __init__(self, program: Program, scalars: dict, tensors: dict, soc: SoC, core_name: str):
        self.program = program
        self.env = dict(scalars)
        self.tensors = tensors
        self.soc = soc
        self.costs = soc.costs
        self.core = program.core
        self.core_name = core_name
        self.out: list[_Dyn] = []

    def run(self) -> list[_Dyn]:
        self.pending = 0
        self.block(self.program.body, ())
        return self.out

    def eval(self, e):
        if isinstance(e, n.Var):
            return self.env[e.name]
        if isinstance(e, n.Const):
            return e.value
        if isinstance(e, n.BinOp):
            if e.op == "and":
                return self.eval(e.lhs) and self.eval(e.rhs)
            if e.op == "or":
                return self.eval(e.lhs) or self.eval(e.rhs)
            a, b = self.eval(e.lhs), self.eval(e.rhs)
            if e.op in ("//", "%") and b == 0:
                raise SimulatorError(f"division by zero in '{e.op}' on the scalar unit")
            return OPERATORS[e.op](a, b)
        if isinstance(e, n.UnaryOp):
            v = self.eval(e.operand)
            return -v if e.op == "-" else not v
        raise TypeError(e)

    def block(self, body, path: tuple) -> None:
        for node in body:
            if isinstance(node, ScalarAssign):
                self.env[node.name] = self.eval(node.value)
                self.pending += self.costs.scalar_issue
            elif isinstance(node, Loop):
                start, stop, step = self.eval(node.start), self.eval(node.stop), self.eval(node.step)
                if step <= 0:
                    raise SimulatorError(f"loop step {step} is not positive", span=node.span)
                for k, i in enumerate(range(start, stop, step)):
                    self.env[node.var] = i
                    self.pending += self.costs.loop_iteration
                    self.block(node.body, path + (node.pos, k))
            elif isinstance(node, Cond):
                self.pending += self.costs.branch
                self.block(node.then_body if self.eval(node.cond) else node.else_body, path)
            else:
                self.issue(node, path + (node.pos,))

    def issue(self, node, order: tuple) -> None:
        cost = self.pending + self.costs.scalar_issue
        self.pending = 0
        d = _Dyn(node, self.core, node.pipe, order, cost)
        if isinstance(node, (SetFlag, WaitFlag)):
            d.flag = (node.src_core, node.src, node.dst_core, node.dst, int(self.eval(node.event)))
            d.cost = self.costs.sync_cycles
        else:
            self.prepare(node, d)
        self.out.append(d)

    # ------------------------------------------------------------------ instructions

    def buf(self, b: Buf) -> _ConcreteBuf:
        valid = b.shape if b.valid is None else tuple(int(self.eval(v)) for v in b.valid)
        return _ConcreteBuf(b.space, int(self.eval(b.addr)), tuple(b.shape), b.dtype, valid, b.tile)

    def prepare(self, ins: Instr, d: _Dyn) -> None:
        args = {}
        from pypto.ir.ops import lookup

        op = lookup(ins.op)
        for p, a in zip(op.params, ins.args):
            if isinstance(a, Buf):
                args[p.name] = self.buf(a)
            elif isinstance(a, TensorArg):
                args[p.name] = a
            elif isinstance(a, tuple):
                args[p.name] = tuple(self.eval(x) for x in a)
            elif isinstance(a, (n.Var, n.Const, n.BinOp, n.UnaryOp)):
                args[p.name] = self.eval(a)
            else:
                args[p.name] = a
        d.args = args
        bufs = [v for v in args.values() if isinstance(v, _ConcreteBuf)]
        dst = self.buf(ins.dst) if ins.dst is not None else None
        for b in bufs:
            d.accesses.append(((self.core_name, b.space), b.addr, b.addr + b.nbytes, False))
        if dst is not None:
            d.accesses.append(((self.core_name, dst.space), dst.addr, dst.addr + dst.nbytes, True))
            d.args["__dst__"] = dst
        if ins.op == "tile.load":
            d.accesses.extend(self.gm(args["tensor"].name, args["offsets"],
                                      args["shapes"] if args["valid_shape"] is None else args["valid_shape"], False))
        elif ins.op == "tile.store":
            src = args["tile"]
            d.accesses.extend(self.gm(args["output_tensor"].name, args["offsets"], src.valid, True))
        d.cost, d.latency, d.detail = _cost(ins, d.args, dst, self)

    def gm(self, tensor: str, offsets, extents, write: bool) -> list:
        """Byte ranges of a GM window, one per row (the tensor is row-major)."""
        t = self.tensors[tensor]
        shape, esize = t.shape, t.element_size()
        strides = [math.prod(shape[k + 1:]) for k in range(len(shape))]
        out = []
        rows = list(_rows(offsets[:-1], extents[:-1]))
        for row in rows:
            base = sum(o * s for o, s in zip(row, strides[:-1])) + offsets[-1]
            out.append((("gm", tensor), base * esize, (base + extents[-1]) * esize, write))
        return out


def _rows(offsets, extents):
    if not offsets:
        yield ()
        return
    for o in range(offsets[0], offsets[0] + extents[0]):
        for rest in _rows(offsets[1:], extents[1:]):
            yield (o, *rest)


def _cost(ins: Instr, args: dict, dst, issuer: _Issuer):
    """(occupancy, latency, trace detail) of one instruction: cycles it holds its pipe, and
    further cycles until its data lands (transfer pipes only)."""
    c = issuer.costs
    soc = issuer.soc
    if ins.op in ("tile.load", "tile.store"):
        if ins.op == "tile.load":
            t = issuer.tensors[args["tensor"].name]
            extents = args["shapes"] if args["valid_shape"] is None else args["valid_shape"]
            buf = dst
        else:
            t = issuer.tensors[args["output_tensor"].name]
            buf = args["tile"]
            extents = buf.valid
        esize = t.element_size()
        rows = math.prod(extents[:-1]) if len(extents) > 1 else 1
        row_bytes = extents[-1] * esize
        contiguous = len(extents) == 1 or extents[-1] == t.shape[-1]
        bpc = c.fixpipe_bytes_per_cycle if ins.pipe is Pipe.FIXPIPE else c.gm_bytes_per_cycle
        if contiguous or row_bytes >= soc.l2_cache_line:
            moved = rows * row_bytes
        else:
            moved = rows * max(row_bytes, c.short_row_bytes)
        occupancy = max(1, math.ceil(moved / bpc))
        return occupancy, c.gm_latency, (("address", buf.addr), ("bytes", rows * row_bytes), ("rows", rows),
                                         ("row_bytes", row_bytes))
    if ins.pipe is Pipe.MTE1 or ins.pipe is Pipe.FIXPIPE:
        src = args["tile"]
        bpc = c.l1_bytes_per_cycle if ins.pipe is Pipe.MTE1 else c.fixpipe_bytes_per_cycle
        return max(1, math.ceil(src.nbytes / bpc)), c.mte1_latency, (("address", dst.addr), ("bytes", src.nbytes))
    if ins.pipe is Pipe.CUBE:
        lhs, rhs = args["lhs"], args["rhs"]
        m, k = lhs.shape
        nn = rhs.shape[1]
        fractals = math.ceil(m / 16) * math.ceil(k / 16) * math.ceil(nn / 16)
        return c.cube_startup + fractals * c.cube_cycles_per_fractal, 0, (("address", dst.addr),
                                                                          ("fractals", fractals))
    # the vector unit: 256 B repeats over the region it works on, masked at row tails
    work = dst
    if ins.op in ("tile.row_sum", "tile.row_max", "tile.row_min", "tile.col_sum", "tile.col_max", "tile.col_min"):
        work = args["tile"]
    elem = work.dtype.nbytes
    lanes = c.vector_repeat_bytes // elem
    valid = work.valid
    if tuple(valid) == tuple(work.shape):
        total = math.prod(valid)
        repeats = max(1, math.ceil(total / lanes))
    else:
        rows = math.prod(valid[:-1]) if len(valid) > 1 else 1
        repeats = max(1, rows * math.ceil(valid[-1] / lanes))
        total = rows * valid[-1]
    per = c.vector_cycles.get(ins.op.split(".")[-1], 1)
    utilization = round(100.0 * total / (repeats * lanes), 2)
    return c.vector_startup + repeats * per, 0, (("address", dst.addr), ("repeats", repeats),
                                                 ("vector_utilization_percentage", utilization))


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
        streams[program.core] = _Issuer(program, scalars, tensors, soc, names[program.core]).run()
    report = RunReport(launches=1)
    leftover = _schedule(streams, soc, names, report)
    if leftover and not unsafe:
        (src_core, src, dst_core, dst, event), count = leftover[0]
        raise SimulatorError(f"flag {names[src_core]}.{src.value} -> {names[dst_core]}.{dst.value} event {event} is "
                             f"set {count} more time(s) than waited for when the kernel ends",
                             hint="every set_flag needs its wait_flag: the sync program is unbalanced")
    dyns = [d for s in streams.values() for d in s]
    _clocks(dyns)
    if not unsafe:
        _check_races(dyns, names)
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
            events.append(TraceEvent(names[key], Pipe.SCALAR.value, f"issue {_name(d)}", t - d.scalar_cost, t,
                                     getattr(d.node, "span", None)))
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
            events.append(TraceEvent(names[key[0]], key[1].value, _name(d), d.start, d.end,
                                     getattr(d.node, "span", None), d.detail))
    report.cycles = max([e.end for e in events] + [0])
    for s in streams.values():
        for d in s:
            core = report.pipe_cycles.setdefault(names[d.core], {})
            core[d.pipe.value] = core.get(d.pipe.value, 0) + d.cost
    report.instructions = sum(1 for s in streams.values() for d in s if isinstance(d.node, Instr))
    report.sync_instructions = sum(1 for s in streams.values() for d in s if not isinstance(d.node, Instr))
    return [(k, len(v)) for k, v in tokens.items() if v]


_PIPE_RANK = {p: k for k, p in enumerate(Pipe)}


def _name(d: _Dyn) -> str:
    node = d.node
    if isinstance(node, (SetFlag, WaitFlag)):
        kind = "set_flag" if isinstance(node, SetFlag) else "wait_flag"
        return f"{kind}({node.src.value}->{node.dst.value}, {d.flag[4]})"
    return f"{node.mnemonic} {node.note}".strip()


def _deadlock(stuck, names) -> SimulatorDeadlock:
    waits = ", ".join(f"{names[d.core]}.{d.pipe.value} {_name(d)}" for d in stuck[:4])
    return SimulatorDeadlock(f"the kernel deadlocks: {waits} wait(s) for flags nobody sets",
                             hint="a wait_flag without its set_flag: the sync program is broken")


def _clocks(dyns: list) -> None:
    """Vector clocks at each instruction's start: its pipe's history, and through every
    wait_flag, the history of the set_flag it consumed."""
    clocks: dict[tuple, dict] = collections.defaultdict(dict)
    counters: dict[tuple, int] = collections.defaultdict(int)
    for d in sorted(dyns, key=lambda x: (x.start, 0 if isinstance(x.node, SetFlag) else 1, x.order)):
        key = (d.core, d.pipe)
        counters[key] += 1
        d.seq = counters[key]
        vc = clocks[key]
        if d.token_from is not None:
            for k, v in d.token_from.vc.items():
                if v > vc.get(k, 0):
                    vc[k] = v
        vc[key] = d.seq
        d.vc = dict(vc)


class _Shadow:
    """Per address space: for each byte segment, its last writer and readers since."""

    def __init__(self):
        self.bounds: list[int] = []
        self.info: list = []  # info[k] covers [bounds[k], bounds[k+1])

    def _split(self, x: int) -> int:
        k = bisect.bisect_left(self.bounds, x)
        if k < len(self.bounds) and self.bounds[k] == x:
            return k
        prev = self.info[k - 1] if k > 0 else None
        self.bounds.insert(k, x)
        self.info.insert(k, None if prev is None or k == len(self.info) else (prev[0], dict(prev[1])))
        return k

    def access(self, lo: int, hi: int):
        """The segment indices covering [lo, hi), created as needed."""
        a = self._split(lo)
        b = self._split(hi)
        return range(a, b)


def _check_races(dyns: list, names: dict) -> None:
    shadows: dict = collections.defaultdict(_Shadow)
    for d in sorted(dyns, key=lambda x: x.order):
        if not isinstance(d.node, Instr):
            continue
        key = (d.core, d.pipe)
        for space, lo, hi, write in d.accesses:
            if hi <= lo:
                continue
            sh = shadows[space]
            for k in sh.access(lo, hi):
                info = sh.info[k] or (None, {})
                writer, readers = info
                others = [writer] if writer is not None else []
                if write:
                    others += list(readers.values())
                for u in others:
                    if u is d or (u.core, u.pipe) == key:
                        continue
                    if d.vc.get((u.core, u.pipe), 0) < u.seq:
                        raise _hazard(u, d, space, sh.bounds[k], sh.bounds[k + 1], names)
                sh.info[k] = (d, {}) if write else (writer, {**readers, key: d})


def _hazard(u: _Dyn, v: _Dyn, space, lo: int, hi: int, names: dict) -> SimulatorHazard:
    def who(d):
        where = f" at {d.node.span}" if getattr(d.node, "span", None) is not None else ""
        return f"{names[d.core]}.{d.pipe.value} `{_name(d)}`{where}"

    overlapped = u.start < v.end and v.start < u.end
    place = f"GM tensor '{space[1]}'" if space[0] == "gm" else f"{space[0]} {space[1].name}"
    u_writes = any(w for s, a, b, w in u.accesses if s == space and a < hi and lo < b)
    return SimulatorHazard(
        f"{who(v)} {'writes' if any(w for s, a, b, w in v.accesses if s == space) else 'reads'} bytes "
        f"[{lo}, {hi}) of {place} that {who(u)} {'writes' if u_writes else 'reads'}, and no sync orders them "
        f"(they {'overlapped' if overlapped else 'did not overlap'} in time in this run)",
        span=getattr(v.node, "span", None),
        hint="the sync program misses a set_flag/wait_flag between these pipes")


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


def _read(memories, core, b: _ConcreteBuf) -> TileVal:
    mem = memories[(core, b.space)]
    raw = mem[b.addr: b.addr + b.nbytes].clone()
    data = raw.view(num.TORCH[b.dtype]).reshape(b.shape)
    return TileVal(data, tuple(b.valid))


def _begin(d: _Dyn, memories, tensors, core):
    ins: Instr = d.node
    kwargs = {}
    for name, v in d.args.items():
        if name == "__dst__":
            continue
        if isinstance(v, _ConcreteBuf):
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
    raw = data.contiguous().view(torch.uint8).reshape(-1)
    memories[(core, b.space)][b.addr: b.addr + raw.numel()] = raw

