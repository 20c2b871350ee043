"""Control flow of a kernel body: ``for`` loops (range, pipeline, parallel) with their
carried values, ``if`` statements with their results (``pypto.lang.branches``),
``pl.yield_``, and ``pl.at`` scopes.

A name rebound in a loop and read afterwards becomes a loop-carried value; one rebound in
a branch, an ``if`` result. ``ControlFlow`` is a part of ``FunctionConverter``: it uses the
converter's statements (``block``, ``bind``, ``value``) and calls (``CallConverter``).
"""

from __future__ import annotations

import ast

import attrs

from pypto.errors import (
    ParseError,
    TypeCheckError,
    UnsupportedSyntaxError,
)
from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.types import (
    INDEX,
    ForKind,
    Level,
    ScalarType,
    joins,
    placed_name,
    type_name,
)
from pypto.lang import liveness
from pypto.lang import names as N
from pypto.lang.branches import Branches, Frame, _unnamed_yield  # noqa: F401  (Frame: re-exported)
from pypto.lang.exprs import Dropped


LOOPS = "For loop must use pl.range(), pl.parallel(), pl.unroll(), pl.pipeline(), pl.spmd(), or pl.split_aiv()"


class ControlFlow(Branches):
    """Loops, ifs, yields and scopes of ``FunctionConverter``."""

    def loop_header(self, node: ast.For):
        it = node.iter
        if not isinstance(it, ast.Call):
            raise self.error(UnsupportedSyntaxError, it, LOOPS)
        _, meaning = self.entity(it.func)
        if isinstance(it.func, ast.Name) and it.func.id == "range" and not isinstance(meaning, N.Builtin):
            raise self.error(UnsupportedSyntaxError, it, "Python's range() is not a kernel loop",
                             hint="use pl.range(...) (or pl.pipeline / pl.parallel)")
        if not isinstance(meaning, N.Builtin) or meaning.name not in ("range", "pipeline", "parallel"):
            raise self.error(UnsupportedSyntaxError, it, LOOPS)
        kind = {"range": ForKind.Sequential, "pipeline": ForKind.Pipeline, "parallel": ForKind.Parallel}[meaning.name]
        if not 1 <= len(it.args) <= 3:
            raise self.error(TypeCheckError, it, f"pl.{meaning.name}() takes 1 to 3 positional arguments")
        bounds = [self.scalar(a) for a in it.args]
        start, stop, step = (n.Const(0), bounds[0], n.Const(1)) if len(bounds) == 1 else \
            (bounds[0], bounds[1], bounds[2] if len(bounds) == 3 else n.Const(1))
        for b, a in zip(bounds, it.args):
            t = self.expr_type(b, a)
            if not (isinstance(t, ScalarType) and t.dtype.is_int):
                raise self.error(TypeCheckError, a, f"loop bounds are integers, not {type_name(t)}")
        if isinstance(step, n.Const) and step.value <= 0:
            raise self.error(TypeCheckError, it, f"the loop step must be positive, not {step.value}")
        kw = {k.arg: k for k in it.keywords}
        stage = None
        if kind is ForKind.Pipeline:
            if "stage" not in kw:
                raise self.error(TypeCheckError, it, "pl.pipeline needs stage=F (the depth, usually 2-4)",
                                 hint="for i in pl.pipeline(n, stage=2):")
            stage = self.static_of(kw["stage"].value, int, "pl.pipeline's stage")
            if stage < 1:
                raise self.error(TypeCheckError, kw["stage"], f"stage must be a positive int, not {stage}")
        unknown = set(kw) - {"stage", "init_values"} if kind is ForKind.Pipeline else set(kw) - {"init_values"}
        if unknown:
            raise self.error(TypeCheckError, kw[sorted(unknown)[0]],
                             f"pl.{meaning.name} got an unexpected keyword '{sorted(unknown)[0]}'")
        inits = None
        if "init_values" in kw:
            value = kw["init_values"].value
            if not isinstance(value, (ast.Tuple, ast.List)):
                raise self.error(TypeCheckError, value, "init_values is a tuple of initial values", hint="init_values=(acc,)")
            inits = [self.operand(e) for e in value.elts]
        return kind, start, stop, step, stage, inits

    def for_(self, node: ast.For, live_after: frozenset) -> None:
        if self.unrolled(node):
            return self.unroll(node, live_after)
        if self._is_builtin_call(node.iter, "spmd"):
            return self.spmd_for(node, live_after)
        if self._is_builtin_call(node.iter, "split_aiv"):
            return self.split_aiv_for(node, live_after)
        if node.orelse:
            raise self.error(UnsupportedSyntaxError, node, "for-else is not supported",
                             hint="write the else block's statements after the loop")
        kind, start, stop, step, stage, inits = self.loop_header(node)
        explicit = inits is not None
        target = node.target
        if explicit:
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name)
                    and isinstance(target.elts[1], (ast.Tuple, ast.List))
                    and all(isinstance(e, ast.Name) for e in target.elts[1].elts)):
                raise self.error(UnsupportedSyntaxError, target, "a loop with init_values binds 'i, (a, b)'",
                                 hint="for i, (acc,) in pl.range(n, init_values=(acc0,)):")
            loop_name = target.elts[0].id
            header = [e.id for e in target.elts[1].elts]
            if len(header) != len(inits):
                raise self.error(TypeCheckError, target, f"{len(header)} loop-carried names for {len(inits)} init_values")
        else:
            if not isinstance(target, ast.Name):
                raise self.error(UnsupportedSyntaxError, target, "the loop variable is a single name")
            loop_name, header, inits = target.id, [], []
        for name_node in ast.walk(target):
            if isinstance(name_node, ast.Name):
                self.check_local_name(name_node.id, name_node)
        yield_names = set(self._yield_names(node.body[-1])) if explicit else set()
        body_assigned = liveness.assigned(node.body) + self.arrays_stored(node.body)
        exposed = liveness.upward_exposed(node.body)
        # Every other name the body rebinds that is read again (by the next iteration or after
        # the loop) is carried, with or without explicit init_values, as Python would see it.
        implicit = [x for x in body_assigned if x in self.env and x != loop_name and x not in header
                    and x not in yield_names and (x in exposed or x in live_after)]
        last = _last_value(start, stop, step)
        after = None  # how the loop variable reads after the loop, when something reads it
        if loop_name in live_after and loop_name not in yield_names and last != "empty":
            if last is not None and loop_name not in body_assigned:
                after = "last"  # its last value, known here
            elif loop_name in self.env:
                after = "carried"  # the value the last iteration leaves it (or its own, if none runs)

        outer_env = dict(self.env)
        var = self.fresh(loop_name)
        self.types[var] = INDEX
        self.env[loop_name] = var
        if isinstance(last, int):
            self.ranges[var] = (start.value, last)
        iter_args = []

        def carry(name: str, init, t) -> str:
            ssa = self.fresh(name)
            self.types[ssa] = t
            iter_args.append(n.IterArg(ssa, t, init))
            return ssa

        for name, (init, t) in zip(header, inits):
            self.env[name] = carry(name, init, t)
        for name in implicit:
            self.env[name] = carry(name, *self.ssa_value(outer_env[name]))
        if after == "carried":  # not a name in the body, where the loop variable is
            init, t = self.ssa_value(outer_env[loop_name])
            if isinstance(t, ScalarType) and t.dtype.is_int and t != INDEX:  # an int converts to the index it becomes
                converted = self.fresh(loop_name)
                self.types[converted] = INDEX
                self.emit(n.Assign(converted, INDEX, init, span=self.span(node)))
                init, t = n.Var(converted), INDEX
            carry(loop_name, init, t)

        frame = Frame("for", explicit, last=node.body[-1], header=tuple(header))
        self.frames.append(frame)
        body_live = live_after | exposed | frozenset(header) | frozenset(implicit)
        try:
            body = list(self.block(node.body, body_live))
        finally:
            self.frames.pop()
        body_env = self.env
        if explicit and frame.yield_targets is None:
            raise self.error(TypeCheckError, node, "a loop with init_values must end with 'x = pl.yield_(...)'",
                             hint=f"end the body with {', '.join(header) or 'x'} = pl.yield_(...)")
        others = [*implicit, *([loop_name] if after == "carried" else [])]
        values = [self.ssa_value(self.available(body_env, x, node)) for x in others]
        if explicit:
            done = body.pop()  # the user's yield: the implicit values join it
            body.append(attrs.evolve(done, values=done.values + tuple(e for e, _ in values)))
            names = [*frame.yield_targets, *others]
            yield_types = [*frame.yield_types, *(t for _, t in values)]
        else:
            names, yield_types = others, [t for _, t in values]
            if values:
                body.append(n.Yield(tuple(e for e, _ in values), span=self.span(node)))
        for name, a, t in zip([*header, *others], iter_args, yield_types):
            if not joins(t, a.type):
                what = "the loop variable" if name == loop_name and name not in header else "loop-carried value"
                before, end = type_name(a.type), type_name(t)
                hint = "keep the shape, dtype and memory space of a value the loop carries"
                if before == end:  # they differ in placement only
                    before, end = placed_name(a.type), placed_name(t)
                    hint = ("a carried tile keeps one place: give it the same slot before the loop and at the "
                            "end of the body, or leave it undeclared and let the compiler place it")
                raise self.error(TypeCheckError, node,
                                 f"{what} '{name}' is {before} before the loop and {end} at the end of its body",
                                 hint=hint)
        self.env = outer_env
        self._drop(body_env, node, "loop")
        line = node.lineno + self.source.line_offset
        for name in header:
            if name not in names:  # the header names are scoped to the body (as the reference has it)
                self.env.pop(name, None)
                self.dropped[name] = Dropped(
                    line, "loop",
                    message=f"'{name}' names a carried value in the header of the loop at line {line}, "
                            "and is not available after it",
                    hint="read the loop's result: the name its pl.yield_ assigns"
                         + (f" ('{frame.yield_targets[header.index(name)]}')" if frame.yield_targets else ""))
        results = []
        for name, a in zip(names, iter_args):
            ssa = self.fresh(name)
            self.types[ssa] = a.type
            self.env[name] = ssa
            self.dropped.pop(name, None)
            results.append(n.Binding(ssa, a.type))
        self.emit(n.For(var, start, stop, step, body, kind, stage, iter_args, results, span=self.span(node)))
        if after == "last":
            self.bind(loop_name, INDEX, n.Const(last), node)

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
            if not joins(values[0][1], declared):
                raise self.error(TypeCheckError, target, f"the yielded value is {type_name(values[0][1])}, "
                                                         f"not the annotated {type_name(declared)}")
            frame.declared = declared
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
        unknown = set(kw) - {"level", "name_hint", "deps", "no_dep_args", "allow_early_resolve", "optimizations"}
        if unknown:
            raise self.error(TypeCheckError, call, f"pl.at got an unexpected keyword '{sorted(unknown)[0]}'",
                             hint="pl.at takes level=, name_hint=, deps=, no_dep_args=, allow_early_resolve= and "
                                  "optimizations=")
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


def _last_value(start, stop, step):
    """The loop variable's last value when the bounds are constants ("empty" when the loop
    never runs), else None."""
    if not all(isinstance(b, n.Const) for b in (start, stop, step)):
        return None
    if stop.value <= start.value:
        return "empty"
    return start.value + (stop.value - 1 - start.value) // step.value * step.value
