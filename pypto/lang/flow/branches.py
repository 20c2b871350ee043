"""``if`` statements of a kernel body: a condition known when compiling takes its branch
(a static if); otherwise each branch is converted and the names either rebinds and reads
afterwards become the if's results. A mixin of the control flow converter."""

from __future__ import annotations

import ast

import attrs

from pypto.errors import TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.types import TileType, join, joins, type_name
from pypto.lang.flow import liveness
from pypto.lang.expressions.exprs import RUNTIME


@attrs.define
class Frame:
    """An open loop/branch body: where an explicit ``pl.yield_`` lands."""

    kind: str  # "for" | "if"
    explicit: bool
    last: object = None  # the body's last statement: the only place for its pl.yield_
    header: tuple[str, ...] = ()  # an explicit loop's carried names: what its pl.yield_ hands on
    yield_targets: tuple[str, ...] | None = None
    yield_types: tuple | None = None
    declared: object = None  # the annotated type of a single yield target (``x: T = pl.yield_(v)``)



class Branches:
    def if_(self, node: ast.If, live_after: frozenset) -> None:
        taken = RUNTIME
        if not self.source.exact:  # dump text keeps every If it prints, so it reads back equal
            taken = self.maybe_static(node.test)
        if isinstance(taken, (bool, int)):
            return self.static_if(node.body if taken else node.orelse, live_after)
        cond = self.scalar(node.test)
        explicit = self._ends_in_yield(node.body) or self._ends_in_yield(node.orelse)
        yield_names = {x for stmts in (node.body, node.orelse) if stmts for x in self._yield_names(stmts[-1])}
        outer_env = self.env
        branches = []
        for stmts in (node.body, node.orelse):
            self.env = outer_env
            frame = Frame("if", explicit, last=stmts[-1] if stmts else None)
            self.frames.append(frame)
            try:
                body = list(self.block(stmts, live_after))
            finally:
                self.frames.pop()
            branches.append((body, self.env, frame))
        (then_body, then_env, then_frame), (else_body, else_env, else_frame) = branches
        names, types = [], []
        if explicit:
            if not node.orelse or else_frame.yield_targets != then_frame.yield_targets:
                raise self.error(TypeCheckError, node, "both branches of an if that yields must yield the same names",
                                 hint="end each branch with the same 'x = pl.yield_(...)' names")
            names = list(then_frame.yield_targets)
            declared = then_frame.declared or else_frame.declared
            types = [declared] if declared is not None else [
                join(a, b) for a, b in zip(then_frame.yield_types, else_frame.yield_types)]
            if len(then_frame.yield_types) != len(else_frame.yield_types) or not all(
                    t is not None and joins(a, t) and joins(b, t)
                    for a, b, t in zip(then_frame.yield_types, else_frame.yield_types, types)):
                raise self.error(TypeCheckError, node, "the branches of this if yield values of different types")
        # Every other name a branch rebinds that is read afterwards is the if's result too.
        others = [x for x in dict.fromkeys([*liveness.assigned(node.body), *liveness.assigned(node.orelse),
                                            *self.stored_into(node.body), *self.stored_into(node.orelse)])
                  if x in live_after and x not in yield_names and (x in then_env and x in else_env)
                  and (then_env[x] != outer_env.get(x) or else_env[x] != outer_env.get(x))]
        same = [x for x in others if self._same_constant(then_env[x], else_env[x])]
        rebound = []  # both branches bind the same compile-time value: it stays one
        for x in same:
            if then_env[x] in self.folded and else_env[x] in self.folded:
                outer_env = outer_env.set(x, then_env[x])  # no statement binds it: every use is the constant
            else:
                rebound.append(x)  # bound by a statement in each branch: bound again after the if
        others = [x for x in others if x not in same]
        for x in others:
            (_, tt), (_, et) = [self.ssa_value(env[x]) for env in (then_env, else_env)]
            if join(tt, et) is None:
                raise self.error(TypeCheckError, node,
                                 f"'{x}' is {type_name(tt)} after one branch and {type_name(et)} after the other")
            types.append(join(tt, et))
        if others:
            for body, env in ((then_body, then_env), (else_body, else_env)):
                extra = tuple(self.ssa_value(env[x])[0] for x in others)
                if explicit:
                    done = body.pop()
                    body.append(attrs.evolve(done, values=done.values + extra))
                else:
                    body.append(n.Yield(extra, span=self.span(node)))
        names += others
        self.env = outer_env
        for env in (then_env, else_env):
            self._drop(env, node, "if")
        for body, env in ((then_body, then_env), (else_body, else_env)):
            # a store's result bound in one branch names the tensor it stored into, which the
            # other branch leaves as it was: after the if the name is that tensor
            self.hand_out_tensors(env, outer_env, body)
        for k, (x, t) in enumerate(zip(names, types)):
            ssa = self.fresh(x)
            self.types[ssa] = t
            self.env = self.env.set(x, ssa)
            self.dropped.pop(x, None)
        results = [n.Binding(self.env[x], t) for x, t in zip(names, types)]
        self.emit(n.If(cond, then_body, else_body, results, span=self.span(node)))
        for x in rebound:
            ssa = then_env[x]
            self.bind(x, self.types[ssa], n.Const(self._constant_of(ssa)), node)

    def static_if(self, stmts, live_after: frozenset) -> None:
        """The branch a compile-time condition picks, in place; a final ``x = pl.yield_(v)``
        binds ``x`` to ``v`` as the If's result would have."""
        final = None
        if self._ends_in_yield(stmts):
            stmts, final = stmts[:-1], stmts[-1]
        self.frames.append(Frame("if", True))  # any other pl.yield_ in the branch is misplaced
        try:
            for stmt, later in zip(stmts, liveness.live_after_each(stmts, live_after, [final] if final else [])):
                self.statement(stmt, later, False)
        finally:
            self.frames.pop()
        if final is None:
            return
        call = final.value
        target = final.targets[0] if isinstance(final, ast.Assign) else getattr(final, "target", None)
        if target is None and call.args:
            raise self.error(UnsupportedSyntaxError, call, _unnamed_yield(call, "if"), hint=f"x = {ast.unparse(call)}")
        values = [self.operand(a) for a in call.args]
        if target is None:
            return
        elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        if not all(isinstance(e, ast.Name) for e in elts) or len(elts) != len(values):
            raise self.error(TypeCheckError, target, f"{len(elts)} names for {len(values)} yielded values")
        for name, (e, t) in zip(elts, values):
            if isinstance(e, n.Var) and isinstance(t, TileType):
                self.alias(name.id, e, name)
            else:
                self.bind(name.id, t, e, final)

    def _constant_of(self, ssa: str):
        return self.folded[ssa] if ssa in self.folded else self.known.get(ssa)

    def _same_constant(self, a: str, b: str) -> bool:
        x, y = self._constant_of(a), self._constant_of(b)
        if x is None or y is None:
            return False
        return n.Const(x) == n.Const(y) and self.types[a] == self.types[b]


def _unnamed_yield(call: ast.Call, where: str) -> str:
    count = len(call.args)
    return (f"pl.yield_ hands {count} value{'s' if count != 1 else ''} out of the {where}, and "
            f"{'it needs a name' if count == 1 else 'they need names'} there")
