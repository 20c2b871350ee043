"""One kernel function's source (``ast``) to an IR ``Function``, in SSA form: parameters,
expression statements, values and returns; assignments are ``Assignments``, subscripts of
arrays and tensors ``Subscripts``, loops, ifs and scopes ``ControlFlow``.

Rebinding a Python name makes a fresh SSA name. Op calls are checked against the op
registry where they are written, so every mistake names the user's line.
"""

from __future__ import annotations

import attrs

import ast

from pypto.errors import (
    ParseError,
    TypeCheckError,
    UnsupportedSyntaxError,
)
from pypto.ir import nodes as n
from pypto.ir.ops import lookup
from pypto.ir.types import (
    ArrayType,
    FunctionType,
    ScalarType,
    TensorType,
    TileType,
    conforms,
    type_name,
)
from pypto.lang.flow import liveness
from pypto.lang.vocabulary import names as N
from pypto.lang.statements.assignments import Assignments
from pypto.lang.statements.axis_binds import AxisBinds
from pypto.lang.statements.subscripts import OPERATOR_TEXT, Subscripts
from pypto.lang.statements.calls import CallConverter, Inlined, Nothing, ProgramHooks, Several
from pypto.lang.flow.control import ControlFlow, Frame, has_effect
from pypto.lang.expressions.exprs import Source
from pypto.lang.checks.bounds import check_bounds
from pypto.lang.checks.permissions import check_outputs, check_writes
from pypto.lang.statements.signatures import Signatures
from pypto.lang.orchestration.placement import PlacementForms
from pypto.lang.orchestration.spmd import SpmdForms
from pypto.lang.orchestration.tasks import TaskForms


def _orchestrates(fdef: ast.FunctionDef) -> bool:
    """An Opaque function orchestrates when it opens scopes: a ``with`` block, or a ``for``
    over ``pl.spmd(n)`` (its body one SPMD scope)."""
    for x in ast.walk(fdef):
        if isinstance(x, ast.With):
            return True
        if isinstance(x, ast.For) and isinstance(x.iter, ast.Call) and isinstance(x.iter.func, ast.Attribute) \
                and x.iter.func.attr == "spmd":
            return True
    return False


class FunctionConverter(Signatures, AxisBinds, Assignments, Subscripts, SpmdForms, PlacementForms, TaskForms, ControlFlow, CallConverter):
    def __init__(self, source: Source, fdef: ast.FunctionDef, *, name: str, kind: FunctionType,
                 hooks: ProgramHooks, has_self: bool = False, given: dict | None = None,
                 returns=None, auto_scope: bool = True):
        super().__init__(source)
        self.auto_scope = auto_scope
        self.manual_depth = 0  # pl.manual_scope() blocks open around the statement
        self.in_cluster = False  # inside a pl.cluster() body: its dispatches are one Group task
        self.in_split_aiv = False  # inside a pl.split_aiv region: it already is the two lanes
        self.region_mode = None  # that region's SplitMode (what its pl.aiv_shard / pl.aic_gather of a tile inherit)
        self.declared = None  # the annotated type of the value being converted (a pipe's pop takes it)
        # a kernel's tensor narrowed by pl.set_validshape is its valid part; its full shape
        # (what pl.fillpad grows it back to), by SSA name or by the call computing it
        self.narrowed: dict = {}
        self.fdef = fdef
        self.name = name
        self.kind = kind
        self.hooks = hooks
        self.has_self = has_self
        self.given = given  # param name -> type from the call being specialized (jit)
        self.declared_returns = returns
        # An Opaque function is InCore unless it opens pl.at scopes (then it orchestrates them).
        self.incore = (kind.may_be_incore or kind is FunctionType.Inline) and not (kind is FunctionType.Opaque and _orchestrates(fdef))
        self.out: list = []  # statements of the block being converted
        self.frames: list[Frame] = []
        self.return_types: tuple | None = None
        self.local_names = liveness.first_bindings(fdef.body)
        self.local_axes: dict = {}  # NAME = pl.dynamic("NAME") in the body -> its axis (AxisBinds)
        self.bound_axes: dict = {}  # the parameter being typed: axis -> the pl.dynamic bind_dynamic gives it

    # ------------------------------------------------------------------ function

    def convert(self) -> n.Function:
        params = self.params()
        for p in params:
            self.types[p.name] = p.type
        self.in_cluster = self.kind is FunctionType.Group
        body = self.block(self._body_statements(self.fdef.body), frozenset(), top=True)
        if self.kind is FunctionType.Group:
            body = self.group_body(body)
        returns = self.return_types or ()
        if self.fdef.returns is not None:
            declared = self.return_annotation(self.fdef.returns, returns if self.return_types is not None else None)
            if self.return_types is not None and (len(declared) != len(returns) or not all(
                    d == r or conforms(r, d) or _a_window_as_tensor(r, d)
                    for d, r in zip(declared, returns))):  # (sized as it runs: checked then)
                got = ", ".join(type_name(t) for t in returns)
                raise self.error(TypeCheckError, self.fdef.returns,
                                 f"function '{self.name}' returns {got} but is annotated {ast.unparse(self.fdef.returns)}")
            # (a window keeps its type: the declared tensor is what it is on this rank)
            returns = tuple(r if self.return_types is not None and _a_window_as_tensor(r, d) else d
                            for d, r in zip(declared, returns if self.return_types is not None else declared))
        fn = n.Function(self.name, params, body, returns, self.kind, span=self.span(self.fdef),
                        auto_scope=self.auto_scope)
        if not self.source.exact:
            check_writes(fn, self.callees, self.pynames, self.call_sites)
            check_outputs(fn, self.callees, self.pynames)
        check_bounds(fn, self.pynames, self.call_sites)
        return fn

    @staticmethod
    def _body_statements(body):
        # A docstring or a bare `...` says nothing to the compiler.
        return _early_returns_folded([s for s in body if not (
            isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
            and (isinstance(s.value.value, str) or s.value.value is Ellipsis))])

    # ------------------------------------------------------------------ blocks

    def block(self, stmts, live_after: frozenset, top: bool = False) -> tuple:
        saved, self.out = self.out, []
        try:
            for stmt, later in zip(stmts, liveness.live_after_each(stmts, live_after)):
                if self.return_types is not None:
                    raise self.error(UnsupportedSyntaxError, stmt, "statements after 'return' never run",
                                     hint="return at the end of the function")
                self.statement(stmt, later, top)
            return tuple(self.out)
        finally:
            self.out = saved

    def emit(self, stmt) -> None:
        self.out.append(stmt)

    def statement(self, node, live_after: frozenset, top: bool) -> None:
        if self.axis_statement(node):  # x.bind_dynamic(0, M), M = pl.dynamic("M"): read with the parameters
            return
        if isinstance(node, ast.Assign):
            self.assign(node)
        elif isinstance(node, ast.AnnAssign):
            self.ann_assign(node)
        elif isinstance(node, ast.AugAssign):
            self.aug_assign(node)
        elif isinstance(node, ast.Expr):
            self.expr_statement(node)
        elif isinstance(node, ast.For):
            self.for_(node, live_after)
        elif isinstance(node, ast.While):
            self.while_(node, live_after)
        elif isinstance(node, (ast.Break, ast.Continue)):
            word = "break" if isinstance(node, ast.Break) else "continue"
            raise self.error(UnsupportedSyntaxError, node, f"'{word}' outside a loop body",
                             hint="jump from a loop's body or from an if inside it")
        elif isinstance(node, ast.If):
            self.if_(node, live_after)
        elif isinstance(node, ast.With):
            self.with_(node, live_after)
        elif isinstance(node, ast.Return):
            self.return_(node, top)
        elif isinstance(node, ast.Pass):
            pass
        else:
            raise self.error(
                UnsupportedSyntaxError, node, f"Unsupported statement type: {type(node).__name__}",
                hint="kernels are written with assignments, pl.range/pl.pipeline/pl.parallel and while loops, "
                     "if statements, with pl.at(...) scopes and return",
            )

    # ------------------------------------------------------------------ assignments

    def check_local_name(self, pyname: str, node) -> None:
        """Names a kernel cannot bind: the language module itself, and 'self'."""
        if pyname == "self":
            raise self.error(ParseError, node, "'self' cannot name a value in a kernel",
                             hint="rename it: program dumps print every function as a method, "
                                  "where 'self' is the program")
        if self.source.resolver.resolve(pyname) == N.Path(()) and pyname not in self.env:
            raise self.error(ParseError, node,
                             f"'{pyname}' is the kernel language module here; binding a value to it would hide "
                             f"every {pyname}.* name after it",
                             hint="rename the value")

    def bind(self, pyname: str, t, value, node, span=None) -> str:
        self.check_local_name(pyname, node)
        ssa = self.fresh(pyname)
        self.types[ssa] = t
        full = self.narrowed_shape(value)
        if full is not None:
            self.narrowed[ssa] = full
        self.env = self.env.set(pyname, ssa)
        self.dropped.pop(pyname, None)
        if isinstance(value, n.Const):
            self.known[ssa] = value.value
        self.emit(n.Assign(ssa, t, value, span=span or self.span(node)))
        return ssa

    def expr_statement(self, node: ast.Expr) -> None:
        if self._is_builtin_call(node.value, "yield_"):
            return self.yield_(node.value, None)
        if self._is_builtin_call(node.value, "dump_tag"):
            return self.dump_tag(node.value)
        if self._is_builtin_call(node.value, "cond"):
            raise self.error(UnsupportedSyntaxError, node, "pl.cond sets the condition of a pl.while_ loop, as "
                             "the first statement of its body", hint="for (x,) in pl.while_(init_values=(x0,)):\n"
                             "    pl.cond(x < n)")
        if not isinstance(node.value, ast.Call):
            raise self.error(UnsupportedSyntaxError, node, "this expression statement has no effect",
                             hint="assign its value to a name, or remove it")
        before = len(self.out)
        value, t = self.value(node.value)
        if self._is_inline_call(node.value) and not isinstance(t, Nothing) and not has_effect(self.out[before:]):
            # The helper's statements compute only the value nobody reads.
            raise self.error(UnsupportedSyntaxError, node,
                             f"the result of {ast.unparse(node.value.func)} is discarded; assign it to a name",
                             hint=f"x = {ast.unparse(node.value)}")
        updated = self._updated_name(value, node.value)
        if updated is not None:  # pl.write(tile, [i, j], v): the name now holds the updated tile
            return self.bind(updated, t, value, node)
        if isinstance(value, n.Call) and not lookup(value.op).has_effect:
            # Nothing would read the value, and an op without effects does nothing else.
            what = ast.unparse(node.value.func) if node.value.func is not None else value.op
            raise self.error(UnsupportedSyntaxError, node,
                             f"the result of {what} is discarded; assign it to a name",
                             hint=f"x = {ast.unparse(node.value)}")
        if isinstance(value, (n.Call, n.FuncCall, n.Submit)):
            self.emit(n.Eval(value, span=self.span(node)))
        elif not self._is_inline_call(node.value):  # an inline body's statements are already in place
            raise self.error(UnsupportedSyntaxError, node, "this expression statement has no effect",
                             hint="assign its value to a name, or remove it")

    def value(self, node, hint: str = "v"):
        """(IR value, type): a Call/FuncCall for op and function calls, else an Expr."""
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp) and self._is_array(node):
            return self.array_operator(node)
        if isinstance(node, ast.UnaryOp) and self._is_array(node.operand):
            if isinstance(node.op, ast.UAdd):
                return self.value(node.operand, hint)
            x = ast.unparse(node.operand)
            raise self.error(UnsupportedSyntaxError, node,
                             f"unary '{OPERATOR_TEXT.get(type(node.op), '?')}' on a tile or tensor is not supported",
                             hint=f"write pl.neg({x}) (or pl.muls({x}, -1))" if isinstance(node.op, ast.USub)
                             else "kernels compute on tiles with pl.* ops")
        if isinstance(node, ast.Subscript) and isinstance(self.local_type(node.value), ArrayType):
            return self.array_element(node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Name) and node.id in self.env:
            x, t = self.var(node.id)
            self.sized_on_core(node, t)
            return x, t
        e = self.scalar(node)
        return e, self.expr_type(e, node)

    def sized_on_core(self, node, t) -> None:
        """Code for a core has static shapes: a tensor the orchestration sizes as it runs
        reaches a core only as a kernel's argument, which the call checks."""
        if self.incore and isinstance(t, TensorType) and t.runtime_sized:
            raise self.error(TypeCheckError, node,
                             f"'{ast.unparse(node)}' is {type_name(t)}, sized as the orchestration runs, and a "
                             "pl.at scope is compiled for static shapes",
                             hint="pass it to a kernel (@pl.function(type=pl.FunctionType.InCore)) whose parameter "
                                  "writes the extents: the call checks the tensor's when it runs")

    def _updated_name(self, value, node: ast.Call) -> str | None:
        """The source name a statement call updates (an op's ``updates`` operand, written as
        a plain name), or None."""
        op = lookup(value.op) if isinstance(value, n.Call) else None
        if op is None or op.updates is None:
            return None
        k = op.index(op.updates)
        written = [kw.value for kw in node.keywords if kw.arg == op.updates] or node.args[k:k + 1]
        if written and isinstance(written[0], ast.Name) and written[0].id in self.env:
            return written[0].id
        raise self.error(UnsupportedSyntaxError, node, f"{value.op} gives the updated {op.updates}; here there is "
                         "no name to rebind", hint=f"x = {ast.unparse(node)}")

    def _is_inline_call(self, node) -> bool:
        ref = self.resolve_chain(node.func) if isinstance(node, ast.Call) and node.func is not None else None
        return isinstance(ref, N.Kernel) and getattr(ref.obj, "function_type", None) is FunctionType.Inline

    def single(self, t, node) -> None:
        """A value that is one value: not a call returning several, nor one returning nothing."""
        if isinstance(t, Several):
            names = ", ".join(t.callee.params[i].name if i is not None else f"r{k}"
                              for k, i in enumerate(t.callee.returned_params))
            raise self.error(TypeCheckError, node,
                             f"'{t.callee.display}' returns {len(t.callee.returns)} values; unpack them into as many "
                             "names", hint=f"{names} = {ast.unparse(node)}")
        if isinstance(t, Nothing):
            raise self.error(TypeCheckError, node, f"'{t.callee}' returns nothing, so there is no value to use here",
                             hint=f"call it as a statement: {ast.unparse(node)}")
        if isinstance(t, Inlined):
            names = ", ".join(f"v{k}" for k in range(len(t.values)))
            raise self.error(TypeCheckError, node, f"'{t.callee}' returns {len(t.values)} values; unpack them into "
                             "as many names", hint=f"{names} = {ast.unparse(node)}")

    def operand(self, node, hint: str = "t", evaluated=None):
        """An operand Expr: op results are bound to a fresh temporary first. ``evaluated``:
        ``node``'s (value, type), already made."""
        value, t = evaluated if evaluated is not None else self.value(node, hint)
        self.single(t, node)
        if isinstance(value, (n.Call, n.FuncCall)):
            base = value.op.split(".")[-1] if isinstance(value, n.Call) else value.callee
            ssa = self.fresh(base, temp=True)
            self.types[ssa] = t
            full = self.narrowed_shape(value)
            if full is not None:
                self.narrowed[ssa] = full
            self.emit(n.Assign(ssa, t, value, span=self.span(node)))
            return n.Var(ssa), t
        return value, t

    def return_(self, node: ast.Return, top: bool) -> None:
        if not top or self.frames:
            raise self.error(UnsupportedSyntaxError, node, "return is only supported at the end of the function body")
        values = []
        if isinstance(node.value, ast.Call):  # ``return f(...)`` of a kernel returning several: what it wrote
            value, t = self.value(node.value)
            if isinstance(t, Several) and None not in t.callee.returned_params:
                self.emit(n.Eval(value, span=self.span(node.value)))
                self.emit(n.Return(tuple(t.args[i] for i in t.callee.returned_params), span=self.span(node)))
                self.return_types = tuple(t.callee.returns)
                return
            items, values = [node.value], [self.operand(node.value, evaluated=(value, t))]
        elif node.value is not None:
            items = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            values = [self.operand(v) for v in items]
        for item, (_, t) in zip(items if node.value is not None else (), values):
            if not self.source.exact and not isinstance(t, TensorType):
                # What a kernel hands back is GM it wrote; a tile or a scalar has no home there.
                what = "scalar" if isinstance(t, ScalarType) else type_name(t)
                raise self.error(TypeCheckError, item,
                                 f"A task cannot return a {what}: a kernel returns the tensors it writes",
                                 hint="store the value into a pl.Out tensor parameter and return that tensor")
        self.emit(n.Return(tuple(e for e, _ in values), span=self.span(node)))
        self.return_types = tuple(t for _, t in values)


def _a_window_as_tensor(given, declared) -> bool:
    """A window (pld.DistributedTensor) returned where a pl.Tensor of its shape is declared:
    a window is a tensor of its rank, as the reference's annotations take it."""
    return isinstance(given, TensorType) and isinstance(declared, TensorType) and given.window \
        and not declared.window and attrs.evolve(given, window=False) == declared


def _returns(stmts) -> bool:
    return bool(stmts) and isinstance(stmts[-1], ast.Return)


def _early_returns_folded(stmts: list) -> list:
    """``if c: ...; return a`` followed by ``...; return b`` (or an if / else both ending in a
    return) as one if / else binding the value, and one return at the end: the one return a
    function body has. Other shapes are left as written (and refused where they are)."""
    for k, s in enumerate(stmts):
        if not isinstance(s, ast.If) or not _returns(s.body):
            continue
        if s.orelse and stmts[k + 1:]:
            return stmts
        rest = _early_returns_folded(stmts[k + 1:] if not s.orelse else s.orelse)
        if not _returns(rest):
            return stmts
        value, other = s.body[-1].value, rest[-1].value
        if (value is None) != (other is None):
            return stmts
        count = len(value.elts) if isinstance(value, ast.Tuple) else 1
        if value is not None and count != (len(other.elts) if isinstance(other, ast.Tuple) else 1):
            return stmts
        names = [f"returned_{s.lineno}_{i}" for i in range(count)]

        def bind(body, v, names=names, at=s):
            if v is None:
                return _early_returns_folded(body[:-1]) or [ast.copy_location(ast.Pass(), at)]
            # (rest is folded already; folding again is a no-op on a body with one final return)
            target = ast.Tuple([ast.Name(x, ast.Store()) for x in names], ast.Store()) if len(names) > 1 \
                else ast.Name(names[0], ast.Store())
            assign = ast.copy_location(ast.Assign([target], v), body[-1])
            ast.fix_missing_locations(assign)
            return _early_returns_folded(body[:-1]) + [assign]

        branch = ast.copy_location(ast.If(s.test, bind(s.body, value), bind(rest, other)), s)
        result = None if value is None else (
            ast.Tuple([ast.Name(x, ast.Load()) for x in names], ast.Load()) if count > 1 else ast.Name(names[0], ast.Load()))
        ret = ast.copy_location(ast.Return(result), rest[-1])
        ast.fix_missing_locations(ret)
        return stmts[:k] + [branch, ret]
    return stmts
