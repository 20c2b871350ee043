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
from pypto.ir.types import INDEX, DataType, ForKind, ScalarType, TensorType, joins, placed_name, type_name
from pypto.lang.flow import index_bounds, jumps, liveness
from pypto.lang.vocabulary import names as N
from pypto.lang.flow.branches import Branches, Frame
from pypto.lang.expressions.exprs import Dropped

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
        if self._is_builtin_call(node.iter, "while_"):
            return self.while_form(node, live_after)
        if jumps.jumps(node.body):
            node = self.for_without_jumps(node, live_after)
            if node is None:  # it broke: converted as a while
                return
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
                         self.stored_into(node.body))
        outer_env = self.env
        var, iter_args = self.carry_in(node, plan, start, stop, step, inits or [], outer_env)
        body_live = frozenset(live_after) | liveness.upward_exposed(node.body) | frozenset(header) \
            | frozenset(plan.implicit)
        body, results = self.loop_body(node, node.body, plan, body_live, iter_args, outer_env)
        self.emit(n.For(var, start, stop, step, body, kind, stage, iter_args, results, span=self.span(node)))
        if plan.after == "last":
            self.bind(loop_name, INDEX, n.Const(plan.last), node)

    def loop_body(self, node, body: list, plan: LoopPlan, body_live: frozenset, iter_args: list, outer_env):
        """The body of a for or while loop converted with its carried values, and the loop's
        results (a binding per value carried out), bound in the scope around the loop."""
        frame = Frame("for", plan.explicit, last=body[-1] if body else None, header=plan.header)
        self.frames.append(frame)
        try:
            body_ir = list(self.block(body, body_live))
        finally:
            self.frames.pop()
        body_env = self.env
        names = self.hand_on(node, plan, frame, body_ir, iter_args)
        self.env = outer_env
        self._drop(body_env, node, "loop")
        self.hand_out_tensors(body_env, outer_env, body_ir)
        self.scope_header(node, plan, frame, names)
        results = []
        for name, a in zip(names, iter_args):
            ssa = self.fresh(name)
            self.types[ssa] = a.type
            self.env = self.env.set(name, ssa)
            self.dropped.pop(name, None)
            results.append(n.Binding(ssa, a.type))
        return body_ir, results

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


    # ------------------------------------------------------------------ jumps and while loops

    def jump_names(self) -> jumps.Names:
        names = self.__dict__.get("_jump_names")
        if names is None:
            names = self._jump_names = jumps.Names()
        return names

    def check_jumps(self, node, body, form: str, allow_break: bool) -> list:
        """The jumps of a loop body, refused where the loop cannot take them; its breaks."""
        for j in jumps.outside_ifs(body):
            word = "break" if isinstance(j, ast.Break) else "continue"
            raise self.error(UnsupportedSyntaxError, j, f"'{word}' inside a with block is not supported",
                             hint=f"jump from the loop body or an if in it; end the with block first")
        breaks = jumps.jumps(body, ast.Break)
        if breaks and not allow_break:
            raise self.error(UnsupportedSyntaxError, breaks[0], f"'break' cannot end a {form} loop early",
                             hint="break out of a pl.range(...) loop (or a while loop); this loop's trips are "
                                  "laid out before it runs")
        return breaks

    def for_without_jumps(self, node: ast.For, live_after: frozenset):
        """The loop with its ``continue``s and ``break``s made structured (``jumps``): the
        same loop with a new body, or None when its breaks made it a while loop (converted here)."""
        it = node.iter
        _, meaning = self.entity(it.func) if isinstance(it, ast.Call) else (None, None)
        form = f"pl.{meaning.name}" if isinstance(meaning, N.Builtin) else ast.unparse(it)
        kw = [k for k in getattr(it, "keywords", ()) if k.arg == "init_values"]
        found = jumps.jumps(node.body)
        if kw:
            word = "break" if isinstance(found[0], ast.Break) else "continue"
            raise self.error(UnsupportedSyntaxError, found[0], f"'{word}' in a loop with init_values: the trip it "
                             "ends would hand on no pl.yield_", hint="carry the values by rebinding their names in "
                             "the body (no init_values), which a jump leaves as they are")
        if node.orelse:
            raise self.error(UnsupportedSyntaxError, node, "for-else is not supported",
                             hint="write the else block's statements after the loop")
        forms = {"range": True, "unroll": True, "parallel": False, "pipeline": False}
        breaks = self.check_jumps(node, node.body, form, forms.get(getattr(meaning, "name", None), False))
        names = self.jump_names()
        if not breaks:
            return ast.copy_location(ast.For(node.target, node.iter, jumps.eliminated(node.body, None, names), [],
                                             None), node)
        if not isinstance(node.target, ast.Name):
            raise self.error(UnsupportedSyntaxError, node.target, "the loop variable is a single name")
        brk = names.fresh("brk")
        self.bind(brk, ScalarType(DataType.BOOL), n.Const(False), node)
        if meaning.name == "unroll":  # the copies after the one that broke do nothing
            guard = ast.UnaryOp(ast.Not(), ast.Name(brk, ast.Load()))
            body = [ast.If(guard, jumps.eliminated(node.body, brk, names), [])]
            return jumps._locate(ast.For(node.target, node.iter, body, [], None), node)
        _, start, stop, step, _, _ = self.loop_header(node)
        counter, end, stride = names.fresh("it"), names.fresh("stop"), names.fresh("step")
        for name, e in ((counter, start), (end, stop), (stride, step)):
            self.bind(name, INDEX, e, node)
        loop = jumps.broken_for(node, node.target.id, counter, end, stride, brk, names)
        self.while_loop(loop, loop.test, loop.body, None, None, live_after)
        return None

    def while_(self, node: ast.While, live_after: frozenset) -> None:
        """``while cond:`` — what the body rebinds and reads again (the condition reads it
        before each trip) is carried."""
        if node.orelse:
            raise self.error(UnsupportedSyntaxError, node, "while-else is not supported",
                             hint="write the else block's statements after the loop")
        if jumps.jumps(node.body):
            names = self.jump_names()
            if self.check_jumps(node, node.body, "while", True):
                brk = names.fresh("brk")
                self.bind(brk, ScalarType(DataType.BOOL), n.Const(False), node)
                node = jumps.broken_while(node, brk, names)
            else:
                node = ast.copy_location(ast.While(node.test, jumps.eliminated(node.body, None, names), []), node)
        self.while_loop(node, node.test, node.body, None, None, live_after)

    def while_form(self, node: ast.For, live_after: frozenset) -> None:
        """``for (x,) in pl.while_(init_values=(x0,)):`` opened by ``pl.cond(test)``, ended
        by ``x_out = pl.yield_(...)``: the explicit spelling (the one dumps print)."""
        it = node.iter
        if it.args or [k.arg for k in it.keywords] != ["init_values"]:
            raise self.error(TypeCheckError, it, "pl.while_ takes init_values=(...) only",
                             hint="for (x,) in pl.while_(init_values=(0,)):")
        value = it.keywords[0].value
        if not isinstance(value, (ast.Tuple, ast.List)) or not value.elts:
            raise self.error(TypeCheckError, value, "init_values is a tuple of initial values, one per carried name",
                             hint="init_values=(x0,)")
        target = node.target
        if not (isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts)):
            raise self.error(UnsupportedSyntaxError, target, "a pl.while_ loop binds its carried names, '(a, b)'",
                             hint="for (x,) in pl.while_(init_values=(x0,)):")
        header = [e.id for e in target.elts]
        if len(header) != len(value.elts):
            raise self.error(TypeCheckError, target, f"{len(header)} loop-carried names for {len(value.elts)} "
                             "init_values")
        for e in target.elts:
            self.check_local_name(e.id, e)
        if node.orelse:
            raise self.error(UnsupportedSyntaxError, node, "for-else is not supported")
        first = node.body[0]
        if not (isinstance(first, ast.Expr) and self._is_builtin_call(first.value, "cond")):
            raise self.error(UnsupportedSyntaxError, first, "a pl.while_ loop opens with pl.cond(condition)",
                             hint="make pl.cond(x < n) the first statement of the body")
        call = first.value
        if len(call.args) != 1 or call.keywords:
            raise self.error(TypeCheckError, call, "pl.cond takes one condition", hint="pl.cond(x < n)")
        body = node.body[1:]
        if not body:
            raise self.error(TypeCheckError, node, "a pl.while_ loop must end with 'x = pl.yield_(...)'",
                             hint=f"end the body with {', '.join(header)} = pl.yield_(...)")
        if jumps.jumps(body):
            j = jumps.jumps(body)[0]
            word = "break" if isinstance(j, ast.Break) else "continue"
            raise self.error(UnsupportedSyntaxError, j, f"'{word}' in a loop with init_values: the trip it ends "
                             "would hand on no pl.yield_", hint="fold the jump into pl.cond and the yielded values")
        inits = [self.operand(e) for e in value.elts]
        self.while_loop(node, call.args[0], body, header, inits, live_after)

    def while_loop(self, node, test, body, header, inits, live_after: frozenset) -> None:
        """Emit the While: ``header``/``inits`` are an explicit loop's (None: a natural one)."""
        explicit = inits is not None
        header = tuple(header or ())
        yields = self._yield_names(body[-1]) if explicit and body else None
        exposed = liveness.upward_exposed(body) | liveness.reads([test])
        assigned = liveness.assigned(body) + list(self.stored_into(body))
        implicit = tuple(x for x in dict.fromkeys(assigned) if x in self.env and x not in header
                         and x not in (yields or ()) and (x in exposed or x in live_after))
        plan = LoopPlan("", header, explicit, implicit, None, None)
        outer_env = self.env
        iter_args = []
        for name, (init, t) in [*zip(header, inits or ()), *((x, self.ssa_value(outer_env[x])) for x in implicit)]:
            ssa = self.fresh(name)
            self.types[ssa] = t
            iter_args.append(n.IterArg(ssa, t, init))
            self.env = self.env.set(name, ssa)
        before = len(self.out)
        cond = self.scalar(test)
        if len(self.out) != before:
            del self.out[before:]
            culprit = next((x for x in ast.walk(test) if self.element_read(x)), test)
            raise self.error(UnsupportedSyntaxError, culprit, "a while condition is an expression of scalars the loop "
                             "has: it is checked before each trip, and cannot read an element here",
                             hint="read the element in the body (and before the loop) into a name the condition "
                                  "tests")
        t = self.expr_type(cond, test)
        if not (isinstance(t, ScalarType) and (t.dtype.is_int or t.dtype is DataType.BOOL)):
            raise self.error(TypeCheckError, test, f"a while condition is a bool or an integer, not {type_name(t)}")
        if isinstance(cond, n.Const) and cond.value and not self.source.exact:
            raise self.error(UnsupportedSyntaxError, test, f"'{ast.unparse(test)}' always holds and nothing breaks "
                             "out of the loop: it never ends", hint="test a value the body changes, or break out "
                             "of the loop on a condition")
        body_live = frozenset(live_after) | exposed | frozenset(header) | frozenset(implicit)
        body_ir, results = self.loop_body(node, body, plan, body_live, iter_args, outer_env)
        self.emit(n.While(cond, body_ir, iter_args, results, span=self.span(node)))


def _carried_type_message(name: str, plan: LoopPlan, before_t, end_t) -> tuple[str, str]:
    what = "the loop variable" if name == plan.loop_name and name not in plan.header else "loop-carried value"
    before, end = type_name(before_t), type_name(end_t)
    hint = "keep the shape, dtype and memory space of a value the loop carries"
    if before == end:  # they differ in placement only
        before, end = placed_name(before_t), placed_name(end_t)
        hint = ("a carried tile keeps one place: give it the same slot before the loop and at the "
                "end of the body, or leave it undeclared and let the compiler place it")
    return f"{what} '{name}' is {before} before the loop and {end} at the end of its body", hint
