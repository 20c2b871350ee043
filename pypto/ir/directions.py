"""The direction of every tensor argument of every task an orchestration function submits:
what the runtime's dependency tracker does with it (``ArgDirection``). Derived from the
callee's parameter directions and where the call sits, by the reference's rules:

- a callee ``In`` parameter is ``Input``, ``InOut`` is ``InOut``, a scalar is ``Scalar``;
- a callee ``Out`` parameter is ``InOut`` when the call is inside a sequential loop of the
  orchestration (R-seq: each trip's task must follow the last trip's writer), when an
  earlier statement of the function wrote the same buffer (R-prior), or when the buffer is
  a ``pl.InOut`` parameter of the orchestration (R-enclosing); otherwise it is
  ``OutputExisting`` — the task becomes the buffer's producer without waiting for anyone.

Under ``pl.parallel`` R-seq does not apply: the iterations' writers are not chained, which
is what makes them run at once.
"""

from __future__ import annotations

from pypto.ir import nodes as n
from pypto.ir.types import ArgDirection, ForKind, ParamDirection, TensorType

VIEWS = frozenset({"tensor.slice", "tensor.transpose"})  # what an orchestration makes of a tensor


def call_directions(program: n.Program, fn: n.Function) -> dict[int, tuple[ArgDirection, ...]]:
    """id(statement) -> the directions of its kernel call's arguments, for every statement
    of ``fn`` that calls a kernel."""
    walker = _Walker(program, fn)
    walker.block(fn.body, sequential=False)
    return walker.out


def kernel_call(stmt) -> n.FuncCall | None:
    """The function call a statement makes (itself, or the one a Submit submits)."""
    value = getattr(stmt, "value", None)
    if isinstance(value, n.Submit):
        return value.call
    return value if isinstance(value, n.FuncCall) else None


class _Walker:
    def __init__(self, program: n.Program, fn: n.Function):
        self.program = program
        self.roots = {p.name: p.name for p in fn.params if isinstance(p.type, TensorType)}
        self.inout = {p.name for p in fn.params if p.direction is ParamDirection.InOut}
        self.written: set[str] = set()  # buffers an earlier statement writes
        self.out: dict[int, tuple] = {}

    def root(self, e) -> str | None:
        return self.roots.get(e.name) if isinstance(e, n.Var) else None

    def block(self, body, sequential: bool) -> None:
        for stmt in body:
            self.stmt(stmt, sequential)

    def stmt(self, stmt, sequential: bool) -> None:
        call = kernel_call(stmt)
        if call is not None:
            self.call(stmt, call, sequential)
        elif isinstance(stmt, n.Assign) and isinstance(stmt.type, TensorType):
            value = stmt.value
            if isinstance(value, n.Call) and value.op in VIEWS:  # a view is of its tensor's buffer
                value = value.args[0]
            self.roots[stmt.target] = self.root(value) or stmt.target
        elif isinstance(stmt, n.For):
            for a in stmt.iter_args:
                if self.root(a.init) is not None:
                    self.roots[a.name] = self.root(a.init)
            self.block(stmt.body, sequential or stmt.kind is not ForKind.Parallel)
            for a, b in zip(stmt.iter_args, stmt.results):
                if a.name in self.roots:
                    self.roots[b.name] = self.roots[a.name]
        elif isinstance(stmt, n.If):
            self.block(stmt.then_body, sequential)
            self.block(stmt.else_body, sequential)
        elif isinstance(stmt, n.BLOCKS):
            self.block(stmt.body, sequential)

    def call(self, stmt, call: n.FuncCall, sequential: bool) -> None:
        callee = self.program.function(call.callee)
        if not callee.type.is_kernel:
            return
        directions, writes = [], []
        for p, a in zip(callee.params, call.args):
            if not isinstance(p.type, TensorType):
                directions.append(ArgDirection.Scalar)
                continue
            root = self.root(a)
            if p.direction is ParamDirection.In:
                directions.append(ArgDirection.Input)
                continue
            writes.append(root)
            if p.direction is ParamDirection.InOut:
                directions.append(ArgDirection.InOut)
            elif sequential or root is None or root in self.written or root in self.inout:
                directions.append(ArgDirection.InOut)  # R-seq, R-prior, R-enclosing (unknown: the safe one)
            else:
                directions.append(ArgDirection.OutputExisting)
        if isinstance(stmt.value, n.Submit):  # no_dep_args / pl.no_dep: out of tracking, whatever the rules say
            directions = [ArgDirection.NoDep if k in stmt.value.no_dep and d is not ArgDirection.Scalar else d
                          for k, d in enumerate(directions)]
        self.out[id(stmt)] = tuple(directions)
        self.written.update(r for r in writes if r is not None)
        if isinstance(stmt, n.Assign) and callee.returns and isinstance(stmt.value, n.FuncCall):  # the result is the tensor the callee hands back
            by_name = {p.name: a for p, a in zip(callee.params, call.args)}
            first = _returned_param(callee)
            if first is not None and self.root(by_name.get(first)) is not None:
                self.roots[stmt.target] = self.root(by_name[first])
            else:
                self.roots[stmt.target] = stmt.target


def _returned_param(callee: n.Function) -> str | None:
    """The parameter a kernel's first return value is (kernels return their Out tensors)."""
    for s in reversed(callee.body):
        if isinstance(s, n.Return) and s.values and isinstance(s.values[0], n.Var):
            names = {p.name for p in callee.params}
            return s.values[0].name if s.values[0].name in names else None
    return None
