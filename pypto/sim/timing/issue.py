"""A core's scalar unit: it walks its program in order, runs the control flow, and for
each instruction it issues evaluates what the pipes will need — concrete addresses and
valid extents, the byte ranges it touches, and its cost from the SoC table (``costs``)."""

from __future__ import annotations

import weakref

import attrs

from pypto.codegen.isa import (
    Buf,
    Cond,
    Instr,
    Loop,
    Program,
    ScalarAssign,
    ScalarArray,
    ScalarLoad,
    SetFlag,
    WaitFlag,
)
from pypto.codegen.comm import CROSS_RANK, FENCED
from pypto.errors import PyptoError
from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.simplify import DIVISIONS, OPERATORS, SHIFTS
from pypto.backend import CoreId, CoreKind, MemorySpace, Pipe, SoC
from pypto.lang.flow.index_bounds import len_of
from pypto.sim.reports import progress
from pypto.sim.reports.run_report import item_name
from pypto.sim.timing.affine import uniform_trips
from pypto.sim.timing.costs import INDEXED, cost
from pypto.ir.types import DataType
from pypto.sim.ops.semantics import EXTENT_HINT, IMPLS, INDEX_HINT, OutOfRange, invalid_extent
from pypto.sim.accesses.views import window_runs


class SimulatorError(PyptoError):
    """A kernel the modeled hardware cannot run as written."""


@attrs.define(eq=False)
class Dyn:
    """One issued instruction: the static node, and everything the scalar unit evaluated."""

    node: object
    core: CoreId  # the core instance that issues it
    pipe: Pipe
    order: tuple  # program order: (loop pos, iteration, ...) then the node's pos
    scalar_cost: int
    cost: int = 1  # cycles it occupies its pipe
    latency: int = 0  # cycles after that until its data lands
    args: dict = attrs.Factory(dict)
    accesses: list = attrs.Factory(list)  # (space key, lo, hi, write)
    flag: tuple | None = None  # (src core, src pipe, dst core, dst pipe, event), cores as instances
    detail: tuple = ()
    issue: int = 0
    start: int = 0
    end: int = 0
    vc: tuple | None = None  # its clock (``happens``): pipe, sequence number, what it learnt
    gm: tuple | None = None  # (parameter, address of its element 0) of the GM tensor a load or store moves
    whole: tuple | None = None  # a transfer by index: the shape of that tensor, any element of which it may move
    launch: int = 0  # which of the launches simulated together issued it (its tensors are that launch's)
    key: int = 0  # its pipe on its core, as one integer among everything simulated together
    value: object = None  # what an element read from a tile gave (``Instr.result``), once it has run
    timed: bool = False  # a cross-rank record: its cycles are known when it starts (``pypto.sim.data.ranks``)
    fenced: bool = False  # it starts after everything its core issued before it has landed

    def name(self) -> str:
        return item_name(self.node, self.flag)


PIPE_NUMBER = {p: k for k, p in enumerate(Pipe)}

# A loop of fewer trips is simulated trip by trip: comparing states costs more than it saves.
STEADY_MIN_TRIPS = 16


class Boundary:
    """The top of trip ``k`` of a loop whose trips are uniform (``affine``), yielded in the
    stream where the scheduler may compare its state with the trip before's and set
    ``skip``: how many trips the scalar unit then jumps (they are produced from the last
    one simulated, ``steady``). ``pending``: the scalar cycles spent since the last issue,
    which are the state of the scalar unit. ``give_up``: no more boundaries for this loop.
    ``period``: the trips after which they are alike (``affine``)."""

    __slots__ = ("loop", "trips", "period", "k", "pending", "skip", "give_up")

    def __init__(self, loop, trips: int, period: int = 1):
        self.loop, self.trips, self.period = loop, trips, period
        self.k = self.pending = self.skip = 0
        self.give_up = False

# GM is one space at real addresses: a tensor parameter's bytes are where its view puts them.
GM = ("gm", "memory")


@attrs.frozen
class ConcreteBuf:
    space: MemorySpace
    addr: int
    shape: tuple
    dtype: object
    valid: tuple
    tile: str
    nbytes: int  # the whole tile's: shape times element size


class Issuer:
    """A core's scalar unit: runs the control flow and evaluates what each node needs."""

    def __init__(self, program: Program, scalars: dict, tensors: dict, soc: SoC, peers: dict, launch: int = 0,
                 number: int = 0, unwritten: frozenset = frozenset()):
        """``peers``: the core instance of each core kind the kernel runs on (its own among
        them), which its flags name (the AIV's a tuple of both lanes where the cube of a
        split kernel sets or waits for each); ``launch``: which of the launches simulated together;
        ``number``: this core's among the cores simulated together (its pipes' ``key``s);
        ``unwritten``: the tensors in storage no launch writes (their loads need no
        hazard check)."""
        self.program = program
        self.env = dict(scalars)
        self.tensors = tensors
        # per pl.system.syncall this core reaches, in order: the cycles the barrier holds it
        # past its own arrival (the chip's, from the other blocks: ``pypto.chip.barriers``)
        self.holds: tuple = ()
        self.syncalls = 0
        self.soc = soc
        self.costs = soc.costs
        self.core = peers[program.core]
        self.peers = peers
        # the cube core of a kernel split over both vector cores: its flags with "the AIV" go to each
        lanes = peers.get(CoreKind.AIV)
        self.lanes = lanes if isinstance(lanes, tuple) else ()
        self.launch = launch
        self.key_base = number * len(PIPE_NUMBER)
        self.unwritten = unwritten
        self.pending = 0  # scalar cycles spent since the last issue
        self.steady = False  # yield a Boundary at the top of each trip of a uniform loop
        # made once per program, whatever launch runs it (``_prepared``)
        self.fns, self.plans = _prepared(program)

    def stream(self):
        """The issued instructions, in order, made as the consumer asks for them: a long
        kernel's records live only between their issue and their start."""
        return self.block(self.program.body, ())

    def eval(self, e, span=None):
        """``e``'s value; an error computing it (a division by zero) located at ``span``."""
        try:
            return self.compiled(e)(self.env)
        except SimulatorError as err:
            raise err.with_span(span) from None

    def compiled(self, e):
        """``e`` as a function of the scalar environment, made once per expression node:
        the scalar unit evaluates the same address and extent expressions every trip, and
        every launch of the program."""
        fn = self.fns.get(id(e))
        if fn is None:
            fn = self.fns[id(e)] = _closure(e)
        return fn

    def block(self, body, path: tuple):
        for node in body:
            if isinstance(node, ScalarAssign):
                self.env[node.name] = self.eval(node.value, node.span)
                self.pending += self.costs.scalar_issue
            elif isinstance(node, ScalarLoad):
                self.env[node.name] = self.load_scalar(node)
                self.pending += self.costs.scalar_gm_read
            elif isinstance(node, ScalarArray):
                self.env[node.name] = self.array(node)
                self.pending += self.costs.scalar_issue
            elif isinstance(node, Loop) and not node.bounded:
                yield from self.while_loop(node, path)
            elif isinstance(node, Loop):
                start, stop, step = (self.eval(e, node.span) for e in (node.start, node.stop, node.step))
                if step <= 0:
                    raise SimulatorError(f"loop step {step} is not positive", span=node.span)
                trips = len_of(start, stop, step)  # (however large: a run-time count may pass the C size)
                mark = None
                if self.steady and trips >= STEADY_MIN_TRIPS:
                    period = uniform_trips(node, self.env, start, step)
                    if period and trips >= 4 * period + 2:
                        mark = Boundary(node, trips, period)
                # a long one on the progress line with the time it has left — once it will not be fast-forwarded
                where = f"{progress.loop_at(node.span)} on {self.core.name}"
                follow = progress.looping(where, trips) if mark is None else None
                k = 0
                try:
                    while k < trips:
                        if mark is not None:
                            mark.k, mark.pending, mark.skip = k, self.pending, 0
                            yield mark
                            if mark.skip:  # on to the last trip, which is simulated
                                k += mark.skip
                                mark = None
                            elif mark.give_up:
                                mark = None
                                follow = progress.looping(where, trips, k)
                        if follow is not None:
                            follow.trip(k)
                        self.env[node.var] = start + k * step
                        self.pending += self.costs.loop_iteration
                        yield from self.block(node.body, path + (node.pos, k))
                        k += 1
                finally:
                    if follow is not None:
                        follow.close()
            elif isinstance(node, Cond):
                self.pending += self.costs.branch
                yield from self.block(node.then_body if self.eval(node.cond, node.span) else node.else_body, path)
            elif self.lanes and isinstance(node, (SetFlag, WaitFlag)) and CoreKind.AIV in (node.src_core, node.dst_core):
                for lane in self.lanes:  # the cube's flag with each vector core that runs the split program
                    yield self.issue(node, path + (node.pos,), lane)
            elif getattr(node, "result", None) is not None:  # the scalar unit waits for the element
                d = self.issue(node, path + (node.pos,))
                yield d
                self.env[node.result] = d.value
            else:
                yield self.issue(node, path + (node.pos,))

    def while_loop(self, node: Loop, path: tuple):
        """A while loop: its condition evaluated by the scalar unit before each trip. Its
        trip count is known only when it ends, so no trip is skipped ahead (``steady``
        needs the count): each is simulated."""
        follow = progress.looping(f"{progress.loop_at(node.span)} on {self.core.name}", None)
        k = 0
        try:
            while True:
                self.pending += self.costs.branch
                if not self.eval(node.cond, node.span):
                    break
                if follow is not None:
                    follow.trip(k)
                self.env[node.var] = k
                self.pending += self.costs.loop_iteration
                yield from self.block(node.body, path + (node.pos, k))
                k += 1
        finally:
            if follow is not None:
                follow.close()

    def array(self, node: ScalarArray):
        """What an array op on the scalar unit's stack gives (``pypto.sim.ops.arrays``: the
        interpreter's own semantics)."""
        if node.op == "create":
            return IMPLS["array.create"](node.args[0], DataType.INT32)
        args = [self.eval(a, node.span) for a in node.args]
        try:
            return IMPLS[f"array.{node.op}"](*args)
        except OutOfRange as exc:
            raise SimulatorError(f"pl.array.{node.op}: {exc}", span=node.span, hint=exc.hint or INDEX_HINT) from None

    def issue(self, node, order: tuple, lane=None) -> Dyn:
        cost = self.pending + self.costs.scalar_issue
        self.pending = 0
        d = Dyn(node, self.core, node.pipe, order, cost, launch=self.launch,
                key=self.key_base + PIPE_NUMBER[node.pipe])
        if isinstance(node, (SetFlag, WaitFlag)):
            peers = self.peers if lane is None else {**self.peers, CoreKind.AIV: lane}
            d.flag = (peers[node.src_core], node.src, peers[node.dst_core], node.dst, int(self.eval(node.event)))
            d.cost = self.costs.sync_cycles
        else:
            self.prepare(node, d)
            if node.mnemonic in CROSS_RANK:
                d.timed, d.fenced = True, node.mnemonic in FENCED
        return d

    # ------------------------------------------------------------------ instructions

    def buf_fn(self, b: Buf, span):
        """A function of the environment giving ``b``'s concrete buffer: the static parts
        computed once."""
        shape, space, dtype, tile, nbytes = tuple(b.shape), b.space, b.dtype, b.tile, b.nbytes
        addr = self.compiled(b.addr)
        valid = None if b.valid is None else [self.compiled(v) for v in b.valid]
        region = b.region
        slot = None if region is None else self.compiled(region.slot)

        def concrete(env) -> ConcreteBuf:
            if slot is not None:
                k = int(slot(env))
                if not 0 <= k < region.slots:  # it would land in a neighbour's bytes
                    raise SimulatorError(
                        f"tile '{tile}' takes slot {k} of pl.MemRef(\"{region.name}\", slots={region.slots}), "
                        f"which has slots 0..{region.slots - 1}",
                        span=span, hint="index the MemRef with a value in range, e.g. i % slots")
            extents = shape if valid is None else tuple(int(v(env)) for v in valid)
            if valid is not None and not all(0 <= e <= s for e, s in zip(extents, shape)):
                raise SimulatorError(invalid_extent(tile, extents, shape), span=span, hint=EXTENT_HINT)
            return ConcreteBuf(space, int(addr(env)), shape, dtype, extents, tile, nbytes)

        return concrete

    def plan(self, ins: Instr) -> tuple:
        """(argument makers by parameter name, the destination's maker) of an instruction."""
        got = self.plans.get(id(ins))
        if got is None:
            makers = []
            for p, a in zip(lookup(ins.op).params, ins.args):
                if isinstance(a, Buf):
                    makers.append((p.name, self.buf_fn(a, ins.span)))
                elif isinstance(a, tuple):
                    parts = [self.compiled(x) for x in a]
                    makers.append((p.name, lambda env, parts=parts: tuple(f(env) for f in parts)))
                elif isinstance(a, (n.Var, n.Const, n.BinOp, n.UnaryOp)):
                    makers.append((p.name, self.compiled(a)))
                else:  # a TensorArg or a static value
                    makers.append((p.name, lambda env, a=a: a))
            dst = self.buf_fn(ins.dst, ins.span) if ins.dst is not None else None
            got = self.plans[id(ins)] = (makers, dst)
        return got

    def prepare(self, ins: Instr, d: Dyn) -> None:
        makers, dst_fn = self.plan(ins)
        env = self.env
        try:
            args = {name: make(env) for name, make in makers}
        except SimulatorError as err:  # an operand's arithmetic (a division by zero): the instruction's line
            raise err.with_span(ins.span) from None
        d.args = args
        bufs = [v for v in args.values() if isinstance(v, ConcreteBuf)]
        dst = dst_fn(env) if dst_fn is not None else None
        for b in bufs:
            d.accesses.append(((self.core, b.space), b.addr, b.addr + b.nbytes, False))
        if dst is not None:
            d.accesses.append(((self.core, dst.space), dst.addr, dst.addr + dst.nbytes, True))
            d.args["__dst__"] = dst
        if ins.op == "tile.load":
            d.gm = self.gm_tensor(args["tensor"].name)
            if d.gm[0] not in self.unwritten:  # bytes nobody writes cannot race
                d.accesses.extend(self.gm(d.gm[0], args["offsets"],
                                          args["shapes"] if args["valid_shape"] is None else args["valid_shape"],
                                          False))
        elif ins.op == "tile.gather_row":
            d.gm = self.gm_tensor(args["src"].name)
            if d.gm[0] not in self.unwritten:
                d.accesses.extend(self.gm(d.gm[0], args["src_offset"], args["valid_shape"] or args["shapes"], False))
        elif ins.op == "tile.store":
            d.gm = self.gm_tensor(args["output_tensor"].name)
            d.accesses.extend(self.gm(d.gm[0], args["offsets"], args["tile"].valid, True))
        elif ins.op in ("tensor.write", "tensor.read"):
            d.gm = self.gm_tensor(args["tensor"].name)
            t = self.tensors[d.gm[0]]
            if not all(0 <= i < extent for i, extent in zip(args["indices"], t.shape)):
                raise SimulatorError(f"pl.{ins.op.split('.')[1]}: index {list(args['indices'])} is outside "
                                     f"'{d.gm[0]}' of shape {list(t.shape)}", span=ins.span,
                                     hint=INDEX_HINT)
            d.accesses.extend(self.gm(d.gm[0], args["indices"], (1,) * len(args["indices"]), ins.op == "tensor.write"))
        elif ins.op in INDEXED:  # an index may name any element: all of the tensor
            write = ins.op == "tile.mscatter"
            d.gm = self.gm_tensor(args[INDEXED[ins.op]].name)
            shape = d.whole = tuple(self.tensors[d.gm[0]].shape)
            if write or d.gm[0] not in self.unwritten:
                d.accesses.extend(self.gm(d.gm[0], (0,) * len(shape), shape, write))
            for key, writes in (("idx", False), ("scratch", True)):  # the Mat form's GM index tensor, its scratch
                if ins.op == "tile.mgather_mat" and args.get(key) is not None:
                    name = self.gm_tensor(args[key].name)[0]
                    whole = tuple(self.tensors[name].shape)
                    if writes or name not in self.unwritten:
                        d.accesses.extend(self.gm(name, (0,) * len(whole), whole, writes))
        d.cost, d.latency, d.detail = cost(ins, d.args, dst, self)

    def load_scalar(self, node: ScalarLoad):
        """The element, as GM holds it when the kernel starts: a tensor some launch writes
        would give a value that depends on when the read runs, so it is refused."""
        if node.tensor not in self.unwritten:
            raise SimulatorError(
                f"the scalar unit reads the input '{node.tensor}', which a launch beside it (or this kernel, through "
                "another view of its bytes) writes: the value would depend on when the read runs against the store",
                span=node.span,
                hint="read a tensor the kernel does not write (produce it in an earlier task), or pass the value "
                     "as a scalar argument")
        t = self.tensors[node.tensor]
        indices = tuple(int(self.eval(i, node.span)) for i in node.indices)
        if not all(0 <= i < extent for i, extent in zip(indices, t.shape)):
            raise SimulatorError(f"pl.read: index {list(indices)} is outside '{node.tensor}' of shape "
                                 f"{list(t.shape)}", span=node.span,
                                 hint=INDEX_HINT)
        value = t[indices].item()
        return int(value) if node.is_int else float(value)

    def gm_tensor(self, name: str) -> tuple:
        return name, self.tensors[name].data_ptr()

    def gm(self, tensor: str, offsets, extents, write: bool) -> list:
        """Byte ranges of a GM window at their real addresses: a view's own offset and strides
        place them, so two parameters that are views of one storage meet in one space."""
        return [(GM, lo, hi, write) for lo, hi in window_runs(self.tensors[tensor], offsets, extents)]


def _closure(e):
    """An expression as a function of the scalar environment."""
    if isinstance(e, n.Const):
        value = e.value
        return lambda env: value
    if isinstance(e, n.Var):
        name = e.name
        return lambda env: env[name]
    if isinstance(e, n.UnaryOp):
        x = _closure(e.operand)
        return (lambda env: -x(env)) if e.op == "-" else (lambda env: not x(env))
    if isinstance(e, n.BinOp):
        a, b = _closure(e.lhs), _closure(e.rhs)
        if e.op == "and":
            return lambda env: a(env) and b(env)
        if e.op == "or":
            return lambda env: a(env) or b(env)
        f, op = OPERATORS[e.op], e.op
        if op in DIVISIONS:
            def divide(env):
                x, y = a(env), b(env)
                if y == 0:
                    raise SimulatorError(f"division by zero in '{op}' on the scalar unit")
                return f(x, y)
            return divide
        if op in SHIFTS:
            def shift(env):
                x, y = a(env), b(env)
                if y < 0:
                    raise SimulatorError(f"a negative shift count ({y}) in '{op}' on the scalar unit")
                return f(x, y)
            return shift
        return lambda env: f(a(env), b(env))
    raise TypeError(e)


# per program (by id, while it lives): its expressions' functions and its instructions' plans
_PREPARED: dict[int, tuple] = {}


def _prepared(program: Program) -> tuple:
    """(id(expression) -> function, id(instruction) -> plan) of a program, kept while it
    lives (its nodes with it, so their ids stay theirs)."""
    got = _PREPARED.get(id(program))
    if got is None or got[0]() is not program:
        ident = id(program)
        got = _PREPARED[ident] = (weakref.ref(program, lambda _: _PREPARED.pop(ident, None)), {}, {})
    return got[1], got[2]
