"""The orchestration's own forms in the front end: compile-time unrolling, runtime scopes
(``pl.scope`` / ``pl.manual_scope``), a scope's optimizations and name, ``pl.tensor.dim``,
the arrays a body updates, and ``pl.create_tensor``'s runtime options; the tasks submitted
by hand (``pl.submit``, deps, ``pl.system.task_dummy``) are ``pypto.lang.orchestration.submits``. A mixin of ``FunctionConverter``, as ``ControlFlow``
and ``CallConverter`` are."""

from __future__ import annotations

import ast
import keyword

from pypto.errors import ParseError, PyptoError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.types import INDEX, ArrayType, ScopeMode, SplitMode, TensorType, type_name
from pypto.lang.flow import liveness
from pypto.lang.vocabulary import names as N
from pypto.lang.orchestration.submits import Submits


class TaskForms(Submits):
    def arrays_stored(self, body) -> list[str]:
        """Names of arrays the statements store an element of: ``arr[i] = v`` rebinds
        ``arr`` (a tensor's ``out[...] = x`` writes it in place and rebinds nothing)."""
        out = []
        for stmt in body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) \
                                and isinstance(self.local_type(t.value), ArrayType) and t.value.id not in out:
                            out.append(t.value.id)
        return out

    def unrolled(self, node: ast.For) -> bool:
        """Whether the loop is ``pl.unroll(...)``: expanded here, at compile time."""
        it = node.iter
        if not isinstance(it, ast.Call):
            return False
        _, meaning = self.entity(it.func)
        return isinstance(meaning, N.Builtin) and meaning.name == "unroll"

    def unroll(self, node: ast.For, live_after: frozenset) -> None:
        """The body once per value of the loop variable, each a constant: N scopes in the
        body make N tasks (``pl.range`` makes them at run time)."""
        it = node.iter
        if node.orelse:
            raise self.error(UnsupportedSyntaxError, node, "for-else is not supported",
                             hint="write the else block's statements after the loop")
        for k in it.keywords:
            if k.arg == "init_values":
                raise self.error(TypeCheckError, k, "pl.unroll() cannot be combined with init_values",
                                 hint="use pl.range() to carry values through a loop; in an unrolled loop, "
                                      "rebind the names in the body")
            raise self.error(TypeCheckError, k, f"pl.unroll got an unexpected keyword '{k.arg}'",
                             hint="pl.unroll(stop) or pl.unroll(start, stop, step)")
        if not 1 <= len(it.args) <= 3:
            raise self.error(TypeCheckError, it, "pl.unroll() takes 1 to 3 positional arguments")
        bounds = []
        for a in it.args:
            try:
                value = self.required(a, "pl.unroll()'s bounds")
            except PyptoError:
                value = None
            if not isinstance(value, int) or isinstance(value, bool):
                raise self.error(TypeCheckError, a, "pl.unroll() requires compile-time constant integer bounds",
                                 hint="use pl.range() for bounds known only at run time")
            bounds.append(value)
        start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (bounds[0], bounds[1],
                                                                         bounds[2] if len(bounds) == 3 else 1)
        if step == 0:
            raise self.error(TypeCheckError, it.args[2], "pl.unroll() step cannot be zero")
        self.check_index_bounds(it, "pl.unroll", (start, stop, step), it.args)
        if not isinstance(node.target, ast.Name):
            raise self.error(UnsupportedSyntaxError, node.target, "the loop variable is a single name")
        name = node.target.id
        # each copy is followed by the next, which reads what the body leaves
        live = live_after | liveness.upward_exposed(node.body)
        for value in range(start, stop, step):
            self.bind(name, INDEX, n.Const(value), node.target)
            for stmt, later in zip(node.body, liveness.live_after_each(node.body, live)):
                self.statement(stmt, later, False)

    def runtime_scope(self, node: ast.With, call: ast.Call, live_after: frozenset) -> None:
        """``with pl.scope():`` / ``pl.scope(mode=pl.ScopeMode.MANUAL)`` / ``pl.manual_scope()``."""
        item = node.items[0]
        manual_form = self._is_builtin_call(call, "manual_scope")
        if item.optional_vars is not None:
            raise self.error(UnsupportedSyntaxError, item.optional_vars, "a runtime scope binds no name",
                             hint="with pl.manual_scope(): (a task in it binds its id: with pl.at(...) as tid)")
        if manual_form:
            if call.args or call.keywords:
                raise self.error(TypeCheckError, call, "pl.manual_scope() does not accept arguments",
                                 hint="with pl.manual_scope():")
            manual = True
        else:
            if call.args:
                raise self.error(TypeCheckError, call, "pl.scope() takes only a 'mode=' keyword, not positional "
                                 "arguments", hint="pl.scope(mode=pl.ScopeMode.MANUAL)")
            kw = {k.arg: k.value for k in call.keywords}
            if set(kw) - {"mode"}:
                raise self.error(TypeCheckError, call, "pl.scope() takes only a 'mode=' keyword",
                                 hint="pl.scope(mode=pl.ScopeMode.MANUAL)")
            mode = (self.static_of(kw["mode"], ScopeMode, "pl.scope's mode", hint="mode=pl.ScopeMode.MANUAL")
                    if "mode" in kw else ScopeMode.AUTO)
            manual = mode is ScopeMode.MANUAL
        if self.incore:
            raise self.error(ParseError, call, "runtime scopes are Orchestration-only: this code runs on a core",
                             hint="open pl.scope() / pl.manual_scope() around pl.at blocks in the entry")
        if manual and self.manual_depth:
            raise self.error(TypeCheckError, call, "a manual scope may not be nested inside another manual scope")
        if not manual and self.manual_depth:
            raise self.error(TypeCheckError, call, "an AUTO scope may not be nested inside a manual scope")
        if not manual and self.auto_scope:
            raise self.error(TypeCheckError, call, "a hand-placed AUTO 'with pl.scope()' requires "
                             "@pl.function(auto_scope=False)",
                             hint="@pl.jit(auto_scope=False) (every loop body and branch is a scope already), or "
                                  "pl.manual_scope()")
        self.manual_depth += manual
        try:
            body = self.block(node.body, live_after)
        finally:
            self.manual_depth -= manual
        self.emit(n.RuntimeScope(body, manual, span=self.span(node)))

    def check_create(self, keywords: dict) -> None:
        """pl.create_tensor makes a buffer anywhere; the runtime's options only where the
        runtime allocates it, in the orchestration."""
        for key in ("manual_dep", "init_value"):
            if key in keywords and self.incore:
                raise self.error(TypeCheckError, keywords[key][1],
                                 f"pl.create_tensor({key}=...) is the orchestration's: inside a kernel a created "
                                 "tensor is on-chip scratch the runtime never sees",
                                 hint="create the tensor in the @pl.jit entry and pass it to the scope" if
                                 key == "manual_dep" else "use pl.full(shape, dtype, value) inside a kernel")
        if "manual_dep" in keywords:
            self.static_of(keywords["manual_dep"][1].value, bool, "pl.create_tensor's manual_dep",
                           hint="manual_dep=True (or leave it out)")

    def dim_call(self, node: ast.Call):
        """``pl.tensor.dim(t, axis)``: the tensor's extent on the axis (a negative axis counts
        from the end) — a compile-time constant, or the expression an orchestration sized the
        tensor by as it runs."""
        if len(node.args) != 2 or node.keywords:
            raise self.error(TypeCheckError, node, "pl.tensor.dim takes (tensor, axis)", hint="pl.tensor.dim(a, 0)")
        _, t = self.operand(node.args[0])
        if not isinstance(t, TensorType):
            raise self.error(TypeCheckError, node.args[0], f"pl.tensor.dim reads a tensor's shape, not {type_name(t)}")
        axis = self.static_of(node.args[1], int, "pl.tensor.dim's axis")
        if not -len(t.shape) <= axis < len(t.shape):
            raise self.error(TypeCheckError, node.args[1], f"axis {axis} is outside the {len(t.shape)} axes of "
                             f"{type_name(t)}")
        d = t.shape[axis]
        e = n.Const(d) if isinstance(d, int) else d  # an orchestration's runtime extent: the scalar it was sized by
        return e, self.expr_type(e, node)

    def comm_ctx_call(self, node: ast.Call):
        """``pld.get_comm_ctx(dt)``: the comm domain of a window-bound tensor. The handle is
        the tensor itself (``pld.rank`` / ``pld.nranks`` read the domain it belongs to)."""
        if len(node.args) + len(node.keywords) != 1 or node.keywords and node.keywords[0].arg != "dist_tensor":
            raise self.error(TypeCheckError, node, "pld.get_comm_ctx takes one pld.DistributedTensor",
                             hint="ctx = pld.get_comm_ctx(data)")
        arg = node.args[0] if node.args else node.keywords[0].value
        e, t = self.operand(arg)
        if not isinstance(t, TensorType) or not t.window:
            raise self.error(TypeCheckError, arg, f"pld.get_comm_ctx takes a window-bound pld.DistributedTensor, "
                             f"not {type_name(t)}",
                             hint="declare the parameter pld.DistributedTensor[...] and pass pld.window(...) to it")
        return e, t

    def optimizations(self, node, owner: str) -> tuple:
        """``optimizations=[pl.split(pl.SplitMode.X), pl.cross_core_slot(slot_num=N)]``:
        (the split mode or None, the slot count or None)."""
        entry_hint = "Each entry must be pl.split(pl.SplitMode.X) or pl.cross_core_slot(slot_num=N)."
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.error(TypeCheckError, node, f"{owner}(optimizations=...) must be a list literal",
                             hint="Use optimizations=[pl.split(pl.SplitMode.NONE)].")
        split = slots = from_split = None  # from_split: a slot count the older pl.split(slot_num=) gave
        for e in node.elts:
            if self._is_builtin_call(e, "split"):
                if split is not None:
                    raise self.error(TypeCheckError, e, "Duplicate 'pl.split(...)' in optimizations=[...]",
                                     hint="Keep one pl.split(pl.SplitMode.X).")
                if len(e.args) != 1 or any(k.arg != "slot_num" for k in e.keywords):
                    raise self.error(TypeCheckError, e, "pl.split takes the mode: pl.split(pl.SplitMode.UP_DOWN)",
                                     hint=entry_hint)
                split = self.static_of(e.args[0], SplitMode, "pl.split's mode", hint="pl.SplitMode.UP_DOWN")
                if e.keywords:  # the reference's older spelling of the slot count
                    if slots is not None:
                        raise self.error(TypeCheckError, e, "optimizations=[...] sets the cross-core slot count "
                                         "twice: via the deprecated pl.split(slot_num=...) and via "
                                         "pl.cross_core_slot(...)",
                                         hint="Drop slot_num= from pl.split(...) and keep pl.cross_core_slot(slot_num=N).")
                    slots = from_split = self.slot_num(e.keywords[0].value)
            elif self._is_builtin_call(e, "cross_core_slot"):
                if slots is not None and from_split is None:
                    raise self.error(TypeCheckError, e, "Duplicate 'pl.cross_core_slot(...)' in optimizations=[...]",
                                     hint="Keep one pl.cross_core_slot(slot_num=N).")
                if e.args or [k.arg for k in e.keywords] != ["slot_num"]:
                    raise self.error(TypeCheckError, e, "pl.cross_core_slot() takes slot_num= only",
                                     hint="Use pl.cross_core_slot(slot_num=4).")
                if slots is not None:
                    raise self.error(TypeCheckError, e, "optimizations=[...] sets the cross-core slot count twice: "
                                     "via the deprecated pl.split(slot_num=...) and via pl.cross_core_slot(...)",
                                     hint="Keep only pl.cross_core_slot(slot_num=N).")
                slots = self.slot_num(e.keywords[0].value)
            else:
                raise self.error(TypeCheckError, e, f"Unsupported entry in {owner}(optimizations=[...])",
                                 hint=entry_hint)
        return split, slots

    def slot_num(self, node) -> int:
        slots = self.static_of(node, int, "slot_num", hint="Use pl.cross_core_slot(slot_num=4).")
        if slots < 1:
            raise self.error(TypeCheckError, node, f"slot_num must be positive, got {slots}",
                             hint="Use pl.cross_core_slot(slot_num=4).")
        return slots

    def scope_name_hint(self, node) -> str:
        """A scope's ``name_hint=``: it names the outlined function, which dumps print as a
        Python method."""
        hint = self.static_of(node, str, "name_hint")
        if hint and (not hint.isidentifier() or keyword.iskeyword(hint) or hint in ("pl", "self")):
            raise self.error(TypeCheckError, node, f"name_hint={hint!r} must be a Python identifier that is not a "
                             "keyword", hint="letters, digits and underscores, not starting with a digit, "
                                             "e.g. name_hint=\"softmax_rows\"")
        return hint
