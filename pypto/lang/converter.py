"""One kernel function's source (``ast``) to an IR ``Function``, in SSA form.

Rebinding a Python name makes a fresh SSA name; a name rebound in a loop (or an ``if``)
and read afterwards becomes a loop-carried value (a branch result). Op calls are checked
against the op registry where they are written, so every mistake names the user's line.
"""

from __future__ import annotations

import ast
import keyword

import attrs

from pypto.errors import ParseError, SpecializationError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.affine import interval, static_difference
from pypto.ir.ops import lookup
from pypto.ir.types import (
    INDEX,
    DataType,
    ForKind,
    FunctionType,
    Level,
    ParamDirection,
    ScalarType,
    TensorType,
    TileType,
    join,
    joins,
    placed_name,
    type_name,
)
from pypto.lang import liveness
from pypto.lang import names as N
from pypto.lang.calls import CallConverter, Nothing, ProgramHooks, Several
from pypto.lang.exprs import Dropped, NotStatic, Source

INCORE_TYPES = (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV, FunctionType.Inline, FunctionType.Opaque)
_ARITH = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
_OPERATOR_TEXT = {ast.Pow: "**", ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@", ast.LShift: "<<",
                  ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.USub: "-",
                  ast.Not: "not", ast.Invert: "~"}


@attrs.define
class _Frame:
    """An open loop/branch body: where an explicit ``pl.yield_`` lands."""

    kind: str  # "for" | "if"
    explicit: bool
    last: object = None  # the body's last statement: the only place for its pl.yield_
    header: tuple[str, ...] = ()  # an explicit loop's carried names: what its pl.yield_ hands on
    yield_targets: tuple[str, ...] | None = None
    yield_types: tuple | None = None
    declared: object = None  # the annotated type of a single yield target (``x: T = pl.yield_(v)``)


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
        self.local_names = liveness.first_bindings(fdef.body)

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
            try:
                t, direction = self.annotation(arg.annotation, given=given, param=arg.arg)
            except SpecializationError as err:
                err.param = arg.arg  # which argument: a caller reports it where it is passed
                raise
            if isinstance(t, TileType):
                raise self.error(TypeCheckError, arg, f"parameter '{arg.arg}' is a Tile: kernels take GM tensors",
                                 hint="take a pl.Tensor and pl.load the tile inside the kernel")
            self.check_local_name(arg.arg, arg)
            name = self.fresh(arg.arg)
            self.env[arg.arg] = name
            if direction is ParamDirection.In and isinstance(t, TensorType):
                self.inputs[name] = arg.arg
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
        self.env[pyname] = ssa
        self.dropped.pop(pyname, None)
        self.derive(ssa, value)
        if isinstance(t, ScalarType) and isinstance(value, (n.Const, n.Var, n.BinOp, n.UnaryOp)):
            self.scalar_defs[ssa] = value
        if isinstance(value, n.Const):
            self.known[ssa] = value.value
        self.emit(n.Assign(ssa, t, value, span=span or self.span(node)))
        return ssa

    def assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            raise self.error(UnsupportedSyntaxError, node, "chained assignment 'a = b = ...' is not supported")
        target = node.targets[0]
        if self._is_builtin_call(node.value, "yield_"):
            return self.yield_(node.value, target)
        if isinstance(target, ast.Name):
            value, t = self.value(node.value, hint=target.id)
            self.single(t, node.value)
            if isinstance(value, n.Var) and isinstance(t, TileType):
                self.alias(target.id, value, target)
                return
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
            return self.yield_(node.value, node.target, self.annotation(node.annotation)[0])
        value, inferred = self.value(node.value, hint=node.target.id)
        self.single(inferred, node.value)
        declared, _ = self.annotation(node.annotation)
        if isinstance(value, n.Const) and isinstance(declared, ScalarType) and isinstance(inferred, ScalarType):
            value = self.typed_constant(value, declared, node)
            inferred = declared
        elif isinstance(declared, ScalarType) and isinstance(inferred, ScalarType) and declared.dtype.is_int \
                and inferred.dtype.is_int:
            self.check_narrowing(value, inferred, declared, node)
        merged = self.merge_declared(declared, inferred, node.annotation)
        if isinstance(value, n.Var) and isinstance(inferred, TileType):
            if merged != inferred:
                raise self.error(TypeCheckError, node.annotation,
                                 f"'{node.target.id}' names the existing tile '{ast.unparse(node.value)}', "
                                 "which the annotation cannot re-place",
                                 hint="annotate the tile where an op makes it (x: pl.Tile[...] = pl.load(...)), "
                                      "or make a placed copy with pl.move")
            self.alias(node.target.id, value, node.target)
            return
        self.bind(node.target.id, merged, value, node)

    def alias(self, pyname: str, var: n.Var, node) -> None:
        """``b = a`` for a tile names the same on-chip buffer: no copy exists to make, so no
        statement (an op binds every tile)."""
        self.check_local_name(pyname, node)
        self.env[pyname] = var.name
        self.dropped.pop(pyname, None)

    def typed_constant(self, value: n.Const, declared: ScalarType, node) -> n.Const:
        """A literal for an annotated scalar: ``n: pl.Scalar[pl.INT32] = 3``, ``x: pl.Scalar[pl.FP32] = 1``."""
        v = value.value
        if declared.dtype.is_float and isinstance(v, int) and not isinstance(v, bool):
            return n.Const(float(v))
        if declared.dtype.is_int and isinstance(v, int) and not isinstance(v, bool):
            lo, hi = declared.dtype.int_range
            if not lo <= v <= hi:
                wider = _wider(v)
                raise self.error(TypeCheckError, node, f"{v} does not fit {declared.dtype.name} ({lo}..{hi})",
                                 hint=f"declare a wider integer dtype (pl.{wider}), or use a value in range" if wider
                                 else "no integer dtype holds it: use a value in range")
            return value
        if declared.dtype.is_bool and isinstance(v, bool) or declared.dtype.is_float and isinstance(v, float):
            return value
        want = "a number" if declared.dtype.is_float else "an int" if declared.dtype.is_int else "True or False"
        raise self.error(TypeCheckError, node, f"{v!r} is not a {declared.dtype} value", hint=f"write {want}")

    def check_narrowing(self, value, inferred: ScalarType, declared: ScalarType, node) -> None:
        """An integer value bound to a narrower integer dtype is accepted where its range is
        known to fit: nothing converts it at run time, so a value out of range would keep
        its wider meaning under the narrow name."""
        lo, hi = declared.dtype.int_range
        have = inferred.dtype.int_range
        if have[0] >= lo and have[1] <= hi:
            return  # widening
        span = interval(value, self.ranges) if isinstance(value, n.Expr) else None
        if span is not None and lo <= span[0] and span[1] <= hi:
            return
        what = ast.unparse(node.value)
        why = f"it ranges over {span[0]}..{span[1]}" if span is not None else "its range is not known at compile time"
        raise self.error(TypeCheckError, node,
                         f"'{what}' is {type_name(inferred)} and may not fit {declared.dtype.name} ({lo}..{hi}): {why}",
                         hint=f"declare it pl.Scalar[pl.{_wider_dtype(inferred.dtype)}] (or leave the annotation off)")

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
        if isinstance(declared, ScalarType) and isinstance(inferred, ScalarType) \
                and declared.dtype.is_int and inferred.dtype.is_int:
            return declared  # integer widths are a choice of the name's type (narrowing is checked first)
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
            if isinstance(value_node, ast.Call):
                return self.unpack_results(names, value_node)
            raise self.error(UnsupportedSyntaxError, value_node,
                             "only compile-time tuples (like 'M, N = a.shape') and calls returning several values "
                             "can be unpacked") from None
        if not isinstance(values, list) or len(values) != len(names):
            raise self.error(TypeCheckError, value_node, f"cannot unpack {values!r} into {len(names)} names")
        for name, v in zip(names, values):
            if not isinstance(v, (int, float, bool)):
                raise self.error(TypeCheckError, value_node, f"cannot bind {v!r} to '{name.id}'")
            # A compile-time value with no binding statement: uses read the constant. It is
            # still a name of the environment, so a loop or branch that rebinds it carries it.
            self.check_local_name(name.id, name)
            ssa = self.fresh(name.id)
            self.types[ssa] = self.expr_type(n.Const(v), value_node)
            self.folded[ssa] = v
            self.env[name.id] = ssa
            self.dropped.pop(name.id, None)

    def unpack_results(self, names, call_node: ast.Call) -> None:
        """``o1, o2 = two(a, o1, o2)``: the kernel writes the tensors it is handed and returns
        them, so the call is a statement and each name is the argument the callee returns."""
        value, t = self.value(call_node)
        if not isinstance(t, Several):
            count = 0 if isinstance(t, Nothing) else 1
            raise self.error(TypeCheckError, call_node,
                             f"'{ast.unparse(call_node.func)}' returns {count} value{'s' if count != 1 else ''}, "
                             f"not {len(names)}")
        callee = t.callee
        if len(names) != len(callee.returns):
            raise self.error(TypeCheckError, call_node,
                             f"'{callee.display}' returns {len(callee.returns)} values, unpacked into {len(names)} names")
        for k, index in enumerate(callee.returned_params):
            if index is None:
                raise self.error(UnsupportedSyntaxError, call_node,
                                 f"value {k} that '{callee.display}' returns is not one of its parameters",
                                 hint="a kernel returning several values returns the Out/InOut tensors it writes")
        self.emit(n.Eval(value, span=self.span(call_node)))
        for name, index, rt in zip(names, callee.returned_params, callee.returns):
            arg = t.args[index]
            if isinstance(arg, n.Var):
                self.check_local_name(name.id, name)
                self.env[name.id] = arg.name
                self.dropped.pop(name.id, None)
            else:
                self.bind(name.id, rt, arg, name)

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
            lo = self.index(item.lower, "window bounds") if item.lower is not None else n.Const(0)
            hi = self.index(item.upper, "window bounds") if item.upper is not None else n.Const(t.shape[axis])
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
        before = len(self.out)
        value, t = self.value(node.value)
        if self._is_inline_call(node.value) and not isinstance(t, Nothing) and not _has_effect(self.out[before:]):
            # The helper's statements compute only the value nobody reads.
            raise self.error(UnsupportedSyntaxError, node,
                             f"the result of {ast.unparse(node.value.func)} is discarded; assign it to a name",
                             hint=f"x = {ast.unparse(node.value)}")
        if isinstance(value, n.Call) and not lookup(value.op).has_effect:
            # Nothing would read the value, and an op without effects does nothing else.
            what = ast.unparse(node.value.func) if node.value.func is not None else value.op
            raise self.error(UnsupportedSyntaxError, node,
                             f"the result of {what} is discarded; assign it to a name",
                             hint=f"x = {ast.unparse(node.value)}")
        if isinstance(value, (n.Call, n.FuncCall)):
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
                             f"unary '{_OPERATOR_TEXT.get(type(node.op), '?')}' on a tile or tensor is not supported",
                             hint=f"write pl.neg({x}) (or pl.muls({x}, -1))" if isinstance(node.op, ast.USub)
                             else "kernels compute on tiles with pl.* ops")
        if isinstance(node, ast.Subscript) and isinstance(self.local_type(node.value), TensorType):
            return self.slice(node, self.local_type(node.value))
        if isinstance(node, ast.Subscript) and isinstance(self.local_type(node.value), TileType):
            raise self.tile_slice_error(node)
        if isinstance(node, ast.Name) and node.id in self.env:
            return self.var(node.id)
        e = self.scalar(node)
        return e, self.expr_type(e, node)

    def array_operator(self, node: ast.BinOp):
        """``a + b``, ``t * 2``, ``2 * t`` on tiles/tensors are the unified ops; the forms
        with no op behind them are explained."""
        op = _ARITH.get(type(node.op))
        left, right = node.left, node.right
        if op is None:
            hint = f"write pl.mul({ast.unparse(left)}, {ast.unparse(left)})" if isinstance(node.op, ast.Pow) \
                else "kernels compute on tiles with pl.* ops (pl.add, pl.mul, ...)"
            raise self.error(UnsupportedSyntaxError, node,
                             f"operator '{_OPERATOR_TEXT.get(type(node.op), '?')}' is not an op on tiles or tensors",
                             hint=hint)
        if not self._is_array(left):
            if op in ("add", "mul"):  # commutative: t + 1 computes the same bits as 1 + t
                left, right = right, left
            else:
                s, x = ast.unparse(left), ast.unparse(right)
                hint = {"sub": f"write pl.adds(pl.neg({x}), {s})",
                        "div": f"write pl.muls(pl.recip({x}), {s}) (a reciprocal then a scale, which may round "
                               "differently from a division), or make the scalar a tile with pl.full and pl.div"}[op]
                raise self.error(UnsupportedSyntaxError, node,
                                 f"'{ast.unparse(node)}': a scalar on the left of '{'-' if op == 'sub' else '/'}' "
                                 "with a tile or tensor on the right is not supported (there is no reversed op)",
                                 hint=hint)
        fake = ast.copy_location(ast.Call(func=None, args=[left, right], keywords=[]), node)
        return self.op_call(N.Op(op, unified=True), fake)

    def _is_inline_call(self, node) -> bool:
        ref = self.resolve_chain(node.func) if isinstance(node, ast.Call) and node.func is not None else None
        return isinstance(ref, N.Kernel) and getattr(ref.obj, "function_type", None) is FunctionType.Inline

    def _is_array(self, node) -> bool:
        """Whether an expression denotes a tile or tensor (so `a + b` is pl.add), decided
        without converting it."""
        if isinstance(node, ast.Name):
            return isinstance(self.local_type(node), (TileType, TensorType))
        if isinstance(node, ast.BinOp):
            return self._is_array(node.left) or self._is_array(node.right)
        if isinstance(node, ast.UnaryOp):
            return self._is_array(node.operand)
        if isinstance(node, ast.Subscript):
            return isinstance(self.local_type(node.value), TensorType)
        if isinstance(node, ast.Call):
            _, meaning = self.entity(node.func)
            return isinstance(meaning, N.Op) or isinstance(self.resolve_chain(node.func), N.Kernel) or (
                self.has_self and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self")
        return False

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

    def operand(self, node, hint: str = "t"):
        """An operand Expr: op results are bound to a fresh temporary first."""
        value, t = self.value(node, hint)
        self.single(t, node)
        if isinstance(value, (n.Call, n.FuncCall)):
            base = value.op.split(".")[-1] if isinstance(value, n.Call) else value.callee
            ssa = self.fresh(base)
            self.types[ssa] = t
            self.derive(ssa, value)
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
        target = node.target
        if explicit:
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name)
                    and isinstance(target.elts[1], (ast.Tuple, ast.List))
                    and all(isinstance(e, ast.Name) for e in target.elts[1].elts)):
                raise self.error(UnsupportedSyntaxError, target, "a loop with init_values binds 'i, (a, b)'",
                                 hint="for i, (acc,) in pl.range(n, init_values=(acc0,)):")
            loop_name = target.elts[0].id
            header = [e.id for e in target.elts[1].elts]
            if len(header) != len(inits):
                raise self.error(TypeCheckError, target, f"{len(header)} loop-carried names for {len(inits)} init_values")
        else:
            if not isinstance(target, ast.Name):
                raise self.error(UnsupportedSyntaxError, target, "the loop variable is a single name")
            loop_name, header, inits = target.id, [], []
        for name_node in ast.walk(target):
            if isinstance(name_node, ast.Name):
                self.check_local_name(name_node.id, name_node)
        yield_names = set(self._yield_names(node.body[-1])) if explicit else set()
        body_assigned = liveness.assigned(node.body)
        exposed = liveness.upward_exposed(node.body)
        # Every other name the body rebinds that is read again (by the next iteration or after
        # the loop) is carried, with or without explicit init_values, as Python would see it.
        implicit = [x for x in body_assigned if x in self.env and x != loop_name and x not in header
                    and x not in yield_names and (x in exposed or x in live_after)]
        last = _last_value(start, stop, step)
        after = None  # how the loop variable reads after the loop, when something reads it
        if loop_name in live_after and loop_name not in yield_names and last != "empty":
            if last is not None and loop_name not in body_assigned:
                after = "last"  # its last value, known here
            elif loop_name in self.env:
                after = "carried"  # the value the last iteration leaves it (or its own, if none runs)

        outer_env = dict(self.env)
        var = self.fresh(loop_name)
        self.types[var] = INDEX
        self.env[loop_name] = var
        if isinstance(last, int):
            self.ranges[var] = (start.value, last)
            self.domains[var] = range(start.value, stop.value, step.value)
        iter_args = []

        def carry(name: str, init, t) -> str:
            ssa = self.fresh(name)
            self.types[ssa] = t
            iter_args.append(n.IterArg(ssa, t, init))
            self.derive(ssa, init)
            return ssa

        for name, (init, t) in zip(header, inits):
            self.env[name] = carry(name, init, t)
        for name in implicit:
            self.env[name] = carry(name, *self.ssa_value(outer_env[name]))
        if after == "carried":  # not a name in the body, where the loop variable is
            init, t = self.ssa_value(outer_env[loop_name])
            if isinstance(t, ScalarType) and t.dtype.is_int and t != INDEX:  # an int converts to the index it becomes
                converted = self.fresh(loop_name)
                self.types[converted] = INDEX
                self.emit(n.Assign(converted, INDEX, init, span=self.span(node)))
                init, t = n.Var(converted), INDEX
            carry(loop_name, init, t)

        frame = _Frame("for", explicit, last=node.body[-1], header=tuple(header))
        self.frames.append(frame)
        body_live = live_after | exposed | frozenset(header) | frozenset(implicit)
        try:
            body = list(self.block(node.body, body_live))
        finally:
            self.frames.pop()
        body_env = self.env
        if explicit and frame.yield_targets is None:
            raise self.error(TypeCheckError, node, "a loop with init_values must end with 'x = pl.yield_(...)'",
                             hint=f"end the body with {', '.join(header) or 'x'} = pl.yield_(...)")
        others = [*implicit, *([loop_name] if after == "carried" else [])]
        values = [self.ssa_value(self.available(body_env, x, node)) for x in others]
        if explicit:
            done = body.pop()  # the user's yield: the implicit values join it
            body.append(attrs.evolve(done, values=done.values + tuple(e for e, _ in values)))
            names = [*frame.yield_targets, *others]
            yield_types = [*frame.yield_types, *(t for _, t in values)]
        else:
            names, yield_types = others, [t for _, t in values]
            if values:
                body.append(n.Yield(tuple(e for e, _ in values), span=self.span(node)))
        for name, a, t in zip([*header, *others], iter_args, yield_types):
            if not joins(t, a.type):
                what = "the loop variable" if name == loop_name and name not in header else "loop-carried value"
                before, end = type_name(a.type), type_name(t)
                hint = "keep the shape, dtype and memory space of a value the loop carries"
                if before == end:  # they differ in placement only
                    before, end = placed_name(a.type), placed_name(t)
                    hint = ("a carried tile keeps one place: give it the same slot before the loop and at the "
                            "end of the body, or leave it undeclared and let the compiler place it")
                raise self.error(TypeCheckError, node,
                                 f"{what} '{name}' is {before} before the loop and {end} at the end of its body",
                                 hint=hint)
        for a, e in zip(iter_args, body[-1].values if iter_args else ()):
            self.derive(a.name, e)  # the next iteration may see the value the body leaves
        self.recheck_writes()
        self.env = outer_env
        self._drop(body_env, node, "loop")
        line = node.lineno + self.source.line_offset
        for name in header:
            if name not in names:  # the header names are scoped to the body (as the reference has it)
                self.env.pop(name, None)
                self.dropped[name] = Dropped(
                    line, "loop",
                    message=f"'{name}' names a carried value in the header of the loop at line {line}, "
                            "and is not available after it",
                    hint="read the loop's result: the name its pl.yield_ assigns"
                         + (f" ('{frame.yield_targets[header.index(name)]}')" if frame.yield_targets else ""))
        results = []
        for name, a in zip(names, iter_args):
            ssa = self.fresh(name)
            self.types[ssa] = a.type
            self.derive(ssa, n.Var(a.name))
            self.env[name] = ssa
            self.dropped.pop(name, None)
            results.append(n.Binding(ssa, a.type))
        self.emit(n.For(var, start, stop, step, body, kind, stage, iter_args, results, span=self.span(node)))
        if after == "last":
            self.bind(loop_name, INDEX, n.Const(last), node)

    def available(self, env: dict, name: str, node) -> str:
        """The SSA name a value the loop carries has at the end of its body, or the error
        saying why it has none there."""
        if name in env:
            return env[name]
        err = self.undefined(ast.copy_location(ast.Name(name, ast.Load()), node))
        raise self.error(type(err), node, f"this loop carries '{name}' to its next iteration, but at the end of "
                                          f"its body: {err.message}", hint=err.hint)

    def _drop(self, inner_env: dict, node, where: str) -> None:
        for name, ssa in inner_env.items():
            if self.env.get(name) != ssa and name not in self.env:
                self.dropped[name] = Dropped(node.lineno + self.source.line_offset, where)

    def yield_(self, call: ast.Call, target, declared=None) -> None:
        if not self.frames:
            raise self.error(UnsupportedSyntaxError, call, "pl.yield_ ends a loop or branch body")
        frame = self.frames[-1]
        if not frame.explicit:
            raise self.error(UnsupportedSyntaxError, call,
                             "pl.yield_ belongs to a loop with init_values (or an if whose branches yield)",
                             hint="rebinding a name in the loop carries it implicitly")
        body = "loop body" if frame.kind == "for" else "branch"
        if getattr(frame.last, "value", None) is not call:
            raise self.error(UnsupportedSyntaxError, call, f"pl.yield_ must be the last statement of its {body}",
                             hint=f"end the {body} with one 'x = pl.yield_(...)' and move what follows it before it")
        if frame.kind == "for" and len(call.args) != len(frame.header):
            raise self.error(TypeCheckError, call,
                             f"pl.yield_ hands on {len(call.args)} value{'s' if len(call.args) != 1 else ''}, but the "
                             f"loop carries {len(frame.header)} ({', '.join(frame.header)})",
                             hint="yield one value per name in the loop header's (...), in the same order")
        if target is None and call.args:
            raise self.error(UnsupportedSyntaxError, call, _unnamed_yield(call, "loop" if frame.kind == "for" else "if"),
                             hint=f"x = {ast.unparse(call)}")
        values = [self.operand(a) for a in call.args]
        names = ()
        if target is not None:
            elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            if not all(isinstance(e, ast.Name) for e in elts) or len(elts) != len(values):
                raise self.error(TypeCheckError, target, f"{len(elts)} names for {len(values)} yielded values")
            names = tuple(e.id for e in elts)
            for e in elts:
                self.check_local_name(e.id, e)
        frame.yield_targets = names
        frame.yield_types = tuple(t for _, t in values)
        if declared is not None:
            if len(values) != 1:
                raise self.error(TypeCheckError, target, "only a single yielded value takes an annotation")
            if not joins(values[0][1], declared):
                raise self.error(TypeCheckError, target, f"the yielded value is {type_name(values[0][1])}, "
                                                         f"not the annotated {type_name(declared)}")
            frame.declared = declared
        self.emit(n.Yield(tuple(e for e, _ in values), span=self.span(call)))

    def if_(self, node: ast.If, live_after: frozenset) -> None:
        taken = None
        if not self.source.exact:  # dump text keeps every If it prints, so it reads back equal
            try:
                taken = self.static(node.test)
            except NotStatic:
                pass
        if isinstance(taken, (bool, int)):
            return self.static_if(node.body if taken else node.orelse, live_after)
        cond = self.scalar(node.test)
        explicit = self._ends_in_yield(node.body) or self._ends_in_yield(node.orelse)
        yield_names = {x for stmts in (node.body, node.orelse) if stmts for x in self._yield_names(stmts[-1])}
        outer_env = dict(self.env)
        branches = []
        for stmts, holds in ((node.body, True), (node.orelse, False)):
            self.env = dict(outer_env)
            frame = _Frame("if", explicit, last=stmts[-1] if stmts else None)
            self.frames.append(frame)
            self.guards.append((cond, holds))
            try:
                body = list(self.block(stmts, live_after))
            finally:
                self.frames.pop()
                self.guards.pop()
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
        others = [x for x in dict.fromkeys([*liveness.assigned(node.body), *liveness.assigned(node.orelse)])
                  if x in live_after and x not in yield_names and (x in then_env and x in else_env)
                  and (then_env[x] != outer_env.get(x) or else_env[x] != outer_env.get(x))]
        same = [x for x in others if self._same_constant(then_env[x], else_env[x])]
        rebound = []  # both branches bind the same compile-time value: it stays one
        for x in same:
            if then_env[x] in self.folded and else_env[x] in self.folded:
                outer_env[x] = then_env[x]  # no statement binds it: every use is the constant
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
        branch_values = [b[-1].values if names else () for b in (then_body, else_body)]
        for k, (x, t) in enumerate(zip(names, types)):
            ssa = self.fresh(x)
            self.types[ssa] = t
            for values in branch_values:
                self.derive(ssa, values[k])
            self.env[x] = ssa
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
        self.frames.append(_Frame("if", True))  # any other pl.yield_ in the branch is misplaced
        try:
            for i, stmt in enumerate(stmts):
                self.statement(stmt, live_after | liveness.reads(stmts[i + 1:] + ([final] if final else [])), False)
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

    def _yield_names(self, stmt) -> list[str]:
        """The names ``x, y = pl.yield_(...)`` binds, when ``stmt`` is such a statement."""
        if not (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and self._is_builtin_call(stmt.value, "yield_")):
            return []
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
        elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        return [e.id for e in elts if isinstance(e, ast.Name)]

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
        if hint and (not hint.isidentifier() or keyword.iskeyword(hint) or hint in ("pl", "self")):
            # It names the outlined function, which dumps print as a Python method.
            raise self.error(TypeCheckError, kw["name_hint"],
                             f"name_hint={hint!r} must be a Python identifier that is not a keyword",
                             hint="letters, digits and underscores, not starting with a digit, "
                                  "e.g. name_hint=\"softmax_rows\"")
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
        for item, (_, t) in zip(items if node.value is not None else (), values):
            if not self.source.exact and not isinstance(t, TensorType):
                # What a kernel hands back is GM it wrote; a tile or a scalar has no home there.
                what = "scalar" if isinstance(t, ScalarType) else type_name(t)
                raise self.error(TypeCheckError, item,
                                 f"A task cannot return a {what}: a kernel returns the tensors it writes",
                                 hint="store the value into a pl.Out tensor parameter and return that tensor")
        self.emit(n.Return(tuple(e for e, _ in values), span=self.span(node)))
        self.return_types = tuple(t for _, t in values)


def _wider(v: int) -> str | None:
    """The narrowest signed integer dtype holding ``v`` (None: none does)."""
    for dtype in (DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64):
        lo, hi = dtype.int_range
        if lo <= v <= hi:
            return dtype.name
    return None


def _wider_dtype(dtype: DataType) -> str:
    return "INT64" if dtype is DataType.INDEX else dtype.name


def _has_effect(stmts) -> bool:
    """Whether running ``stmts`` does anything besides computing values: a GM write, or a
    call of another function."""
    for s in stmts:
        value = getattr(s, "value", None)
        if isinstance(value, n.FuncCall) or isinstance(value, n.Call) and lookup(value.op).has_effect:
            return True
        if any(_has_effect(getattr(s, f, ())) for f in ("body", "then_body", "else_body")):
            return True
    return False


def _unnamed_yield(call: ast.Call, where: str) -> str:
    count = len(call.args)
    return (f"pl.yield_ hands {count} value{'s' if count != 1 else ''} out of the {where}, and "
            f"{'it needs a name' if count == 1 else 'they need names'} there")


def _last_value(start, stop, step):
    """The loop variable's last value when the bounds are constants ("empty" when the loop
    never runs), else None."""
    if not all(isinstance(b, n.Const) for b in (start, stop, step)):
        return None
    if stop.value <= start.value:
        return "empty"
    return start.value + (stop.value - 1 - start.value) // step.value * step.value
