"""Assignments in kernel source: ``x = value`` and ``x: pl.Tile[...] = value`` (the
annotation checked against the value and completing it), ``x += y``, and unpacking a call's
several results. A mixin of the function converter."""

from __future__ import annotations

import ast

from pypto.errors import TypeCheckError, UnsupportedSyntaxError
from pypto.ir import nodes as n
from pypto.ir.affine import interval
from pypto.ir.ops.type_rules import fmt_shape
from pypto.ir.types import ArrayType, DataType, ScalarType, TileType, type_name
from pypto.lang.statements.calls import Inlined, Nothing, Several
from pypto.lang.expressions.exprs import RUNTIME


class Assignments:
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
        elif isinstance(target, ast.Subscript) and isinstance(self.local_type(target.value), ArrayType):
            self.array_store(target, node.value, node)
        elif isinstance(target, ast.Subscript):
            self.assemble(target, node.value, node)
        else:
            raise self.error(UnsupportedSyntaxError, target, f"Unsupported assignment: {ast.unparse(node)}")

    def ann_assign(self, node: ast.AnnAssign) -> None:
        if not isinstance(node.target, ast.Name) or node.value is None:
            raise self.error(UnsupportedSyntaxError, node, "annotated assignments bind one name to a value")
        if self._is_builtin_call(node.value, "yield_"):
            return self.yield_(node.value, node.target, self.annotation(node.annotation)[0])
        # a pipe's pop receives the tile its annotation declares (x: pl.Tile[...] = pl.tpop_from_aiv(split=0))
        early = self.annotation(node.annotation)[0] if isinstance(node.value, ast.Call) else None
        self.declared = early
        try:
            value, inferred = self.value(node.value, hint=node.target.id)
        finally:
            self.declared = None
        self.single(inferred, node.value)
        declared = early if early is not None else self.annotation(node.annotation)[0]
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
        self.env = self.env.set(pyname, var.name)
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
            if declared.valid_shape is not None and declared.valid_shape != inferred.valid_shape:
                got = "whole" if inferred.valid_shape is None else f"valid over {fmt_shape(inferred.valid_shape)}"
                raise self.error(TypeCheckError, node,
                                 f"the annotation says the tile is valid over {fmt_shape(declared.valid_shape)} "
                                 f"but the value is {got}",
                                 hint="a tile's valid shape is the op's that makes it: pass valid_shape= to that op "
                                      "or pl.set_validshape the tile (and leave pl.TileView off)")
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
        values = self.maybe_static(value_node)
        if values is RUNTIME:
            if isinstance(value_node, ast.Call):
                return self.unpack_results(names, value_node)
            if isinstance(value_node, (ast.Tuple, ast.List)) and len(value_node.elts) == len(names):
                return self.unpack_values(names, value_node.elts)
            raise self.error(UnsupportedSyntaxError, value_node,
                             "only compile-time tuples (like 'M, N = a.shape') and calls returning several values "
                             "can be unpacked")
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
            self.env = self.env.set(name.id, ssa)
            self.dropped.pop(name.id, None)

    def unpack_values(self, names, nodes) -> None:
        """``a, b = pl.load(...), pl.load(...)``: every value computed, then bound, as Python
        does (``a, b = b, a`` swaps)."""
        values = []
        for name, node in zip(names, nodes):
            value, t = self.value(node, hint=name.id)
            self.single(t, node)
            values.append((value, t))
        for name, node, (value, t) in zip(names, nodes, values):
            if isinstance(value, n.Var) and isinstance(t, TileType):
                self.alias(name.id, value, name)
            else:
                self.bind(name.id, t, value, node)

    def unpack_results(self, names, call_node: ast.Call) -> None:
        """``o1, o2 = two(a, o1, o2)``: the kernel writes the tensors it is handed and returns
        them, so the call is a statement and each name is the argument the callee returns."""
        value, t = self.value(call_node)
        if isinstance(value, n.Submit) and value.call is not None:
            return self.unpack_submit(names, value, call_node)
        if isinstance(t, Inlined):  # an inline function's values, spliced in already
            if len(names) != len(t.values):
                raise self.error(TypeCheckError, call_node, f"'{t.callee}' returns {len(t.values)} values, unpacked "
                                 f"into {len(names)} names")
            for name, (e, et) in zip(names, t.values):
                if isinstance(e, n.Var) and isinstance(et, TileType):
                    self.alias(name.id, e, name)
                else:
                    self.bind(name.id, et, e, call_node)
            return
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
            self.bind_returned(name, t.args[index], rt)

    def bind_returned(self, name: ast.Name, arg, t) -> None:
        """``name`` for a tensor a call returns, which is the argument ``arg`` it wrote: the
        same tensor under another name (a fresh binding only for an expression)."""
        if isinstance(arg, n.Var):
            self.check_local_name(name.id, name)
            self.env = self.env.set(name.id, arg.name)
            self.dropped.pop(name.id, None)
        else:
            self.bind(name.id, t, arg, name)


def _wider(v: int) -> str | None:
    """The narrowest signed integer dtype holding ``v`` (None: none does)."""
    for dtype in (DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64):
        lo, hi = dtype.int_range
        if lo <= v <= hi:
            return dtype.name
    return None


def _wider_dtype(dtype: DataType) -> str:
    return "INT64" if dtype is DataType.INDEX else dtype.name
