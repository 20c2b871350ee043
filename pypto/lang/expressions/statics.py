"""Compile-time values of kernel source: a constant expression computed on its values as
Python computes it (``pypto.lang.expressions.folding``) — numbers, dtypes, tuples, a pure function of
them — or ``RUNTIME`` when it is known only when the kernel runs; and the requirements
built on it (``static_of``, ``static_ints``, ``static_dims``), each naming what was not
constant. A mixin of the expression converter."""

from __future__ import annotations

import ast
import operator

from pypto.errors import ParseError, PyptoError, TypeCheckError
from pypto.ir import nodes as n
from pypto.lang.expressions import folding
from pypto.ir.types import DataType, TensorType, TileType
from pypto.lang.vocabulary import names as N
from pypto.backend import MemorySpace


class _NotStatic(Exception):
    """An expression whose value is not known at compile time; ``node`` is the part that
    is not (a loop variable, a scalar parameter, a call). Internal to this module: every
    caller turns it into a located error or reads ``RUNTIME`` from ``maybe_static``."""

    def __init__(self, node=None):
        super().__init__()
        self.node = node


class _Runtime:
    def __repr__(self) -> str:
        return "RUNTIME"


RUNTIME = _Runtime()  # what ``maybe_static`` gives for a value known only when the kernel runs


class Statics:
    def maybe_static(self, node):
        """The compile-time value of an expression, or ``RUNTIME`` when part of it is known
        only when the kernel runs. A constant part that Python cannot compute (``1 / 0``)
        is the user's mistake, reported where it is written."""
        try:
            return self._static(node)
        except _NotStatic:
            return RUNTIME

    def required(self, node, what: str, why: str | None = None):
        """The compile-time value of an expression that must have one: anything known only
        at run time is a located error saying what must be static (``what``) and why."""
        try:
            return self._static(node)
        except _NotStatic as exc:
            raise self.not_static(node, exc.node, what, why) from None

    def not_static(self, node, part, what: str, why: str | None) -> PyptoError:
        part = node if part is None else part
        if isinstance(part, ast.Name) and part.id not in self.env:
            err = self.undefined(part)  # a name that is nothing at all says so first
            return self.error(type(err), part, f"{what} must be a compile-time constant: {err.message}",
                              hint=err.hint)
        text = ast.unparse(part)
        if isinstance(part, ast.Name):
            reason = f"'{text}' is known only when the kernel runs"
        elif isinstance(part, ast.Call):
            reason = f"'{text}' is a call the compiler does not run"
        else:
            reason = f"'{text}' is not a compile-time value"
        return self.error(TypeCheckError, part, f"{what} must be a compile-time constant"
                                                + (f" ({why})" if why else "") + f", but {reason}",
                          hint="write it with literals, module-level constants and arithmetic on them")

    def _static(self, node):
        """The compile-time value of an expression, as Python computes it (raises _NotStatic
        naming the part that is not static; only this module sees _NotStatic)."""
        if isinstance(node, ast.Constant):
            if node.value is Ellipsis:
                raise _NotStatic(node)
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self._static(e) for e in node.elts]
        if isinstance(node, ast.UnaryOp):
            v = self._static(node.operand)
            if isinstance(node.op, ast.USub):
                return self._evaluate(node, operator.neg, v)
            if isinstance(node.op, ast.UAdd):
                return self._evaluate(node, operator.pos, v)
            if isinstance(node.op, ast.Not):
                return not v
            return self._evaluate(node, operator.invert, v)
        if isinstance(node, ast.BinOp) and type(node.op) in folding.BINOPS:
            return self._evaluate(node, folding.BINOPS[type(node.op)], self._static(node.left),
                                  self._static(node.right))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in folding.COMPARISONS:
            return self._evaluate(node, folding.COMPARISONS[type(node.ops[0])], self._static(node.left),
                                  self._static(node.comparators[0]))
        if isinstance(node, ast.BoolOp):
            return folding.boolean([lambda v=v: self._static(v) for v in node.values], isinstance(node.op, ast.And))
        if isinstance(node, ast.Attribute) and node.attr == "shape":
            t = self.local_type(node.value)
            if isinstance(t, (TensorType, TileType)) and all(isinstance(d, int) for d in t.shape):
                return list(t.shape)
        if isinstance(node, ast.Subscript):
            base = self._static(node.value)
            index = self._static(node.slice)
            if isinstance(base, list) and isinstance(index, int) and not isinstance(index, bool):
                if not -len(base) <= index < len(base):
                    raise self.error(TypeCheckError, node, f"index {index} is out of range for {base!r}")
                return base[index]
            raise _NotStatic(node)
        if isinstance(node, ast.Call):
            _, meaning = self.entity(node.func)
            if isinstance(meaning, N.Builtin) and meaning.name == "dim" and len(node.args) == 2:
                t = self.local_type(node.args[0])
                axis = self._static(node.args[1])
                if isinstance(t, TensorType) and isinstance(axis, int) and -len(t.shape) <= axis < len(t.shape) \
                        and isinstance(t.shape[axis], int):  # (an orchestration's runtime extent is not)
                    return t.shape[axis]
            return self._static_call(node)
        if isinstance(node, (ast.Name, ast.Attribute)):
            if isinstance(node, ast.Name) and node.id in self.env:
                ssa = self.env[node.id]
                for table in (self.folded, self.known):
                    if ssa in table:
                        return table[ssa]
                raise _NotStatic(node)
            ref, meaning = self.entity(node)
            if isinstance(ref, N.Alias):
                raise self.alias_error(node, ref)
            if isinstance(meaning, N.Value) and isinstance(meaning.value, N.DynVar):
                bound = self.dynamic_extents.get(id(meaning.value))
                if bound is None:
                    raise self.error(TypeCheckError, node, f"the pl.dynamic axis '{meaning.value.name}' has no extent "
                                     "here: no parameter of this function declares it",
                                     hint="declare a parameter with it, e.g. x: pl.Tensor[[M, 128], pl.FP32]")
                return bound[1]
            if isinstance(meaning, N.Value):
                return _as_list(meaning.value)
            if isinstance(ref, N.Path) and meaning is None:
                message, hint = N.unknown(ref)
                raise self.error(ParseError, node, message, hint=hint)
            if isinstance(ref, N.Unknown):
                raise self.error(ParseError, node, f"'{ast.unparse(node)}' is {ref.what}, which kernel source cannot "
                                                   "use as a value",
                                 hint="module-level constants are numbers, strings, dtypes and tuples of them; "
                                      "pass tensors and runtime values as kernel arguments")
        raise _NotStatic(node)

    def pure_function(self, func):
        """The Python function of numbers a call's callee is (``abs``, ``math.sqrt``, Python's
        or pl's ``min``), or None."""
        if isinstance(func, ast.Name) and func.id in self.env:
            return None
        _, meaning = self.entity(func)
        if isinstance(meaning, N.Builtin) and meaning.name in ("min", "max"):
            return N.Pure(meaning.name)
        return meaning if isinstance(meaning, N.Pure) else None

    def _static_call(self, node: ast.Call):
        """A pure function (``float("nan")``, ``abs``, ``min``/``max``, ``math.sqrt``) of
        compile-time values."""
        pure = self.pure_function(node.func)
        if pure is None:
            raise _NotStatic(node)
        if node.keywords:
            raise self.error(TypeCheckError, node, f"{ast.unparse(node.func)}() takes positional arguments here")
        args = [self._static(a) for a in node.args]
        if pure.name in ("min", "max") and len(args) < 2:
            raise self.error(TypeCheckError, node, f"{ast.unparse(node.func)} takes two or more scalars")
        return self._evaluate(node, pure.fn, *args)

    def _evaluate(self, node, f, *args):
        """A Python operator on compile-time values; its failure is the user's mistake."""
        try:
            return folding.compute(f, *args)
        except folding.TooLarge as exc:
            raise self.error(TypeCheckError, node, f"'{ast.unparse(node)}' is too large to be a kernel constant: {exc}",
                             hint="kernel constants fit a 64-bit integer or a float") from None
        except Exception as exc:  # 1 // 0, "a" - 1, math.sqrt(-1), 10.0 ** 400, ...
            raise self.error(TypeCheckError, node, f"'{ast.unparse(node)}' could not be evaluated: "
                                                   f"{type(exc).__name__}: {exc}",
                             hint="constant expressions are computed when the kernel is compiled, as Python "
                                  "computes them; change the constants so that Python can") from None

    def local_type(self, node):
        if isinstance(node, ast.Name) and node.id in self.env:
            return self.types[self.env[node.id]]
        return None

    def static_of(self, node, kind: type | tuple, what: str, why: str | None = None, hint: str | None = None):
        value = self.required(node, what, why)
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.error(TypeCheckError, node, f"{what} must be {_kind_name(kind)}, not {value!r}", hint=hint)
        if not isinstance(value, kind):
            raise self.error(TypeCheckError, node, f"{what} must be {_kind_name(kind)}, not {value!r}", hint=hint)
        return value

    def static_ints(self, node, what: str) -> tuple[int, ...]:
        value = self.static_of(node, (list, tuple), what)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            floats = any(isinstance(v, float) for v in value)
            raise self.error(TypeCheckError, node, f"{what} must be a list of ints, not {value!r}",
                             hint="divide with // (or round with int(...)): '/' gives a float" if floats else None)
        return tuple(value)

    def extents(self, nodes, what: str) -> tuple:
        """An orchestration's extents, each a compile-time int where it is one (its Const),
        else the index expression of scalars it computes as it runs."""
        out = []
        for node in nodes:
            value = self.maybe_static(node)
            out.append(n.Const(value) if type(value) is int else self.index(node, what))
        return tuple(out)

    def static_dims(self, node, what: str) -> tuple[int, ...]:
        shape = self.static_ints(node, what)
        if not shape or any(d <= 0 for d in shape):
            raise self.error(TypeCheckError, node, f"{what} has positive extents, not {list(shape)}",
                             hint="every dimension is at least 1, e.g. [64, 128]")
        return shape

    # ------------------------------------------------------------------ scalar expressions


def _as_list(value):
    """Module-level tuples read like the list literals written in kernels."""
    if isinstance(value, (tuple, list)):
        return [_as_list(v) for v in value]
    return value


def _kind_name(kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {int: "an int", float: "a number", bool: "a bool", str: "a string", list: "a list", tuple: "a list",
             DataType: "a dtype (pl.FP32, ...)", MemorySpace: "a memory space (pl.Mem.Vec, ...)"}
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))
