"""How the interpreter runs a kernel call and a submitted task (a mixin of its
``_Interpreter``): handed to the orchestrator when one schedules the run, else run in
place — an SPMD task's blocks one after another, a task whose predicate fails retired
without running, a dummy task given the next id; and a scope not outlined yet, as the
call it becomes."""

from __future__ import annotations

import attrs

from pypto.errors import ExecutionError
from pypto.ir import nodes as n
from pypto.ir.ops.type_rules import fmt_shape
from pypto.ir.printer import expr
from pypto.ir.simplify import OPERATORS
from pypto.ir.tensors import block_roots
from pypto.ir.types import TensorType
from pypto.sim.accesses.views import check_call


@attrs.frozen
class Site:
    """Where a kernel call is made: its statement, its runtime scope depth (the scopes
    around it: each loop body and branch of an auto-scoped function, each pl.scope()),
    whether a manual scope encloses it, and the Submit node with its deps evaluated."""

    stmt: object
    depth: int
    manual: bool = False
    submit: object = None
    path: tuple = ()  # ids of the orchestration-call statements it is made through

    @property
    def key(self) -> tuple:
        """The call's key in ``ir.directions.call_directions`` of the entry."""
        return self.path + (id(self.stmt),)


@attrs.frozen
class Dispatch:
    """A task's dispatch predicate, its element located: ``tensor[indices] op value``."""

    tensor: object
    indices: tuple
    op: str
    value: int

    def holds(self) -> bool:
        return bool(OPERATORS[self.op](int(self.tensor[self.indices]), self.value))


def returned_args(fn: n.Function, args: tuple) -> tuple:
    """What a kernel returns when it runs nothing: the arguments of the parameters it
    returns (kernels return their Out tensors)."""
    params = {p.name: a for p, a in zip(fn.params, args) if isinstance(p.type, TensorType)}
    roots = block_roots(fn.body, {x: x for x in params})
    ret = next((s for s in reversed(fn.body) if isinstance(s, n.Return)), None)
    return tuple(params[roots[v.name]] for v in ret.values) if ret is not None else ()


class Tasks:
    def submit(self, v: n.Submit, env: dict, stmt):
        """A Submit's value: the task's id."""
        if self.in_cluster:
            carried = [x for x, on in (("deps", v.deps), ("core_num", v.blocks is not None),
                                       ("allow_early_resolve", v.allow_early_resolve),
                                       ("predicate", v.predicate is not None), ("no call", v.call is None)) if on]
            if carried:
                what = "pl.system.task_dummy" if v.call is None else \
                    "pl.spmd_submit" if v.blocks is not None else "pl.submit"
                raise ExecutionError(
                    f"`{what}(...)` inside `pl.cluster()` cannot carry per-task dispatch metadata "
                    f"({', '.join(x for x in carried if x != 'no call') or 'deps'}) — the cluster is dispatched "
                    "as one Group task, so metadata on an inner Submit would be ignored", span=stmt.span,
                    hint="Move the dependency or launch control to the dispatch surrounding the cluster, or "
                         "omit it from the inner Submit.")
        deps = tuple(self.expr(d, env, stmt) for d in v.deps)
        blocks, predicate = self.launch(v.blocks, v.predicate, env, stmt)
        v = attrs.evolve(v, blocks=blocks, predicate=predicate)
        if v.call is None:  # pl.system.task_dummy
            if self.orchestrator is not None:
                return self.orchestrator.dummy(deps, Site(stmt, self.depth, self.manual > 0, None, tuple(self.path)))
            self.tasks += 1
            return self.tasks - 1
        return self.func_call(v.call, env, stmt, attrs.evolve(v, deps=deps))[1]

    def launch(self, blocks, predicate, env: dict, stmt) -> tuple:
        """A task's block count (None: not SPMD) and its predicate's element, located now
        (a ``Dispatch``, read when the task reaches dispatch), where it is submitted."""
        if blocks is not None:
            blocks = self.expr(blocks, env, stmt)
            if blocks < 1:
                raise ExecutionError(f"an SPMD task of {blocks} blocks: core_num is at least 1", span=stmt.span,
                                     hint="size pl.spmd(n) / core_num=n by a positive count")
        if predicate is not None:
            p = predicate
            tensor, indices = self.expr(p.tensor, env, stmt), tuple(self.expr(i, env, stmt) for i in p.indices)
            if not all(0 <= i < d for i, d in zip(indices, tensor.shape)):
                raise ExecutionError(f"the predicate reads [{', '.join(map(str, indices))}] of a "
                                     f"{list(tensor.shape)} tensor", span=stmt.span,
                                     hint="index an element of the tensor the predicate compares")
            predicate = Dispatch(tensor, indices, p.op, p.value)
        return blocks, predicate

    def scope(self, s: n.Scope, env: dict) -> None:
        """A ``pl.at`` / ``pl.spmd`` scope not outlined yet (the front end's form) does what
        the kernel call OutlineIncoreScopes makes of it does — a pass keeps the interpreter's
        bits (DESIGN §5): one task, numbered (its id bound where the scope names one),
        retired where its predicate fails, its body run as a kernel's, once per block with
        that block's registers."""
        blocks, predicate = self.launch(s.blocks, s.predicate, env, s)
        self.tasks += 1
        if s.task_id is not None:
            env[s.task_id] = self.tasks - 1
        if predicate is not None and not predicate.holds():
            return  # retired at dispatch: it runs nothing
        self.kernel.append(True)
        try:
            for block in range(blocks or 1):
                if blocks is not None:
                    self.block_registers.append((block, blocks))
                try:
                    self.block(s.body, env)
                finally:
                    if blocks is not None:
                        self.block_registers.pop()
        finally:
            self.kernel.pop()

    def func_call(self, v: n.FuncCall, env: dict, stmt, submit) -> tuple:
        """(what the callee returns, the task's id when it is a kernel)."""
        fn = self.program.function(v.callee)
        args = tuple(self.expr(a, env, stmt) for a in v.args)
        self.check_extents(fn, v, env, stmt)
        if fn.type.is_kernel and self.collected is not None:  # a member of a Group that talks through pipes
            self.collected.append((fn, args))
            self.tasks += 1
            return returned_args(fn, args), self.tasks - 1
        if not fn.type.is_kernel:
            self.path.append(id(stmt))
            try:
                return self.call(fn, args), None
            finally:
                self.path.pop()
        # what a kernel writes must be its own memory, as at the user's call
        check_call(fn.name, fn.params, args, stmt.span, passed=lambda: tuple(map(expr, v.args)))
        if self.orchestrator is not None:
            values, task = self.orchestrator.submit(fn, args, Site(stmt, self.depth, self.manual > 0, submit,
                                                                  tuple(self.path)))
            return tuple(values), task
        self.tasks += 1
        if submit is not None and submit.predicate is not None and not submit.predicate.holds():
            return returned_args(fn, args), self.tasks - 1  # retired at dispatch: it runs nothing
        blocks = submit.blocks if submit is not None and submit.blocks is not None else None
        if blocks is None:
            return self.call(fn, args), self.tasks - 1
        values = ()
        for block in range(blocks):  # an SPMD task's blocks, one after another
            self.block_registers.append((block, blocks))
            try:
                values = self.call(fn, args)
            finally:
                self.block_registers.pop()
        return values, self.tasks - 1

    def check_extents(self, fn: n.Function, v: n.FuncCall, env: dict, stmt) -> None:
        """A tensor the orchestration sized as it runs meets the written shape of the kernel's
        parameter: its extents, known now, are that shape's."""
        for p, a in zip(fn.params, v.args):
            extents = self.sized(a, p.type, env, stmt)
            if extents is not None:
                raise ExecutionError(
                    f"'{fn.name}' takes '{p.name}' as {list(p.type.shape)}, and this call passes '{a.name}' of "
                    f"{extents[0]} ({extents[1]} as the orchestration runs)", span=stmt.span,
                    hint=f"size the tensor {list(p.type.shape)} (a window may run past the tensor's end); for a "
                         "part of it, pass the valid extent as a scalar and load with valid_shape=")

    def check_returned(self, fn: n.Function, ret: n.Return, env: dict) -> None:
        """What a function returns that it sized as it runs meets its declared return type."""
        for k, (v, t) in enumerate(zip(ret.values, fn.returns)):
            extents = self.sized(v, t, env, ret)
            if extents is not None:
                raise ExecutionError(f"'{fn.name}' is declared to return {list(t.shape)}"
                                     f"{f' as its value {k}' if len(fn.returns) > 1 else ''}, and returns "
                                     f"'{v.name}' of {extents[0]} ({extents[1]} as the orchestration runs)",
                                     span=ret.span, hint=f"size the tensor {list(t.shape)}, or declare the return "
                                                         "type the tensor has")

    def sized(self, e, declared, env: dict, stmt):
        """(its extents, as written) where ``e`` names a tensor the running function sized as it
        runs whose extents differ from the ``declared`` type's; else None."""
        fn = self.frames[-1]
        types = self.tables.get(fn.name)
        if types is None:
            types = self.tables[fn.name] = n.symbols(fn)
        t = types.get(e.name) if isinstance(e, n.Var) else None
        if not (isinstance(t, TensorType) and t.runtime_sized and isinstance(declared, TensorType)):
            return None
        extents = [d if isinstance(d, int) else self.expr(d, env, stmt) for d in t.shape]
        return None if extents == list(declared.shape) else (extents, fmt_shape(t.shape))
