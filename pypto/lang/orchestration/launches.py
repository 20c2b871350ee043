"""An SPMD launch's options in the front end (a mixin of the SPMD forms): ``pl.spmd(n, *,
sync_start=, name_hint=, optimizations=, deps=, allow_early_resolve=, predicate=)`` and
``pl.spmd_submit``'s keywords read into a ``Launch``, the block count an integer known
when dispatching, the predicate one element of a tensor compared with a constant, and
``pl.system.available_*_count()``. The wording of each refusal is the reference's."""

from __future__ import annotations

import ast

import attrs

from pypto.errors import ParseError, TypeCheckError
from pypto.ir import nodes as n
from pypto.ir.types import INDEX, DataType, ScalarType, TensorType, type_name
from pypto.lang.flow import index_bounds

_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Gt: ">", ast.Lt: "<", ast.GtE: ">=", ast.LtE: "<="}
_FLIPPED = {"==": "==", "!=": "!=", ">": "<", "<": ">", ">=": "<=", "<=": ">="}
_SIGNED = frozenset({DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64})
_KEYWORDS = ("core_num", "sync_start", "name_hint", "optimizations", "allow_early_resolve", "predicate")
_USAGE = "pl.spmd(n) takes the block count first: for i in pl.spmd(4): (or with pl.spmd(4):)"


@attrs.frozen
class Launch:
    """What a ``pl.spmd(...)`` line asks for."""

    blocks: n.Expr
    sync_start: bool = False
    name_hint: str = ""
    allow_early_resolve: bool = False
    deps: tuple = ()
    predicate: n.Predicate | None = None
    split: object = None  # optimizations=[pl.split(...), pl.cross_core_slot(...)]: the outlined scope's
    slot_num: int | None = None
    optimized: object = None  # where optimizations= was written


class LaunchOptions:
    def spmd_launch(self, call: ast.Call, *, allow_deps: bool) -> Launch:
        """``pl.spmd(core_num, *, sync_start=, name_hint=, deps=, allow_early_resolve=)``."""
        if self.incore:
            raise self.error(ParseError, call, "pl.spmd is the orchestration's: it dispatches a kernel onto many cores",
                             hint="open it in the @pl.jit entry (or an Orchestration function), around the work")
        if len(call.args) > 1:
            raise self.error(TypeCheckError, call.args[1], "pl.spmd() accepts at most one positional argument "
                             "(core_num)", hint=_USAGE)
        blocks = self.core_num(call.args[0], _USAGE) if call.args else None
        fields: dict = {}
        for kw in call.keywords:
            if kw.arg is None:
                raise self.error(TypeCheckError, kw.value, "pl.spmd() does not accept **kwargs; pass core_num "
                                 "(positional) and sync_start=/name_hint=/optimizations= explicitly", hint=_USAGE)
            if kw.arg == "deps" and not allow_deps:
                raise self.error(TypeCheckError, kw.value, "pl.spmd() does not accept 'deps=' here",
                                 hint="Use `with pl.spmd(n, deps=[...]) as tid:` (the with-form) to declare explicit "
                                      "TaskId deps, or `out, tid = pl.spmd_submit(..., deps=[...])` for the "
                                      "single-call form.")
            if kw.arg != "deps" and kw.arg not in _KEYWORDS:
                supported = "'sync_start', 'name_hint', 'optimizations', " + ("'deps', " if allow_deps else "") + \
                    "'allow_early_resolve', 'predicate'"
                raise self.error(TypeCheckError, call, f"pl.spmd() got unexpected keyword argument '{kw.arg}'",
                                 hint=f"Supported keywords: {supported}")
            if kw.arg == "core_num":
                if blocks is not None:
                    raise self.error(TypeCheckError, kw.value, "pl.spmd() got multiple values for argument "
                                     "'core_num'", hint=_USAGE)
                blocks = self.core_num(kw.value, _USAGE)
            elif kw.arg in ("sync_start", "allow_early_resolve"):
                fields[kw.arg] = self.boolliteral(kw, _USAGE)
            elif kw.arg == "name_hint":
                fields["name_hint"] = self.scope_name_hint(kw.value)
            elif kw.arg == "deps":
                fields["deps"] = self.task_deps(kw.value, "pl.spmd")
            elif kw.arg == "predicate":
                fields["predicate"] = self.predicate_of(kw.value, "pl.spmd()")
            else:  # optimizations=: the scope the blocks run, as pl.at(optimizations=) would give it
                fields["split"], fields["slot_num"] = self.optimizations(kw.value, "pl.spmd")
                fields["optimized"] = kw.value
        if blocks is None:
            raise self.error(TypeCheckError, call, "pl.spmd() requires core_num (first positional argument)",
                             hint=_USAGE)
        if self.in_cluster:  # unwrapped into the Group task: what only a Submit carries would be lost
            for kwarg, lost, on in (("allow_early_resolve=True", "the early-dispatch hint",
                                     fields.get("allow_early_resolve")),
                                    ("predicate=(...)", "the dispatch predicate", fields.get("predicate") is not None),
                                    ("deps=[...]", "its dependencies", bool(fields.get("deps")))):
                if on:
                    raise self.error(TypeCheckError, call, f"`pl.spmd(..., {kwarg})` cannot be nested inside "
                                     "`pl.cluster()` — a cluster-nested pl.spmd is unwrapped into the Group function "
                                     f"and never produces a Submit, so {lost} would be lost.",
                                     hint=f"Use a standalone `with pl.spmd(..., {kwarg}):` (implicit cluster) to "
                                          "keep it.")
        return Launch(blocks, **fields)

    def predicate_of(self, node, form: str) -> n.Predicate:
        """``predicate=(t[i, j] > 0)``: what the runtime can evaluate at dispatch — one
        element of a signed integer tensor compared with an integer literal."""
        hint = "Use predicate=(tensor[i0, ...] > 0) — one comparison against an integer literal."
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE):
            got = type(node.ops[0]).__name__ if isinstance(node, ast.Compare) and len(node.ops) == 1 else \
                "a chained comparison" if isinstance(node, ast.Compare) else type(node).__name__
            raise self.error(TypeCheckError, node, f"'{form}' predicate must be a single comparison (==, !=, >, <, "
                             f">=, <=); got {got}", hint=hint)
        op, lhs, rhs = _COMPARE[type(node.ops[0])], node.left, node.comparators[0]
        if isinstance(rhs, ast.Subscript) and literal(lhs) is not None:
            lhs, rhs, op = rhs, lhs, _FLIPPED[op]
        if not (isinstance(lhs, ast.Subscript) and literal(rhs) is not None):
            raise self.error(TypeCheckError, node, f"'{form}' predicate must compare one tensor element (e.g. t[i]) "
                             "against an integer literal; the runtime evaluates a single element-vs-constant "
                             "comparison", hint=hint)
        t = self.local_type(lhs.value)
        if not isinstance(t, TensorType):
            raise self.error(TypeCheckError, lhs.value, f"predicate operand must be a tensor, got "
                             f"{type_name(t) if t is not None else ast.unparse(lhs.value)}", hint=hint)
        if t.dtype not in _SIGNED:
            raise self.error(TypeCheckError, lhs.value, f"predicate operand must be a signed 8/16/32/64-bit integer "
                             f"tensor, got {t.dtype.name}. The runtime sign-extends the value it reads, so an unsigned "
                             "operand can compare as negative and silently invert the dispatch decision", hint=hint)
        elts = lhs.slice.elts if isinstance(lhs.slice, ast.Tuple) else [lhs.slice]
        indices = tuple(self.index(e, "a predicate index") for e in elts)
        for e, at in zip(indices, elts):
            if isinstance(e, n.Const) and e.value < 0:
                raise self.error(TypeCheckError, at, f"predicate index must be non-negative, got {e.value}; the "
                                 "runtime stores indices as uint32_t, so a negative value wraps to an out-of-bounds "
                                 "address", hint=hint)
        if len(indices) != len(t.shape):
            raise self.error(TypeCheckError, lhs, f"predicate needs {len(t.shape)} index(es) to locate a single "
                             f"element of a rank-{len(t.shape)} tensor, got {len(indices)}", hint=hint)
        for e, at, extent in zip(indices, elts, t.shape):
            if isinstance(e, n.Const) and e.value >= extent:
                raise self.error(TypeCheckError, at, f"predicate index {e.value} is outside the tensor's {extent}",
                                 hint=f"an index in 0..{extent - 1}")
        if not -(1 << 63) <= literal(rhs) < (1 << 63):
            raise self.error(TypeCheckError, rhs, f"predicate literal {literal(rhs)} does not fit the runtime's "
                             "64-bit comparison", hint=hint)
        return n.Predicate(n.Var(self.env[lhs.value.id]), indices, op, literal(rhs))

    def core_num(self, node, hint: str) -> n.Expr:
        """The block count: an integer expression, positive when it is a constant."""
        e, t = self.operand(node)
        if not (isinstance(t, ScalarType) and (t.dtype.is_int or t.dtype is INDEX.dtype)):
            raise self.error(TypeCheckError, node, f"core_num must be an integer expression, got {type_name(t)}",
                             hint=hint)
        if isinstance(e, n.Const) and e.value <= 0:
            raise self.error(TypeCheckError, node, f"core_num must be a positive integer, got {e.value}", hint=hint)
        too_many = index_bounds.bound(e.value, "core_num", "the block index") if isinstance(e, n.Const) else None
        if too_many is not None:  # the block index is an INDEX like a loop's
            raise self.error(TypeCheckError, node, too_many, hint=f"a block count is at most {index_bounds.HIGHEST}")
        return e

    def boolliteral(self, kw: ast.keyword, hint: str) -> bool:
        if not (isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool)):
            raise self.error(TypeCheckError, kw.value, f"{kw.arg} must be a boolean literal (True/False)", hint=hint)
        return kw.value.value

    def spmd_submit_keywords(self, node: ast.Call, kw: dict, method: str) -> tuple:
        """``core_num=`` (required) and ``sync_start=`` of ``pl.spmd_submit``."""
        hint = (f"pl.spmd_submit(self.{method}, ...) requires a positive integer 'core_num' keyword (e.g. "
                "core_num=8); 'sync_start' is optional (default False).")
        if "core_num" not in kw:
            raise self.error(TypeCheckError, node,
                             f"pl.spmd_submit(self.{method}, ...) requires the core_num keyword argument", hint=hint)
        blocks = self.core_num(kw["core_num"].value, hint)
        sync = self.boolliteral(kw["sync_start"], hint) if "sync_start" in kw else False
        return blocks, sync

    def available_count(self, node: ast.Call, name: str):
        """``pl.system.available_cluster_count()`` / ``available_aiv_count()``: the device's
        clusters / vector cores — known when compiling, the program being for one SoC."""
        if node.args or node.keywords:
            raise self.error(TypeCheckError, node, f"pl.system.{name}() takes no arguments", hint=f"pl.system.{name}()")
        soc = self.hooks.soc
        count = soc.clusters if name == "available_cluster_count" else soc.clusters * soc.aiv_per_cluster
        e = n.Const(count)
        return e, self.expr_type(e, node)


def literal(node) -> int | None:
    """An integer literal's value (a negative one too), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = literal(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None
