"""``for`` loops of a kernel body (``pl.range``, ``pl.pipeline``, ``pl.parallel``) and
what they carry. A mixin of ``FunctionConverter``, like ``ControlFlow`` around it.

What a loop carries is planned from the source before anything is emitted
(``plan_loop``, a pure function): the header's names, every other name the body rebinds
that is read again (by the next iteration or after the loop), and how the loop variable
reads after the loop. Converting the loop then follows the plan: carry in, the body,
the yield that hands each carried value on, and the results bound after it.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

import attrs

from pypto.errors import TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.tensors import block_roots
from pypto.ir.types import INDEX, ForKind, ScalarType, TensorType, joins, placed_name, type_name
from pypto.lang import index_bounds, liveness
from pypto.lang import names as N
from pypto.lang.branches import Branches, Frame
from pypto.lang.exprs import Dropped

LOOPS = "For loop must use pl.range(), pl.parallel(), pl.unroll(), pl.pipeline(), pl.spmd(), or pl.split_aiv()"


@attrs.frozen
class LoopPlan:
    """What a loop carries, decided from its source and the names bound before it."""

    loop_name: str
    header: tuple[str, ...]  # the names ``for i, (a, b) in pl.range(..., init_values=...)`` carries
    explicit: bool  # it has init_values (and ends in pl.yield_)
    implicit: tuple[str, ...]  # other names it carries: rebound in the body and read again
    # how the loop variable reads after the loop, when something reads it: "last" (its
    # last value, known here) or "carried" (the value the last iteration leaves it)
    after: str | None
    last: int | str | None  # the loop variable's last value; "empty": the loop never runs

    @property
    def carried(self) -> tuple[str, ...]:
        """The names the loop hands on besides what its pl.yield_ names, in yield order."""
        return (*self.implicit, *((self.loop_name,) if self.after == "carried" else ()))


def plan_loop(node: ast.For, loop_name: str, header, yield_names: Collection[str], bound: Collection[str],
              live_after: Collection[str], last, arrays_stored=()) -> LoopPlan:
    """``yield_names``: what the body's closing pl.yield_ binds (nothing: no init_values);
    ``bound``: the names with a value before the loop; ``live_after``: those read after
    it; ``arrays_stored``: the arrays the body stores elements of (a rebinding, too)."""
    explicit = yield_names is not None
    yield_names = set(yield_names or ())
    body_assigned = liveness.assigned(node.body) + list(arrays_stored)
    exposed = liveness.upward_exposed(node.body)
    # As Python would see it: a name rebound in the body and read by the next iteration or
    # after the loop is carried, with or without explicit init_values.
    implicit = tuple(x for x in body_assigned if x in bound and x != loop_name and x not in header
                     and x not in yield_names and (x in exposed or x in live_after))
    after = None
    if loop_name in live_after and loop_name not in yield_names and last != "empty":
        if last is not None and loop_name not in body_assigned:
            after = "last"
        elif loop_name in bound:
            after = "carried"  # (or its own value, if no iteration runs)
    return LoopPlan(loop_name, tuple(header), explicit, implicit, after, last)


def last_value(start, stop, step):
    """The loop variable's last value when the bounds are constants ("empty" when the loop
    never runs), else None."""
    if not all(isinstance(b, n.Const) for b in (start, stop, step)):
        return None
    if stop.value <= start.value:
        return "empty"
    return start.value + (stop.value - 1 - start.value) // step.value * step.value


class Loops(Branches):
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
        loop_name, header = self.loop_target(node.target, inits)
        yields = self._yield_names(node.body[-1]) if inits is not None else None
        plan = plan_loop(node, loop_name, header, yields, self.env, live_after, last_value(start, stop, step),
                         self.arrays_stored(node.body))
        outer_env = self.env
        var, iter_args = self.carry_in(node, plan, start, stop, step, inits or [], outer_env)
        frame = Frame("for", plan.explicit, last=node.body[-1], header=plan.header)
        self.frames.append(frame)
        body_live = frozenset(live_after) | liveness.upward_exposed(node.body) | frozenset(header) \
            | frozenset(plan.implicit)
        try:
            body = list(self.block(node.body, body_live))
        finally:
            self.frames.pop()
        body_env = self.env
        names = self.hand_on(node, plan, frame, body, iter_args)
        self.env = outer_env
        self._drop(body_env, node, "loop")
        self.hand_out_tensors(body_env, outer_env, body)
        self.scope_header(node, plan, frame, names)
        results = []
        for name, a in zip(names, iter_args):
            ssa = self.fresh(name)
            self.types[ssa] = a.type
            self.env = self.env.set(name, ssa)
            self.dropped.pop(name, None)
            results.append(n.Binding(ssa, a.type))
        self.emit(n.For(var, start, stop, step, body, kind, stage, iter_args, results, span=self.span(node)))
        if plan.after == "last":
            self.bind(loop_name, INDEX, n.Const(plan.last), node)

    def loop_header(self, node: ast.For):
        """(kind, start, stop, step, stage, the init_values operands or None)."""
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
        self.check_index_bounds(it, f"pl.{meaning.name}", (start, stop, step), it.args)
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

    def check_index_bounds(self, it: ast.Call, form: str, bounds, written) -> None:
        """Constant bounds (start, stop, step: Exprs, or ints) the loop index's type holds
        (``index_bounds``); ``written``: the arguments as written, for the location (one:
        the stop; two: start and stop)."""
        at = (None, written[0], None) if len(written) == 1 else (*written, None)[:3]
        values = [b.value if isinstance(b, n.Const) else b for b in bounds]
        for value, what, node in zip(values, ("start", "stop", "step"), at):
            if type(value) is int:
                why = index_bounds.bound(value, f"{form}'s {what}")
                if why is not None:
                    raise self.error(TypeCheckError, node or it, why, hint=index_bounds.HINT)
        if all(type(v) is int for v in values) and values[2] != 0:
            why = index_bounds.trips(*values)
            if why is not None:
                raise self.error(TypeCheckError, it, f"{form}{tuple(values)}: {why}", hint=index_bounds.HINT)

    def loop_target(self, target, inits) -> tuple[str, list[str]]:
        """The loop variable's name and the header's carried names (``i, (a, b)``)."""
        if inits is not None:
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name)
                    and isinstance(target.elts[1], (ast.Tuple, ast.List))
                    and all(isinstance(e, ast.Name) for e in target.elts[1].elts)):
                raise self.error(UnsupportedSyntaxError, target, "a loop with init_values binds 'i, (a, b)'",
                                 hint="for i, (acc,) in pl.range(n, init_values=(acc0,)):")
            loop_name, header = target.elts[0].id, [e.id for e in target.elts[1].elts]
            if len(header) != len(inits):
                raise self.error(TypeCheckError, target, f"{len(header)} loop-carried names for {len(inits)} init_values")
        elif not isinstance(target, ast.Name):
            raise self.error(UnsupportedSyntaxError, target, "the loop variable is a single name")
        else:
            loop_name, header = target.id, []
        for name_node in ast.walk(target):
            if isinstance(name_node, ast.Name):
                self.check_local_name(name_node.id, name_node)
        return loop_name, header

    def carry_in(self, node, plan: LoopPlan, start, stop, step, inits, outer_env) -> tuple[str, list]:
        """The loop variable's SSA name and the loop's IterArgs, bound for the body."""
        var = self.fresh(plan.loop_name)
        self.types[var] = INDEX
        self.env = self.env.set(plan.loop_name, var)
        if isinstance(plan.last, int):
            self.ranges[var] = (start.value, plan.last)
        iter_args = []

        def carry(name: str, init, t) -> str:
            ssa = self.fresh(name)
            self.types[ssa] = t
            iter_args.append(n.IterArg(ssa, t, init))
            return ssa

        for name, (init, t) in zip(plan.header, inits):
            self.env = self.env.set(name, carry(name, init, t))
        for name in plan.implicit:
            self.env = self.env.set(name, carry(name, *self.ssa_value(outer_env[name])))
        if plan.after == "carried":  # not a name in the body, where the loop variable is
            init, t = self.ssa_value(outer_env[plan.loop_name])
            if isinstance(t, ScalarType) and t.dtype.is_int and t != INDEX:  # an int converts to the index it becomes
                converted = self.fresh(plan.loop_name)
                self.types[converted] = INDEX
                self.emit(n.Assign(converted, INDEX, init, span=self.span(node)))
                init, t = n.Var(converted), INDEX
            carry(plan.loop_name, init, t)
        return var, iter_args

    def hand_on(self, node, plan: LoopPlan, frame: Frame, body: list, iter_args) -> list[str]:
        """End the body with the yield of every carried value (the user's, joined by the
        implicit ones), checked against what the loop carries in; the names bound after it."""
        if plan.explicit and frame.yield_targets is None:
            raise self.error(TypeCheckError, node, "a loop with init_values must end with 'x = pl.yield_(...)'",
                             hint=f"end the body with {', '.join(plan.header) or 'x'} = pl.yield_(...)")
        others = plan.carried
        values = [self.ssa_value(self.available(self.env, x, node)) for x in others]
        if plan.explicit:
            done = body.pop()
            body.append(attrs.evolve(done, values=done.values + tuple(e for e, _ in values)))
            names = [*frame.yield_targets, *others]
            yield_types = [*frame.yield_types, *(t for _, t in values)]
        else:
            names, yield_types = list(others), [t for _, t in values]
            if values:
                body.append(n.Yield(tuple(e for e, _ in values), span=self.span(node)))
        for name, a, t in zip([*plan.header, *others], iter_args, yield_types):
            if not joins(t, a.type):
                raise self.error(TypeCheckError, node, *_carried_type_message(name, plan, a.type, t))
        return names

    def hand_out_tensors(self, body_env, outer_env, body) -> None:
        """A name the body binds to a tensor from before the loop — the result of a store
        into it (``out_1 = pl.store(t, [i, 0], out)``) — names that tensor after the loop,
        as Python's last iteration would leave it: the writes went into the tensor itself."""
        outer = {ssa: ssa for ssa in outer_env.values() if isinstance(self.types.get(ssa), TensorType)}
        roots = block_roots(body, outer)
        for name, ssa in body_env.items():
            if name not in outer_env and roots.get(ssa) in outer:
                self.env = self.env.set(name, roots[ssa])
                self.dropped.pop(name, None)

    def scope_header(self, node, plan: LoopPlan, frame: Frame, names) -> None:
        """The header's names are scoped to the body (as the reference has it): after the
        loop, its results are read by the names its pl.yield_ assigns."""
        line = node.lineno + self.source.line_offset
        for name in plan.header:
            if name not in names:
                self.env = self.env.discard(name)
                self.dropped[name] = Dropped(
                    line, "loop",
                    message=f"'{name}' names a carried value in the header of the loop at line {line}, "
                            "and is not available after it",
                    hint="read the loop's result: the name its pl.yield_ assigns"
                         + (f" ('{frame.yield_targets[plan.header.index(name)]}')" if frame.yield_targets else ""))


def _carried_type_message(name: str, plan: LoopPlan, before_t, end_t) -> tuple[str, str]:
    what = "the loop variable" if name == plan.loop_name and name not in plan.header else "loop-carried value"
    before, end = type_name(before_t), type_name(end_t)
    hint = "keep the shape, dtype and memory space of a value the loop carries"
    if before == end:  # they differ in placement only
        before, end = placed_name(before_t), placed_name(end_t)
        hint = ("a carried tile keeps one place: give it the same slot before the loop and at the "
                "end of the body, or leave it undeclared and let the compiler place it")
    return f"{what} '{name}' is {before} before the loop and {end} at the end of its body", hint
