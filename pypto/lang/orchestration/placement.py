"""Placement in the front end: ``with pl.cluster():`` (the kernels its body calls are one
Group task on one cluster, a nested ``pl.spmd`` unwrapped into its launch) and ``for aiv_id
in pl.split_aiv(2, mode=...)`` (a region both vector cores of the cluster run). A mixin of
``FunctionConverter``; the wording of each refusal is the reference's."""

from __future__ import annotations

import ast

import attrs

from pypto.errors import ParseError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.types import INDEX, ForKind, Level, SplitMode


class PlacementForms:
    def cluster_with(self, node: ast.With, call: ast.Call, live_after: frozenset) -> None:
        """``with pl.cluster(name_hint=""):``: the kernels the body dispatches (calls,
        ``pl.at`` scopes) are one Group task on one cluster; a ``with pl.spmd(n):`` that is
        the body's only statement is unwrapped, its launch the Group's."""
        if self.incore:
            raise self.error(ParseError, call, "pl.cluster is the orchestration's: it co-schedules kernels on one "
                             "cluster", hint="open it in the @pl.jit entry (or an Orchestration function)")
        if self.in_cluster:
            raise self.error(UnsupportedSyntaxError, call, "pl.cluster() scopes do not nest: one cluster is one "
                             "Group task", hint="drop the inner pl.cluster()")
        if node.items[0].optional_vars is not None:
            raise self.error(UnsupportedSyntaxError, node.items[0].optional_vars, "'with pl.cluster() as ...' binds "
                             "nothing", hint="with pl.cluster():")
        kw = {k.arg: k for k in call.keywords}
        if call.args or set(kw) - {"name_hint"}:
            raise self.error(TypeCheckError, call, "pl.cluster() takes only name_hint=",
                             hint='with pl.cluster(name_hint="attention"):')
        name = self.scope_name_hint(kw["name_hint"].value) if "name_hint" in kw else ""
        self.in_cluster = True
        try:
            body = list(self.block(node.body, live_after))
        finally:
            self.in_cluster = False
        blocks, sync = None, False
        if len(body) == 1 and isinstance(body[0], n.Scope) and body[0].blocks is not None:  # a nested pl.spmd scope
            blocks, sync = body[0].blocks, body[0].sync_start
            body = [attrs.evolve(body[0], blocks=None, sync_start=False)]
        elif _one_spmd_call(body) is not None:  # with pl.spmd(n): out = self.k(...)
            k = _one_spmd_call(body)
            submit = body[k].value
            blocks, sync = submit.blocks, submit.sync_start
            body = [*body[:k], n.Eval(submit.call, span=body[k].span), *body[k + 1:]]
        members = [s for s in n.walk_stmts(body) if isinstance(s, n.Scope)
                   or isinstance(getattr(s, "value", None), (n.FuncCall, n.Submit))]
        for s in n.walk_stmts(body):
            if isinstance(s, n.Scope) and s.blocks is not None or \
                    isinstance(getattr(s, "value", None), n.Submit) and s.value.blocks is not None:
                raise self.error(UnsupportedSyntaxError, node, "a pl.spmd inside pl.cluster() is unwrapped into the "
                                 "Group task's launch: it is the cluster body's only statement",
                                 hint="with pl.cluster():\n    with pl.spmd(4):\n        out = self.k(...)")
        if not members:
            raise self.error(TypeCheckError, node, "the pl.cluster() body dispatches no kernel",
                             hint="call the AIC and AIV kernels (or open pl.at scopes) inside it")
        self.emit(n.Cluster(tuple(body), name, span=self.span(node), blocks=blocks, sync_start=sync))

    def group_body(self, body: list) -> list:
        """A ``pl.FunctionType.Group`` function is one ``pl.cluster()``: the AIC and AIV
        functions it calls, started together on one cluster (its return after them)."""
        ret = [s for s in body if isinstance(s, n.Return)]
        rest = [s for s in body if not isinstance(s, n.Return)]
        if not any(isinstance(getattr(s, "value", None), n.FuncCall) for s in n.walk_stmts(rest)):
            raise self.error(TypeCheckError, self.fdef, f"the Group function '{self.name}' calls no kernel",
                             hint="call its AIC and AIV functions: self.cube(...); self.vector(...)")
        return [n.Cluster(tuple(rest), self.name, span=self.span(self.fdef)), *ret]

    def split_aiv_for(self, node: ast.For, live_after: frozenset) -> None:
        """``for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.X):``: a region both vector
        cores of the cluster run, ``aiv_id`` each one's lane; outside a core scope it is
        one of its own. What it binds stays in it — a GM tensor it stores into is the same
        tensor after it."""
        it = node.iter
        usage = "for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):"
        if node.orelse:
            raise self.error(UnsupportedSyntaxError, node, "for-else is not supported", hint=usage)
        kw = {k.arg: k for k in it.keywords}
        if len(it.args) != 1 or set(kw) != {"mode"}:
            raise self.error(TypeCheckError, it, "pl.split_aiv takes the lane count and mode=", hint=usage)
        count = self.static_of(it.args[0], int, "pl.split_aiv's lane count")
        if count != 2:
            raise self.error(TypeCheckError, it.args[0], f"pl.split_aiv(n, ...) splits over the cluster's 2 vector "
                             f"cores: n must be 2, got {count}", hint=usage)
        mode = self.static_of(kw["mode"].value, SplitMode, "pl.split_aiv's mode", hint="mode=pl.SplitMode.UP_DOWN")
        if not isinstance(node.target, ast.Name):
            raise self.error(UnsupportedSyntaxError, node.target, "the loop variable of pl.split_aiv is one name: "
                             "the lane", hint=usage)
        self.check_local_name(node.target.id, node.target)
        if self.in_split_aiv:
            raise self.error(UnsupportedSyntaxError, node, "nested 'for ... in pl.split_aiv(...)' is not allowed: a "
                             "split_aiv body already represents the two AIV lanes, so it cannot contain another "
                             "split_aiv loop", hint=usage)
        if not self.incore:  # a region of its own, outlined like any scope
            body = self.incore_block([node], live_after)
            self.emit(n.Scope(tuple(body), Level.CORE_GROUP, "", span=self.span(node)))
            return
        outer = self.env
        var = self.fresh(node.target.id)
        self.types[var] = INDEX
        self.ranges[var] = (0, count - 1)
        self.env = self.env.set(node.target.id, var)
        self.in_split_aiv, self.region_mode = True, mode
        try:
            body = tuple(self.block(node.body, live_after))
        finally:
            self.in_split_aiv, self.region_mode = False, None
        stored = {s.target for s in n.walk_stmts(body) if isinstance(s, n.Assign) and isinstance(s.value, n.Call)
                  and lookup(s.value.op).writes_operand is not None}  # in-place writes of GM tensors
        region = n.For(var, n.Const(0), n.Const(count), n.Const(1), body, ForKind.SplitAiv, span=self.span(node),
                       split=mode)
        handed = set(n.gathered(region))  # pl.aic_gather: the cube's after the region
        nested = [s for s in n.walk_stmts(body) if isinstance(getattr(s, "value", None), n.Call)
                  and s.value.op in n.GATHERS and s.target not in handed]
        if nested:
            raise self.error(UnsupportedSyntaxError, node, "pl.aic_gather hands a value to the cube after its "
                             "pl.split_aiv region, and this one sits inside a loop or branch of the region",
                             hint="gather at the region's top level: y = pl.aic_gather(x)")
        for name in [x for x in self.env if self.env[x] != outer.get(x)]:
            if name in live_after and self.env[name] in handed:
                continue  # gathered: the cube reads it whole after the region
            if name in live_after and name in outer and self.env[name] in stored:
                self.env = self.env.set(name, outer[name])  # stored into in place: the tensor it was
            elif name in live_after and name != node.target.id:
                raise self.error(UnsupportedSyntaxError, node, f"'{name}' is bound inside a pl.split_aiv region "
                                 "and read after it; each vector core has its own",
                                 hint=f"hand it to the cube with {name} = pl.aic_gather({name}) in the region, store "
                                      "it into a GM tensor there, or compute it outside")
            elif name in outer:
                self.env = self.env.set(name, outer[name])
            else:
                self.env = self.env.remove(name)
        self.emit(region)


def _one_spmd_call(body: list) -> int | None:
    """Where the one SPMD kernel call of a cluster body is, the rest being names given to
    values (the call's arguments and results under other names); None if it is not so."""
    calls = [k for k, x in enumerate(body) if isinstance(x, (n.Assign, n.Eval)) and isinstance(x.value, n.Submit)
             and x.value.blocks is not None]
    if len(calls) != 1:
        return None
    rest = [x for k, x in enumerate(body) if k != calls[0]]
    return calls[0] if all(isinstance(x, n.Assign) and isinstance(x.value, n.Var) for x in rest) else None
