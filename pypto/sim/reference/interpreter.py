"""The reference interpreter: runs a Program's IR on torch tensors. It is the oracle every
pass and the simulator are checked against.

GM tensors are torch tensors passed by reference (stores write into them); tiles are
``TileVal``s; scalars are Python numbers. Each op's arithmetic is ``semantics.IMPLS``.
"""

from __future__ import annotations

import math

from pypto.errors import ExecutionError
from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.ops.pipes import PIPE_OPS
from pypto.ir.ops.spmd import BLOCK_REGISTERS, LANED
from pypto.sim.reference.clusters import Clusters
from pypto.sim.reference.tasks import Site, Tasks
from pypto.ir.simplify import DIVISIONS, OPERATORS, SHIFTS
from pypto.ir.types import ForKind, TensorType, TileType
from pypto.lang.flow.index_bounds import len_of
from pypto.sim.ops import numerics as num
from pypto.sim.reports import progress
from pypto.sim.ops.comm import COMM_OPS, observe
from pypto.sim.ops.comm import PORT as comm_port
from pypto.sim.ops.crossings import rejoin
from pypto.sim.reports.prints import Print
from pypto.sim.ops.semantics import EXTENT_HINT, IMPLS, INDEX_HINT, VIEWS, OutOfRange, TileVal, invalid_extent, window

SIZED = ("tensor.create", "tensor.slice", "tensor.reshape")  # an orchestration may size these as it runs


def run(program: n.Program, entry: str, args, orchestrator=None, prints: list | None = None) -> tuple:
    """Call ``entry`` with ``args``; returns what it returns (tensors are written in place).
    ``orchestrator``, when given, takes each kernel call — ``submit(function, args, site)
    -> (values, task id)`` with its ``Site`` —, hears each runtime scope open and close
    (``scope(opening, manual, depth, span)``) and each tensor the orchestration creates
    (``created(tensor, manual_dep, span)``), and waits before the orchestration reads an element
    (``wait(tensor, indices, span)``); the chip does: a call is a task submission. The
    interpreter runs everything else (and, without one, runs each kernel in program order,
    numbering them as tasks). ``prints`` takes what each ``pl.debug_print`` it runs saw."""
    interp = _Interpreter(program, orchestrator)
    interp.prints = prints if prints is not None else []
    return interp.call(program.function(entry), tuple(args))


class _Yield(Exception):
    def __init__(self, values):
        self.values = values


class _Return(Exception):
    def __init__(self, values):
        self.values = values


class _Interpreter(Tasks, Clusters):
    def __init__(self, program: n.Program, orchestrator=None):
        self.program = program
        self.orchestrator = orchestrator
        self.depth = 0  # runtime scopes around the statement running
        self.manual = 0  # manual ones among them
        self.auto = [True]  # whether each function on the call stack is auto-scoped
        self.kernel = [False]  # whether each function on the call stack runs on a core
        self.tasks = 0  # kernel calls run here, without an orchestrator: a Submit's id
        self.path: list = []  # the orchestration-call statements running
        self.block_registers = [(0, 1)]  # (block index, blocks) of the SPMD task running
        self.lane = 0  # which vector core of the cluster runs the code (a pl.split_aiv region's lane)
        self.in_cluster = False  # running a pl.cluster() body: its kernel calls are one Group task
        self.collected: list | None = None  # a piped Group's member calls, to run together
        self.frames: list = []  # the functions on the call stack
        self.tables: dict = {}  # function name -> its symbols (the types of a caller's arguments)

    def call(self, fn: n.Function, args: tuple) -> tuple:
        if self.orchestrator is not None and fn.type.is_kernel:  # an entry that is a kernel
            return tuple(self.orchestrator.submit(fn, args, Site(None, self.depth))[0])
        env = {p.name: a for p, a in zip(fn.params, args)}
        self.auto.append(fn.auto_scope)
        self.kernel.append(fn.type.is_kernel)
        self.frames.append(fn)
        try:
            self.block(fn.body, env)
        except _Return as ret:
            return ret.values
        finally:
            self.auto.pop()
            self.kernel.pop()
            self.frames.pop()
        return ()

    def scoped(self, run, span, manual: bool = False, implicit: bool = False):
        """``run()`` inside one more runtime scope (an implicit one — a loop body or a
        branch — only in an auto-scoped function)."""
        if implicit and not self.auto[-1]:
            return run()
        self.depth += 1
        self.manual += manual
        if self.orchestrator is not None:
            self.orchestrator.scope(True, manual, self.depth, span)
        try:
            return run()
        finally:
            if self.orchestrator is not None:
                self.orchestrator.scope(False, manual, self.depth, span)
            self.depth -= 1
            self.manual -= manual

    def block(self, body, env: dict) -> None:
        for stmt in body:
            self.stmt(stmt, env)

    def stmt(self, s, env: dict) -> None:
        if isinstance(s, n.Assign):
            env[s.target] = self.value(s.value, s.type, env, s)
        elif isinstance(s, n.Eval):
            self.value(s.value, None, env, s)
        elif isinstance(s, n.For):
            self.for_(s, env)
        elif isinstance(s, n.While):
            self.while_(s, env)
        elif isinstance(s, n.If):
            body = s.then_body if self.expr(s.cond, env, s) else s.else_body
            values = self.scoped(lambda: self.run_body(body, env), s.span, implicit=True)
            for b, v in zip(s.results, values):
                env[b.name] = v
        elif isinstance(s, n.Yield):
            raise _Yield(tuple(self.expr(v, env, s) for v in s.values))
        elif isinstance(s, n.Return):
            self.check_returned(self.frames[-1], s, env)
            raise _Return(tuple(self.expr(v, env, s) for v in s.values))
        elif isinstance(s, n.Scope):
            self.scope(s, env)
        elif isinstance(s, n.RuntimeScope):
            self.scoped(lambda: self.block(s.body, env), s.span, manual=s.manual)
        elif isinstance(s, n.Cluster):
            self.cluster(s, env)
        else:
            raise TypeError(f"not a statement: {s!r}")

    def run_body(self, body, env: dict) -> tuple:
        try:
            self.block(body, env)
        except _Yield as y:
            return y.values
        return ()

    def for_(self, s: n.For, env: dict) -> None:
        if s.kind is ForKind.SplitAiv:  # both vector cores run it, lane 0's then lane 1's (they share no bytes)
            gathers = {x.target: x.value for x in s.body if isinstance(x, n.Assign)
                       and isinstance(x.value, n.Call) and x.value.op == "tile.aic_gather"}
            tiles = {name: [] for name in gathers}  # each lane's tile of what the region hands the cube
            for lane in range(self.expr(s.stop, env, s)):
                env[s.var] = self.lane = lane
                try:
                    self.block(s.body, env)
                finally:
                    self.lane = 0
                for name in gathers:
                    tiles[name].append(env[name])
            for name, call in gathers.items():
                env[name] = rejoin(tiles[name], call.args[lookup(call.op).index("split")])
            return
        start, stop, step = (self.expr(e, env, s) for e in (s.start, s.stop, s.step))
        if step <= 0:
            raise ExecutionError(f"loop step is {step}; it must be positive", span=s.span)
        carried = tuple(self.expr(a.init, env, s) for a in s.iter_args)
        # every trip is interpreted: a long loop says on the progress line how far it is, and how long it has left
        follow = progress.looping(progress.loop_at(s.span), len_of(start, stop, step))
        try:
            for k, i in enumerate(range(start, stop, step)):
                env[s.var] = i
                for a, v in zip(s.iter_args, carried):
                    env[a.name] = v
                values = self.scoped(lambda: self.run_body(s.body, env), s.span, implicit=True)  # each trip its own scope
                if s.iter_args:
                    carried = values
                if follow is not None:
                    follow.trip(k)
        finally:
            if follow is not None:
                follow.close()
        for b, v in zip(s.results, carried):
            env[b.name] = v

    def while_(self, s: n.While, env: dict) -> None:
        carried = tuple(self.expr(a.init, env, s) for a in s.iter_args)
        follow = progress.looping(progress.loop_at(s.span), None)  # (its trips are not known before it ends)
        k = 0
        try:
            while True:
                for a, v in zip(s.iter_args, carried):
                    env[a.name] = v
                if not self.expr(s.cond, env, s):
                    break
                values = self.scoped(lambda: self.run_body(s.body, env), s.span, implicit=True)
                if s.iter_args:
                    carried = values
                if follow is not None:
                    follow.trip(k)
                k += 1
        finally:
            if follow is not None:
                follow.close()
        for b, v in zip(s.results, carried):
            env[b.name] = v

    # ------------------------------------------------------------------ values

    def value(self, v, result_type, env: dict, stmt):
        if isinstance(v, n.Call):
            return self.call_op(v, result_type, env, stmt)
        if isinstance(v, n.Submit):
            return self.submit(v, env, stmt)
        if isinstance(v, n.FuncCall):
            values = self.func_call(v, env, stmt, None)[0]
            return values[0] if values else None
        return self.expr(v, env, stmt)

    def call_op(self, call: n.Call, result_type, env: dict, stmt):
        if call.op in BLOCK_REGISTERS:
            return self.block_registers[-1][call.op == "tile.get_block_num"]
        if call.op == "tile.get_subblock_idx":
            return self.lane
        op = lookup(call.op)
        kwargs = {}
        for p, arg in zip(op.params, call.args):
            kwargs[p.name] = self.arg(arg, env, stmt)
        if call.op in LANED:  # a region's crossing: this lane's half
            kwargs["lane"] = self.lane
        if call.op in COMM_OPS:  # what a blocked wait or a bad peer names
            kwargs["span"] = stmt.span
        elif comm_port.get() is not None:  # a rank of a cluster: its accesses to its windows are checked
            observe(call.op, kwargs, stmt.span)
        if call.op in PIPE_OPS or call.op == "system.import_peer_buffer":
            data = self.pipe_op(call, kwargs, stmt)
            return TileVal(data, self.valid(result_type, env, stmt)) if isinstance(result_type, TileType) else data
        if call.op == "tensor.read" and self.orchestrator is not None:  # waits for the element's producer
            self.orchestrator.wait(kwargs["tensor"], kwargs["indices"], stmt.span)
        if call.op == "tensor.write" and self.orchestrator is not None and not self.kernel[-1]:
            self.orchestrator.writing(kwargs["tensor"], kwargs["indices"], stmt.span)  # after the element's tasks
        if call.op == "tensor.assemble" and self.orchestrator is not None and not self.kernel[-1]:
            self.copying(kwargs, stmt)  # after the source's producers and the window's tasks
        if call.op in SIZED and not self.kernel[-1]:
            self.check_sized(call, kwargs["shape"], stmt)
        if call.op == "tensor.create" and isinstance(result_type, TensorType) and not self.kernel[-1]:
            if self.orchestrator is not None:  # from the ring heap, before any memory is taken
                self.orchestrator.creating(math.prod(kwargs["shape"]) * result_type.dtype.nbytes, stmt.span)
        try:
            if call.op in VIEWS and not self.kernel[-1]:  # the orchestration's: a view of the tensor itself
                data = VIEWS[call.op](**kwargs)
            else:
                data = IMPLS[call.op](**kwargs)
            if call.op == "tile.debug_print":
                self.prints.append(Print(kwargs["label"], stmt.span, data))
                return None
        except OutOfRange as exc:
            raise ExecutionError(f"{call.op}: {exc}", span=stmt.span, hint=exc.hint or INDEX_HINT) from None
        except num.ArithmeticError_ as exc:
            raise ExecutionError(f"{call.op}: {exc}", span=stmt.span, hint=exc.hint) from None
        except MemoryError:
            raise ExecutionError(f"{call.op}: this host has no memory for it", span=stmt.span,
                                 hint="make the tensor smaller") from None
        except RuntimeError as exc:  # torch's allocator: not enough memory on the host
            if "allocate" not in str(exc):
                raise
            raise ExecutionError(f"{call.op}: this host cannot allocate it ({exc})", span=stmt.span,
                                 hint="make the tensor smaller") from None
        if isinstance(result_type, TileType):
            return TileVal(data, self.valid(result_type, env, stmt))
        if call.op == "tensor.create" and self.orchestrator is not None:  # a buffer the runtime allocates
            self.orchestrator.created(data, kwargs["manual_dep"], stmt.span)
        return data

    def copying(self, kwargs: dict, stmt) -> None:
        """An orchestration's assemble is the host's copy: the chip has it wait for the tasks
        it must follow (a window outside the target is the copy's error, raised by it)."""
        target, source = kwargs["target"], kwargs["source"]
        shape = (1,) * (target.dim() - source.dim()) + tuple(source.shape)
        try:
            index = window(target.shape, kwargs["offset"], shape, "assemble window")
        except OutOfRange:
            return
        self.orchestrator.copying(target[index], source, stmt.span)

    @staticmethod
    def check_sized(call: n.Call, extents, stmt) -> None:
        """An orchestration's tensor sized as it runs (a constant extent was checked when compiling)."""
        for axis, e in enumerate(extents):
            if e < 1:
                what = {"tensor.create": "pl.create_tensor", "tensor.slice": "pl.slice", "tensor.reshape": "pl.reshape"}[call.op]
                raise ExecutionError(f"{what}'s extent on axis {axis} is {e} here: a tensor's extents are positive",
                                     span=stmt.span, hint="size it by a positive count (skip the work where the "
                                                          "count is 0)")

    def valid(self, t: TileType, env: dict, stmt) -> tuple[int, ...]:
        if t.valid_shape is None:
            return t.shape
        extents = tuple(int(self.expr(e, env, stmt)) for e in t.valid_shape)
        if not all(0 <= e <= s for e, s in zip(extents, t.shape)):
            name = getattr(stmt, "target", "") or "the result"
            raise ExecutionError(invalid_extent(name, extents, t.shape), span=getattr(stmt, "span", None),
                                 hint=EXTENT_HINT)
        return extents

    def arg(self, arg, env: dict, stmt):
        if isinstance(arg, tuple):
            return tuple(self.expr(e, env, stmt) for e in arg)
        if isinstance(arg, (n.Var, n.Const, n.BinOp, n.UnaryOp)):
            return self.expr(arg, env, stmt)
        return arg

    def expr(self, e, env: dict, stmt):
        if isinstance(e, n.Var):
            return env[e.name]
        if isinstance(e, n.Const):
            return e.value
        if isinstance(e, n.BinOp):
            if e.op == "and":
                return self.expr(e.lhs, env, stmt) and self.expr(e.rhs, env, stmt)
            if e.op == "or":
                return self.expr(e.lhs, env, stmt) or self.expr(e.rhs, env, stmt)
            lhs, rhs = self.expr(e.lhs, env, stmt), self.expr(e.rhs, env, stmt)
            if e.op in DIVISIONS:
                if rhs == 0:
                    raise ExecutionError(f"division by zero in '{e.op}'", span=getattr(stmt, "span", None))
                return OPERATORS[e.op](lhs, rhs)
            if e.op in SHIFTS and rhs < 0:
                raise ExecutionError(f"a negative shift count ({rhs}) in '{e.op}'", span=getattr(stmt, "span", None))
            return OPERATORS[e.op](lhs, rhs)
        if isinstance(e, n.UnaryOp):
            v = self.expr(e.operand, env, stmt)
            return -v if e.op == "-" else not v
        raise TypeError(f"not an expression: {e!r}")
