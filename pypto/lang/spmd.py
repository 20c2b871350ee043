"""SPMD in the front end: one task of ``n`` blocks, each running one kernel with its own
block index. ``for i in pl.spmd(n):`` (the body outlined, ``i`` the block index),
``with pl.spmd(n) [as tid]:`` around a kernel dispatch, an explicit ``pl.at`` carrier or
a body reading ``pl.tile.get_block_idx()``, and ``pl.spmd_submit(self.k, ..., core_num=n)``.
A mixin of ``FunctionConverter``; the wording of each refusal is the reference's."""

from __future__ import annotations

import ast

import attrs

from pypto.errors import ParseError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.ops import op_call
from pypto.ir.types import INDEX, TASK_ID, DataType, Level, ScalarType, TensorType, type_name
from pypto.lang import names as N

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


class SpmdForms:
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
                fields[kw.arg] = self.bool_literal(kw, _USAGE)
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
        if isinstance(rhs, ast.Subscript) and _literal(lhs) is not None:
            lhs, rhs, op = rhs, lhs, _FLIPPED[op]
        if not (isinstance(lhs, ast.Subscript) and _literal(rhs) is not None):
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
        if not -(1 << 63) <= _literal(rhs) < (1 << 63):
            raise self.error(TypeCheckError, rhs, f"predicate literal {_literal(rhs)} does not fit the runtime's "
                             "64-bit comparison", hint=hint)
        return n.Predicate(n.Var(self.env[lhs.value.id]), indices, op, _literal(rhs))

    def core_num(self, node, hint: str) -> n.Expr:
        """The block count: an integer expression, positive when it is a constant."""
        e, t = self.operand(node)
        if not (isinstance(t, ScalarType) and (t.dtype.is_int or t.dtype is INDEX.dtype)):
            raise self.error(TypeCheckError, node, f"core_num must be an integer expression, got {type_name(t)}",
                             hint=hint)
        if isinstance(e, n.Const) and e.value <= 0:
            raise self.error(TypeCheckError, node, f"core_num must be a positive integer, got {e.value}", hint=hint)
        return e

    def bool_literal(self, kw: ast.keyword, hint: str) -> bool:
        if not (isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool)):
            raise self.error(TypeCheckError, kw.value, f"{kw.arg} must be a boolean literal (True/False)", hint=hint)
        return kw.value.value

    def spmd_for(self, node: ast.For, live_after: frozenset) -> None:
        """``for i in pl.spmd(n):``: the body outlined into one kernel run by ``n`` blocks,
        ``i`` each block's ``pl.tile.get_block_idx()``."""
        if node.orelse:
            raise self.error(UnsupportedSyntaxError, node, "for-else is not supported",
                             hint="write the else block's statements after the loop")
        launch = self.spmd_launch(node.iter, allow_deps=False)
        dispatch = next((x for s in node.body for x in ast.walk(s) if isinstance(x, ast.Call) and self.dispatches(x)),
                        None)
        if dispatch is not None:
            raise self.error(UnsupportedSyntaxError, dispatch, "`for i in pl.spmd(n):` outlines its body into one "
                             "kernel that every block runs; a kernel dispatch inside it would be a kernel calling "
                             "a kernel", hint=f"dispatch it as n blocks with `with pl.spmd(n): ... = "
                                              f"{ast.unparse(dispatch)}` (the kernel reads pl.tile.get_block_idx())")
        if not isinstance(node.target, ast.Name):
            raise self.error(UnsupportedSyntaxError, node.target, "the loop variable of pl.spmd is one name: the "
                             "block index", hint="for i in pl.spmd(4):")
        self.check_local_name(node.target.id, node.target)
        var = self.fresh(node.target.id)
        self.types[var] = INDEX
        if isinstance(launch.blocks, n.Const):  # the static bounds checks know its range
            self.ranges[var] = (0, launch.blocks.value - 1)
            self.domains[var] = range(launch.blocks.value)
        index = n.Assign(var, INDEX, op_call("tile.get_block_idx"), span=self.span(node.target))
        outer = self.env.get(node.target.id)
        self.env[node.target.id] = var
        try:
            body = self.incore_block(node.body, live_after)
        finally:
            if outer is not None:
                self.env[node.target.id] = outer
            else:
                self.env.pop(node.target.id, None)
        self.emit(n.Scope((index, *body), Level.CORE_GROUP, launch.name_hint, span=self.span(node),
                          allow_early_resolve=launch.allow_early_resolve, blocks=launch.blocks,
                          sync_start=launch.sync_start, predicate=launch.predicate, split=launch.split,
                          slot_num=launch.slot_num))

    def spmd_with(self, node: ast.With, call: ast.Call, live_after: frozenset) -> None:
        """``with pl.spmd(n, ...) [as tid]:`` around an explicit ``pl.at`` carrier, a body
        reading ``pl.tile.get_block_idx()`` (outlined), or one kernel dispatch."""
        target = node.items[0].optional_vars
        if target is not None and not isinstance(target, ast.Name):
            raise self.error(UnsupportedSyntaxError, target, "'with pl.spmd(...) as tid' binds one name: the task's id",
                             hint="with pl.spmd(4) as tid:, then deps=[tid] on a later task")
        if target is not None and self.in_cluster:
            raise self.error(UnsupportedSyntaxError, node, "`with pl.spmd(...) as tid:` cannot capture a TaskId when "
                             "nested inside `pl.cluster()` — a cluster-nested pl.spmd is unwrapped into the Group "
                             "function and never produces a Submit.",
                             hint="Use a standalone `with pl.spmd(...) as tid:` (implicit cluster) to capture the "
                                  "dispatch TaskId.")
        launch = self.spmd_launch(call, allow_deps=target is not None)
        body = node.body
        if len(body) == 1 and isinstance(body[0], ast.With) and len(body[0].items) == 1 \
                and self._is_builtin_call(body[0].items[0].context_expr, "at"):
            self.with_(body[0], live_after)
            scope = self.out.pop()
            if (launch.deps or launch.allow_early_resolve or target is not None) and \
                    (scope.deps or scope.allow_early_resolve or scope.task_id is not None):
                raise self.error(TypeCheckError, body[0], "the task's deps=, allow_early_resolve= and 'as tid' go on "
                                 "one line: the pl.spmd(...) or the pl.at(...) it holds, not both",
                                 hint="keep them on the pl.spmd(...) line and drop them from the pl.at(...)")
            if launch.optimized is not None and (scope.split is not None or scope.slot_num is not None):
                raise self.error(TypeCheckError, launch.optimized, "optimizations= goes on one line: the "
                                 "pl.spmd(...) or the pl.at(...) it holds, not both",
                                 hint="keep it on the pl.at(...) and drop it from the pl.spmd(...)")
            if launch.optimized is not None:
                scope = attrs.evolve(scope, split=launch.split, slot_num=launch.slot_num)
            self.emit(attrs.evolve(scope, blocks=launch.blocks, sync_start=launch.sync_start, predicate=launch.predicate,
                                   name_hint=scope.name_hint or launch.name_hint,
                                   deps=scope.deps or launch.deps,
                                   allow_early_resolve=scope.allow_early_resolve or launch.allow_early_resolve,
                                   task_id=scope.task_id if target is None else self.bind_task_id(target)))
            return
        carriers = [x for s in body for x in ast.walk(s) if isinstance(x, ast.With) and len(x.items) == 1
                    and self._is_builtin_call(x.items[0].context_expr, "at")]
        if carriers:  # not the one statement of the body, or the case above had taken it
            raise self.error(UnsupportedSyntaxError, carriers[0], "the pl.at(...) a `with pl.spmd(...)` holds is the "
                             "only statement of its body: the scope every block runs",
                             hint="move the other statements into the pl.at(...) (or out of the pl.spmd scope)")
        top = [s for s in body if isinstance(s, (ast.Assign, ast.AnnAssign, ast.Expr))
               and isinstance(s.value, ast.Call) and self.dispatches(s.value)]
        if self.reads_block_index(body):
            if top:
                raise self.error(UnsupportedSyntaxError, top[0].value, "a `with pl.spmd(...)` body either reads the "
                                 "block index itself (and is outlined into one kernel) or dispatches a kernel that "
                                 "reads it, not both",
                                 hint="read pl.tile.get_block_idx() inside the dispatched kernel, or inline its work")
            inner = self.incore_block(body, live_after)
            self.emit(n.Scope(inner, Level.CORE_GROUP, launch.name_hint, span=self.span(node),
                              deps=launch.deps, allow_early_resolve=launch.allow_early_resolve,
                              blocks=launch.blocks, sync_start=launch.sync_start, predicate=launch.predicate,
                              task_id=None if target is None else self.bind_task_id(target), split=launch.split,
                              slot_num=launch.slot_num))
            return
        if launch.optimized is not None:
            raise self.error(UnsupportedSyntaxError, launch.optimized, "optimizations= shapes the work a pl.spmd "
                             "scope outlines; this one dispatches a kernel written elsewhere",
                             hint="put the optimizations on the pl.at(...) inside that kernel's body")
        nested = [x for s in body for x in ast.walk(s) if isinstance(x, ast.Call) and self.dispatches(x)]
        if nested and not top:
            raise self.error(UnsupportedSyntaxError, nested[0], "the kernel a `with pl.spmd(...)` body dispatches is "
                             "called at the body's top level, once: not inside a loop or a branch",
                             hint="put the loop around the pl.spmd scope (one SPMD task per trip), or read "
                                  "pl.tile.get_block_idx() in the body so it is outlined into one kernel")
        if not top:
            raise self.error(TypeCheckError, node, "`with pl.spmd(...)` body neither reads the per-block index via "
                             "`pl.tile.get_block_idx()` nor dispatches a `self.<kernel>(...)` call, so every block "
                             "would run identical work.",
                             hint="Add `i = pl.tile.get_block_idx()` inside the scope, dispatch a kernel that reads "
                                  "it, or use `for i in pl.spmd(n):` to bind the block index automatically.")
        if len(top) > 1:
            raise self.error(TypeCheckError, node, f"`with pl.spmd(...)` dispatch body launches {len(top)} "
                             "kernels; only one kernel dispatch per SPMD scope is supported.",
                             hint="Use one `pl.spmd(...)` scope per kernel, or make the body inline by reading "
                                  "`pl.tile.get_block_idx()` so the whole body is outlined into a single per-block "
                                  "kernel.")
        stmts = self.block(body, live_after)
        dispatches = [k for k, s in enumerate(stmts) if self.dispatch_of(s) is not None]
        if not dispatches:
            raise self.error(TypeCheckError, top[0].value, f"`with pl.spmd(...)` dispatches a kernel, and "
                             f"'{ast.unparse(top[0].value.func)}' is not one: its body runs in the orchestration",
                             hint="dispatch an InCore (or AIC / AIV) function of the program, or call the helper "
                                  "outside the pl.spmd scope")
        k = dispatches[0]
        stmt = stmts[k]
        task = n.Submit(self.dispatch_of(stmt), launch.deps, (), launch.allow_early_resolve, launch.blocks,
                        launch.sync_start, launch.predicate)
        submitted = [n.Assign(self.bind_task_id(target), TASK_ID, task, span=stmt.span) if target is not None
                     else n.Eval(task, span=stmt.span)]
        if isinstance(stmt, n.Assign):  # out = self.k(...): the tensor the kernel returns is the argument it wrote
            returned = self.returned_args.get(stmt.value)
            if returned is None:
                raise self.error(UnsupportedSyntaxError, node, "the kernel an SPMD scope dispatches returns the "
                                 "tensors it writes (its Out/InOut parameters)")
            submitted.append(n.Assign(stmt.target, stmt.type, returned, span=stmt.span))
        for s in (*stmts[:k], *submitted, *stmts[k + 1:]):
            self.emit(s)

    def dispatches(self, call: ast.Call) -> bool:
        """Whether a call in the source calls a function of the program (``self.k(...)``)
        or a kernel (``k(...)``): what a dispatch body launches."""
        func = call.func
        if self.has_self and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id == "self" and "self" not in self.env:
            return True
        ref, _ = self.entity(func)
        return isinstance(ref, N.Kernel)

    def is_kernel(self, name: str) -> bool:
        callee = self.callees.get(name)
        return callee is not None and callee.kernel

    def dispatch_of(self, stmt):
        """The kernel call a statement makes, if it makes one."""
        value = getattr(stmt, "value", None)
        if isinstance(value, n.FuncCall) and isinstance(stmt, (n.Assign, n.Eval)) and self.is_kernel(value.callee):
            return value
        return None

    def reads_block_index(self, body) -> bool:
        for stmt in body:
            for x in ast.walk(stmt):
                if isinstance(x, ast.Call):
                    _, meaning = self.entity(x.func)
                    if isinstance(meaning, N.Op) and meaning.name == "tile.get_block_idx":
                        return True
        return False

    def incore_block(self, body, live_after: frozenset) -> tuple:
        """A scope's body, converted as code that runs on a core."""
        self.incore = True
        try:
            return self.block(body, live_after)
        finally:
            self.incore = False

    def bind_task_id(self, target: ast.Name) -> str:
        """``as tid``: a fresh TaskId name for ``target``."""
        self.check_local_name(target.id, target)
        tid = self.fresh(target.id)
        self.types[tid] = TASK_ID
        self.env[target.id] = tid
        self.dropped.pop(target.id, None)
        return tid

    def spmd_submit_keywords(self, node: ast.Call, kw: dict, method: str) -> tuple:
        """``core_num=`` (required) and ``sync_start=`` of ``pl.spmd_submit``."""
        hint = (f"pl.spmd_submit(self.{method}, ...) requires a positive integer 'core_num' keyword (e.g. "
                "core_num=8); 'sync_start' is optional (default False).")
        if "core_num" not in kw:
            raise self.error(TypeCheckError, node,
                             f"pl.spmd_submit(self.{method}, ...) requires the core_num keyword argument", hint=hint)
        blocks = self.core_num(kw["core_num"].value, hint)
        sync = self.bool_literal(kw["sync_start"], hint) if "sync_start" in kw else False
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


def _literal(node) -> int | None:
    """An integer literal's value (a negative one too), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _literal(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None
