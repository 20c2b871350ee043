"""One kernel function's source (``ast``) to an IR ``Function``, in SSA form.

Rebinding a Python name makes a fresh SSA name; a name rebound in a loop (or an ``if``)
and read afterwards becomes a loop-carried value (a branch result). Op calls are checked
against the op registry where they are written, so every mistake names the user's line.
"""

from __future__ import annotations

import ast

import attrs

from pypto.errors import ParseError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.affine import static_difference
from pypto.ir.ops import lookup
from pypto.ir.types import (
    INDEX,
    ForKind,
    FunctionType,
    Level,
    ScalarType,
    TensorType,
    TileType,
    type_name,
)
from pypto.lang import liveness
from pypto.lang import names as N
from pypto.lang.calls import CallConverter, ProgramHooks
from pypto.lang.exprs import Dropped, NotStatic, Source

INCORE_TYPES = (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV, FunctionType.Inline, FunctionType.Opaque)
_ARITH = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}


@attrs.define
class _Frame:
    """An open loop/branch body: where an explicit ``pl.yield_`` lands."""

    kind: str  # "for" | "if"
    explicit: bool
    yield_targets: tuple[str, ...] | None = None
    yield_types: tuple | None = None


class FunctionConverter(CallConverter):
    def __init__(self, source: Source, fdef: ast.FunctionDef, *, name: str, kind: FunctionType,
                 hooks: ProgramHooks, has_self: bool = False, given: dict | None = None,
                 returns=None):
        super().__init__(source)
        self.fdef = fdef
        self.name = name
        self.kind = kind
        self.hooks = hooks
        self.has_self = has_self
        self.given = given  # param name -> type from the call being specialized (jit)
        self.declared_returns = returns
        # An Opaque function is InCore unless it opens pl.at scopes (then it orchestrates them).
        self.incore = kind in INCORE_TYPES and not (
            kind is FunctionType.Opaque and any(isinstance(x, ast.With) for x in ast.walk(fdef)))
        self.out: list = []  # statements of the block being converted
        self.frames: list[_Frame] = []
        self.return_types: tuple | None = None

    # ------------------------------------------------------------------ function

    def convert(self) -> n.Function:
        params = self.params()
        for p in params:
            self.types[p.name] = p.type
        body = self.block(self._body_statements(self.fdef.body), frozenset(), top=True)
        returns = self.return_types or ()
        if self.fdef.returns is not None:
            declared = self._return_annotation(self.fdef.returns)
            if self.return_types is not None and declared != returns:
                got = ", ".join(type_name(t) for t in returns)
                raise self.error(TypeCheckError, self.fdef.returns,
                                 f"function '{self.name}' returns {got} but is annotated {ast.unparse(self.fdef.returns)}")
            returns = declared
        return n.Function(self.name, params, body, returns, self.kind, span=self.span(self.fdef))

    def params(self) -> tuple[n.Param, ...]:
        a = self.fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise self.error(UnsupportedSyntaxError, self.fdef,
                             "kernel parameters are plain positional names (no defaults, *args or **kwargs)")
        args = list(a.args)
        if self.has_self:
            if not args or args[0].arg != "self":
                raise self.error(ParseError, self.fdef, f"method '{self.fdef.name}' of a @pl.program needs 'self' first")
            args = args[1:]
        params = []
        for arg in args:
            if arg.annotation is None:
                raise self.error(TypeCheckError, arg, f"Parameter '{arg.arg}' missing type annotation",
                                 hint=f"Add a type annotation like: {arg.arg}: pl.Tensor[[64], pl.FP32]")
            given = None if self.given is None else self.given.get(arg.arg)
            t, direction = self.annotation(arg.annotation, given=given, param=arg.arg)
            if isinstance(given, ScalarType) and isinstance(t, ScalarType) and given.dtype.is_int != t.dtype.is_int:
                raise self.error(TypeCheckError, arg, f"argument '{arg.arg}' is a {given.dtype} scalar but the kernel declares {t.dtype}")
            if isinstance(t, TileType):
                raise self.error(TypeCheckError, arg, f"parameter '{arg.arg}' is a Tile: kernels take GM tensors",
                                 hint="take a pl.Tensor and pl.load the tile inside the kernel")
            name = self.fresh(arg.arg)
            self.env[arg.arg] = name
            params.append(n.Param(name, t, direction))
        return tuple(params)

    def _return_annotation(self, node) -> tuple:
        if isinstance(node, ast.Constant) and node.value is None:
            return ()
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "tuple":
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return tuple(self.annotation(i)[0] for i in items)
        return (self.annotation(node)[0],)

    @staticmethod
    def _body_statements(body):
        # A docstring or a bare `...` says nothing to the compiler.
        return [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                        and (isinstance(s.value.value, str) or s.value.value is Ellipsis))]

    # ------------------------------------------------------------------ blocks

    def block(self, stmts, live_after: frozenset, top: bool = False) -> tuple:
        saved, self.out = self.out, []
        try:
            for i, stmt in enumerate(stmts):
                if self.return_types is not None:
                    raise self.error(UnsupportedSyntaxError, stmt, "statements after 'return' never run",
                                     hint="return at the end of the function")
                later = live_after | liveness.reads(stmts[i + 1:])
                self.statement(stmt, later, top)
            return tuple(self.out)
        finally:
            self.out = saved

    def emit(self, stmt) -> None:
        self.out.append(stmt)

    def statement(self, node, live_after: frozenset, top: bool) -> None:
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
                hint="kernels are written with assignments, pl.range/pl.pipeline/pl.parallel loops, "
                     "if statements, with pl.at(...) scopes and return",
            )

    # ------------------------------------------------------------------ assignments

    def bind(self, pyname: str, t, value, node) -> str:
        ssa = self.fresh(pyname)
        self.types[ssa] = t
        self.env[pyname] = ssa
        self.statics.pop(pyname, None)
        self.dropped.pop(pyname, None)
        self.emit(n.Assign(ssa, t, value, span=self.span(node)))
        return ssa

    def assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            raise self.error(UnsupportedSyntaxError, node, "chained assignment 'a = b = ...' is not supported")
        target = node.targets[0]
        if self._is_builtin_call(node.value, "yield_"):
            return self.yield_(node.value, target)
        if isinstance(target, ast.Name):
            if isinstance(node.value, ast.Name) and isinstance(self.local_type(node.value), TileType):
                # `b = a` names the same on-chip buffer: no copy exists to make, so no statement.
                self.env[target.id] = self.env[node.value.id]
                self.statics.pop(target.id, None)
                self.dropped.pop(target.id, None)
                return
            value, t = self.value(node.value, hint=target.id)
            self.bind(target.id, t, value, node)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.unpack(target, node.value)
        elif isinstance(target, ast.Subscript):
            self.assemble(target, node.value, node)
        else:
            raise self.error(UnsupportedSyntaxError, target, f"Unsupported assignment: {ast.unparse(node)}")

    def ann_assign(self, node: ast.AnnAssign) -> None:
        if not isinstance(node.target, ast.Name) or node.value is None:
            raise self.error(UnsupportedSyntaxError, node, "annotated assignments bind one name to a value")
        if self._is_builtin_call(node.value, "yield_"):
            return self.yield_(node.value, node.target)
        value, inferred = self.value(node.value, hint=node.target.id)
        declared, _ = self.annotation(node.annotation)
        self.bind(node.target.id, self.merge_declared(declared, inferred, node.annotation), value, node)

    def merge_declared(self, declared, inferred, node):
        """The annotated type, checked against (and completed from) the inferred one."""
        if isinstance(declared, TileType) and isinstance(inferred, TileType):
            if declared.shape != inferred.shape or declared.dtype is not inferred.dtype:
                raise self.error(TypeCheckError, node,
                                 f"the annotation says {type_name(declared)} but the value is {type_name(inferred)}",
                                 hint="make the annotation's shape and dtype match the value")
            space = declared.space if declared.space is not None else inferred.space
            if inferred.space is not None and space is not inferred.space:
                raise self.error(TypeCheckError, node,
                                 f"the annotation places the tile in {space.name} but the value is in {inferred.space.name}",
                                 hint=f"pass target_memory=pl.Mem.{space.name} to the op that makes it, or pl.move it")
            valid = declared.valid_shape if declared.valid_shape is not None else inferred.valid_shape
            return TileType(shape=declared.shape, dtype=declared.dtype, space=space, memref=declared.memref,
                            valid_shape=valid)
        if declared != inferred:
            raise self.error(TypeCheckError, node,
                             f"the annotation says {type_name(declared)} but the value is {type_name(inferred)}")
        return declared

    def aug_assign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error(UnsupportedSyntaxError, node, "augmented assignment needs a plain name")
        load = ast.copy_location(ast.Name(node.target.id, ast.Load()), node.target)
        rhs = ast.copy_location(ast.BinOp(load, node.op, node.value), node)
        value, t = self.value(rhs, hint=node.target.id)
        self.bind(node.target.id, t, value, node)

    def unpack(self, target, value_node) -> None:
        names = [e for e in target.elts]
        if not all(isinstance(e, ast.Name) for e in names):
            raise self.error(UnsupportedSyntaxError, target, f"Tuple unpacking target must be a variable name, got {ast.unparse(target)}")
        try:
            values = self.static(value_node)
        except NotStatic:
            raise self.error(UnsupportedSyntaxError, value_node,
                             "only compile-time tuples (like 'M, N = a.shape') can be unpacked") from None
        if not isinstance(values, list) or len(values) != len(names):
            raise self.error(TypeCheckError, value_node, f"cannot unpack {values!r} into {len(names)} names")
        for name, v in zip(names, values):
            if not isinstance(v, (int, float, bool)):
                raise self.error(TypeCheckError, value_node, f"cannot bind {v!r} to '{name.id}'")
            self.env.pop(name.id, None)
            self.statics[name.id] = v

    def assemble(self, target: ast.Subscript, value_node, node) -> None:
        """``out[:] = x`` / ``out[a:b, c:d] = x``: write a tensor value into a window of out."""
        dst, dst_t = self.operand(target.value)
        if not isinstance(dst_t, TensorType):
            raise self.error(TypeCheckError, target, f"only tensors take slice assignment, not {type_name(dst_t)}")
        offsets, shape = self.window(target, dst_t)
        src, src_t = self.operand(value_node)
        if isinstance(src_t, TensorType) and src_t.shape != shape:
            raise self.error(TypeCheckError, node,
                             f"the window is {list(shape)} but the value is {list(src_t.shape)}")
        self.require_incore(target, "tensor.assemble")
        call, _ = self.checked_call(lookup("tensor.assemble"), {"target": dst, "source": src, "offset": offsets},
                                    {"target": dst_t, "source": src_t}, node)
        self.emit(n.Eval(call, span=self.span(node)))

    def window(self, sub: ast.Subscript, t: TensorType):
        """(offsets, static shape) of a subscript window over a tensor."""
        items = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
        if len(items) > len(t.shape):
            raise self.error(TypeCheckError, sub, f"{len(items)} indices for a tensor of rank {len(t.shape)}")
        items = list(items) + [ast.Slice()] * (len(t.shape) - len(items))
        offsets, shape = [], []
        for axis, item in enumerate(items):
            if not isinstance(item, ast.Slice) or item.step is not None:
                raise self.error(UnsupportedSyntaxError, item, "tensor windows are written with start:stop slices",
                                 hint="a[i * 64:(i + 1) * 64, :]")
            lo = self.scalar(item.lower) if item.lower is not None else n.Const(0)
            hi = self.scalar(item.upper) if item.upper is not None else n.Const(t.shape[axis])
            extent = static_difference(hi, lo)
            if extent is None or extent <= 0:
                raise self.error(TypeCheckError, item, "a window's extent (stop - start) must be a positive constant",
                                 hint="write both bounds from the same index, e.g. i * 64:(i + 1) * 64")
            offsets.append(lo)
            shape.append(extent)
        return tuple(offsets), tuple(shape)

    # ------------------------------------------------------------------ values

    def expr_statement(self, node: ast.Expr) -> None:
        if self._is_builtin_call(node.value, "yield_"):
            return self.yield_(node.value, None)
        if not isinstance(node.value, ast.Call):
            raise self.error(UnsupportedSyntaxError, node, "this expression statement has no effect",
                             hint="assign its value to a name, or remove it")
        value, t = self.value(node.value)
        if isinstance(value, (n.Call, n.FuncCall)):
            self.emit(n.Eval(value, span=self.span(node)))

    def value(self, node, hint: str = "v"):
        """(IR value, type): a Call/FuncCall for op and function calls, else an Expr."""
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH and self._is_array(node):
            fake = ast.copy_location(ast.Call(func=None, args=[node.left, node.right], keywords=[]), node)
            return self.op_call(N.Op(_ARITH[type(node.op)], unified=True), fake)
        if isinstance(node, ast.Subscript) and isinstance(self.local_type(node.value), TensorType):
            return self.slice(node, self.local_type(node.value))
        if isinstance(node, ast.Name) and node.id in self.env:
            return self.var(node.id)
        e = self.scalar(node)
        return e, self.expr_type(e, node)

    def _is_array(self, node) -> bool:
        """Whether an expression denotes a tile or tensor (so `a + b` is pl.add), decided
        without converting it."""
        if isinstance(node, ast.Name):
            return isinstance(self.local_type(node), (TileType, TensorType))
        if isinstance(node, ast.BinOp):
            return self._is_array(node.left) or self._is_array(node.right)
        if isinstance(node, ast.Subscript):
            return isinstance(self.local_type(node.value), TensorType)
        if isinstance(node, ast.Call):
            _, meaning = self.entity(node.func)
            return isinstance(meaning, N.Op) or isinstance(self.resolve_chain(node.func), N.Kernel) or (
                self.has_self and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self")
        return False

    def operand(self, node, hint: str = "t"):
        """An operand Expr: op results are bound to a fresh temporary first."""
        value, t = self.value(node, hint)
        if isinstance(value, (n.Call, n.FuncCall)):
            base = value.op.split(".")[-1] if isinstance(value, n.Call) else value.callee
            ssa = self.fresh(base)
            self.types[ssa] = t
            self.emit(n.Assign(ssa, t, value, span=self.span(node)))
            return n.Var(ssa), t
        return value, t

    def slice(self, node: ast.Subscript, t: TensorType):
        src, _ = self.operand(node.value)
        offsets, shape = self.window(node, t)
        self.require_incore(node, "tensor.slice")
        return self.checked_call(lookup("tensor.slice"),
                                 {"x": src, "shape": tuple(n.Const(s) for s in shape), "offset": offsets},
                                 {"x": t}, node)

    # ------------------------------------------------------------------ control flow

    def loop_header(self, node: ast.For):
        it = node.iter
        if not isinstance(it, ast.Call):
            raise self.error(UnsupportedSyntaxError, it, "kernel loops iterate over pl.range / pl.pipeline / pl.parallel")
        _, meaning = self.entity(it.func)
        if isinstance(it.func, ast.Name) and it.func.id == "range" and not isinstance(meaning, N.Builtin):
            raise self.error(UnsupportedSyntaxError, it, "Python's range() is not a kernel loop",
                             hint="use pl.range(...) (or pl.pipeline / pl.parallel)")
        if not isinstance(meaning, N.Builtin) or meaning.name not in ("range", "pipeline", "parallel"):
            raise self.error(UnsupportedSyntaxError, it, "kernel loops iterate over pl.range / pl.pipeline / pl.parallel")
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

    def for_(self, node: ast.For, live_after: frozenset) -> None:
        if node.orelse:
            raise self.error(UnsupportedSyntaxError, node, "for-else is not supported")
        kind, start, stop, step, stage, inits = self.loop_header(node)
        explicit = inits is not None
        if explicit:
            target = node.target
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name)
                    and isinstance(target.elts[1], (ast.Tuple, ast.List))
                    and all(isinstance(e, ast.Name) for e in target.elts[1].elts)):
                raise self.error(UnsupportedSyntaxError, target, "a loop with init_values binds 'i, (a, b)'",
                                 hint="for i, (acc,) in pl.range(n, init_values=(acc0,)):")
            loop_name = target.elts[0].id
            carried_names = [e.id for e in target.elts[1].elts]
            if len(carried_names) != len(inits):
                raise self.error(TypeCheckError, target, f"{len(carried_names)} loop-carried names for {len(inits)} init_values")
        else:
            if not isinstance(node.target, ast.Name):
                raise self.error(UnsupportedSyntaxError, node.target, "the loop variable is a single name")
            loop_name = node.target.id
            body_assigned = liveness.assigned(node.body)
            exposed = liveness.upward_exposed(node.body)
            carried_names = [x for x in body_assigned if x in self.env and x != loop_name
                             and (x in exposed or x in live_after)]
            inits = [self.var(x) for x in carried_names]

        outer_env = dict(self.env)
        var = self.fresh(loop_name)
        self.types[var] = INDEX
        self.env[loop_name] = var
        if all(isinstance(b, n.Const) for b in (start, stop, step)) and stop.value > start.value:
            last = start.value + (stop.value - 1 - start.value) // step.value * step.value
            self.ranges[var] = (start.value, last)
        iter_args = []
        for name, (init, t) in zip(carried_names, inits):
            ssa = self.fresh(name)
            self.types[ssa] = t
            self.env[name] = ssa
            iter_args.append(n.IterArg(ssa, t, init))

        frame = _Frame("for", explicit)
        self.frames.append(frame)
        body_live = live_after | liveness.upward_exposed(node.body) | frozenset(carried_names)
        try:
            body = list(self.block(node.body, body_live))
        finally:
            self.frames.pop()
        body_env = self.env
        if explicit:
            if frame.yield_targets is None:
                raise self.error(TypeCheckError, node, "a loop with init_values must end with 'x = pl.yield_(...)'")
            result_names, yield_types = frame.yield_targets, frame.yield_types
        else:
            values = [self.var(x) if x in body_env else None for x in carried_names]
            yield_types = tuple(t for _, t in values)
            result_names = tuple(carried_names)
            if carried_names:
                body.append(n.Yield(tuple(e for e, _ in values), span=self.span(node)))
        for name, a, t in zip(carried_names, iter_args, yield_types):
            if t != a.type:
                raise self.error(TypeCheckError, node,
                                 f"loop-carried value '{name}' changes type inside the loop, "
                                 f"from {type_name(a.type)} to {type_name(t)}",
                                 hint="keep the shape, dtype and memory space of a value the loop carries")
        self.env = outer_env
        self._drop(body_env, node, "loop")
        results = []
        for name, a in zip(result_names, iter_args):
            ssa = self.fresh(name)
            self.types[ssa] = a.type
            self.env[name] = ssa
            results.append(n.Binding(ssa, a.type))
        self.emit(n.For(var, start, stop, step, body, kind, stage, iter_args, results, span=self.span(node)))

    def _drop(self, inner_env: dict, node, where: str) -> None:
        for name, ssa in inner_env.items():
            if self.env.get(name) != ssa and name not in self.env:
                self.dropped[name] = Dropped(node.lineno + self.source.line_offset, where)

    def yield_(self, call: ast.Call, target) -> None:
        if not self.frames:
            raise self.error(UnsupportedSyntaxError, call, "pl.yield_ ends a loop or branch body")
        frame = self.frames[-1]
        if not frame.explicit:
            raise self.error(UnsupportedSyntaxError, call,
                             "pl.yield_ belongs to a loop with init_values (or an if whose branches yield)",
                             hint="rebinding a name in the loop carries it implicitly")
        values = [self.operand(a) for a in call.args]
        names = ()
        if target is not None:
            elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            if not all(isinstance(e, ast.Name) for e in elts) or len(elts) != len(values):
                raise self.error(TypeCheckError, target, f"{len(elts)} names for {len(values)} yielded values")
            names = tuple(e.id for e in elts)
        if frame.yield_targets is not None and frame.kind == "for":
            raise self.error(UnsupportedSyntaxError, call, "a loop body yields once, at its end")
        frame.yield_targets = names
        frame.yield_types = tuple(t for _, t in values)
        self.emit(n.Yield(tuple(e for e, _ in values), span=self.span(call)))

    def if_(self, node: ast.If, live_after: frozenset) -> None:
        try:
            taken = self.static(node.test)
        except NotStatic:
            taken = None
        if isinstance(taken, (bool, int)):
            for stmt in node.body if taken else node.orelse:
                self.statement(stmt, live_after, False)
            return
        cond = self.scalar(node.test)
        explicit = self._ends_in_yield(node.body)
        outer_env = dict(self.env)
        branches = []
        for stmts in (node.body, node.orelse):
            self.env = dict(outer_env)
            frame = _Frame("if", explicit)
            self.frames.append(frame)
            try:
                body = list(self.block(stmts, live_after))
            finally:
                self.frames.pop()
            branches.append((body, self.env, frame))
        (then_body, then_env, then_frame), (else_body, else_env, else_frame) = branches
        results = []
        if explicit:
            if not node.orelse or else_frame.yield_targets != then_frame.yield_targets:
                raise self.error(TypeCheckError, node, "both branches of an if that yields must yield the same names")
            names, types = then_frame.yield_targets, then_frame.yield_types
            if else_frame.yield_types != types:
                raise self.error(TypeCheckError, node, "the branches of this if yield values of different types")
        else:
            names = [x for x in dict.fromkeys([*liveness.assigned(node.body), *liveness.assigned(node.orelse)])
                     if x in live_after and (x in then_env and x in else_env)
                     and (then_env[x] != outer_env.get(x) or else_env[x] != outer_env.get(x))]
            types = []
            for x in names:
                (tv, tt), (ev, et) = [(n.Var(env[x]), self.types[env[x]]) for env in (then_env, else_env)]
                if tt != et:
                    raise self.error(TypeCheckError, node,
                                     f"'{x}' is {type_name(tt)} after one branch and {type_name(et)} after the other")
                types.append(tt)
            if names:
                then_body.append(n.Yield(tuple(n.Var(then_env[x]) for x in names), span=self.span(node)))
                else_body.append(n.Yield(tuple(n.Var(else_env[x]) for x in names), span=self.span(node)))
        self.env = outer_env
        for env in (then_env, else_env):
            self._drop(env, node, "if")
        for x, t in zip(names, types):
            ssa = self.fresh(x)
            self.types[ssa] = t
            self.env[x] = ssa
            self.dropped.pop(x, None)
            results.append(n.Binding(ssa, t))
        self.emit(n.If(cond, then_body, else_body, results, span=self.span(node)))

    def _ends_in_yield(self, stmts) -> bool:
        if not stmts:
            return False
        last = stmts[-1]
        value = getattr(last, "value", None)
        return isinstance(last, (ast.Assign, ast.AnnAssign, ast.Expr)) and self._is_builtin_call(value, "yield_")

    def with_(self, node: ast.With, live_after: frozenset) -> None:
        if len(node.items) != 1:
            raise self.error(UnsupportedSyntaxError, node, "a with statement opens one pl.at(...) scope")
        item = node.items[0]
        call = item.context_expr
        if not self._is_builtin_call(call, "at"):
            raise self.error(UnsupportedSyntaxError, call, "kernels open scopes with pl.at(level=pl.Level.CORE_GROUP)")
        if item.optional_vars is not None:
            raise self.error(UnsupportedSyntaxError, item.optional_vars, "'with pl.at(...) as x' is not supported yet")
        if self.incore:
            raise self.error(ParseError, call, "pl.at inside an InCore function: its body is already InCore",
                             hint="remove the with statement")
        if call.args:
            raise self.error(TypeCheckError, call, "pl.at takes keywords: pl.at(level=pl.Level.CORE_GROUP)")
        kw = {k.arg: k.value for k in call.keywords}
        unknown = set(kw) - {"level", "name_hint"}
        if unknown:
            raise self.error(TypeCheckError, call, f"pl.at got an unexpected keyword '{sorted(unknown)[0]}'")
        if "level" not in kw:
            raise self.error(TypeCheckError, call, "pl.at needs level=", hint="pl.at(level=pl.Level.CORE_GROUP)")
        level = self.static_of(kw["level"], Level, "pl.at's level")
        if level is not Level.CORE_GROUP:
            raise self.error(UnsupportedSyntaxError, kw["level"], f"pl.at(level=pl.Level.{level.name}) is not supported yet",
                             hint="use pl.Level.CORE_GROUP for an InCore scope")
        hint = self.static_of(kw["name_hint"], str, "name_hint") if "name_hint" in kw else ""
        self.incore = True
        try:
            body = self.block(node.body, live_after)
        finally:
            self.incore = False
        self.emit(n.Scope(body, level, hint, span=self.span(node)))

    def return_(self, node: ast.Return, top: bool) -> None:
        if not top or self.frames:
            raise self.error(UnsupportedSyntaxError, node, "return is only supported at the end of the function body")
        values = []
        if node.value is not None:
            items = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            values = [self.operand(v) for v in items]
        self.emit(n.Return(tuple(e for e, _ in values), span=self.span(node)))
        self.return_types = tuple(t for _, t in values)
