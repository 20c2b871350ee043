"""Tasks submitted by hand in an orchestration (a mixin of the task forms): ``pl.submit`` /
``pl.spmd_submit`` of a kernel with its ``deps=``, ``predicate=`` and ``allow_early_resolve``,
the TaskIds they return (unpacked with the kernel's results), ``pl.no_dep`` arguments,
``pl.system.task_dummy`` barriers, and the dump marks (``dumps=``, ``pl.dump_tag``)."""

from __future__ import annotations

import ast

from pypto.errors import ParseError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.types import TASK_ID, ArrayType, DataType, FunctionType, TensorType
from pypto.lang.statements.calls import Nothing, Several


class Submits:
    def task_deps(self, node, form: str = "pl.at") -> tuple:
        """``deps=[...]`` of ``form`` (``pl.at``, ``pl.spmd``, ...): TaskIds (``None`` waits
        for nothing, and is dropped)."""
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.error(TypeCheckError, node, f"{form}(deps=...) must be a list literal",
                             hint="deps=[tid] (the ids of 'with pl.at(...) as tid' scopes)")
        out = []
        for e in node.elts:
            if isinstance(e, ast.Constant) and e.value is None:
                continue
            if isinstance(e, ast.Subscript) and _task_ids(self.local_type(e.value)):
                out.append(self.operand(e)[0])  # arr[i]: the element, bound to a name
                continue
            ssa = self.env.get(e.id) if isinstance(e, ast.Name) else None
            t = self.types.get(ssa) if ssa is not None else None
            if t != TASK_ID and not _task_ids(t):  # a TaskId, or an array of them (every slot)
                raise self.error(TypeCheckError, e, f"{form} deps= entries must be a TaskId variable, a TASK_ID array "
                                 f"element (e.g. `arr[i]`), or None — got '{ast.unparse(e)}'",
                                 hint="bind a task's id with 'with pl.at(...) as tid', then deps=[tid]")
            out.append(n.Var(ssa))
        return tuple(out)

    def no_dep_args(self, node) -> tuple:
        """``no_dep_args=[t, ...]``: captured tensors this task leaves out of tracking."""
        return self.tensor_names(node, "pl.at(no_dep_args=...)", "no_dep_args=[out]")

    def dumps(self, node, form: str) -> tuple:
        """``dumps=[t, ...]``: the tensors of this task a partial argument dump would save
        (checked; a simulated device keeps no dumps, RunConfig.enable_dump_args)."""
        return self.tensor_names(node, f"{form}(dumps=...)", "dumps=[q]")

    def tensor_names(self, node, what: str, hint: str) -> tuple:
        """A keyword's list literal of tensor names (``what`` names the keyword), as SSA names."""
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.error(TypeCheckError, node, f"{what} must be a list literal of tensor names", hint=hint)
        out = []
        for e in node.elts:
            ssa = self.env.get(e.id) if isinstance(e, ast.Name) else None
            if ssa is None or not isinstance(self.types.get(ssa), TensorType):
                raise self.error(TypeCheckError, e, f"{what} entries must be bare tensor names, "
                                 f"not '{ast.unparse(e)}'", hint="name a tensor the scope reads or writes")
            out.append(ssa)
        return tuple(out)

    def dump_tag(self, node: ast.Call) -> None:
        """``pl.dump_tag(q)``: a statement marking ``q`` for the partial argument dump of the
        tasks after it that read it. Consumed here, as in the reference: no IR of its own
        (and a simulated device keeps no dumps, RunConfig.enable_dump_args)."""
        if self.incore:
            raise self.error(ParseError, node, "pl.dump_tag is the orchestration's: it marks a tensor the tasks "
                             "after it dump, and a kernel dispatches none", hint="tag the tensor in the orchestration, "
                             "before the call that reads it")
        if len(node.args) != 1 or node.keywords:
            raise self.error(TypeCheckError, node, "pl.dump_tag takes one tensor: pl.dump_tag(t)")
        e = node.args[0]
        ssa = self.env.get(e.id) if isinstance(e, ast.Name) else None
        if ssa is None or not isinstance(self.types.get(ssa), TensorType):
            raise self.error(TypeCheckError, e, f"pl.dump_tag takes a tensor's name, not '{ast.unparse(e)}'",
                             hint="bind the value to a name first: q = ...; pl.dump_tag(q)")

    def task_dummy_call(self, node: ast.Call):
        """``pl.system.task_dummy(deps=[...])``: a no-work task joining its deps (one TaskId
        for consumers to wait on); submitted even with no deps."""
        if self.incore:
            raise self.error(ParseError, node, "pl.system.task_dummy is the orchestration's: it runs on the host",
                             hint="submit it in the @pl.jit entry")
        if self.in_cluster:
            raise self.error(TypeCheckError, node, "`pl.system.task_dummy(...)` inside `pl.cluster()`: a dummy task "
                             "carries nothing but its deps, and the cluster is dispatched as one Group task",
                             hint="put the dummy before or after the pl.cluster()")
        if node.args or any(k.arg != "deps" for k in node.keywords):
            raise self.error(TypeCheckError, node, "pl.system.task_dummy takes only deps=[...]",
                             hint="pl.system.task_dummy(deps=[tids])")
        deps = self.task_deps(node.keywords[0].value, "pl.system.task_dummy") if node.keywords else ()
        return n.Submit(None, deps), TASK_ID

    def submit_call(self, node: ast.Call, spmd: bool = False):
        """``pl.submit(self.k, *args, deps=[...], allow_early_resolve=...)``: the kernel call
        as a task, its value the task's id; ``pl.no_dep(t)`` marks an argument the task
        leaves out of dependency tracking. ``pl.spmd_submit`` adds ``core_num=`` blocks and
        ``sync_start=``. (``out, tid = pl.submit(...)``: see ``unpack_submit``.)"""
        form = "pl.spmd_submit" if spmd else "pl.submit"
        target = node.args[0] if node.args else None
        if self.incore:
            raise self.error(ParseError, node, f"{form} is the orchestration's: a kernel submits no tasks",
                             hint="submit from an Orchestration function of the program")
        if not (self.has_self and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == "self" and "self" not in self.env):
            raise self.error(TypeCheckError, target or node,
                             f"{form}(...) first argument must be a self.<kernel> method reference",
                             hint=f"{form}(self.kernel, a, out{', core_num=8' if spmd else ''}) inside a @pl.program")
        args, no_dep = [], []
        for k, a in enumerate(node.args[1:]):
            if self._is_builtin_call(a, "no_dep"):
                if len(a.args) != 1 or a.keywords:
                    raise self.error(TypeCheckError, a, "pl.no_dep takes one tensor: pl.no_dep(t)")
                no_dep.append(k)
                a = a.args[0]
            args.append(a)
        kw = {k.arg: k for k in node.keywords}
        unknown = set(kw) - {"deps", "dumps", "allow_early_resolve", "predicate"} - \
            ({"core_num", "sync_start"} if spmd else set())
        if unknown:
            raise self.error(TypeCheckError, kw[sorted(unknown)[0]],
                             f"{form} got an unexpected keyword '{sorted(unknown)[0]}'",
                             hint=f"{form}(self.kernel, *args, {'core_num=8, ' if spmd else ''}deps=[...], "
                                  "allow_early_resolve=True): the kernel's arguments by position")
        blocks, sync = self.spmd_submit_keywords(node, kw, target.attr) if spmd else (None, False)
        predicate = self.predicate_of(kw["predicate"].value, form) if "predicate" in kw else None
        deps = self.task_deps(kw["deps"].value, form) if "deps" in kw else ()
        if "dumps" in kw:
            self.dumps(kw["dumps"].value, form)
        early = (self.static_of(kw["allow_early_resolve"].value, bool, "allow_early_resolve",
                                hint="allow_early_resolve=True") if "allow_early_resolve" in kw else False)
        call = ast.copy_location(ast.Call(target, args, []), node)
        value, t = self.function_call(call, lambda types: self.hooks.call_method(target.attr, types, call, self))
        callee = self.hooks.function(target.attr, node)
        if callee.type is FunctionType.Group:
            raise self.error(TypeCheckError, target, f"{form}(...) submits one kernel, and 'self.{target.attr}' is a "
                             "Group function: calling it is already one Group task on one cluster (which takes no "
                             "deps=, predicate= or core_num= here)", hint=f"call it directly: self.{target.attr}(...)")
        if not callee.type.is_kernel:
            raise self.error(TypeCheckError, target, f"{form}(...) submits a kernel, and 'self.{target.attr}' is "
                             "not one (a task runs an InCore, AIC or AIV function)",
                             hint=f"call it directly: self.{target.attr}(...), or make it "
                                  "@pl.function(type=pl.FunctionType.InCore)")
        for k in no_dep:
            if not isinstance(self.expr_type(value.args[k], node.args[k + 1]), TensorType):
                raise self.error(TypeCheckError, node.args[k + 1], "pl.no_dep marks a tensor argument")
        if self.in_cluster:
            carried = [name for name, on in (("deps", bool(deps)), ("core_num", blocks is not None),
                                             ("sync_start", sync), ("allow_early_resolve", early),
                                             ("predicate", predicate is not None)) if on]
            if carried:
                raise self.error(TypeCheckError, node, f"`{form}(...)` inside `pl.cluster()` cannot carry per-task "
                                 f"dispatch metadata ({', '.join(carried)}) — the cluster is dispatched as one Group "
                                 "task, so metadata on an inner Submit would be ignored",
                                 hint="Move the dependency or launch control to the dispatch surrounding the cluster, "
                                      "or omit it from the inner Submit.")
        task = n.Submit(value, deps, tuple(no_dep), early, blocks, sync, predicate)
        self.submitted[task] = t
        return task, TASK_ID

    def unpack_submit(self, names, task: n.Submit, node: ast.Call) -> None:
        """``out, tid = pl.submit(self.k, ...)``: the kernel's results (the tensors it wrote,
        which are its arguments), then the task's id."""
        t = self.submitted[task]
        results = len(t.callee.returns) if isinstance(t, Several) else 0 if isinstance(t, Nothing) else 1
        if len(names) != results + 1:
            raise self.error(TypeCheckError, node, f"'{ast.unparse(node.func)}' gives the kernel's {results} "
                             f"result{'s' if results != 1 else ''} and the task's id: {results + 1} values, not "
                             f"{len(names)}", hint=f"{', '.join(['out'] * results + ['tid'])} = {ast.unparse(node)}")
        if isinstance(t, Several):
            returned = [t.args[k] if k is not None else None for k in t.callee.returned_params]
        else:
            returned = [self.returned_args.get(task.call)] if results else []
        if any(r is None for r in returned):
            raise self.error(UnsupportedSyntaxError, node, "a submitted kernel returns the tensors it writes (its "
                             "Out/InOut parameters)")
        self.bind(names[-1].id, TASK_ID, task, names[-1])
        for name, arg, rt in zip(names, returned, t.callee.returns if isinstance(t, Several) else [t]):
            self.bind_returned(name, arg, rt)


def _task_ids(t) -> bool:
    """Whether ``t`` is an array of TaskIds."""
    return isinstance(t, ArrayType) and t.dtype is DataType.TASK_ID
