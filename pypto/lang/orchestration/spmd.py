"""SPMD in the front end: one task of ``n`` blocks, each running one kernel with its own
block index. ``for i in pl.spmd(n):`` (the body outlined, ``i`` the block index),
``with pl.spmd(n) [as tid]:`` around a kernel dispatch, an explicit ``pl.at`` carrier or
a body reading ``pl.tile.get_block_idx()``, and ``pl.spmd_submit(self.k, ..., core_num=n)``.
A mixin of ``FunctionConverter`` (a launch's options are ``pypto.lang.orchestration.launches``); the
wording of each refusal is the reference's."""

from __future__ import annotations

import ast

import attrs

from pypto.errors import TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.ops import op_call
from pypto.ir.types import INDEX, TASK_ID, Level
from pypto.lang.vocabulary import names as N
from pypto.lang.orchestration.launches import LaunchOptions




class SpmdForms(LaunchOptions):
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
        index = n.Assign(var, INDEX, op_call("tile.get_block_idx"), span=self.span(node.target))
        outer = self.env.get(node.target.id)
        self.env = self.env.set(node.target.id, var)
        try:
            body = self.incore_block(node.body, live_after)
        finally:
            if outer is not None:
                self.env = self.env.set(node.target.id, outer)
            else:
                self.env = self.env.discard(node.target.id)
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
        call = self.dispatch_of(stmt)  # its pl.no_dep marks are the task's, as a pl.spmd_submit's
        task = n.Submit(attrs.evolve(call, no_dep=()), launch.deps, call.no_dep, launch.allow_early_resolve, launch.blocks,
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
        self.env = self.env.set(target.id, tid)
        self.dropped.pop(target.id, None)
        return tid
