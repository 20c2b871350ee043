"""The user's loops and ifs in tile code (a mixin of ``tile_emitter.Emitter``): a pure loop
or if is emitted with tiles as its carried values and results — each the window of it its
readers need (``carried_regions``) — and the scalars its body assigns go with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pypto.errors import UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.rewrite import substitute
from pypto.ir.simplify import simplify
from pypto.ir.types import INDEX, ScalarType
from pypto.passes.tile_conversion.regions import region_vars
from pypto.passes.tile_conversion.tensor_graph import carried_regions

if TYPE_CHECKING:  # (the emitter's frames: this is its mixin)
    from pypto.passes.tile_conversion.tile_emitter import Frame


class CarriedValues:
    def loop(self, stmt: n.For, index: int, region) -> n.Var:
        """A pure loop, emitted for the windows its carried values need."""
        for x in _bound_inside(stmt):
            self.env.pop(x, None)
        regions = sorted(carried_regions(self.g, stmt, index, region, self.env).items())
        inits = [self.value(stmt.iter_args[k].init.name, r, stmt) for k, r in regions]
        # scalars it carries beside them (nothing after the loop reads them)
        scalars = [(k, a, simplify(substitute(a.init, self.env))) for k, a in enumerate(stmt.iter_args)
                   if isinstance(a.type, ScalarType)]
        bounds = [simplify(substitute(x, self.env)) for x in (stmt.start, stmt.stop, stmt.step)]
        deps = set().union(*(n.expr_vars(b) for b in bounds), *(region_vars(r) for _, r in regions),
                           {v.name for v in inits}, *(n.expr_vars(init) for _, _, init in scalars))
        with self.at(self.level(deps)) as frame:
            var = self.fresh(stmt.var, INDEX)
            self.env[stmt.var] = n.Var(var)
            body = self.push("body", (var,))
            iters = []
            for (k, r), init in zip(regions, inits):
                it = self.fresh(stmt.iter_args[k].name, self.types[init.name])
                # the chain updates its initial tile in place unless another reader may
                # still want that tile, which then is copied (InsertAliasCopies)
                self.adopt(body, it, counted=not self.g.read_once(stmt.iter_args[k].init.name))
                body.memo[(stmt.iter_args[k].name, r)] = n.Var(it)
                iters.append(n.IterArg(it, self.types[it], init))
            for k, a, init in scalars:
                it = self.fresh(a.name, a.type)
                body.names.add(it)
                self.home[it] = body
                self.env[a.name] = n.Var(it)
                iters.append(n.IterArg(it, a.type, init))
            self.scalars(stmt.body, body)
            yields = tuple(self.value(stmt.body[-1].values[k].name, r, stmt) for k, r in regions) + tuple(
                simplify(substitute(stmt.body[-1].values[k], self.env)) for k, _, _ in scalars)
            body.stmts.append(n.Yield(yields, span=stmt.span))
            self.pop()
            results = [n.Binding(self.fresh(stmt.results[k].name, it.type), it.type) for k, it in
                       zip([k for k, _ in regions] + [k for k, _, _ in scalars], iters)]
            self.emit_loop(frame, var, *bounds, body, kind=stmt.kind, stage=stmt.stage, iter_args=iters,
                           results=results, span=stmt.span)
            for (k, r), b in zip(regions, results):
                self.adopt(frame, b.name, counted=False)
                frame.memo[(stmt.results[k].name, r)] = n.Var(b.name)
            return n.Var(next(b.name for (k, _), b in zip(regions, results) if k == index))

    def branch(self, stmt: n.If, index: int, region) -> n.Var:
        """A pure if, emitted for one window of one of its results."""
        for x in _bound_inside(stmt):
            self.env.pop(x, None)
        cond = simplify(substitute(stmt.cond, self.env))
        with self.at(self.level(n.expr_vars(cond) | region_vars(region))) as frame:
            blocks, types = [], []
            for body in (stmt.then_body, stmt.else_body):
                f = self.push("body")
                self.scalars(body, f)
                y = self.value(body[-1].values[index].name, region, stmt)
                f.stmts.append(n.Yield((y,), span=stmt.span))
                self.pop()
                blocks.append(tuple(f.stmts))
                types.append(self.types[y.name])
            if types[0] != types[1]:
                raise UnsupportedSyntaxError(f"the branches of this if compute '{stmt.results[index].name}' "
                                             "as different tiles", span=stmt.span)
            out = self.fresh(stmt.results[index].name, types[0])
            frame.stmts.append(n.If(cond=cond, then_body=blocks[0], else_body=blocks[1],
                                    results=(n.Binding(out, types[0]),), span=stmt.span))
            self.adopt(frame, out, counted=False)
            return n.Var(out)

    def scalars(self, body, frame: Frame) -> None:
        """The scalar statements of a pure body, under names of their own for this copy."""
        for s in body:
            if isinstance(s, n.Assign) and isinstance(s.type, ScalarType):
                name = self.fresh(s.target, s.type)
                frame.stmts.append(n.Assign(name, s.type, simplify(substitute(s.value, self.env)), span=s.span))
                self.env[s.target] = n.Var(name)
                frame.names.add(name)
                self.home[name] = frame


def _bound_inside(stmt) -> set[str]:
    blocks = (stmt.body,) if isinstance(stmt, n.For) else (stmt.then_body, stmt.else_body)
    return {x for block in blocks for s in n.walk_stmts(block) for x in n.bound_names(s)} | (
        {stmt.var} if isinstance(stmt, n.For) else set())
