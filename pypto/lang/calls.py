"""Calls in kernel source: ``pl`` ops bound to the registry's signatures and checked
where they are written, calls of other kernel functions (``self.f(...)``, a
``@pl.jit.incore`` kernel), and inline kernels spliced in place. A mixin of the function
converter, whose values and statements it uses."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable

import attrs

from pypto.errors import ParseError, PyptoError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.affine import interval
from pypto.ir.ops import UNIFIED, Kind, all_ops, infer_type, lookup
from pypto.ir.ops.registry import OpArgs, OpDef, ParamSpec
from pypto.ir.types import (
    INDEX,
    DataType,
    FunctionType,
    PadValue,
    ScalarType,
    TensorType,
    TileType,
    type_name,
)
from pypto.lang import names as N
from pypto.lang.exprs import ExprConverter
from pypto.sim.soc import MemorySpace

# Older spellings of keyword names the reference language accepted.
_KEYWORD_ALIASES = {"valid_shapes": "valid_shape"}


@attrs.frozen
class Callee:
    """What the program builder returns for a call of another function."""

    name: str
    returns: tuple


class ProgramHooks:
    """Calls out of a function body: the program builder decides what they mean."""

    def call_method(self, name: str, arg_types: tuple, node, conv) -> Callee:
        raise conv.error(ParseError, node, f"'self.{name}' is not a function of this program")

    def call_kernel(self, kernel, arg_types: tuple, node, conv) -> Callee:
        raise conv.error(ParseError, node, "kernel calls are only available in @pl.jit source")

    def inline_source(self, kernel, node, conv):
        """(Source, ast.FunctionDef) of an inline kernel."""
        raise conv.error(ParseError, node, "inline kernels are only available in @pl.jit source")


class ArgThunk:
    """A call argument converted on first use, in the form its parameter wants."""

    def __init__(self, conv, node):
        self.conv, self.node = conv, node
        self._operand = None

    def operand(self):
        if self._operand is None:
            self._operand = self.conv.operand(self.node)
        return self._operand


class CallConverter(ExprConverter):
    def _is_builtin_call(self, node, name: str) -> bool:
        if not isinstance(node, ast.Call):
            return False
        _, meaning = self.entity(node.func)
        return isinstance(meaning, N.Builtin) and meaning.name == name

    def call(self, node: ast.Call):
        func = node.func
        if self.has_self and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id == "self" and "self" not in self.env:
            return self.function_call(node, lambda types: self.hooks.call_method(func.attr, types, node, self))
        ref, meaning = self.entity(func)
        if isinstance(ref, N.Alias):
            raise self.alias_error(func, ref)
        if isinstance(meaning, N.Op):
            return self.op_call(meaning, node)
        if isinstance(meaning, N.Builtin):
            if meaning.name in ("min", "max"):
                e = self.scalar(node)
                return e, self.expr_type(e, node)
            if meaning.name == "const":
                return self._const_call(node)
            where = {"range": "a for-loop iterator", "pipeline": "a for-loop iterator",
                     "parallel": "a for-loop iterator", "at": "a with statement",
                     "yield_": "the last statement of a loop or branch body"}[meaning.name]
            raise self.error(UnsupportedSyntaxError, node, f"pl.{meaning.name} is only valid as {where}")
        if isinstance(ref, N.Kernel):
            return self.kernel_call(ref.obj, node)
        if isinstance(ref, N.Path):
            parts = ref.parts
            module = parts[0] if len(parts) == 2 and parts[0] in N.NAMESPACES else None
            opname = parts[-1]
            pool = [o.short for o in _ops_of(module)] if module else list(UNIFIED)
            close = difflib.get_close_matches(opname, pool, n=1)
            what = f"Unknown {module} operation: {opname}" if module else f"Unknown operation: {ref}"
            raise self.error(ParseError, func, what,
                             hint=f"did you mean {'pl.' + module + '.' if module else 'pl.'}{close[0]}?" if close
                             else f"Check if '{opname}' is a valid {module or 'pl'} operation")
        if isinstance(func, ast.Name) and func.id in ("min", "max", "float"):
            e = self.scalar(node)
            return e, self.expr_type(e, node)
        if isinstance(func, ast.Name) and func.id == "range":
            raise self.error(UnsupportedSyntaxError, node, "Python's range() is not a kernel loop",
                             hint="use pl.range(...) (or pl.pipeline / pl.parallel)")
        if isinstance(ref, N.Unknown):
            raise self.error(ParseError, func, f"'{ref.name}' is {ref.what}, not a kernel-language operation",
                             hint="kernels call pl.* operations and @pl.jit.incore / @pl.jit.inline functions")
        if isinstance(func, ast.Name) and func.id not in self.env:
            raise self.undefined(func)
        raise self.error(UnsupportedSyntaxError, node, f"cannot call '{ast.unparse(func)}' in a kernel")

    def _const_call(self, node):
        if len(node.args) != 2 or node.keywords:
            raise self.error(TypeCheckError, node, "pl.const takes (value, dtype)")
        value = self.static_of(node.args[0], (int, float, bool), "a constant")
        self._dtype(node.args[1])  # checked; a constant takes its dtype from where it is used
        return n.Const(value), self.expr_type(n.Const(value), node)

    def function_call(self, node: ast.Call, resolve: Callable):
        if node.keywords:
            raise self.error(UnsupportedSyntaxError, node, "kernel functions take positional arguments")
        args = [self.operand(a) for a in node.args]
        callee: Callee = resolve(tuple(t for _, t in args))
        if len(callee.returns) > 1:
            raise self.error(UnsupportedSyntaxError, node, "functions returning several values are not supported yet")
        t = callee.returns[0] if callee.returns else None
        return n.FuncCall(callee.name, tuple(e for e, _ in args)), t

    def kernel_call(self, kernel, node: ast.Call):
        if getattr(kernel, "function_type", None) is FunctionType.Inline:
            return self.inline_call(kernel, node)
        if self.incore:
            raise self.error(ParseError, node, f"an InCore function cannot call the kernel '{kernel.__name__}'",
                             hint="call it from the @pl.jit entry, or make it @pl.jit.inline")
        return self.function_call(node, lambda types: self.hooks.call_kernel(kernel, types, node, self))

    def inline_call(self, kernel, node: ast.Call):
        """Splice an inline kernel's body here, its parameters bound to the arguments."""
        source, fdef = self.hooks.inline_source(kernel, node, self)
        params = [a.arg for a in fdef.args.args]
        if node.keywords or len(node.args) != len(params):
            raise self.error(TypeCheckError, node,
                             f"'{fdef.name}' takes {len(params)} arguments, got {len(node.args)}")
        args = [self.operand(a) for a in node.args]
        saved = (self.source, self.env, self.dropped)
        self.source, self.env, self.dropped = source, {}, {}
        try:
            for name, (e, t) in zip(params, args):
                if isinstance(e, n.Var):
                    self.env[name] = e.name
                else:
                    self.bind(name, t, e, node)
            body = self._body_statements(fdef.body)
            ret = None
            if body and isinstance(body[-1], ast.Return):
                body, ret = body[:-1], body[-1]
            for stmt in body:
                if isinstance(stmt, ast.Return):
                    raise self.error(UnsupportedSyntaxError, stmt, "an inline function returns only at its end")
                self.statement(stmt, frozenset(), top=False)
            if ret is None or ret.value is None:
                return n.Const(0), INDEX  # a value nobody reads: the call is a statement
            return self.operand(ret.value)
        finally:
            self.source, self.env, self.dropped = saved

    def require_incore(self, node, opname: str) -> None:
        if not self.incore:
            raise self.error(
                ParseError, node,
                f"Misplaced tensor op '{opname}' in Orchestration function (should be inside InCore block)",
                hint="wrap it in `with pl.at(level=pl.Level.CORE_GROUP):` or move it into a @pl.jit.incore function",
            )

    def op_call(self, meaning: N.Op, node: ast.Call):
        thunks = [ArgThunk(self, a) for a in node.args]
        keywords = {}
        for k in node.keywords:
            if k.arg is None:
                raise self.error(UnsupportedSyntaxError, k, "**kwargs are not supported in op calls")
            keywords[_KEYWORD_ALIASES.get(k.arg, k.arg)] = (ArgThunk(self, k.value), k)
        op = self.pick_op(meaning, thunks, keywords, node) if meaning.unified else lookup(meaning.name)
        self.require_incore(node, op.name)
        values, types = self.bind_args(op, thunks, keywords, node)
        return self.checked_call(op, values, types, node)

    def pick_op(self, meaning: N.Op, thunks, keywords, node) -> OpDef:
        forms = UNIFIED[meaning.name]
        first = thunks[0] if thunks else next((t for t, _ in keywords.values()), None)
        level = "tile"
        if forms.tensor is not None and forms.tile is None and forms.tile_scalar is None:
            level = "tensor"
        elif first is not None and (forms.tensor or forms.tensor_scalar) and (forms.tile or forms.tile_scalar):
            _, t = first.operand()
            if isinstance(t, TensorType):
                level = "tensor"
            elif not isinstance(t, TileType):
                raise self.error(TypeCheckError, first.node,
                                 f"pl.{meaning.name}: expected Tensor or Tile operands, got {type_name(t)}")
        plain, scalar = (forms.tensor, forms.tensor_scalar) if level == "tensor" else (forms.tile, forms.tile_scalar)
        name = plain
        if scalar is not None:
            second = thunks[1] if len(thunks) > 1 else keywords.get("rhs", (None,))[0]
            if plain is None or (second is not None and isinstance(second.operand()[1], ScalarType)):
                name = scalar
        if name is None:
            raise self.error(TypeCheckError, node, f"pl.{meaning.name} has no {level}-level form",
                             hint=f"use pl.{'tile' if level == 'tensor' else 'tensor'}.{meaning.name} operands")
        return lookup(name)

    def bind_args(self, op: OpDef, thunks, keywords, node):
        params = op.params
        if len(thunks) > len(params):
            raise self.error(TypeCheckError, node, f"{op.name} takes at most {len(params)} arguments, got {len(thunks)}")
        chosen: dict[str, tuple] = {}
        for p, t in zip(params, thunks):
            chosen[p.name] = (t, t.node)
        names = [p.name for p in params]
        for key, (t, kwnode) in keywords.items():
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                raise self.error(TypeCheckError, kwnode, f"{op.name} got an unexpected keyword '{key}'",
                                 hint=f"did you mean '{close[0]}'?" if close else f"its parameters are: {', '.join(names)}")
            if key in chosen:
                raise self.error(TypeCheckError, kwnode, f"{op.name} got '{key}' twice")
            chosen[key] = (t, kwnode)
        values, types = {}, {}
        for p in params:
            if p.name not in chosen:
                if p.required:
                    raise self.error(TypeCheckError, node, f"{op.name} is missing its '{p.name}' argument",
                                     hint=f"pl.{op.name}({', '.join(x.name for x in params if x.required)})")
                values[p.name] = p.default
                continue
            thunk, where = chosen[p.name]
            values[p.name], t = self.convert_arg(op, p, thunk, where)
            if t is not None:
                types[p.name] = t
        return values, types

    def convert_arg(self, op: OpDef, p: ParamSpec, thunk: ArgThunk, node):
        what = f"{op.name}'s '{p.name}'"
        if p.optional and isinstance(thunk.node, ast.Constant) and thunk.node.value is None:
            return None, None
        if p.kind in (Kind.TILE, Kind.TENSOR, Kind.SCALAR):
            e, t = thunk.operand()
            return e, t
        if p.kind is Kind.INDEX_LIST:
            if not isinstance(thunk.node, (ast.List, ast.Tuple)):
                raise self.error(TypeCheckError, thunk.node, f"{what} is a list of indices", hint="[i * 64, 0]")
            return tuple(self.scalar(e) for e in thunk.node.elts), None
        if p.kind is Kind.SHAPE:
            return tuple(n.Const(v) for v in self.static_ints(thunk.node, what)), None
        kinds = {Kind.DTYPE: DataType, Kind.SPACE: MemorySpace, Kind.PAD: PadValue, Kind.BOOL: bool,
                 Kind.INT: int, Kind.STR: str}
        if p.kind is Kind.INT and isinstance(thunk.node, ast.Constant) and isinstance(thunk.node.value, bool):
            raise self.error(TypeCheckError, thunk.node, f"{what} must be an int")
        return self.static_of(thunk.node, kinds[p.kind], what), None

    def checked_call(self, op: OpDef, values: dict, types: dict, node):
        try:
            t = infer_type(op, OpArgs(op.name, values, types), self.source.soc)
        except PyptoError as err:
            raise err.with_span(self.span(node)) from None
        self.check_bounds(op, values, types, node)
        return n.Call(op.name, tuple(values[p.name] for p in op.params)), t

    def check_bounds(self, op: OpDef, values: dict, types: dict, node) -> None:
        """Offsets that loop bounds make go out of range, e.g. a load at i * 64 for i up to 8."""
        tensor_key = {"tile.load": "tensor", "tile.store": "output_tensor", "tensor.slice": "x",
                      "tensor.assemble": "target"}.get(op.name)
        if tensor_key is None:
            return
        tensor_t = types[tensor_key]
        offsets = values["offsets" if op.name.startswith("tile.") else "offset"]
        if op.name == "tile.load":
            moved = values["valid_shape"] or values["shapes"]
            extents = [c.value if isinstance(c, n.Const) else None for c in moved]
        elif op.name == "tensor.slice":
            extents = [c.value for c in values["shape"]]
        else:
            src = types["tile" if op.name == "tile.store" else "source"]
            moved = getattr(src, "valid_shape", None)
            extents = list(src.shape) if moved is None else [c.value if isinstance(c, n.Const) else None for c in moved]
        for axis, (off, extent, dim) in enumerate(zip(offsets, extents, tensor_t.shape)):
            span = interval(off, self.ranges)
            if span is None or extent is None or isinstance(off, n.Const):
                continue
            lo, hi = span
            if lo < 0 or hi + extent > dim:
                from pypto.errors import OutOfBoundsError

                bad = hi if hi + extent > dim else lo
                raise self.error(
                    OutOfBoundsError, node,
                    f"{op.name} region on axis {axis} reaches [{bad}, {bad + extent}) but the tensor's axis is [0, {dim})",
                    hint="check the loop bounds against the tensor shape (the offset spans "
                         f"{lo}..{hi} over the loop)",
                )


def _ops_of(module: str):
    return [o for o in all_ops() if o.level == module]
