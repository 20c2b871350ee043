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
from pypto.ir.ops import argument
from pypto.ir.tensors import block_roots
from pypto.ir.types import ArgDirection, ForKind, ParamDirection, TensorType

VIEWS = frozenset({"tensor.slice", "tensor.transpose", "tensor.reshape", "tensor.set_validshape"})  # what an orchestration makes of a tensor


def call_directions(program: n.Program, fn: n.Function) -> dict[tuple, tuple[ArgDirection, ...]]:
    """The directions of every kernel call ``fn`` makes, directly or through the
    orchestration functions it calls (as if their bodies were written where they are
    called: a helper called in a sequential loop is in that loop). Keyed by the call path:
    the ids of the orchestration-call statements leading there, then the kernel call's."""
    walker = _Walker(program)
    roots = {p.name: frozenset({p.name}) for p in fn.params if isinstance(p.type, TensorType)}
    inout = {p.name for p in fn.params if p.direction is ParamDirection.InOut}
    walker.function(fn, roots, inout, sequential=False, path=())
    return walker.out


def kernel_call(stmt) -> n.FuncCall | None:
    """The function call a statement makes (itself, or the one a Submit submits)."""
    value = getattr(stmt, "value", None)
    if isinstance(value, n.Submit):
        return value.call
    return value if isinstance(value, n.FuncCall) else None


class _Walker:
    """Roots are sets: the buffers a name may be (an if's result is either branch's)."""

    def __init__(self, program: n.Program):
        self.program = program
        self.written: set[str] = set()  # buffers an earlier statement writes
        self.out: dict[tuple, tuple] = {}
        self.active: list[str] = []  # the functions being walked (a recursive call is not followed)

    def function(self, fn: n.Function, roots: dict, inout: set, sequential: bool, path: tuple):
        saved = (getattr(self, "roots", None), getattr(self, "inout", None), getattr(self, "path", None))
        self.roots, self.inout, self.path = dict(roots), inout, path
        self.active.append(fn.name)
        try:
            self.block(fn.body, sequential)
            return self.returned_roots(fn)
        finally:
            self.active.pop()
            self.roots, self.inout, self.path = saved

    def returned_roots(self, fn: n.Function):
        for s in reversed(fn.body):
            if isinstance(s, n.Return) and s.values:
                return self.root(s.values[0])
        return None

    def root(self, e) -> frozenset | None:
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
                value = argument(value, "x")
            self.roots[stmt.target] = self.root(value) or frozenset({stmt.target})
        elif isinstance(stmt, n.LOOPS):
            yields = stmt.body[-1].values if stmt.body and isinstance(stmt.body[-1], n.Yield) else ()
            for a in stmt.iter_args:
                if self.root(a.init) is not None:
                    self.roots[a.name] = self.root(a.init)
            self.block(stmt.body, sequential or getattr(stmt, "kind", None) is not ForKind.Parallel)
            for k, (a, b) in enumerate(zip(stmt.iter_args, stmt.results)):
                found = [r for r in (self.root(a.init), self.root(yields[k]) if k < len(yields) else None)
                         if r is not None]
                if found:
                    self.roots[b.name] = frozenset().union(*found)
        elif isinstance(stmt, n.If):
            self.block(stmt.then_body, sequential)
            self.block(stmt.else_body, sequential)
            branches = [body[-1].values for body in (stmt.then_body, stmt.else_body)
                        if body and isinstance(body[-1], n.Yield)]
            for k, b in enumerate(stmt.results):
                found = [self.root(values[k]) for values in branches if k < len(values)]
                if found and None not in found:
                    self.roots[b.name] = frozenset().union(*found)
        elif isinstance(stmt, n.BLOCKS):
            self.block(stmt.body, sequential)

    def call(self, stmt, call: n.FuncCall, sequential: bool) -> None:
        callee = self.program.function(call.callee)
        if not callee.type.is_kernel:
            self.helper(stmt, callee, call, sequential)
            return
        directions, writes = [], []
        for p, a in zip(callee.params, call.args):
            if not isinstance(p.type, TensorType):
                directions.append(ArgDirection.Scalar)
                continue
            roots = self.root(a)
            if p.direction is ParamDirection.In:
                directions.append(ArgDirection.Input)
                continue
            writes.append(roots)
            if p.direction is ParamDirection.InOut:
                directions.append(ArgDirection.InOut)
            elif sequential or roots is None or roots & (self.written | self.inout):
                directions.append(ArgDirection.InOut)  # R-seq, R-prior, R-enclosing (unknown: the safe one)
            else:
                directions.append(ArgDirection.OutputExisting)
        no_dep = stmt.value.no_dep if isinstance(stmt.value, n.Submit) else call.no_dep
        if no_dep:  # no_dep_args / pl.no_dep: out of tracking, whatever the rules say
            directions = [ArgDirection.NoDep if k in no_dep and d is not ArgDirection.Scalar else d
                          for k, d in enumerate(directions)]
        self.out[self.path + (id(stmt),)] = tuple(directions)
        for r in writes:
            if r is not None:
                self.written |= r
        if isinstance(stmt, n.Assign) and callee.returns and isinstance(stmt.value, n.FuncCall):
            by_name = {p.name: a for p, a in zip(callee.params, call.args)}
            first = _returned_param(callee)
            found = self.root(by_name.get(first)) if first is not None else None
            self.roots[stmt.target] = found or frozenset({stmt.target})

    def helper(self, stmt, callee: n.Function, call: n.FuncCall, sequential: bool) -> None:
        """An orchestration function called here: its calls, in this call's context."""
        if callee.name in self.active:
            return
        roots, inout = {}, set()
        for p, a in zip(callee.params, call.args):
            if isinstance(p.type, TensorType):
                found = self.root(a) or frozenset({p.name})
                roots[p.name] = found
                if p.direction is ParamDirection.InOut or found & self.inout:
                    inout |= found
        result = self.function(callee, roots, inout | self.inout, sequential, self.path + (id(stmt),))
        if isinstance(stmt, n.Assign) and isinstance(stmt.type, TensorType):
            self.roots[stmt.target] = result or frozenset({stmt.target})


def _returned_param(callee: n.Function) -> str | None:
    """The parameter a kernel's first return value is (kernels return their Out tensors,
    under that name or one an in-place write gave it: ``c_1 = pl.assemble(c, ...)``)."""
    for s in reversed(callee.body):
        if isinstance(s, n.Return) and s.values and isinstance(s.values[0], n.Var):
            params = {p.name for p in callee.params if isinstance(p.type, TensorType)}
            root = block_roots(callee.body, {x: x for x in params}).get(s.values[0].name)
            return root if root in params else None
    return None
