"""Control flow of a kernel body: ``for`` loops (range, pipeline, parallel) with their
carried values (``pypto.lang.flow.loops``), ``if`` statements with their results
(``pypto.lang.flow.branches``), ``pl.yield_``, and ``pl.at`` scopes.

A name rebound in a loop and read afterwards becomes a loop-carried value; one rebound in
a branch, an ``if`` result. ``ControlFlow`` is a part of ``FunctionConverter``: it uses the
converter's statements (``block``, ``bind``, ``value``) and calls (``CallConverter``).
"""

from __future__ import annotations

import ast

from pypto.errors import (
    ParseError,
    TypeCheckError,
    UnsupportedSyntaxError,
)
from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.types import (
    Level,
    ScalarType,
    joins,
    type_name,
)
from pypto.lang.flow.branches import Frame, _unnamed_yield  # noqa: F401  (Frame: re-exported)
from pypto.lang.expressions.exprs import Dropped
from pypto.lang.flow.loops import Loops


class ControlFlow(Loops):
    """Ifs, yields and scopes of ``FunctionConverter``; loops are ``Loops``."""

    def available(self, env: dict, name: str, node) -> str:
        """The SSA name a value the loop carries has at the end of its body, or the error
        saying why it has none there."""
        if name in env:
            return env[name]
        err = self.undefined(ast.copy_location(ast.Name(name, ast.Load()), node))
        raise self.error(type(err), node, f"this loop carries '{name}' to its next iteration, but at the end of "
                                          f"its body: {err.message}", hint=err.hint)

    def _drop(self, inner_env: dict, node, where: str) -> None:
        for name, ssa in inner_env.items():
            if self.env.get(name) != ssa and name not in self.env:
                self.dropped[name] = Dropped(node.lineno + self.source.line_offset, where)

    def yield_(self, call: ast.Call, target, declared=None) -> None:
        if not self.frames:
            raise self.error(UnsupportedSyntaxError, call, "pl.yield_ ends a loop or branch body")
        frame = self.frames[-1]
        if not frame.explicit:
            raise self.error(UnsupportedSyntaxError, call,
                             "pl.yield_ belongs to a loop with init_values (or an if whose branches yield)",
                             hint="rebinding a name in the loop carries it implicitly")
        body = "loop body" if frame.kind == "for" else "branch"
        if getattr(frame.last, "value", None) is not call:
            raise self.error(UnsupportedSyntaxError, call, f"pl.yield_ must be the last statement of its {body}",
                             hint=f"end the {body} with one 'x = pl.yield_(...)' and move what follows it before it")
        if frame.kind == "for" and len(call.args) != len(frame.header):
            raise self.error(TypeCheckError, call,
                             f"pl.yield_ hands on {len(call.args)} value{'s' if len(call.args) != 1 else ''}, but the "
                             f"loop carries {len(frame.header)} ({', '.join(frame.header)})",
                             hint="yield one value per name in the loop header's (...), in the same order")
        if target is None and call.args:
            raise self.error(UnsupportedSyntaxError, call, _unnamed_yield(call, "loop" if frame.kind == "for" else "if"),
                             hint=f"x = {ast.unparse(call)}")
        values = [self.operand(a) for a in call.args]
        names = ()
        if target is not None:
            elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            if not all(isinstance(e, ast.Name) for e in elts) or len(elts) != len(values):
                raise self.error(TypeCheckError, target, f"{len(elts)} names for {len(values)} yielded values")
            names = tuple(e.id for e in elts)
            for e in elts:
                self.check_local_name(e.id, e)
        frame.yield_targets = names
        frame.yield_types = tuple(t for _, t in values)
        if declared is not None:
            if len(values) != 1:
                raise self.error(TypeCheckError, target, "only a single yielded value takes an annotation")
            if not joins(values[0][1], declared) and not _constant_fits(values[0][0], declared):
                raise self.error(TypeCheckError, target, f"the yielded value is {type_name(values[0][1])}, "
                                                         f"not the annotated {type_name(declared)}")
            frame.declared = declared
            if not joins(values[0][1], declared):  # a constant, of the type it is yielded as
                ssa = self.fresh(names[0] if names else "c", temp=True)
                self.types[ssa] = declared
                self.emit(n.Assign(ssa, declared, values[0][0], span=self.span(call)))
                values[0] = (n.Var(ssa), declared)
                frame.yield_types = (declared,)
        self.emit(n.Yield(tuple(e for e, _ in values), span=self.span(call)))

    def _yield_names(self, stmt) -> list[str]:
        """The names ``x, y = pl.yield_(...)`` binds, when ``stmt`` is such a statement."""
        if not (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and self._is_builtin_call(stmt.value, "yield_")):
            return []
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
        elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        return [e.id for e in elts if isinstance(e, ast.Name)]

    def _ends_in_yield(self, stmts) -> bool:
        if not stmts:
            return False
        last = stmts[-1]
        value = getattr(last, "value", None)
        return isinstance(last, (ast.Assign, ast.AnnAssign, ast.Expr)) and self._is_builtin_call(value, "yield_")

    def with_(self, node: ast.With, live_after: frozenset) -> None:
        if len(node.items) != 1:
            raise self.error(UnsupportedSyntaxError, node, "a with statement opens one pl.at(...) scope",
                             hint="nest them: one with statement per scope")
        item = node.items[0]
        call = item.context_expr
        if self._is_builtin_call(call, "scope") or self._is_builtin_call(call, "manual_scope"):
            return self.runtime_scope(node, call, live_after)
        if self._is_builtin_call(call, "spmd"):
            return self.spmd_with(node, call, live_after)
        if self._is_builtin_call(call, "cluster"):
            return self.cluster_with(node, call, live_after)
        if not self._is_builtin_call(call, "at"):
            raise self.error(UnsupportedSyntaxError, call, "kernels open scopes with pl.at(level=pl.Level.CORE_GROUP)")
        target = item.optional_vars
        if target is not None and not isinstance(target, ast.Name):
            raise self.error(UnsupportedSyntaxError, target, "'with pl.at(...) as tid' binds one name: the task's id",
                             hint="with pl.at(level=pl.Level.CORE_GROUP) as tid:, then arr[i] = tid to keep it")
        if self.incore:
            raise self.error(ParseError, call, "pl.at inside an InCore function: its body is already InCore",
                             hint="remove the with statement")
        if call.args:
            raise self.error(TypeCheckError, call, "pl.at takes keywords: pl.at(level=pl.Level.CORE_GROUP)",
                             hint="pl.at(level=pl.Level.CORE_GROUP, deps=[tid])")
        kw = {k.arg: k.value for k in call.keywords}
        unknown = set(kw) - {"level", "name_hint", "deps", "no_dep_args", "dumps", "allow_early_resolve",
                             "optimizations"}
        if unknown:
            raise self.error(TypeCheckError, call, f"pl.at got an unexpected keyword '{sorted(unknown)[0]}'",
                             hint="pl.at takes level=, name_hint=, deps=, no_dep_args=, dumps=, allow_early_resolve= "
                                  "and optimizations=")
        if "dumps" in kw:
            self.dumps(kw["dumps"], "pl.at")
        split, slot_num = self.optimizations(kw["optimizations"], "pl.at") if "optimizations" in kw else (None, None)
        if "level" not in kw:
            raise self.error(TypeCheckError, call, "pl.at needs level=", hint="pl.at(level=pl.Level.CORE_GROUP)")
        level = self.static_of(kw["level"], Level, "pl.at's level")
        if level is not Level.CORE_GROUP:
            raise self.error(UnsupportedSyntaxError, kw["level"], f"pl.at(level=pl.Level.{level.name}) is not supported yet",
                             hint="use pl.Level.CORE_GROUP for an InCore scope")
        hint = self.scope_name_hint(kw["name_hint"]) if "name_hint" in kw else ""
        deps = self.task_deps(kw["deps"]) if "deps" in kw else ()
        no_dep = self.no_dep_args(kw["no_dep_args"]) if "no_dep_args" in kw else ()
        early = (self.static_of(kw["allow_early_resolve"], bool, "allow_early_resolve",
                                hint="allow_early_resolve=True") if "allow_early_resolve" in kw else False)
        if self.in_cluster and (deps or early or target is not None):  # no_dep_args: the member's own directions
            carried = [x for x, on in (("deps", deps), ("allow_early_resolve", early),
                                       ("as tid", target is not None)) if on]
            raise self.error(TypeCheckError, call, f"`pl.at(...)` inside `pl.cluster()` cannot carry per-task "
                             f"dispatch metadata ({', '.join(carried)}) — the cluster is dispatched as one Group task",
                             hint="move it to the dispatch surrounding the cluster, or drop it")
        self.incore = True
        try:
            body = self.block(node.body, live_after)
        finally:
            self.incore = False
        tid = self.bind_task_id(target) if target is not None else None
        self.emit(n.Scope(body, level, hint, span=self.span(node), task_id=tid, deps=deps, no_dep_args=no_dep,
                          allow_early_resolve=early, split=split, slot_num=slot_num))


def has_effect(stmts) -> bool:
    """Whether running ``stmts`` does anything besides computing values: a GM write, or a
    call of another function."""
    for s in stmts:
        value = getattr(s, "value", None)
        if isinstance(value, n.FuncCall) or isinstance(value, n.Call) and lookup(value.op).has_effect:
            return True
        if any(has_effect(getattr(s, f, ())) for f in ("body", "then_body", "else_body")):
            return True
    return False


def _constant_fits(value, declared) -> bool:
    """A constant takes its dtype from where it is used: ``x: pl.Scalar[pl.INT64] =
    pl.yield_(pl.const(1, pl.INT64))`` (or ``pl.yield_(1)``) yields an INT64."""
    if not (isinstance(value, n.Const) and isinstance(declared, ScalarType)) or isinstance(value.value, bool):
        return False
    if declared.dtype.is_int:
        return isinstance(value.value, int) and declared.dtype.int_range[0] <= value.value <= declared.dtype.int_range[1]
    return declared.dtype.is_float and isinstance(value.value, (int, float))
