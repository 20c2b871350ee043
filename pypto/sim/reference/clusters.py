"""The interpreter's Group tasks (a mixin of its ``_Interpreter``): a ``pl.cluster()`` body
— or a Group function's — run one block after another; when its members talk through
cross-core pipes, their calls collected and run at once, each vector core of a
dual-dispatch member on a thread of its own (``pipe_hub``), and the pipe ops run on the
member the thread is."""

from __future__ import annotations

from pypto.errors import ExecutionError
from pypto.ir import nodes as n
from pypto.ir.ops.pipes import INITS, PIPE_OPS, POPS, PUSHES
from pypto.sim.reference import pipe_hub


class Clusters:
    def cluster(self, s: n.Cluster, env: dict) -> None:
        """One Group task: on the chip, its kernel calls collected and submitted together;
        here, run in program order (each block's, one block after another)."""
        blocks = self.expr(s.blocks, env, s) if s.blocks is not None else None
        if blocks is not None and blocks < 1:
            raise ExecutionError(f"a cluster of {blocks} blocks: core_num is at least 1", span=s.span,
                                 hint="size the pl.spmd(n) inside pl.cluster() by a positive count")
        if self.in_cluster:
            raise ExecutionError("pl.cluster() scopes do not nest: one cluster is one Group task", span=s.span,
                                 hint="drop the inner pl.cluster() (it is opened in a function the outer cluster's "
                                      "body calls)")
        self.in_cluster = True
        try:
            if self.orchestrator is not None:
                self.orchestrator.cluster(True, s.span, self.depth)
                self.block(s.body, env)
                self.orchestrator.cluster(False, s.span, self.depth, blocks, s.sync_start,
                                          s.name_hint or _cluster_name(s))
                return
            self.tasks += 1
            piped = _uses_pipes(self.program, s)
            for block in range(blocks or 1):
                self.block_registers.append((block, blocks or 1))
                try:
                    if piped:
                        self.concurrently(s, env)
                    else:
                        self.block(s.body, env)
                finally:
                    self.block_registers.pop()
        finally:
            self.in_cluster = False

    def concurrently(self, s: n.Cluster, env: dict) -> None:
        """A Group whose members talk through pipes: their calls collected, then run at
        once, each vector core of a dual-dispatch member on a thread of its own."""
        self.collected = []
        try:
            self.block(s.body, env)
            members = self.collected
        finally:
            self.collected = None
        dual = any(fn.dual_aiv for fn, _ in members)
        hub = pipe_hub.Hub(dual)
        runs = []
        for fn, args in members:
            for lane in ((0, 1) if fn.dual_aiv else (0,)):
                member = type(self)(self.program)  # an interpreter of its own per member thread
                member.lane, member.block_registers = lane, list(self.block_registers)
                runs.append((lambda member=member, fn=fn, args=args: member.call(fn, args), lane))
        hub.run(runs)

    def pipe_op(self, call: n.Call, kwargs: dict, stmt):
        """A cross-core pipe op, on the Group member this thread runs."""
        if call.op == "system.import_peer_buffer":
            return 0
        found = pipe_hub.current()
        if found is None:
            raise ExecutionError(f"{call.op} moves tiles between a Group's AIC and AIV functions, and this one runs "
                                 "outside a Group", span=stmt.span,
                                 hint="call the AIC and AIV functions from a @pl.function(type=pl.FunctionType.Group)")
        hub, lane = found
        if call.op in INITS:
            return hub.init(kwargs["dir_mask"], kwargs["slot_num"], kwargs["id"])
        if call.op in PUSHES:
            return hub.push(call.op, kwargs["tile"], kwargs["split"], kwargs["id"], lane, stmt.span)
        if call.op in POPS:
            return hub.pop(call.op, kwargs["split"], kwargs["id"], lane, stmt.span)
        return hub.free(call.op, kwargs["tile"].data, lane)  # (codegen has checked it is a pop's, of its id)


def _uses_pipes(program: n.Program, s: n.Cluster) -> bool:
    """Whether a kernel the cluster's body calls pushes or pops a cross-core pipe."""
    callees = {x.value.callee for x in n.walk_stmts(s.body) if isinstance(getattr(x, "value", None), n.FuncCall)}
    return any(isinstance(getattr(x, "value", None), n.Call) and x.value.op in PIPE_OPS
               for f in program.functions if f.name in callees for x in n.walk_stmts(f.body))


def _cluster_name(s: n.Cluster) -> str:
    """A Group task's name: its members', joined."""
    callees = [x.value.callee if isinstance(x.value, n.FuncCall) else x.value.call.callee
               for x in n.walk_stmts(s.body) if isinstance(getattr(x, "value", None), n.FuncCall)
               or isinstance(getattr(x, "value", None), n.Submit) and x.value.call is not None]
    return "+".join(dict.fromkeys(callees)) or "cluster"
